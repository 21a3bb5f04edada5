//! What a gate tells its pull request: a Markdown summary for a comment and the same as JSON.
use super::decision::{Decision, StepFinding};
use serde::Serialize;

/// A gate's result, as both outputs say it.
#[derive(Debug, Serialize)]
pub struct Summary {
    pub decision: Decision,
    pub exit_code: i32,
    pub service: String,
    pub base: String,
    pub base_commit: Option<String>,
    pub head: String,
    pub head_commit: Option<String>,
    pub metric: String,
    pub threshold: f64,
    pub steps: Vec<StepFinding>,
    pub machine_s: f64,
    /// Why it could not decide or measure, when it could not.
    pub reason: Option<String>,
    pub duet: Option<i64>,
    pub store: String,
}

fn short(c: &Option<String>) -> String {
    c.as_deref().map(|c| format!(" (`{}`)", &c[..c.len().min(8)])).unwrap_or_default()
}

/// The summary as Markdown: the decision first, then a row per step.
pub fn markdown(s: &Summary) -> String {
    let headline = match s.decision {
        Decision::Regression => "❌ **regression**",
        Decision::NoRegression => "✅ **no regression**",
        Decision::NotDecided => "⚠️ **not decided**",
    };
    let mut out = format!(
        "### svcbench gate: {headline}\n\n`{}`: {}{} against {}{}, {} B/A, threshold {:.1} %, {:.0} s of machine time\n\n",
        s.service,
        s.head,
        short(&s.head_commit),
        s.base,
        short(&s.base_commit),
        s.metric,
        s.threshold * 100.0,
        s.machine_s
    );
    if let Some(r) = &s.reason {
        out.push_str(&format!("{r}\n\n"));
    }
    out.push_str("| step | B/A | 95 % interval | pairs | finding |\n|---|---|---|---|---|\n");
    for f in &s.steps {
        let (ratio, ci) = match (f.ratio, f.ci) {
            (Some(r), Some(c)) => (format!("{r:.3}"), format!("[{:.3}, {:.3}]", c[0], c[1])),
            _ => ("–".into(), "–".into()),
        };
        let finding = match f.decision {
            Decision::Regression => "regression",
            Decision::NoRegression => "within the threshold",
            Decision::NotDecided => "not decided",
        };
        out.push_str(&format!("| {} | {ratio} | {ci} | {} | {finding} |\n", f.step, f.pairs));
    }
    if let Some(d) = s.duet {
        out.push_str(&format!("\nDuet {d} in `{}` (`svcbench report --db {}`).\n", s.store, s.store));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_markdown_leads_with_the_decision_and_gives_each_step_its_interval() {
        let s = Summary {
            decision: Decision::Regression,
            exit_code: 1,
            service: "svc".into(),
            base: "main".into(),
            base_commit: Some("1a2b3c4d5e6f".into()),
            head: "working tree".into(),
            head_commit: None,
            metric: "CPU µs/req".into(),
            threshold: 0.02,
            steps: vec![StepFinding {
                step: "r=1500".into(),
                ratio: Some(1.051),
                ci: Some([1.043, 1.06]),
                pairs: 12,
                decision: Decision::Regression,
            }],
            machine_s: 190.0,
            reason: None,
            duet: Some(3),
            store: "results/gate.db".into(),
        };
        let md = markdown(&s);
        assert!(md.starts_with("### svcbench gate: ❌ **regression**"), "{md}");
        assert!(md.contains("against main (`1a2b3c4d`)"), "{md}");
        assert!(md.contains("| r=1500 | 1.051 | [1.043, 1.060] | 12 | regression |"), "{md}");
        let json: serde_json::Value = serde_json::to_value(&s).unwrap();
        assert_eq!(json["decision"], "regression");
        assert_eq!(json["steps"][0]["ci"][1], 1.06);
    }
}

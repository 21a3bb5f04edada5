//! `--fail-on`: which lines are regressions beyond their thresholds (exit code 1 for CI), and why a
//! comparison is not judged at all (settings that differ, nothing to judge).
use super::metrics::check_metric;
use super::output::{n_lines, p_value};
use super::*;
use anyhow::{bail, Result};
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct FailRule {
    pub metric: String,
    pub threshold_pct: f64,
}

/// `metric[:threshold%]`, metric `all` for every one; threshold 0 when omitted (any regression fails). A
/// threshold that is not a finite number is refused. One of 100 % or more on a metric where higher is better
/// still fails where the service failed in NEW (whatever the threshold): the way to gate on that alone.
pub fn parse_fail_on(s: &str) -> Result<FailRule> {
    let (metric, pct) = match s.split_once(':') {
        Some((m, p)) => {
            let p = p.trim().trim_end_matches('%');
            let v: f64 = p.parse().map_err(|_| anyhow::anyhow!("--fail-on {s:?}: write a threshold like 10%"))?;
            if !v.is_finite() {
                bail!("--fail-on {s:?}: the threshold must be a finite percentage, like 10%");
            }
            if v < 0.0 {
                bail!("--fail-on {s:?}: the threshold must be 0 % or more");
            }
            (m.trim(), v)
        }
        None => (s.trim(), 0.0),
    };
    check_metric("--fail-on", s, metric)?;
    Ok(FailRule { metric: metric.to_string(), threshold_pct: pct })
}

/// The lines that break a `--fail-on` rule, as messages: a corrected slower/larger verdict whose ratio of
/// geometric means is worse than the threshold, or a service that failed in NEW where BASE's gave figures.
pub fn failures(lines: &[Line], rules: &[FailRule]) -> Vec<String> {
    let mut out = Vec::new();
    for l in lines.iter().filter(|l| gated(l, rules)) {
        if l.verdict == FAILED_IN_NEW {
            out.push(format!("{}: the service failed in NEW: {}", l.name(), l.note.as_deref().unwrap_or("no figure")));
            continue;
        }
        let Some(pct) = l.regression_pct else { continue };
        if let Some(r) = rules.iter().find(|r| applies(r, l) && pct > r.threshold_pct) {
            out.push(format!(
                "{}: {} by {:.1} % (NEW/BASE {}{}; --fail-on threshold {} %)",
                l.name(),
                l.verdict,
                pct,
                l.ratio.map(|r| format!("{r:.3}")).unwrap_or_else(|| "–".into()),
                l.p_adjusted.map(|p| format!(", Holm p {}", p_value(p))).unwrap_or_default(),
                r.threshold_pct
            ));
        }
    }
    out
}

pub(super) fn applies(r: &FailRule, l: &Line) -> bool {
    r.metric == "all" || r.metric == l.metric
}

pub(super) fn gated(l: &Line, rules: &[FailRule]) -> bool {
    rules.iter().any(|r| applies(r, l))
}

/// Verdicts that judge a line: a test's, or a service that failed in NEW.
pub(super) const JUDGED: [&str; 6] = ["faster", "slower", "smaller", "larger", "within noise", FAILED_IN_NEW];

/// What `--fail-on` made of the comparison, for the output's last lines and the exit code.
#[derive(Debug, Clone, Serialize)]
pub struct Gate {
    /// `passed` (exit 0), `failed` (exit 1) or `refused` (exit 3: BASE and NEW were measured differently).
    pub result: &'static str,
    /// Gated lines with a verdict (a test's, or the service failed in NEW).
    pub judged: usize,
    pub failures: Vec<String>,
    /// Gated lines NEW's measurement could not give a figure for, with why.
    pub not_judged: Vec<String>,
    /// One line: what was gated, at which threshold, over how many lines, and the result.
    pub summary: String,
}

impl Gate {
    pub fn exit_code(&self) -> i32 {
        match self.result {
            "passed" => 0,
            "failed" => 1,
            _ => 3,
        }
    }
}

/// "peak_rps (worse by more than 10 %), cpu_per_req (any regression)".
pub(super) fn rules_text(rules: &[FailRule]) -> String {
    let each: Vec<String> = rules
        .iter()
        .map(|r| match r.threshold_pct {
            0.0 => format!("{} (any regression)", r.metric),
            t => format!("{} (worse by more than {t} %)", r.metric),
        })
        .collect();
    each.join(", ")
}

/// The gate over `rules` (None without any): every gated line judged, a failure for each regression beyond its
/// threshold and each service that failed in NEW; lines without a verdict (too few runs, NEW's measurement left
/// out) never fail it, and are counted. A comparison of sides measured differently is refused unless
/// `allow_different` (`--allow-different-settings`).
pub fn gate(c: &Comparison, rules: &[FailRule], allow_different: bool) -> Option<Gate> {
    if rules.is_empty() {
        return None;
    }
    let gated_rules = format!("--fail-on {}", rules_text(rules));
    if !c.differences.is_empty() && !allow_different {
        let what: Vec<&str> = c.differences.iter().map(|d| d.setting).collect();
        return Some(Gate {
            result: "refused",
            judged: 0,
            failures: Vec::new(),
            not_judged: Vec::new(),
            summary: format!(
                "{gated_rules}: not judged: BASE and NEW were measured differently ({}; the warnings above say how), so \
                 a difference may be the measurement's, not the code's; measure both alike, or add \
                 --allow-different-settings to judge them anyway (exit 3)",
                what.join(", ")
            ),
        });
    }
    let lines: Vec<&Line> = c.lines.iter().filter(|l| gated(l, rules)).collect();
    let judged = lines.iter().filter(|l| JUDGED.contains(&l.verdict.as_str())).count();
    let not_judged: Vec<String> = (lines.iter().filter(|l| l.verdict == NOT_JUDGED))
        .map(|l| format!("{}: {}", l.name(), l.note.as_deref().unwrap_or("no figure in NEW")))
        .collect();
    // The lines without a verdict, by why.
    let mut unjudged: Vec<(String, usize)> = Vec::new();
    for l in lines.iter().filter(|l| !JUDGED.contains(&l.verdict.as_str())) {
        let why = match l.verdict.as_str() {
            NOT_JUDGED => "left out in NEW for the measurement's reasons".to_string(),
            "too few runs" => "with too few runs".to_string(),
            "no spread" => "without spread".to_string(),
            w => w.to_string(),
        };
        super::absence::tally(&mut unjudged, why);
    }
    let rest = match unjudged.is_empty() {
        true => String::new(),
        false => {
            let each: Vec<String> = unjudged.iter().map(|(why, n)| format!("{n} {why}")).collect();
            format!("; not judged: {}", each.join(", "))
        }
    };
    let failures = failures(&c.lines, rules);
    let (result, summary) = if !failures.is_empty() {
        let n = failures.len();
        let what = if n == 1 { "regression" } else { "regressions" };
        ("failed", format!("{gated_rules}: failed: {n} {what} in the {} judged{rest}", n_lines(judged)))
    } else if judged == 0 {
        ("passed", format!("{gated_rules}: passed, but no line could be judged{rest}"))
    } else {
        ("passed", format!("{gated_rules}: passed: no regression in the {} judged{rest}", n_lines(judged)))
    };
    Some(Gate { result, judged, failures, not_judged, summary })
}

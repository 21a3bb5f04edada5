//! The gate's rule: B (the change) against A (its base) on one metric, at every step of the profile. A
//! regression when some step's interval lies wholly beyond the threshold on the worse side; no regression
//! when every step's interval lies wholly on the better side of it; otherwise not decided (yet). The
//! intervals are the duet's (95 % over pairs); looking after every pair is what makes a decision early,
//! and the threshold is the margin that keeps those repeated looks from calling noise a regression
//! (bench/regressions.sh measures how often an A/A gate fails).
use crate::duet::command::Lines;
use crate::duet::slices::Metric;
use serde::Serialize;

/// Fewer pairs than this are never judged: the first intervals are the least trustworthy.
pub const MIN_PAIRS: usize = 6;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Regression,
    NoRegression,
    NotDecided,
}

impl Decision {
    /// As the gate's last line says it.
    pub fn describe(self) -> &'static str {
        match self {
            Decision::Regression => "regression",
            Decision::NoRegression => "no regression",
            Decision::NotDecided => "not decided",
        }
    }
}

/// One step's finding: B/A, its interval, and what it says against the threshold.
#[derive(Debug, Clone, Serialize)]
pub struct StepFinding {
    pub step: String,
    pub ratio: Option<f64>,
    pub ci: Option<[f64; 2]>,
    pub pairs: usize,
    pub decision: Decision,
}

/// The ratio beyond which B is worse than A by more than `threshold` (0.02 = 2 %) on `metric`.
pub fn limit(metric: Metric, threshold: f64) -> f64 {
    if metric.higher_is_better() {
        1.0 - threshold
    } else {
        1.0 + threshold
    }
}

/// Each step's finding on `metric`, and the gate's decision over them.
pub fn decide(lines: &Lines, labels: &[String], metric: Metric, threshold: f64) -> (Decision, Vec<StepFinding>) {
    let edge = limit(metric, threshold);
    let worse = |x: f64| if metric.higher_is_better() { x < edge } else { x > edge };
    let findings: Vec<StepFinding> = lines
        .iter()
        .filter(|l| l.1 == metric)
        .map(|(step, _, r, _)| {
            let decision = match r {
                Some(r) if r.pairs >= MIN_PAIRS && worse(r.ci[0]) && worse(r.ci[1]) => Decision::Regression,
                Some(r) if r.pairs >= MIN_PAIRS && !worse(r.ci[0]) && !worse(r.ci[1]) => Decision::NoRegression,
                _ => Decision::NotDecided,
            };
            StepFinding {
                step: labels.get(*step as usize).cloned().unwrap_or_else(|| format!("step {}", step + 1)),
                ratio: r.as_ref().map(|r| r.ratio),
                ci: r.as_ref().map(|r| r.ci),
                pairs: r.as_ref().map_or(0, |r| r.pairs),
                decision,
            }
        })
        .collect();
    let decision = if findings.iter().any(|f| f.decision == Decision::Regression) {
        Decision::Regression
    } else if !findings.is_empty() && findings.iter().all(|f| f.decision == Decision::NoRegression) {
        Decision::NoRegression
    } else {
        Decision::NotDecided
    };
    (decision, findings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::duet::verdict::{PairedRatio, Verdict};

    fn line(metric: Metric, ratio: f64, ci: [f64; 2], pairs: usize) -> (u32, Metric, Option<PairedRatio>, Verdict) {
        let r = PairedRatio { ratio, ci, p: 0.5, pairs, slices: pairs * 8, pair_min: ci[0], pair_max: ci[1] };
        (0, metric, Some(r), Verdict::NoSignificantDifference)
    }

    fn one(metric: Metric, ratio: f64, ci: [f64; 2], pairs: usize) -> Decision {
        decide(&vec![line(metric, ratio, ci, pairs)], &["r=1500".into()], metric, 0.02).0
    }

    #[test]
    fn cpu_per_request_beyond_the_threshold_is_a_regression_and_within_it_a_pass() {
        let cpu = Metric::CpuUsPerReq;
        assert_eq!(one(cpu, 1.05, [1.04, 1.06], 10), Decision::Regression);
        assert_eq!(one(cpu, 1.00, [0.99, 1.01], 10), Decision::NoRegression);
        assert_eq!(one(cpu, 0.90, [0.88, 0.92], 10), Decision::NoRegression, "faster is no regression");
        assert_eq!(one(cpu, 1.02, [1.01, 1.03], 10), Decision::NotDecided, "the interval straddles 1.02");
        assert_eq!(one(cpu, 1.05, [1.04, 1.06], 5), Decision::NotDecided, "too few pairs to judge");
    }

    #[test]
    fn for_req_per_second_lower_is_worse() {
        let rps = Metric::OkRps;
        assert_eq!(one(rps, 0.95, [0.94, 0.96], 10), Decision::Regression);
        assert_eq!(one(rps, 1.05, [1.04, 1.06], 10), Decision::NoRegression);
    }

    #[test]
    fn one_step_that_regressed_decides_and_a_step_still_open_keeps_a_pass_open() {
        let cpu = Metric::CpuUsPerReq;
        let mut second = line(cpu, 1.0, [0.97, 1.03], 10);
        second.0 = 1;
        let labels: Vec<String> = vec!["a".into(), "b".into()];
        let lines = vec![line(cpu, 1.0, [0.99, 1.01], 10), second.clone()];
        assert_eq!(decide(&lines, &labels, cpu, 0.02).0, Decision::NotDecided);
        let lines = vec![line(cpu, 1.06, [1.05, 1.07], 10), second];
        let (d, f) = decide(&lines, &labels, cpu, 0.02);
        assert_eq!((d, f[0].decision, f[1].step.as_str()), (Decision::Regression, Decision::Regression, "b"));
        assert_eq!(decide(&vec![], &labels, cpu, 0.02).0, Decision::NotDecided, "nothing measured");
    }
}

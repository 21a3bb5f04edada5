//! The statistics of a comparison: per line, the ratio of geometric means with its interval, Welch's
//! test on the logs, Holm–Bonferroni over the lines tested, and how many runs the measured noise calls for.
use super::*;
use crate::report::stats::{self, Change, LogTest, Spread, Untestable, MIN_RUNS, POWER};
use anyhow::Result;
use serde::Serialize;

/// How many runs the measured noise calls for (see `stats::runs_needed`).
#[derive(Debug, Clone, Serialize)]
pub struct Advice {
    /// Standard deviation of the logs of the runs, pooled over both sides: their noise, about their CV.
    pub log_sd: f64,
    /// Runs a side that would call a change of 5 % (10 %) with 80 % power at `alpha_per_line`.
    pub runs_for_5pct: Option<usize>,
    pub runs_for_10pct: Option<usize>,
    /// The runs at hand (the smaller side) call NEW/BASE beyond this factor either way (above it, or below its
    /// inverse) with 80 % power; None below the minimum, where nothing is called. Cautious at 3–5 runs (see
    /// `stats::detectable_change`).
    pub detectable_ratio: Option<f64>,
    /// α over the number of lines tested (the family Holm–Bonferroni corrects over; when none could be tested,
    /// the lines with values on both sides): Holm's strictest step in this comparison.
    pub alpha_per_line: f64,
}

/// One line's values before the family is known: a metric over each side's counted runs.
#[derive(Debug, Clone)]
pub struct Values {
    pub service: String,
    pub step: Option<String>,
    pub metric: &'static str,
    pub unit: &'static str,
    pub higher_is_better: bool,
    pub speed: bool,
    /// None when the side lacks the service.
    pub base: Option<Vec<f64>>,
    pub new: Option<Vec<f64>>,
}

impl Values {
    pub(super) fn of<T>(
        service: &str,
        step: Option<String>,
        m: &Metric<T>,
        base: Option<Vec<f64>>,
        new: Option<Vec<f64>>,
    ) -> Self {
        Values {
            service: service.to_string(),
            step,
            metric: m.key,
            unit: m.unit,
            higher_is_better: m.higher_is_better,
            speed: m.speed,
            base,
            new,
        }
    }
}

pub(super) fn verdict_word(change: Change, speed: bool) -> &'static str {
    match (change, speed) {
        (Change::WithinNoise, _) => "within noise",
        (Change::Better, true) => "faster",
        (Change::Worse, true) => "slower",
        (Change::Better, false) => "smaller",
        (Change::Worse, false) => "larger",
    }
}

/// Tests every line, corrects over all of them together (Holm–Bonferroni at family-wise `alpha`) and words
/// the verdicts. Returns the lines and the number tested.
pub fn judge(values: &[Values], alpha: f64) -> (Vec<Line>, usize) {
    let spreads: Vec<(Option<Spread>, Option<Spread>)> = values
        .iter()
        .map(|v| {
            let s = |x: &Option<Vec<f64>>| x.as_ref().and_then(|x| Spread::of(x.iter().copied()));
            (s(&v.base), s(&v.new))
        })
        .collect();
    let tests: Vec<Option<Result<LogTest, Untestable>>> = values
        .iter()
        .zip(&spreads)
        .map(|(v, s)| match (&v.base, &v.new, s) {
            (Some(b), Some(n), (Some(_), Some(_))) => Some(stats::log_welch(b, n, 1.0 - alpha)),
            _ => None,
        })
        .collect();
    let (tested, raw): (Vec<usize>, Vec<f64>) = tests
        .iter()
        .enumerate()
        .filter_map(|(i, t)| match t {
            Some(Ok(t)) => Some((i, t.p)),
            _ => None,
        })
        .unzip();
    let mut adjusted: Vec<Option<f64>> = vec![None; values.len()];
    for (&i, a) in tested.iter().zip(stats::holm(&raw)) {
        adjusted[i] = Some(a);
    }
    // The advice is sized at Holm's strictest step over the family the verdicts were corrected over (the lines
    // tested); when none could be tested, over the lines with values on both sides, which enough runs would test.
    let family = match tested.len() {
        0 => tests.iter().filter(|t| t.is_some()).count().max(1),
        n => n,
    };
    let alpha_per_line = alpha / family as f64;

    let mut lines = Vec::with_capacity(values.len());
    for (i, v) in values.iter().enumerate() {
        let (bs, ns) = spreads[i];
        let mut l = Line {
            service: v.service.clone(),
            step: v.step.clone(),
            metric: v.metric,
            unit: v.unit,
            base: bs,
            new: ns,
            ratio: None,
            ci: None,
            p: None,
            p_adjusted: adjusted[i],
            verdict: String::new(),
            note: None,
            advice: None,
            regression_pct: None,
        };
        let (b, n) = match (&v.base, &v.new, bs, ns) {
            (None, ..) => ("only in NEW", None),
            (_, None, ..) => ("only in BASE", None),
            (_, _, None, None) => ("no data", None),
            (_, _, None, Some(_)) => ("no data in BASE", None),
            // compare() says why, from the runs (FAILED_IN_NEW or NOT_JUDGED).
            (_, _, Some(_), None) => ("no data in NEW", None),
            (Some(b), Some(n), Some(_), Some(_)) => ("", Some((b, n))),
        };
        l.verdict = b.to_string();
        if let Some((b, n)) = n {
            l.ratio = stats::geometric_ratio(b, n);
            l.advice = stats::pooled_log_sd(b, n).map(|sd| {
                let runs = bs.map_or(0, |s| s.n).min(ns.map_or(0, |s| s.n));
                let needed = |change: f64| stats::runs_needed(sd, change, alpha_per_line, POWER);
                Advice {
                    log_sd: sd,
                    runs_for_5pct: needed(0.05),
                    runs_for_10pct: needed(0.10),
                    detectable_ratio: (runs >= MIN_RUNS)
                        .then(|| stats::detectable_change(sd, runs, alpha_per_line, POWER))
                        .flatten()
                        .map(|d| 1.0 + d),
                    alpha_per_line,
                }
            });
            match tests[i] {
                Some(Ok(t)) => {
                    let change = Change::of(t.ratio, adjusted[i].is_some_and(|a| a <= alpha), v.higher_is_better);
                    l.verdict = verdict_word(change, v.speed).to_string();
                    l.ci = Some(t.ci);
                    l.p = Some(t.p);
                    let worse_by = if v.higher_is_better { 1.0 - t.ratio } else { t.ratio - 1.0 } * 100.0;
                    l.regression_pct = (change == Change::Worse).then_some(worse_by);
                }
                Some(Err(Untestable::TooFewRuns)) => {
                    l.verdict = "too few runs".into();
                    let count = |s: Option<Spread>| s.map_or(0, |s| s.n);
                    l.note = Some(format!(
                        "{} run(s) in BASE, {} in NEW; the test needs {MIN_RUNS} a side",
                        count(bs),
                        count(ns)
                    ));
                }
                Some(Err(Untestable::NoSpread)) => {
                    l.verdict = "no spread".into();
                    l.note = Some("every run of each side gave the same value and the sides differ".into());
                }
                Some(Err(Untestable::NotPositive)) => {
                    l.verdict = "not tested".into();
                    l.note = Some("a zero or negative value has no logarithm".into());
                }
                None => {}
            }
        }
        lines.push(l);
    }
    (lines, tested.len())
}

//! Steps read second by second: a load model whose offered rate changes within the step (a ramp) is charted
//! per second against the rate offered in that second, and summed up by its knee (loadgen::knee), from the
//! step's stored timeline.
use super::data::StepRow;
use loadgen::knee::{Objectives, Slice};

/// The step's seconds against their offered rates; None for a step that is one figure.
pub fn slices(s: &StepRow) -> Option<Vec<Slice>> {
    let timeline: Vec<loadgen::SecondStats> = serde_json::from_str(&s.timeline).ok()?;
    loadgen::knee::slices(&s.load()?, s.duration_s, &timeline)
}

/// The highest offered rate at which the step still met the default objectives (loadgen::knee: at least
/// 99 % of each second's answers successful, with p99 within 10× the first second's, the limit never below
/// 10 ms).
pub fn knee(s: &StepRow) -> Option<f64> {
    loadgen::knee::knee(&slices(s)?, &Objectives::default())
}

//! A step whose offered rate changes within the step (a ramp) is read second by second: each second's
//! success and p99 against the rate offered in that second. Its knee is the highest offered rate at which
//! the step still met its objectives: the rate of the last second before the first one that missed.

use serde::Serialize;

use crate::models::{LoadModel, Model};
use crate::report::SecondStats;

/// One second of a step, against the rate offered in it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Slice {
    /// Seconds from the step's start.
    pub second: u64,
    /// Requests due in this second (its offered rate, req/s).
    pub offered: f64,
    /// Successful answers in this second, as a share of the answers in it (0 when none came). Answers, not
    /// requests offered: a request sent late in one second is answered in the next, and a service that
    /// answers nothing is a miss anyway.
    pub success: f64,
    /// p99 of the successful answers in this second (ms; 0 when there were none).
    pub p99_ms: f64,
}

/// The objectives a second must meet to count below the knee.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Objectives {
    /// Least share of a second's answers that succeed.
    pub min_success: f64,
    /// Largest p99 (ms); None: [`P99_FACTOR`] times the first second's, at least [`P99_FLOOR_MS`].
    pub max_p99_ms: Option<f64>,
}

/// The default objectives' success share.
pub const MIN_SUCCESS: f64 = 0.99;
/// The default p99 limit: this many times the first second's p99 ...
pub const P99_FACTOR: f64 = 10.0;
/// ... and never below this (a loopback p99 of 0.2 ms would otherwise make 2 ms of scheduler noise a miss).
pub const P99_FLOOR_MS: f64 = 10.0;

impl Default for Objectives {
    fn default() -> Objectives {
        Objectives { min_success: MIN_SUCCESS, max_p99_ms: None }
    }
}

/// The step's seconds against their offered rates; None for a model whose step is one figure (its rate
/// does not change within the step). The last, partial second is left out.
pub fn slices(model: &Model, duration_s: f64, timeline: &[SecondStats]) -> Option<Vec<Slice>> {
    let offered = model.offered_per_second(duration_s)?;
    Some(
        offered
            .iter()
            .enumerate()
            .map(|(i, &offered)| {
                let s = timeline.iter().find(|s| s.second == i as u64);
                let (ok, answers) = s.map_or((0, 0), |s| (s.ok, s.ok + s.errors));
                Slice {
                    second: i as u64,
                    offered,
                    success: if answers > 0 { ok as f64 / answers as f64 } else { 0.0 },
                    p99_ms: s.map_or(0.0, |s| s.p99_ms),
                }
            })
            .collect(),
    )
}

/// The highest offered rate at which the objectives still held: the last second before the first that
/// missed them (the step's top rate when none did). None when the first second already missed.
pub fn knee(slices: &[Slice], objectives: &Objectives) -> Option<f64> {
    let first = slices.first()?;
    let max_p99 = objectives.max_p99_ms.unwrap_or((first.p99_ms * P99_FACTOR).max(P99_FLOOR_MS));
    let held = |s: &Slice| s.success >= objectives.min_success && s.p99_ms <= max_p99 && s.p99_ms > 0.0;
    let missed = slices.iter().position(|s| !held(s)).unwrap_or(slices.len());
    slices[..missed].iter().map(|s| s.offered).reduce(f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slice(second: u64, offered: f64, success: f64, p99_ms: f64) -> Slice {
        Slice { second, offered, success, p99_ms }
    }

    #[test]
    fn the_knee_is_the_last_second_before_the_first_miss() {
        let s = [
            slice(0, 100.0, 1.0, 1.0),
            slice(1, 200.0, 1.0, 2.0),
            slice(2, 300.0, 0.995, 9.0),
            slice(3, 400.0, 0.5, 3.0),
            slice(4, 500.0, 1.0, 1.0),
        ];
        assert_eq!(knee(&s, &Objectives::default()), Some(300.0));
        // p99 over the limit misses as surely as failures.
        let strict = Objectives { min_success: 0.9, max_p99_ms: Some(5.0) };
        assert_eq!(knee(&s, &strict), Some(200.0));
        // By default the limit is 10× the first second's p99, at least 10 ms.
        let slow = [slice(0, 100.0, 1.0, 2.0), slice(1, 200.0, 1.0, 19.0), slice(2, 300.0, 1.0, 21.0)];
        assert_eq!(knee(&slow, &Objectives::default()), Some(200.0));
        assert_eq!(knee(&s[3..], &Objectives::default()), None, "missed from the start");
        assert_eq!(knee(&s[..3], &Objectives::default()), Some(300.0), "held throughout: the top rate");
    }

    #[test]
    fn slices_are_none_for_a_step_that_is_one_figure() {
        assert_eq!(slices(&Model::closed(4), 10.0, &[]), None);
    }
}

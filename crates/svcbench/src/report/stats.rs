//! Median and spread over runs, and the compare verdict.
//!
//! The verdict statistic (also in docs/report.md): NEW differs from BASE only when
//!   1. the min–max ranges of the two sides' runs do not overlap, and
//!   2. the ratio of medians NEW/BASE is further from 1 than the larger relative spread
//!      ((max − min) / median) of the two sides, and further than a 5 % floor.
//!
//! Why: a benchmark has a handful of runs (2–5), too few for a t-test's normality assumption or power.
//! Non-overlapping ranges is a distribution-free rule (with 3 runs a side, two identical distributions
//! give it by chance 10 % of the time); requiring the shift to exceed the observed spread as well keeps
//! two runs a side (33 % by chance) from calling noise a change, and the floor stops single runs with
//! no measured spread from turning every drift of a shared machine into a verdict.
use serde::Serialize;

/// Relative change below which no verdict is given, whatever the spread (see the module comment).
pub const NOISE_FLOOR: f64 = 0.05;

#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

impl Spread {
    /// Median, min and max of the finite values; None when there are none.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Option<Spread> {
        let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(|a, b| a.total_cmp(b));
        let n = v.len();
        let median = if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 };
        Some(Spread { median, min: v[0], max: v[n - 1], n })
    }

    /// Like `of`, but with an even number of runs the median is the lower middle value, so it is a value
    /// that was measured (a connection count, not the mean of 16 and 64).
    pub fn of_observed(values: impl IntoIterator<Item = f64>) -> Option<Spread> {
        let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
        v.sort_by(|a, b| a.total_cmp(b));
        let s = Spread::of(v.iter().copied())?;
        Some(Spread { median: v[(v.len() - 1) / 2], ..s })
    }

    /// (max − min) / |median|: how much the runs disagree, relative to their typical value.
    pub fn relative(&self) -> f64 {
        if self.median == 0.0 {
            if self.max == self.min {
                0.0
            } else {
                f64::INFINITY
            }
        } else {
            (self.max - self.min) / self.median.abs()
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// NEW is better than BASE beyond noise.
    Better,
    /// NEW is worse than BASE beyond noise.
    Worse,
    WithinNoise,
}

/// Compares two sides of one metric. `higher_is_better`: req/s yes, latency or memory no.
pub fn verdict(base: &Spread, new: &Spread, higher_is_better: bool) -> (f64, Change) {
    let ratio = if base.median == 0.0 {
        if new.median == 0.0 {
            1.0
        } else {
            f64::INFINITY
        }
    } else {
        new.median / base.median
    };
    let overlap = new.min <= base.max && base.min <= new.max;
    let noise = base.relative().max(new.relative()).max(NOISE_FLOOR);
    let shift = (ratio - 1.0).abs();
    // A NaN shift (both medians zero) is no change either.
    if overlap || shift.is_nan() || shift <= noise {
        return (ratio, Change::WithinNoise);
    }
    let up = ratio > 1.0;
    (ratio, if up == higher_is_better { Change::Better } else { Change::Worse })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[f64]) -> Spread {
        Spread::of(v.iter().copied()).unwrap()
    }

    #[test]
    fn median_and_range() {
        assert_eq!(s(&[3.0, 1.0, 2.0]), Spread { median: 2.0, min: 1.0, max: 3.0, n: 3 });
        assert_eq!(s(&[4.0, 1.0]).median, 2.5);
        assert_eq!(Spread::of_observed([64.0, 16.0]).unwrap().median, 16.0);
        assert_eq!(Spread::of_observed([64.0, 16.0, 32.0]).unwrap().median, 32.0);
        assert!(Spread::of([f64::NAN]).is_none());
        assert!((s(&[90.0, 110.0]).relative() - 0.2).abs() < 1e-12);
    }

    #[test]
    fn verdicts() {
        let base = s(&[1000.0, 1040.0]);
        assert_eq!(verdict(&base, &base, true), (1.0, Change::WithinNoise));
        // Half the throughput, ranges apart: slower.
        assert_eq!(verdict(&base, &s(&[500.0, 520.0]), true).1, Change::Worse);
        assert_eq!(verdict(&base, &s(&[2000.0, 2100.0]), true).1, Change::Better);
        // Lower latency is better.
        assert_eq!(verdict(&s(&[10.0, 11.0]), &s(&[5.0, 5.2]), false).1, Change::Better);
        // Overlapping ranges: noise, however far the medians.
        assert_eq!(verdict(&s(&[100.0, 300.0]), &s(&[250.0, 400.0]), true).1, Change::WithinNoise);
        // Apart, but a shift smaller than the runs' own spread: noise.
        assert_eq!(verdict(&s(&[100.0, 140.0]), &s(&[141.0, 150.0]), true).1, Change::WithinNoise);
        // Single runs: only beyond the floor.
        assert_eq!(verdict(&s(&[100.0]), &s(&[103.0]), true).1, Change::WithinNoise);
        assert_eq!(verdict(&s(&[100.0]), &s(&[90.0]), true).1, Change::Worse);
    }
}

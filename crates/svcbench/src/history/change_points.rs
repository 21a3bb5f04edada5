//! Change points of one series by e-divisive means with a significance test, the method of Apache Otava
//! (formerly Hunter) and of MongoDB's performance CI: the e-divisive statistic (Matteson & James, 2014,
//! α = 1) names the best split of a segment, a t-test between the two sides decides whether it stands, and
//! the segments are split again until the best candidate is not significant. Over a long series this runs
//! in overlapping windows, and the change points found are then tested again between their neighbours,
//! the weakest removed until every one left is significant (Otava's `split` and `merge`).
//!
//! Written here rather than taken from a crate: the one Rust crate of the method was released once and not
//! kept up, and others implement other methods (Bayesian online detection). Three choices differ from
//! Otava: the t-test is Student's on the logarithms (`report::stats::log_student`), so a change's size is
//! a ratio of geometric means with its interval, as `compare` gives it, where Otava's is on the values; a side needs `MIN_SIDE` points (Otava's may have one); and a split may be restricted to some
//! positions (a commit's sessions are never split apart).
use crate::report::stats::{log_student, LogTest, MIN_RUNS};

/// What decides a change point.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    /// A split stands when the t-test's two-sided p is at most this (Otava's default 0.001).
    pub max_pvalue: f64,
    /// Points per window of the windowed search (Otava's default 50).
    pub window: usize,
    /// Level of a change's interval.
    pub level: f64,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings { max_pvalue: 0.001, window: 50, level: 0.95 }
    }
}

/// Fewest points on either side of a change: what the t-test needs to judge a side's spread.
pub const MIN_SIDE: usize = MIN_RUNS;

/// A change point: the series' level differs from `index` on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChangePoint {
    /// The first point after the change.
    pub index: usize,
    /// The t-test between the points since the previous change point and those up to the next: the ratio
    /// after/before of their geometric means, its interval and p.
    pub test: LogTest,
}

/// The change points of `values`, in order. `may_split(i)`: whether a change may fall between points i − 1
/// and i (every position when all may).
pub fn change_points(values: &[f64], may_split: &dyn Fn(usize) -> bool, s: &Settings) -> Vec<ChangePoint> {
    let n = values.len();
    let window = s.window.max(2 * MIN_SIDE);
    let mut found: Vec<usize> = Vec::new();
    let mut start = 0;
    while start < n {
        let end = (start + window).min(n);
        let local = split(&values[start..end], &|i| may_split(start + i), first_pass(s.max_pvalue));
        let last = local.last().map(|i| start + i);
        found.extend(local.into_iter().map(|i| start + i));
        if end == n {
            break;
        }
        // The next window starts half a window on, or at the newest change found if that is further.
        start = (start + window / 2).max(last.unwrap_or(0));
    }
    found.sort_unstable();
    found.dedup();
    merge(values, found, s)
}

/// The windows' threshold: Otava's split keeps "weak" change points at ten times the final p (twice from
/// 0.05, the p itself from 0.5), which the merge then tests at the final one.
fn first_pass(max_pvalue: f64) -> f64 {
    if max_pvalue < 0.05 {
        max_pvalue * 10.0
    } else if max_pvalue < 0.5 {
        max_pvalue * 2.0
    } else {
        max_pvalue
    }
}

/// Splits one window recursively: the strongest candidate of all its segments first, while it is
/// significant at `max_pvalue`.
fn split(values: &[f64], may_split: &dyn Fn(usize) -> bool, max_pvalue: f64) -> Vec<usize> {
    let mut cuts: Vec<usize> = Vec::new();
    loop {
        let bounds: Vec<usize> = std::iter::once(0).chain(cuts.iter().copied()).chain([values.len()]).collect();
        let best = bounds
            .windows(2)
            .filter_map(|w| best_split(&values[w[0]..w[1]], &|i| may_split(w[0] + i)).map(|(i, q)| (w[0] + i, q, w)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let Some((at, _, w)) = best else { break };
        if !log_student(&values[w[0]..at], &values[at..w[1]], 0.95).is_ok_and(|t| t.p <= max_pvalue) {
            break;
        }
        cuts.push(at);
        cuts.sort_unstable();
    }
    cuts
}

/// Tests every change point between its neighbours and removes the weakest that is not significant, until
/// each left is.
fn merge(values: &[f64], mut cuts: Vec<usize>, s: &Settings) -> Vec<ChangePoint> {
    loop {
        let tested: Vec<(usize, Option<LogTest>)> = (0..cuts.len())
            .map(|k| {
                let from = if k == 0 { 0 } else { cuts[k - 1] };
                let to = cuts.get(k + 1).copied().unwrap_or(values.len());
                (cuts[k], log_student(&values[from..cuts[k]], &values[cuts[k]..to], s.level).ok())
            })
            .collect();
        let weakest = tested
            .iter()
            .enumerate()
            .filter(|(_, (_, t))| t.is_none_or(|t| t.p > s.max_pvalue))
            .max_by(|a, b| p_of(&a.1 .1).total_cmp(&p_of(&b.1 .1)))
            .map(|(k, _)| k);
        match weakest {
            Some(k) => {
                cuts.remove(k);
            }
            None => return tested.into_iter().filter_map(|(index, t)| Some(ChangePoint { index, test: t? })).collect(),
        }
    }
}

fn p_of(t: &Option<LogTest>) -> f64 {
    t.map_or(f64::INFINITY, |t| t.p)
}

/// The candidate of segment `z`: the split z[..i] | z[i..k] that maximises the e-divisive statistic over
/// both i and the end k (Matteson & James), with at least `MIN_SIDE` points a side; i and the statistic.
fn best_split(z: &[f64], may_split: &dyn Fn(usize) -> bool) -> Option<(usize, f64)> {
    (2 * MIN_SIDE..=z.len()).filter_map(|k| best_split_ending(&z[..k], may_split)).max_by(|a, b| a.1.total_cmp(&b.1))
}

/// The best split of all of `z` (its end fixed). Sums of distances are carried from one position to the
/// next, so this costs O(n²), a segment's candidate O(n³): a window bounds n.
fn best_split_ending(z: &[f64], may_split: &dyn Fn(usize) -> bool) -> Option<(usize, f64)> {
    let n = z.len();
    if n < 2 * MIN_SIDE {
        return None;
    }
    let d = |i: usize, j: usize| (z[i] - z[j]).abs();
    // X = z[..i], Y = z[i..]: distances within X, within Y, and across.
    let (mut within_x, mut across) = (0.0, 0.0);
    let mut within_y: f64 = (0..n).flat_map(|i| (i + 1..n).map(move |j| (i, j))).map(|(i, j)| d(i, j)).sum();
    let mut best: Option<(usize, f64)> = None;
    for i in 1..n {
        // Point i − 1 moves from Y to X.
        let m = i - 1;
        let to_x: f64 = (0..m).map(|k| d(k, m)).sum();
        let to_y: f64 = (m + 1..n).map(|k| d(m, k)).sum();
        within_x += to_x;
        within_y -= to_y;
        across += to_y - to_x;
        if i < MIN_SIDE || n - i < MIN_SIDE || !may_split(i) {
            continue;
        }
        let (nx, ny) = (i as f64, (n - i) as f64);
        let e = 2.0 * across / (nx * ny) - within_x / (nx * (nx - 1.0) / 2.0) - within_y / (ny * (ny - 1.0) / 2.0);
        let q = nx * ny / (nx + ny) * e;
        if best.is_none_or(|(_, b)| q > b) {
            best = Some((i, q));
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// `levels` held for the given lengths, each point with normal noise of `cv` (Box–Muller).
    fn series(rng: &mut StdRng, levels: &[(f64, usize)], cv: f64) -> Vec<f64> {
        let mut normal = || {
            let (u, v): (f64, f64) = (rng.gen_range(f64::EPSILON..1.0), rng.gen());
            (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
        };
        levels
            .iter()
            .flat_map(|&(level, n)| (0..n).map(|_| level * (1.0 + cv * normal())).collect::<Vec<_>>())
            .collect()
    }

    fn found(values: &[f64]) -> Vec<usize> {
        change_points(values, &|_| true, &Settings::default()).iter().map(|c| c.index).collect()
    }

    #[test]
    fn one_step_of_five_percent_in_one_percent_noise_is_found_where_it_is() {
        for seed in 0..20 {
            let v = series(&mut StdRng::seed_from_u64(seed), &[(100.0, 13), (105.0, 7)], 0.01);
            let cps = change_points(&v, &|_| true, &Settings::default());
            assert_eq!(cps.iter().map(|c| c.index).collect::<Vec<_>>(), [13], "seed {seed}: {v:?}");
            let t = cps[0].test;
            assert!(t.ci[0] < t.ratio && t.ratio < t.ci[1] && (t.ratio - 1.05).abs() < 0.02, "{t:?}");
            assert!(t.ci[0] <= 1.05 + 0.01 && t.ci[1] >= 1.05 - 0.01, "the interval holds the step: {t:?}");
        }
    }

    #[test]
    fn two_steps_are_both_found() {
        // Two steps the same way: a step up, then one back down past the start, leaves the first split's
        // far side at a mean near the start's, which the t-test between whole sides does not call a
        // change (Otava's split behaves so too).
        for seed in 0..20 {
            let v = series(&mut StdRng::seed_from_u64(seed), &[(100.0, 10), (105.0, 12), (111.0, 10)], 0.01);
            assert_eq!(found(&v), [10, 22], "seed {seed}");
        }
    }

    #[test]
    fn a_flat_noisy_series_has_no_change_point_in_95_of_100() {
        let quiet = (0..100)
            .filter(|&seed| found(&series(&mut StdRng::seed_from_u64(seed), &[(100.0, 20)], 0.01)).is_empty())
            .count();
        assert!(quiet >= 95, "{quiet} of 100 flat series without a change point");
    }

    #[test]
    fn a_long_series_is_searched_in_windows_and_keeps_every_step() {
        // 160 points: more than three windows of 50; steps near window edges too.
        let levels = [(100.0, 45), (110.0, 30), (104.0, 50), (98.0, 35)];
        let v = series(&mut StdRng::seed_from_u64(7), &levels, 0.01);
        assert_eq!(found(&v), [45, 75, 125]);
    }

    #[test]
    fn a_change_falls_only_where_a_split_is_allowed() {
        // The step is at 12, but the points 11..14 belong to one commit: the change is named at a boundary
        // around them, never inside.
        let v = series(&mut StdRng::seed_from_u64(3), &[(100.0, 12), (120.0, 12)], 0.01);
        let cps = change_points(&v, &|i| !(12..=13).contains(&i), &Settings::default());
        assert_eq!(cps.len(), 1);
        assert!(cps[0].index == 11 || cps[0].index == 14, "{cps:?}");
        assert_eq!(found(&v), [12]);
    }

    #[test]
    fn too_short_a_side_is_no_change() {
        // Two points after a large step: fewer than a side needs.
        let v = series(&mut StdRng::seed_from_u64(1), &[(100.0, 10), (150.0, MIN_SIDE - 1)], 0.01);
        assert!(found(&v).is_empty());
    }
}

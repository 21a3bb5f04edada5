//! The statistic behind a duet's verdicts: per slice the log of B/A, per pair of instances one summary (the
//! median of its valid slices' log-ratios), and over the pairs a Student's t interval of the mean log-ratio.
//!
//! Why pairs and not slices: the slices of one pair share the two instances' own luck (memory layout, start
//! order, what shares their caches), which measured here at 3–8 % between two starts of one binary, far above
//! the slice-to-slice noise of the ratio. An interval over slices would call that luck a difference. Each pair
//! is one sample; sides are swapped between pairs, so a side's position cancels in the mean. The t interval on
//! the pair summaries holds its level when they are near normal (the median of many slice log-ratios is), and
//! the calibration test below measures its false-verdict rate on synthetic duets with instance luck.
use crate::report::stats::holm;
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Fewer pairs with enough valid slices than this gives "too few pairs" instead of a verdict: with two, the
/// 95 % t quantile is 12.7 and any interval is too wide to mean anything.
pub const MIN_PAIRS: usize = 3;
/// A pair with fewer valid slices than this (of a step) is left out. Two are enough: the interval is over the
/// pairs' summaries with their own spread, so a pair summarised by two slices (their mean) only widens it
/// honestly, and with the shortest step a duet takes (2 s) every pair still counts. Many short pairs are what
/// narrows a duet most for its machine time, since the instances' luck, not the slices, sets the width.
pub const MIN_SLICES: usize = 2;
/// Family-wise level of the verdicts (Holm over every line of a duet).
pub const ALPHA: f64 = 0.05;

/// Why a line gets no verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Untestable {
    /// Fewer than `MIN_PAIRS` pairs with `MIN_SLICES` valid slices each.
    TooFewPairs,
    /// Every pair gave exactly the same ratio, and it is not 1: no spread to judge it by.
    NoSpread,
}

/// The interval of B/A over pairs: the store's row type, so the two cannot drift apart.
pub use crate::store::DuetInterval as PairedRatio;

impl PairedRatio {
    /// True when the interval lies within ±`precision` (0.02 = 2 %) of the ratio on both sides.
    pub fn precise_to(&self, precision: f64) -> bool {
        self.ci[1] / self.ratio - 1.0 <= precision && 1.0 - self.ci[0] / self.ratio <= precision
    }
}

/// One pair's summary: the median of its finite slice log-ratios; None below `MIN_SLICES`.
pub fn pair_summary(log_ratios: &[f64]) -> Option<f64> {
    let v: Vec<f64> = log_ratios.iter().copied().filter(|x| x.is_finite()).collect();
    if v.len() < MIN_SLICES {
        return None;
    }
    crate::figures::median(v)
}

/// The interval over pairs from each pair's valid slice log-ratios (ln(B/A) per slice).
pub fn paired_ratio(pairs: &[Vec<f64>], level: f64) -> Result<PairedRatio, Untestable> {
    let used: Vec<(f64, usize)> =
        pairs.iter().filter_map(|p| pair_summary(p).map(|m| (m, p.iter().filter(|x| x.is_finite()).count()))).collect();
    let n = used.len();
    if n < MIN_PAIRS {
        return Err(Untestable::TooFewPairs);
    }
    let logs: Vec<f64> = used.iter().map(|u| u.0).collect();
    let slices = used.iter().map(|u| u.1).sum();
    let mean = logs.iter().sum::<f64>() / n as f64;
    let var = logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let (lo, hi) = logs.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), x| (l.min(*x), h.max(*x)));
    let base = PairedRatio {
        ratio: mean.exp(),
        ci: [mean.exp(), mean.exp()],
        p: 1.0,
        pairs: n,
        slices,
        pair_min: lo.exp(),
        pair_max: hi.exp(),
    };
    if var == 0.0 {
        return if mean == 0.0 { Ok(base) } else { Err(Untestable::NoSpread) };
    }
    let se = (var / n as f64).sqrt();
    let t = StudentsT::new(0.0, 1.0, (n - 1) as f64).expect("at least MIN_PAIRS pairs");
    let q = t.inverse_cdf(1.0 - (1.0 - level) / 2.0);
    let p = (2.0 * t.sf((mean / se).abs())).min(1.0);
    Ok(PairedRatio { ci: [(mean - q * se).exp(), (mean + q * se).exp()], p, ..base })
}

/// What a line of a duet says about B against A: the store's type, as it keeps the line.
pub use crate::store::DuetVerdict as Verdict;

/// One line's input: its pairs' slice log-ratios, and whether a higher value of the figure is better.
pub struct Line<'a> {
    pub pairs: &'a [Vec<f64>],
    pub higher_is_better: bool,
}

/// Every line's interval (95 %, uncorrected) and its verdict after Holm's correction over the lines.
pub fn verdicts(lines: &[Line]) -> Vec<(Option<PairedRatio>, Verdict)> {
    let results: Vec<Result<PairedRatio, Untestable>> =
        lines.iter().map(|l| paired_ratio(l.pairs, 1.0 - ALPHA)).collect();
    let ps: Vec<f64> = results.iter().filter_map(|r| r.as_ref().ok().map(|r| r.p)).collect();
    let mut adjusted = holm(&ps).into_iter();
    results
        .into_iter()
        .zip(lines)
        .map(|(r, line)| match r {
            Err(Untestable::TooFewPairs) => (None, Verdict::TooFewPairs),
            Err(Untestable::NoSpread) => (None, Verdict::NoSpread),
            Ok(r) => {
                let p = adjusted.next().expect("one adjusted p per tested line");
                let v = if p > ALPHA {
                    Verdict::NoSignificantDifference
                } else if (r.ratio > 1.0) == line.higher_is_better {
                    Verdict::Faster
                } else {
                    Verdict::Slower
                };
                (Some(r), v)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    /// A normal draw (Box–Muller): the tests need nothing more than rand gives.
    fn gauss(rng: &mut StdRng, sd: f64) -> f64 {
        let (u, v): (f64, f64) = (rng.gen_range(f64::EPSILON..1.0), rng.gen());
        sd * (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }

    /// A synthetic duet: `pairs` pairs of `slices` slices. Per slice the machine's drift hits both sides
    /// alike (it cancels in the ratio); each side's instance has its own luck for the whole pair; each slice
    /// has its own noise per side. B's true cost is `shift` times A's.
    fn synthetic(rng: &mut StdRng, pairs: usize, slices: usize, shift: f64, luck_sd: f64) -> Vec<Vec<f64>> {
        (0..pairs)
            .map(|_| {
                let (la, lb) = (gauss(rng, luck_sd), gauss(rng, luck_sd));
                (0..slices)
                    .map(|_| {
                        let d = gauss(rng, 0.15);
                        let a = (d + la + gauss(rng, 0.04)).exp();
                        let b = shift * (d + lb + gauss(rng, 0.04)).exp();
                        (b / a).ln()
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn a_duet_of_one_distribution_gives_a_verdict_in_at_most_5_percent_of_seeds() {
        let (mut verdicts, seeds) = (0, 1000);
        for seed in 0..seeds {
            let mut rng = StdRng::seed_from_u64(seed);
            let pairs = synthetic(&mut rng, 4, 20, 1.0, 0.03);
            let v = verdicts_of(&pairs, false);
            verdicts += usize::from(v != Verdict::NoSignificantDifference);
        }
        let share = verdicts as f64 / seeds as f64;
        eprintln!("A/A: verdicts in {:.1} % of {seeds} seeds", share * 100.0);
        assert!(share <= 0.05, "A/A verdicts in {:.1} % of seeds", share * 100.0);
        // The check can fail: an interval over the slices themselves (every slice one sample) takes the
        // instances' luck for a difference.
        let mut naive = 0;
        for seed in 0..200 {
            let mut rng = StdRng::seed_from_u64(seed);
            let pairs = synthetic(&mut rng, 4, 20, 1.0, 0.03);
            let slices: Vec<Vec<f64>> = pairs.concat().into_iter().map(|x| vec![x; MIN_SLICES]).collect();
            naive += usize::from(verdicts_of(&slices, false) != Verdict::NoSignificantDifference);
        }
        assert!(naive > 40, "slices taken as independent gave only {naive} of 200 false verdicts");
    }

    #[test]
    fn many_short_pairs_of_one_distribution_give_a_verdict_in_at_most_5_percent_of_seeds() {
        // The shortest duet: 2 s steps, two slices per pair, many pairs, instance luck as large as measured
        // here. A pair's summary is then the mean of two normal log-ratios, so the t interval is exact: its
        // false verdicts are 5 % in expectation, and the bound allows the share's sampling error (two
        // standard errors).
        let (mut verdicts, seeds) = (0, 4000);
        for seed in 0..seeds {
            let mut rng = StdRng::seed_from_u64(seed);
            let pairs = synthetic(&mut rng, 150, MIN_SLICES, 1.0, 0.06);
            verdicts += usize::from(verdicts_of(&pairs, false) != Verdict::NoSignificantDifference);
        }
        let share = verdicts as f64 / seeds as f64;
        let bound = ALPHA + 2.0 * (ALPHA * (1.0 - ALPHA) / seeds as f64).sqrt();
        eprintln!("A/A of 150 two-slice pairs: verdicts in {:.2} % of {seeds} seeds", share * 100.0);
        assert!(share <= bound, "A/A of 150 two-slice pairs: verdicts in {:.2} % of seeds", share * 100.0);
        // And they find what 4 long pairs cannot: a 3 % shift under the same luck.
        let mut found = 0;
        for seed in 0..200 {
            let mut rng = StdRng::seed_from_u64(seed);
            found +=
                usize::from(verdicts_of(&synthetic(&mut rng, 150, MIN_SLICES, 1.03, 0.06), false) == Verdict::Slower);
        }
        assert!(found >= 180, "a 3 % shift found in {found} of 200 duets of 150 short pairs");
    }

    fn verdicts_of(pairs: &[Vec<f64>], higher_is_better: bool) -> Verdict {
        verdicts(&[Line { pairs, higher_is_better }])[0].1
    }

    #[test]
    fn a_known_5_percent_shift_is_found_and_its_interval_contains_it() {
        let (mut found, mut covered, seeds) = (0, 0, 200);
        for seed in 0..seeds {
            let mut rng = StdRng::seed_from_u64(seed);
            let pairs = synthetic(&mut rng, 8, 20, 1.05, 0.01);
            let (r, v) = verdicts(&[Line { pairs: &pairs, higher_is_better: false }]).remove(0);
            let r = r.expect("eight pairs are enough");
            found += usize::from(v == Verdict::Slower);
            covered += usize::from(r.ci[0] <= 1.05 && 1.05 <= r.ci[1]);
        }
        assert!(found as u64 >= seeds * 9 / 10, "5 % more cost found in {found} of {seeds} duets");
        assert!(covered as u64 >= seeds * 9 / 10, "the interval held the true 1.05 in {covered} of {seeds} duets");
    }

    #[test]
    fn too_few_pairs_or_slices_give_no_verdict() {
        let two = vec![vec![0.1; 10], vec![0.12; 10]];
        assert_eq!(verdicts_of(&two, true), Verdict::TooFewPairs);
        // Three pairs, one with too few slices to count.
        let short = vec![vec![0.1, 0.11, 0.09], vec![0.12, 0.1, 0.11], vec![0.1]];
        assert_eq!(verdicts_of(&short, true), Verdict::TooFewPairs);
        let mut rng = StdRng::seed_from_u64(7);
        let mut three = short.clone();
        three[2].push(rng.gen_range(0.09..0.11));
        let (r, v) = verdicts(&[Line { pairs: &three, higher_is_better: true }]).remove(0);
        assert_eq!(v, Verdict::Faster, "{r:?}");
        assert_eq!(r.unwrap().pairs, 3);
    }

    #[test]
    fn holm_corrects_over_the_lines() {
        // Alone, p just under 0.05 is a verdict; among four lines with nothing else, it is not.
        let mut rng = StdRng::seed_from_u64(3);
        let (mut alone, mut among) = (0, 0);
        for _ in 0..300 {
            let pairs = synthetic(&mut rng, 4, 10, 1.02, 0.01);
            let r = paired_ratio(&pairs, 0.95).unwrap();
            if r.p < 0.05 && r.p > 0.02 {
                alone += 1;
                let flat = synthetic(&mut rng, 4, 10, 1.0, 0.0);
                let lines: Vec<Line> = std::iter::once(&pairs)
                    .chain(std::iter::repeat_n(&flat, 3))
                    .map(|p| Line { pairs: p, higher_is_better: false })
                    .collect();
                among += usize::from(verdicts(&lines)[0].1 != Verdict::NoSignificantDifference);
            }
        }
        assert!(alone > 0, "no line with 0.02 < p < 0.05 drawn");
        assert!(among < alone, "Holm's correction left all {alone} borderline lines a verdict");
    }

    #[test]
    fn precision_is_the_interval_around_the_ratio() {
        let r =
            PairedRatio { ratio: 1.0, ci: [0.985, 1.019], p: 1.0, pairs: 4, slices: 40, pair_min: 1.0, pair_max: 1.0 };
        assert!(r.precise_to(0.02));
        assert!(!r.precise_to(0.01));
    }
}

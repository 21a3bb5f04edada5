//! Median and spread over runs (the report's tables), and the statistic behind compare's verdicts.
//!
//! The verdict statistic (also in docs/report.md) is Welch's t-test on the logarithm of the per-run values.
//! Benchmark figures are positive and their run-to-run noise is multiplicative (a slower moment of a shared
//! host scales req/s and CPU per request by a factor), so their logs are close to normal and the difference
//! of the log means is the log of NEW/BASE, the ratio of geometric means. Welch's version lets the two sides
//! be unequally noisy. Its false-positive rate is the α asked for at any run count when the logs are normal:
//! the calibration tests below and in compare.rs measure it, and the power of the run-count advice, on
//! seeded synthetic runs. (Exact Mann–Whitney was the distribution-free alternative, but with 3 runs a side
//! its smallest two-sided p is 0.1: it could never give a verdict at α = 0.05, let alone after correction.)
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, Normal, StudentsT};

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
        let v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
        let median = crate::figures::median(v.iter().copied())?;
        let (min, max) = v.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| (lo.min(*x), hi.max(*x)));
        Some(Spread { median, min, max, n: v.len() })
    }

    /// Like `of`, but with an even number of runs the median is the lower middle value, so it is a value
    /// that was measured (a connection count, not the mean of 16 and 64).
    pub fn of_observed(values: impl IntoIterator<Item = f64>) -> Option<Spread> {
        let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
        v.sort_by(|a, b| a.total_cmp(b));
        let s = Spread::of(v.iter().copied())?;
        Some(Spread { median: v[(v.len() - 1) / 2], ..s })
    }
}

/// Fewer usable runs than this on either side gives "too few runs" instead of a verdict. With 2 a side each
/// side's spread rests on one difference: the test keeps its false-positive rate, but at this project's 10 %
/// run-to-run noise its 95 % interval of the ratio is about ×/÷ 1.5 wide, and after correcting for a dozen
/// lines it could only call changes of several-fold, so a verdict would mostly mean "no verdict possible".
pub const MIN_RUNS: usize = 3;

/// Power the run-count advice aims for: the usual 80 % chance of calling a real change of the given size.
pub const POWER: f64 = 0.8;

/// Why a line of `compare` gets no p value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Untestable {
    /// Fewer than `MIN_RUNS` runs with a value on a side.
    TooFewRuns,
    /// Every run of each side gave the same value and the sides differ: no spread to judge the gap by
    /// (typically a figure with coarse resolution; more runs will not help).
    NoSpread,
    /// A zero or negative value, which has no logarithm (e.g. a step where no request succeeded).
    NotPositive,
}

/// Welch's t-test on the logarithms of the per-run values of BASE and NEW.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LogTest {
    /// NEW/BASE as the ratio of the geometric means over runs (exp of the difference of the log means).
    pub ratio: f64,
    /// Confidence interval of `ratio` at the level asked for (per line, not corrected for multiplicity).
    pub ci: [f64; 2],
    /// Two-sided p value of "both sides have the same geometric mean".
    pub p: f64,
    /// Welch–Satterthwaite degrees of freedom.
    pub df: f64,
}

/// Count, mean and sample variance of the logs of the finite values.
struct Logs {
    n: usize,
    mean: f64,
    var: f64,
}

impl Logs {
    fn of(values: &[f64]) -> Result<Logs, Untestable> {
        let v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        if v.iter().any(|&x| x <= 0.0) {
            return Err(Untestable::NotPositive);
        }
        let logs: Vec<f64> = v.iter().map(|x| x.ln()).collect();
        let n = logs.len();
        if n == 0 {
            return Ok(Logs { n, mean: f64::NAN, var: f64::NAN });
        }
        // Identical runs are exactly flat (no rounding residue), so "no spread" is decided exactly.
        if logs.iter().all(|&x| x == logs[0]) {
            return Ok(Logs { n, mean: logs[0], var: 0.0 });
        }
        let mean = logs.iter().sum::<f64>() / n as f64;
        let var = if n > 1 { logs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64 } else { f64::NAN };
        Ok(Logs { n, mean, var })
    }
}

/// Welch's t-test of NEW against BASE on the log scale, with a `level` (e.g. 0.95) confidence interval of
/// the ratio. Errors when the test cannot be made (see `Untestable`); too few runs are checked first.
pub fn log_welch(base: &[f64], new: &[f64], level: f64) -> Result<LogTest, Untestable> {
    let count = |v: &[f64]| v.iter().filter(|x| x.is_finite()).count();
    if count(base) < MIN_RUNS || count(new) < MIN_RUNS {
        return Err(Untestable::TooFewRuns);
    }
    let (b, n) = (Logs::of(base)?, Logs::of(new)?);
    let diff = n.mean - b.mean;
    let (vb, vn) = (b.var / b.n as f64, n.var / n.n as f64);
    let se2 = vb + vn;
    if se2 == 0.0 {
        // Both sides flat: equal is no change at all; different cannot be judged.
        return if diff == 0.0 {
            Ok(LogTest { ratio: 1.0, ci: [1.0, 1.0], p: 1.0, df: (b.n + n.n - 2) as f64 })
        } else {
            Err(Untestable::NoSpread)
        };
    }
    let df = se2 * se2 / (vb * vb / (b.n - 1) as f64 + vn * vn / (n.n - 1) as f64);
    let se = se2.sqrt();
    let t = StudentsT::new(0.0, 1.0, df).expect("Welch degrees of freedom are positive");
    let p = (2.0 * t.sf((diff / se).abs())).min(1.0);
    let q = t.inverse_cdf(1.0 - (1.0 - level) / 2.0);
    Ok(LogTest { ratio: diff.exp(), ci: [(diff - q * se).exp(), (diff + q * se).exp()], p, df })
}

/// Student's t-test of NEW against BASE on the log scale (one variance pooled from both sides), with a
/// `level` confidence interval of the ratio. Where one side has few points, a spread small by chance on it
/// makes Welch's test see a change that is not there; pooling keeps it to the spread of both, which is what
/// a series split in two (`svcbench history`) needs, its two sides measured alike.
pub fn log_student(base: &[f64], new: &[f64], level: f64) -> Result<LogTest, Untestable> {
    let count = |v: &[f64]| v.iter().filter(|x| x.is_finite()).count();
    if count(base) < MIN_RUNS || count(new) < MIN_RUNS {
        return Err(Untestable::TooFewRuns);
    }
    let (b, n) = (Logs::of(base)?, Logs::of(new)?);
    let diff = n.mean - b.mean;
    let df = (b.n + n.n - 2) as f64;
    let pooled = ((b.n - 1) as f64 * b.var + (n.n - 1) as f64 * n.var) / df;
    if pooled == 0.0 {
        return if diff == 0.0 {
            Ok(LogTest { ratio: 1.0, ci: [1.0, 1.0], p: 1.0, df })
        } else {
            Err(Untestable::NoSpread)
        };
    }
    let se = (pooled * (1.0 / b.n as f64 + 1.0 / n.n as f64)).sqrt();
    let t = StudentsT::new(0.0, 1.0, df).expect("degrees of freedom are positive");
    let p = (2.0 * t.sf((diff / se).abs())).min(1.0);
    let q = t.inverse_cdf(1.0 - (1.0 - level) / 2.0);
    Ok(LogTest { ratio: diff.exp(), ci: [(diff - q * se).exp(), (diff + q * se).exp()], p, df })
}

/// NEW/BASE ratio of geometric means, also when there are too few runs to test it; None without positive
/// values on both sides.
pub fn geometric_ratio(base: &[f64], new: &[f64]) -> Option<f64> {
    let (b, n) = (Logs::of(base).ok()?, Logs::of(new).ok()?);
    (b.n > 0 && n.n > 0).then(|| (n.mean - b.mean).exp())
}

/// Holm–Bonferroni adjusted p values, in the input's order: a line is a corrected verdict when its
/// adjusted p is at most the family-wise α.
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut adjusted = vec![0.0; m];
    let mut running = 0.0f64;
    for (rank, &i) in order.iter().enumerate() {
        // Step-down: never smaller than the adjusted p of a smaller raw p.
        running = running.max(((m - rank) as f64 * p[i]).min(1.0));
        adjusted[i] = running;
    }
    adjusted
}

/// Standard deviation of the logs, pooled over both sides (each around its own mean): the run-to-run noise
/// the advice sizes runs for, about the coefficient of variation. None without two runs on some side.
pub fn pooled_log_sd(base: &[f64], new: &[f64]) -> Option<f64> {
    let (b, n) = (Logs::of(base).ok()?, Logs::of(new).ok()?);
    let part = |l: &Logs| if l.n > 1 { l.var * (l.n - 1) as f64 } else { 0.0 };
    let df = (b.n + n.n).checked_sub(2).filter(|&d| d > 0)?;
    Some(((part(&b) + part(&n)) / df as f64).sqrt())
}

/// The smallest relative change (0.05 = 5 %) that `runs` a side detect with probability `power` in a
/// two-sided test at `alpha`, for log noise `log_sd`: exp((t(1 − α/2) + t(power)) · sd · √(2/runs)) − 1, the
/// textbook sample-size formula for two means with Student's t quantiles in place of the normal's. The t
/// has runs − 1 degrees of freedom, the fewest Welch's test can have with that many runs a side: with the
/// pooled test's 2·runs − 2 (or the normal) the advice promised 80 % where Welch's test delivered 79 % at
/// 10 runs a side and 63 % at 3 (a doubling at 10 % noise, 13 lines). The price: one or two runs more than
/// strictly needed, and a cautious figure for the change 3–5 runs can call.
pub fn detectable_change(log_sd: f64, runs: usize, alpha: f64, power: f64) -> Option<f64> {
    if runs < 2 || !log_sd.is_finite() {
        return None;
    }
    let t = StudentsT::new(0.0, 1.0, (runs - 1) as f64).ok()?;
    let z = t.inverse_cdf(1.0 - alpha / 2.0) + t.inverse_cdf(power);
    Some((z * log_sd * (2.0 / runs as f64).sqrt()).exp() - 1.0)
}

/// Runs a side (at least `MIN_RUNS`) to detect a change of `change` (0.05 = 5 %) either way, per
/// `detectable_change`. A rise by 5 % is the smaller step in logs than a fall by 5 %, so it is the one sized.
pub fn runs_needed(log_sd: f64, change: f64, alpha: f64, power: f64) -> Option<usize> {
    if !log_sd.is_finite() || change <= 0.0 {
        return None;
    }
    // Start from the normal approximation, which never asks for more than the t version, and step up.
    let normal = Normal::new(0.0, 1.0).ok()?;
    let z = normal.inverse_cdf(1.0 - alpha / 2.0) + normal.inverse_cdf(power);
    let start = (2.0 * (z * log_sd / change.ln_1p()).powi(2)).ceil().max(MIN_RUNS as f64) as usize;
    (start..).find(|&n| detectable_change(log_sd, n, alpha, power).is_some_and(|d| d <= change))
}

/// Direction of a corrected verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// NEW is better than BASE beyond noise.
    Better,
    /// NEW is worse than BASE beyond noise.
    Worse,
    WithinNoise,
}

impl Change {
    /// `significant`: the corrected decision; `higher_is_better`: req/s yes, latency or memory no.
    pub fn of(ratio: f64, significant: bool, higher_is_better: bool) -> Change {
        if !significant || ratio == 1.0 {
            Change::WithinNoise
        } else if (ratio > 1.0) == higher_is_better {
            Change::Better
        } else {
            Change::Worse
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use rand::distributions::Open01;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    fn s(v: &[f64]) -> Spread {
        Spread::of(v.iter().copied()).unwrap()
    }

    /// `n` runs of a log-normal figure with this median and coefficient of variation: the synthetic runs of
    /// the calibration tests (here and in compare.rs), drawn by inverting the normal CDF.
    pub(in crate::report) fn lognormal_runs(rng: &mut StdRng, n: usize, median: f64, cv: f64) -> Vec<f64> {
        let sd = (1.0 + cv * cv).ln().sqrt();
        let normal = Normal::new(median.ln(), sd).unwrap();
        (0..n).map(|_| normal.inverse_cdf(rng.sample(Open01)).exp()).collect()
    }

    /// Seeded, so a calibration figure is the same on every run of the tests.
    pub(in crate::report) fn rng(seed: u64) -> StdRng {
        StdRng::seed_from_u64(seed)
    }

    #[test]
    fn median_and_range() {
        assert_eq!(s(&[3.0, 1.0, 2.0]), Spread { median: 2.0, min: 1.0, max: 3.0, n: 3 });
        assert_eq!(s(&[4.0, 1.0]).median, 2.5);
        assert_eq!(Spread::of_observed([64.0, 16.0]).unwrap().median, 16.0);
        assert_eq!(Spread::of_observed([64.0, 16.0, 32.0]).unwrap().median, 32.0);
        assert!(Spread::of([f64::NAN]).is_none());
    }

    #[test]
    fn welch_on_logs_matches_the_textbook_case() {
        // Logs −1, 0, 1 against 2, 3, 4: variances 1, difference 3, se² = 2/3, and Welch's df exactly 4,
        // whose 97.5 % Student quantile is the table's 2.7764.
        let e = std::f64::consts::E;
        let base = [1.0 / e, 1.0, e];
        let new: Vec<f64> = base.iter().map(|x| x * e.powi(3)).collect();
        let t = log_welch(&base, &new, 0.95).unwrap();
        assert!((t.df - 4.0).abs() < 1e-9);
        assert!((t.ratio - e.powi(3)).abs() < 1e-9);
        let half = 2.7764 * (2.0f64 / 3.0).sqrt();
        assert!((t.ci[0] - (3.0 - half).exp()).abs() < 1e-3 * t.ci[0], "{t:?}");
        assert!((t.ci[1] - (3.0 + half).exp()).abs() < 1e-3 * t.ci[1], "{t:?}");
        // t = 3.67 lies between the table's 2.776 (p = 0.05) and 3.747 (p = 0.02) at 4 df.
        assert!(t.p > 0.02 && t.p < 0.05, "{t:?}");
        // The interval excludes 1 exactly when p is below 1 − level; the test is symmetric in its sides.
        let back = log_welch(&new, &base, 0.95).unwrap();
        assert!((back.p - t.p).abs() < 1e-12 && (back.ratio * t.ratio - 1.0).abs() < 1e-9);
        assert!(log_welch(&base, &new, 0.99).unwrap().ci[0] < 1.0, "p > 0.01: the 99 % interval holds 1");
        assert_eq!(geometric_ratio(&base, &new), Some(t.ratio));
    }

    #[test]
    fn below_the_minimum_there_is_no_test() {
        let three = [100.0, 103.0, 98.0];
        assert_eq!(log_welch(&three[..2], &three, 0.95), Err(Untestable::TooFewRuns));
        assert_eq!(log_welch(&three, &[50.0], 0.95), Err(Untestable::TooFewRuns));
        // Non-finite values are no runs; too few runs is said before zeros.
        assert_eq!(log_welch(&[100.0, f64::NAN, 98.0], &three, 0.95), Err(Untestable::TooFewRuns));
        assert_eq!(log_welch(&[0.0, 0.0], &three, 0.95), Err(Untestable::TooFewRuns));
        assert_eq!(log_welch(&[100.0, 0.0, 98.0], &three, 0.95), Err(Untestable::NotPositive));
        // Flat sides: equal is no change, different cannot be judged.
        let flat = [64.0, 64.0, 64.0];
        assert_eq!(log_welch(&flat, &flat, 0.95).unwrap().p, 1.0);
        assert_eq!(log_welch(&flat, &[65.0, 65.0, 65.0], 0.95), Err(Untestable::NoSpread));
        // One flat side is fine: the other's spread carries the test.
        assert!(log_welch(&flat, &three, 0.95).is_ok());
        // A ratio is still shown where there are too few runs to test it.
        assert!((geometric_ratio(&[100.0], &[50.0]).unwrap() - 0.5).abs() < 1e-12);
        assert_eq!(geometric_ratio(&[100.0], &[0.0]), None);
    }

    #[test]
    fn holm_steps_down() {
        let adj = holm(&[0.01, 0.04, 0.03, 0.005]);
        let want = [0.03, 0.06, 0.06, 0.02];
        assert!(adj.iter().zip(want).all(|(a, w)| (a - w).abs() < 1e-12), "{adj:?}");
        assert_eq!(holm(&[0.5, 0.9]), [1.0, 1.0]);
        assert!(holm(&[]).is_empty());
    }

    #[test]
    fn advice_grows_with_noise_and_meets_its_own_target() {
        let alpha = 0.05 / 13.0;
        let quiet = runs_needed(0.05, 0.05, alpha, POWER).unwrap();
        let noisy = runs_needed(0.10, 0.05, alpha, POWER).unwrap();
        assert!(noisy > quiet && quiet > MIN_RUNS, "{quiet} {noisy}");
        // Twice the noise needs about four times the runs (the t quantiles add a little at small counts).
        assert!((3 * quiet..5 * quiet).contains(&noisy), "{quiet} {noisy}");
        assert!(runs_needed(0.10, 0.10, alpha, POWER).unwrap() < noisy);
        // The smallest count that reaches the target: one run fewer does not.
        assert!(detectable_change(0.10, noisy, alpha, POWER).unwrap() <= 0.05);
        assert!(detectable_change(0.10, noisy - 1, alpha, POWER).unwrap() > 0.05);
        assert_eq!(runs_needed(0.0, 0.05, alpha, POWER), Some(MIN_RUNS));
        assert_eq!(pooled_log_sd(&[1.0], &[2.0]), None);
        let e = std::f64::consts::E;
        // Each side around its own mean: a shift between the sides is no noise.
        assert!((pooled_log_sd(&[1.0 / e, e], &[100.0 / e, 100.0 * e]).unwrap() - 2f64.sqrt()).abs() < 1e-9);
    }

    /// Share of A/A comparisons (both sides from one log-normal distribution) with p below α.
    fn false_positive_rate(n: usize, cv: f64, reps: usize, alpha: f64, seed: u64) -> f64 {
        let mut r = rng(seed);
        let hits = (0..reps)
            .filter(|_| {
                let (a, b) = (lognormal_runs(&mut r, n, 1000.0, cv), lognormal_runs(&mut r, n, 1000.0, cv));
                log_welch(&a, &b, 1.0 - alpha).unwrap().p < alpha
            })
            .count();
        hits as f64 / reps as f64
    }

    #[test]
    fn calibration_a_a_false_positives_stay_within_alpha() {
        for n in [3, 5, 10] {
            let rate = false_positive_rate(n, 0.10, 4000, 0.05, n as u64);
            crate::errln!("A/A, {n} runs a side, CV 10 %: {:.2} % called a change at α = 5 %", rate * 100.0);
            assert!(rate <= 0.05, "{n} runs a side: {rate}");
            // Not a test that never fires: it does say "changed" at about the rate it promises.
            assert!(rate >= 0.03, "{n} runs a side: {rate}");
        }
    }
}

use super::gate::*;
use super::output::*;
use super::*;
use crate::report::stats::tests::{lognormal_runs, rng};
use crate::report::stats::{self, MIN_RUNS, POWER};
use rand::rngs::StdRng;

/// The lines of one service in a compare of a three-step profile: 7 whole-run and 3 × 2 per-step
/// metrics, 13 in all, each drawn from a log-normal with coefficient of variation `cv`; NEW's first
/// line (peak req/s, higher is better) is `shift` times BASE's.
fn family(r: &mut StdRng, runs: usize, cv: f64, shift: f64) -> Vec<Values> {
    let mut out = Vec::new();
    for (i, m) in METRICS.iter().enumerate() {
        let base = lognormal_runs(r, runs, 1000.0, cv);
        let new = lognormal_runs(r, runs, if i == 0 { 1000.0 * shift } else { 1000.0 }, cv);
        out.push(Values::of("svc", None, m, Some(base), Some(new)));
    }
    for step in 1..=3 {
        for m in STEP_METRICS {
            let (base, new) = (lognormal_runs(r, runs, 50.0, cv), lognormal_runs(r, runs, 50.0, cv));
            out.push(Values::of("svc", Some(format!("#{step}")), m, Some(base), Some(new)));
        }
    }
    out
}

fn called(l: &Line) -> bool {
    ["faster", "slower", "smaller", "larger"].contains(&l.verdict.as_str())
}

#[test]
fn calibration_a_a_family_wise_false_verdicts_stay_within_alpha() {
    let (alpha, reps) = (0.05, 2000);
    for runs in [3, 5, 10] {
        let mut r = rng(100 + runs as u64);
        let (mut families, mut lines, mut total) = (0, 0, 0);
        for _ in 0..reps {
            let (judged, tested) = judge(&family(&mut r, runs, 0.10, 1.0), alpha);
            assert_eq!(tested, judged.len());
            let false_calls = judged.iter().filter(|l| called(l)).count();
            families += usize::from(false_calls > 0);
            lines += false_calls;
            total += judged.len();
        }
        let fwer = families as f64 / reps as f64;
        let per_line = lines as f64 / total as f64;
        eprintln!(
            "A/A, {runs} runs a side, CV 10 %, 13 lines with Holm: {:.2} % of comparisons and {:.3} % of lines \
             with a false verdict",
            fwer * 100.0,
            per_line * 100.0
        );
        assert!(fwer <= alpha, "{runs} runs a side: family-wise {fwer}");
        assert!(per_line <= alpha / 13.0, "{runs} runs a side: per line {per_line}");
        // It still says "changed" sometimes: the correction is not a switch that turns verdicts off.
        assert!(fwer >= alpha / 2.0, "{runs} runs a side: family-wise {fwer}");
    }
}

#[test]
fn calibration_a_b_detects_a_shift_at_the_advised_run_count() {
    let (alpha, reps, cv) = (0.05, 2000, 0.05f64);
    let log_sd = (1.0 + cv * cv).ln().sqrt();
    for (shift, seed) in [(0.20, 7), (0.10, 8)] {
        let runs = stats::runs_needed(log_sd, shift, alpha / 13.0, POWER).unwrap();
        let mut r = rng(seed);
        let mut hits = 0;
        for _ in 0..reps {
            let (judged, _) = judge(&family(&mut r, runs, cv, 1.0 + shift), alpha);
            hits += usize::from(judged[0].verdict == "faster");
            // The advice read from the runs themselves asks for about as many.
            assert!(judged[0].advice.as_ref().unwrap().alpha_per_line == alpha / 13.0);
        }
        let power = hits as f64 / reps as f64;
        eprintln!(
            "A/B, +{:.0} % at CV 5 %, {runs} runs a side (the advice), 13 lines with Holm: detected {:.1} %",
            shift * 100.0,
            power * 100.0
        );
        assert!(power >= POWER, "+{shift}: {power} at {runs} runs a side");
        // Nor is it padded wholesale: half as many runs fall well short.
        let half = (runs / 2).max(MIN_RUNS);
        let hits =
            (0..reps).filter(|_| judge(&family(&mut r, half, cv, 1.0 + shift), alpha).0[0].verdict == "faster").count();
        assert!((hits as f64 / reps as f64) < POWER, "+{shift}: {half} runs a side did as well");
    }
}

#[test]
fn below_the_minimum_the_verdict_is_too_few_runs() {
    let mut r = rng(3);
    // A 50 % drop with 2 runs a side: a ratio and advice, but no verdict, no p, and not in the family.
    let mut values = family(&mut r, 2, 0.05, 0.5);
    let (lines, tested) = judge(&values, 0.05);
    assert_eq!(tested, 0);
    for l in &lines {
        assert_eq!(l.verdict, "too few runs", "{l:?}");
        assert!(l.p.is_none() && l.p_adjusted.is_none() && l.regression_pct.is_none());
        assert!(l.note.as_deref().unwrap().contains("2 run(s) in BASE, 2 in NEW"));
    }
    assert!((lines[0].ratio.unwrap() - 0.5).abs() < 0.15, "{:?}", lines[0].ratio);
    let advice = lines[0].advice.as_ref().unwrap();
    assert!(advice.runs_for_5pct.unwrap() >= advice.runs_for_10pct.unwrap());
    assert!(advice_text(&lines[0], advice).unwrap().contains("too few runs to decide (2 a side)"));
    // Three a side on one line only: that line alone is tested, against a family of one.
    values[0].base.as_mut().unwrap().push(1000.0);
    values[0].new.as_mut().unwrap().push(500.0);
    let (lines, tested) = judge(&values, 0.05);
    assert_eq!(tested, 1);
    assert_eq!(lines[0].p, lines[0].p_adjusted);
    assert_eq!(lines[0].verdict, "slower");
    // One side missing, or without values: no test either.
    values[1].new = None;
    values[2].new = Some(vec![]);
    let (lines, _) = judge(&values, 0.05);
    assert_eq!((lines[1].verdict.as_str(), lines[2].verdict.as_str()), ("only in BASE", "no data in NEW"));
    // compare() says why from the runs; no ratio, so no percentage worse.
    assert_eq!(lines[2].regression_pct, None);
}

#[test]
fn fail_on_needs_a_corrected_regression_beyond_the_threshold() {
    let mut r = rng(11);
    // Peak req/s down 30 % with little noise: a corrected "slower" by about 30 %.
    let (lines, _) = judge(&family(&mut r, 5, 0.02, 0.7), 0.05);
    assert_eq!(lines[0].verdict, "slower");
    let worse = lines[0].regression_pct.unwrap();
    assert!((worse - 30.0).abs() < 5.0, "{worse}");
    let rule = |s: &str| vec![parse_fail_on(s).unwrap()];
    assert_eq!(failures(&lines, &rule("peak_rps:10%")).len(), 1);
    assert!(failures(&lines, &rule(&format!("peak_rps:{}%", worse.ceil()))).is_empty());
    assert!(failures(&lines, &rule("cpu_per_req")).is_empty(), "no verdict on the unchanged lines");
    // The same drop under heavy noise with 3 runs: no corrected verdict, so no failure, whatever the ratio.
    let (lines, _) = judge(&family(&mut r, 3, 0.30, 0.7), 0.05);
    assert_eq!(lines[0].verdict, "within noise", "{:?}", lines[0]);
    assert!(failures(&lines, &rule("all")).is_empty());
    assert!(parse_metrics(&["peak_rps,cpu_per_req".into()]).unwrap().len() == 2);
    assert!(parse_metrics(&["all".into()]).unwrap().is_empty());
    assert!(parse_metrics(&["speed".into()]).is_err());
}

fn empty_side() -> Dataset {
    Dataset {
        source: "t.db".into(),
        filter: "all".into(),
        sessions: Vec::new(),
        groups: Vec::new(),
        runs: Vec::new(),
        include_invalid: false,
    }
}

#[test]
fn the_advice_is_sized_for_the_family_the_verdicts_were_corrected_over() {
    let mut r = rng(5);
    // 13 lines; 3 runs a side on the first 9, 2 in BASE on the other 4: those 4 have too few runs.
    let mut values = family(&mut r, 3, 0.05, 1.0);
    for v in values.iter_mut().skip(9) {
        v.base.as_mut().unwrap().pop();
    }
    let (lines, tested) = judge(&values, 0.05);
    assert_eq!(tested, 9);
    assert!(lines.iter().all(|l| l.advice.as_ref().unwrap().alpha_per_line == 0.05 / 9.0));
    let c = Comparison { alpha: 0.05, tested, warnings: vec![], differences: vec![], left_out: vec![], lines };
    let md = markdown(&empty_side(), &empty_side(), &c, None);
    assert!(md.contains("Holm–Bonferroni over the 9 lines tested at family-wise α = 0.05"), "{md}");
    assert!(md.contains("at α = 0.05 / 9 per line, Holm's strictest step over the 9 lines tested"), "{md}");
    // None tested (2 runs a side everywhere): sized for the lines enough runs would test.
    let (lines, tested) = judge(&family(&mut r, 2, 0.05, 1.0), 0.05);
    assert_eq!(tested, 0);
    assert!(lines.iter().all(|l| l.advice.as_ref().unwrap().alpha_per_line == 0.05 / 13.0));
    let c = Comparison { alpha: 0.05, tested, warnings: vec![], differences: vec![], left_out: vec![], lines };
    let md = markdown(&empty_side(), &empty_side(), &c, None);
    assert!(
        md.contains("α = 0.05 / 13 per line, no line could be tested: Holm's strictest step over the 13 lines with values on both sides"),
        "{md}"
    );
}

#[test]
fn a_threshold_that_is_not_a_number_is_refused() {
    let err = |s: &str| parse_fail_on(s).unwrap_err().to_string();
    // Not a finite number: one line saying so (not "must be 0 % or more").
    for s in ["peak_rps:inf%", "peak_rps:1e400%", "cpu_per_req:nan%", "all:-inf%"] {
        assert!(err(s).contains("must be a finite percentage"), "{s}: {}", err(s));
    }
    assert!(err("peak_rps:-5%").contains("must be 0 % or more"));
    assert_eq!(parse_fail_on("peak_rps:99.5%").unwrap().threshold_pct, 99.5);
    // Lower is better: NEW can be 3 times BASE, 200 % worse; higher is better: 100 % or more gates only a
    // service that failed in NEW.
    assert_eq!(parse_fail_on("cpu_per_req:150%").unwrap().threshold_pct, 150.0);
    assert_eq!(parse_fail_on("peak_rps:100%").unwrap().threshold_pct, 100.0);
}

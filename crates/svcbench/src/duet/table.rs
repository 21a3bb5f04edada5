//! The duet's answer on the terminal: one line per step and metric, each side's median beside B/A.
use super::slices::{Metric, Slice};
use super::verdict::{PairedRatio, Verdict};
use crate::report::num_fractional;
use std::fmt::Write;

pub fn render(
    names: [&str; 2],
    labels: &[String],
    lines: &[(u32, Metric, Option<PairedRatio>, Verdict)],
    slices: &[Slice],
    machine_s: f64,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "B/A with B = {}, A = {} (A and B: each side's median over the valid slices, for scale; B/A: B over A in the \
         same second, its 95 % interval over pairs, Holm-corrected verdicts)",
        names[1], names[0]
    );
    let _ = writeln!(
        out,
        "{:<14} {:<12} {:>9} {:>9} {:>7} {:>17}  {:<26} {:>5} {:>6} {:>15}",
        "step", "metric", "A", "B", "B/A", "95 % interval", "verdict", "pairs", "slices", "pairs ranged"
    );
    for (step, metric, r, v) in lines {
        let label = labels.get(*step as usize).map(String::as_str).unwrap_or("?");
        let valid = slices.iter().filter(|s| s.step == *step && s.invalid.is_none());
        let [a, b] = metric
            .side_medians(valid.map(|s| (&s.a, &s.b, s.seconds)))
            .map_or(["-".to_string(), "-".to_string()], |m| m.map(num_fractional));
        let (ratio, interval, pairs, count, ranged) = match r {
            Some(r) => (
                format!("{:.3}", r.ratio),
                format!("[{:.3}, {:.3}]", r.ci[0], r.ci[1]),
                r.pairs.to_string(),
                r.slices.to_string(),
                format!("{:.3}–{:.3}", r.pair_min, r.pair_max),
            ),
            None => ("-".into(), "-".into(), String::new(), String::new(), String::new()),
        };
        let line = format!(
            "{:<14} {:<12} {:>9} {:>9} {:>7} {:>17}  {:<26} {:>5} {:>6} {:>15}",
            label,
            metric.name(),
            a,
            b,
            ratio,
            interval,
            v.text(),
            pairs,
            count,
            ranged
        );
        // A line without an interval ends at its verdict.
        let _ = writeln!(out, "{}", line.trim_end());
    }
    // Only where a shared store was measured: how many slices its guard left out (slices.rs).
    if slices.iter().any(|s| s.store_cpu_s.is_some()) {
        let by_store = slices
            .iter()
            .filter(|s| s.invalid.as_deref().is_some_and(|w| w.starts_with(super::slices::STORE_SATURATED)))
            .count();
        let _ = writeln!(
            out,
            "the store invalidated {by_store} of {} slices (its CPU at {:.0} % or more of what it may use)",
            slices.len(),
            crate::figures::SATURATED * 100.0
        );
    }
    let _ = writeln!(out, "machine time {:.0} s", machine_s);
    out
}

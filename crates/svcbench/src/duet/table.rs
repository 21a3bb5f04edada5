//! The duet's answer on the terminal: one line per step and metric.
use super::slices::Metric;
use super::verdict::{PairedRatio, Verdict};
use std::fmt::Write;

pub fn render(
    names: [&str; 2],
    labels: &[String],
    lines: &[(u32, Metric, Option<PairedRatio>, Verdict)],
    machine_s: f64,
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "B/A with B = {}, A = {} (95 % interval over pairs, Holm-corrected verdicts)",
        names[1], names[0]
    );
    let _ = writeln!(
        out,
        "{:<14} {:<12} {:>7} {:>17}  {:<26} {:>5} {:>6} {:>15}",
        "step", "metric", "B/A", "95 % interval", "verdict", "pairs", "slices", "pairs ranged"
    );
    for (step, metric, r, v) in lines {
        let label = labels.get(*step as usize).map(String::as_str).unwrap_or("?");
        match r {
            Some(r) => {
                let _ = writeln!(
                    out,
                    "{:<14} {:<12} {:>7.3} {:>17}  {:<26} {:>5} {:>6} {:>15}",
                    label,
                    metric.name(),
                    r.ratio,
                    format!("[{:.3}, {:.3}]", r.ci[0], r.ci[1]),
                    v.text(),
                    r.pairs,
                    r.slices,
                    format!("{:.3}–{:.3}", r.pair_min, r.pair_max)
                );
            }
            None => {
                let _ = writeln!(out, "{:<14} {:<12} {:>7} {:>17}  {:<26}", label, metric.name(), "-", "-", v.text());
            }
        }
    }
    let _ = writeln!(out, "machine time {:.0} s", machine_s);
    out
}

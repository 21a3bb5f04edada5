//! What `compare` prints: the comparison as Markdown tables, with its warnings, left-out runs and advice.
use super::*;
use crate::report::data::Dataset;
use crate::report::stats::{Spread, MIN_RUNS, POWER};
use crate::report::table::{num, spread, Cell, Row, Table};
use std::fmt::Write;

pub(super) fn p_value(p: f64) -> String {
    if p < 0.001 {
        "< 0.001".into()
    } else {
        format!("{p:.3}")
    }
}

pub(super) fn ratio_text(r: f64) -> String {
    if r >= 10.0 {
        num(r)
    } else {
        format!("{r:.2}")
    }
}

/// A line's ratio NEW/BASE with its confidence interval where one was worked out: "0.70× [0.62, 0.79]".
pub(in crate::report) fn ratio_with_interval(l: &Line) -> Option<String> {
    match (l.ratio, l.ci) {
        (Some(r), Some([lo, hi])) => Some(format!("{}× [{}, {}]", ratio_text(r), ratio_text(lo), ratio_text(hi))),
        (Some(r), None) => Some(format!("{}×", ratio_text(r))),
        _ => None,
    }
}

/// Runs, BASE, NEW, ratio, p, verdict and advice cells of a row.
pub(super) fn cells(l: &Line) -> Vec<Cell> {
    let fmt =
        |x: &Option<Spread>| x.as_ref().map(|v| format!("{} {}", spread(v), l.unit)).unwrap_or_else(|| "–".into());
    let count = |x: &Option<Spread>| x.map_or("–".to_string(), |s| s.n.to_string());
    let ratio = ratio_with_interval(l).unwrap_or_else(|| "–".into());
    let p = match (l.p, l.p_adjusted) {
        (Some(p), Some(a)) => format!("{} ({})", p_value(p), p_value(a)),
        _ => "–".into(),
    };
    let advice = l
        .advice
        .as_ref()
        .map(|a| {
            let n = |x: Option<usize>| x.map_or("–".to_string(), |n| n.to_string());
            format!("{} / {}", n(a.runs_for_5pct), n(a.runs_for_10pct))
        })
        .unwrap_or_else(|| "–".into());
    let num = |t: String| Cell { text: t, class: "num", ..Cell::default() };
    // A regression stands out (bold in Markdown); a line without a figure says why.
    let text = match (&l.note, l.verdict.as_str()) {
        (Some(why), FAILED_IN_NEW | NOT_JUDGED | "no data") => format!("{}: {why}", l.verdict),
        _ => l.verdict.clone(),
    };
    let verdict = Cell { text, class: if l.regressed() { "fail" } else { "" }, ..Cell::default() };
    vec![
        num(format!("{} / {}", count(&l.base), count(&l.new))),
        num(fmt(&l.base)),
        num(fmt(&l.new)),
        num(ratio),
        num(p),
        verdict,
        num(advice),
    ]
}

/// The lines of one table: the whole-run metrics, or the per-step ones (with the step's column).
pub(super) fn lines_table(lines: &[&Line], per_step: bool, level: &str) -> Table {
    let mut head: Vec<String> = vec!["service".into()];
    if per_step {
        head.push("step".into());
    }
    head.extend(
        [
            "metric",
            "runs B / N",
            "BASE median (min–max)",
            "NEW median (min–max)",
            &format!("NEW/BASE [{level} CI]"),
            "p (Holm)",
            "verdict",
            "runs a side for 5 % / 10 %",
        ]
        .map(String::from),
    );
    let rows = lines
        .iter()
        .map(|l| {
            let title = if per_step {
                STEP_METRICS.iter().find(|m| m.key == l.metric).map(|m| m.title)
            } else {
                METRICS.iter().find(|m| m.key == l.metric).map(|m| m.title)
            };
            let title = title.unwrap_or(l.metric);
            let mut cells = vec![Cell::text(l.service.clone())];
            if per_step {
                cells.push(Cell::text(l.step.clone().unwrap_or_default()));
            }
            cells.push(Cell::text(format!("{title} (`{}`)", l.metric)));
            cells.extend(self::cells(l));
            Row { cells, data: Vec::new() }
        })
        .collect();
    Table { id: "compare".into(), head, rows, ..Table::default() }
}

pub(super) fn side(d: &Dataset) -> String {
    let ids: Vec<String> = d.sessions.iter().map(|s| s.id.to_string()).collect();
    format!("`{}` sessions {} (filter: {})", d.source, ids.join(", "), d.filter)
}

/// "1 interrupted run of go-nethttp in NEW (go-nethttp #3)".
pub(super) fn left_out_text(o: &LeftOut) -> String {
    let runs = if o.runs.len() == 1 { "run" } else { "runs" };
    format!("{} {} {runs} of {} in {} ({})", o.runs.len(), o.status, o.service, o.side, o.runs.join(", "))
}

/// One sentence of advice: can the runs at hand decide, and how many runs would.
pub(super) fn advice_text(l: &Line, a: &Advice) -> Option<String> {
    let runs = l.base?.n.min(l.new?.n);
    let (n5, n10) = (a.runs_for_5pct?, a.runs_for_10pct?);
    let now = match a.detectable_ratio {
        Some(r) => format!(" ({runs} a side are 80 % sure to call only changes beyond ×/÷ {})", ratio_text(r)),
        _ => String::new(),
    };
    let text = if runs < MIN_RUNS {
        format!("too few runs to decide ({runs} a side); about {n5} needed for 5 %, {n10} for 10 %")
    } else if runs >= n5 {
        format!("{runs} runs a side are enough for 5 %")
    } else if runs >= n10 {
        format!("{runs} runs a side are enough for 10 %; about {n5} needed for 5 %")
    } else {
        format!(
            "too noisy to call a 5 % or 10 % change with {runs} runs a side; about {n5} needed for 5 %, {n10} for 10 %"
        )
    };
    Some(format!("noise {:.1} % (log SD): {text}{now}", a.log_sd * 100.0))
}

pub fn markdown(base: &Dataset, new: &Dataset, c: &Comparison, gate: Option<&Gate>) -> String {
    let lines = &c.lines;
    let mut s = String::new();
    let _ = writeln!(s, "## svcbench compare\n");
    for w in &c.warnings {
        let _ = writeln!(s, "> **Warning:** {w}\n");
    }
    let _ = writeln!(s, "- BASE: {}", side(base));
    let _ = writeln!(s, "- NEW: {}", side(new));
    for o in &c.left_out {
        let _ = writeln!(s, "- left out (did not complete): {}", left_out_text(o));
    }
    let level = format!("{:.0} %", (1.0 - c.alpha) * 100.0);
    let whole: Vec<&Line> = lines.iter().filter(|l| l.step.is_none()).collect();
    let per_step: Vec<&Line> = lines.iter().filter(|l| l.step.is_some()).collect();
    // `--metric step_rps` leaves no whole-run line: no empty table for it.
    if !whole.is_empty() || per_step.is_empty() {
        let _ = write!(s, "\n{}", crate::report::markdown::table(&lines_table(&whole, false, &level)));
    }
    if !per_step.is_empty() {
        let _ =
            write!(s, "\n### Per step\n\n{}", crate::report::markdown::table(&lines_table(&per_step, true, &level)));
    }
    let count = |w: &[&str]| lines.iter().filter(|l| w.contains(&l.verdict.as_str())).count();
    // A blank line first: a line right after a table reads as one more row of it.
    let _ = writeln!(
        s,
        "\n{} better, {} worse, {} within noise, {} with too few runs. Verdicts: Welch's t-test on the logs of the \
         per-run values (NEW/BASE is the ratio of geometric means), Holm–Bonferroni over the {} tested at \
         family-wise α = {}; fewer than {MIN_RUNS} counted runs a side is too few (docs/report.md).",
        count(&["faster", "smaller"]),
        count(&["slower", "larger"]),
        count(&["within noise"]),
        count(&["too few runs"]),
        n_lines(c.tested),
        c.alpha
    );
    let advice: Vec<String> = lines
        .iter()
        .filter(|l| l.step.is_none() && ["peak_rps", "cpu_per_req"].contains(&l.metric))
        .filter_map(|l| {
            let a = l.advice.as_ref()?;
            let title = METRICS.iter().find(|m| m.key == l.metric).map(|m| m.title).unwrap_or(l.metric);
            Some(format!("- {}, {title}: {}", l.service, advice_text(l, a)?))
        })
        .collect();
    if !advice.is_empty() {
        let alpha_per_line = lines.iter().find_map(|l| l.advice.as_ref()).map_or(c.alpha, |a| a.alpha_per_line);
        let family = (c.alpha / alpha_per_line).round() as usize;
        let which = if c.tested > 0 {
            format!("Holm's strictest step over the {} tested", n_lines(family))
        } else {
            format!(
                "no line could be tested: Holm's strictest step over the {} with values on both sides",
                n_lines(family)
            )
        };
        let _ = writeln!(s, "\n### Runs needed\n");
        let _ = writeln!(
            s,
            "From the runs' spread on both sides: runs a side to call a change with {:.0} % power at α = {} / {family} \
             per line, {which} (`--metric` narrows them).\n",
            POWER * 100.0,
            c.alpha,
        );
        for a in advice {
            let _ = writeln!(s, "{a}");
        }
    }
    if let Some(g) = gate {
        let _ = writeln!(s, "\n**{}**", g.summary);
        if !g.failures.is_empty() || !g.not_judged.is_empty() {
            let _ = writeln!(s);
        }
        for f in &g.failures {
            let _ = writeln!(s, "- regression: {f}");
        }
        for n in &g.not_judged {
            let _ = writeln!(s, "- not judged: {n}");
        }
    }
    s
}

/// "1 line", "7 lines".
pub(super) fn n_lines(n: usize) -> String {
    format!("{n} line{}", if n == 1 { "" } else { "s" })
}

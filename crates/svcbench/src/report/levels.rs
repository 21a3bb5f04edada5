//! Scenario-specific tables, driven by which step columns vary, never by scenario names:
//! - the request `mix` varies (seed 002's replays): artifact size, RSS at start, and per step its
//!   successful requests/s and the RSS at its end;
//! - the offered `rate` varies (seed 004's first and third tables): average response time with an X where
//!   the service stopped answering, CPU time and peak memory, per offered rate;
//! - `upstream_delay_ms` varies (seed 004's second table): average response time per upstream delay.
//!
//! Plus the scenario's own per-run figures (`run_figure`, e.g. the SQLite file size), when there are any.
//!
//! A cell is the median of the runs' *valid* steps at its level. Where no run's step there was valid (the
//! service was OOM-killed, the generator saturated, …) the figure is still shown, since a seed's table has a
//! cell there, but in parentheses, with the reasons in its hover text: it is not a figure to quote.
use super::data::{median_of, Dataset, Run, StepRow};
use super::stats::Spread;
use super::table::{num, Cell, Row, Table};
use crate::figures::validity::Validity;
use loadgen::LoadModel;

/// The share of requests below which seed 004 wrote X ("stopped answering").
pub const ANSWERING: f64 = 0.9;

/// A column: one step position of the profile, headed by its value of the varying dimension.
struct Column {
    seq: i64,
    value: String,
    head: String,
}

fn columns(d: &Dataset, value: &dyn Fn(&StepRow) -> Option<String>) -> Vec<Column> {
    let mut cols: Vec<(i64, String)> = Vec::new();
    for r in &d.runs {
        for s in &r.steps {
            if let Some(v) = value(s) {
                if !cols.iter().any(|(seq, h)| *seq == s.seq && *h == v) {
                    cols.push((s.seq, v));
                }
            }
        }
    }
    cols.sort_by_key(|(seq, _)| *seq);
    let distinct = {
        let mut v: Vec<&String> = cols.iter().map(|(_, h)| h).collect();
        v.sort();
        v.dedup();
        v.len()
    };
    if distinct < 2 {
        return Vec::new();
    }
    // A value that repeats (e.g. the same mix twice) is told apart by its step number.
    let heads: Vec<String> = cols.iter().map(|(_, h)| h.clone()).collect();
    cols.into_iter()
        .map(|(seq, h)| {
            let head =
                if heads.iter().filter(|x| **x == h).count() > 1 { format!("{h} (step {seq})") } else { h.clone() };
            Column { seq, value: h, head }
        })
        .collect()
}

/// One run's step at a cell's level.
type RunStep<'a> = (&'a Run, &'a StepRow);

/// The group's steps at one column, one per run that reached it.
fn cell_steps<'a>(
    d: &'a Dataset,
    g: usize,
    col: &Column,
    value: &dyn Fn(&StepRow) -> Option<String>,
) -> Vec<RunStep<'a>> {
    d.group_runs(g)
        .filter_map(|r| {
            r.steps.iter().find(|s| s.seq == col.seq && value(s).as_ref() == Some(&col.value)).map(|s| (r, s))
        })
        .collect()
}

/// A step's flags, with its run's "limits not applied". A run that did not complete still lends its steps
/// (a fresh-start level after a death, the steps measured before an interruption); an unlimited one does not.
fn step_validity((run, step): RunStep) -> Validity {
    let mut v = step.validity();
    v.flags
        .extend(run.validity().flags.into_iter().filter(|f| f.code == crate::figures::validity::FlagCode::Unlimited));
    v
}

/// The steps a cell's figure comes from: the valid ones, or, when none is, all of them with the reasons.
fn quotable<'a>(d: &Dataset, steps: &[RunStep<'a>]) -> (Vec<&'a StepRow>, Option<String>) {
    let judged: Vec<(&StepRow, Validity)> = steps.iter().map(|rs| (rs.1, step_validity(*rs))).collect();
    let valid: Vec<&StepRow> = judged.iter().filter(|(_, v)| d.include_invalid || v.valid()).map(|(s, _)| *s).collect();
    if !valid.is_empty() {
        return (valid, None);
    }
    let mut why: Vec<String> = judged.iter().map(|(_, v)| v.summary()).collect();
    why.sort();
    why.dedup();
    (judged.into_iter().map(|(s, _)| s).collect(), Some(why.join("; ")))
}

/// A cell's figure from the quotable steps; in parentheses when it comes from steps that were not valid.
fn quoted_cell(d: &Dataset, steps: &[RunStep], cell: &dyn Fn(&[&StepRow]) -> Cell) -> Cell {
    if steps.is_empty() {
        return Cell::text("");
    }
    let (steps, not_valid) = quotable(d, steps);
    let c = cell(&steps);
    match not_valid {
        None => c,
        Some(why) => Cell { text: format!("({})", c.text), ..c }.class("warn").title(format!("not valid: {why}")),
    }
}

/// What the tables' notes say of figures in parentheses.
const NOT_VALID_NOTE: &str = "In parentheses: no run's step at that level was valid (the Validity section says why); \
                              not a figure to quote.";

/// Median average response time, or X when the median run had fewer than 90 % successes. X is the
/// service's own verdict: a step the service failed itself (OOM kill, crash, growing backlog, starved
/// connections) still shows it plainly; only steps whose measurement failed (generator, machine,
/// dependency, limits) leave it in parentheses.
fn response_cell(d: &Dataset, steps: &[RunStep]) -> Cell {
    let sound: Vec<&StepRow> = steps
        .iter()
        .filter(|rs| d.include_invalid || step_validity(**rs).service_failures_only())
        .map(|(_, s)| *s)
        .collect();
    let all: Vec<&StepRow> = steps.iter().map(|(_, s)| *s).collect();
    let judged = if sound.is_empty() { &all } else { &sound };
    let ok = Spread::of(judged.iter().map(|s| s.success_ratio())).map(|s| s.median).unwrap_or(0.0);
    if ok < ANSWERING {
        let x = Cell::text("X").class("fail").title(format!("{:.0} % of the requests succeeded", ok * 100.0));
        return if sound.is_empty() { quoted_cell(d, steps, &|_| x.clone()) } else { x };
    }
    quoted_cell(d, steps, &|v| {
        let mean = median_of(v, |s| s.mean_ms);
        Cell::num(mean).data("value", mean.map(|v| v.to_string()).unwrap_or_default())
    })
}

fn level_table(
    d: &Dataset,
    id: &str,
    caption: String,
    note: &str,
    cols: &[Column],
    value: &dyn Fn(&StepRow) -> Option<String>,
    cell: &dyn Fn(&[RunStep]) -> Cell,
) -> Table {
    let mut t = Table {
        id: id.into(),
        caption,
        note: format!("{note} {NOT_VALID_NOTE}"),
        head: std::iter::once("service".to_string()).chain(cols.iter().map(|c| c.head.clone())).collect(),
        rows: Vec::new(),
    };
    for (g, grp) in d.groups.iter().enumerate() {
        let mut cells = vec![Cell::header(grp.name.clone())];
        for c in cols {
            let steps = cell_steps(d, g, c, value);
            cells.push(if steps.is_empty() { Cell::text("") } else { cell(&steps) });
        }
        t.rows.push(Row { cells, data: vec![("service".into(), grp.name.clone())] });
    }
    t
}

pub fn tables(d: &Dataset) -> Vec<Table> {
    let mut out = Vec::new();

    let mix = |s: &StepRow| Some(s.mix.clone());
    let cols = columns(d, &mix);
    if !cols.is_empty() {
        let mut t = Table {
            id: "by-mix".into(),
            caption: "Per request mix".into(),
            note: format!(
                "As seed 002's replays: RSS at start is read 1 s after startup; \"RSS after\" is the last sampler \
                 reading of the step (20 Hz), the peak RSS during the step is in the hover text. Medians over runs. \
                 {NOT_VALID_NOTE}"
            ),
            head: vec!["service".into(), "artifact (MiB)".into(), "RSS at start (MiB)".into()],
            rows: Vec::new(),
        };
        for c in &cols {
            t.head.push(format!("{}: success req/s", c.head));
            t.head.push(format!("{}: requests", c.head));
            t.head.push(format!("{}: RSS after (MiB)", c.head));
        }
        for (g, grp) in d.groups.iter().enumerate() {
            let idle = Spread::of(d.group_runs(g).filter_map(|r| r.idle_rss_mib)).map(|s| s.median);
            let mut cells = vec![
                Cell::header(grp.name.clone()),
                Cell::num(grp.service.artifact_bytes.map(|b| b as f64 / (1u64 << 20) as f64)),
                Cell::num(idle),
            ];
            for c in &cols {
                let steps = cell_steps(d, g, c, &mix);
                cells.push(quoted_cell(d, &steps, &|v| Cell::num(median_of(v, |s| Some(s.success_rps)))));
                cells.push(quoted_cell(d, &steps, &|v| Cell::num(median_of(v, |s| Some(s.requests_ok as f64)))));
                cells.push(quoted_cell(d, &steps, &|v| {
                    let rss = Cell::num(median_of(v, |s| s.rss_end_mib));
                    match median_of(v, |s| s.rss_peak_mib) {
                        Some(p) => rss.title(format!("peak RSS during the step: {} MiB", num(p))),
                        None => rss,
                    }
                }));
            }
            t.rows.push(Row { cells, data: vec![("service".into(), grp.name.clone())] });
        }
        out.push(t);
    }

    let rate = |s: &StepRow| {
        let m = s.load().filter(|m| m.axis() == loadgen::LoadAxis::OfferedRate)?;
        Some(format!("{} req/s", num(m.load())))
    };
    let cols = columns(d, &rate);
    if !cols.is_empty() {
        let x_note = "Medians over runs. X: fewer than 90 % of the offered requests succeeded (the service stopped answering); blank: not reached.";
        out.push(level_table(
            d,
            "by-rate-response",
            "Average response time (ms) per offered rate".into(),
            x_note,
            &cols,
            &rate,
            &|v| response_cell(d, v),
        ));
        out.push(level_table(
            d,
            "by-rate-cpu",
            "CPU time (s) per offered rate".into(),
            "CPU-seconds the service used during the step. Medians over runs.",
            &cols,
            &rate,
            &|v| quoted_cell(d, v, &|v| Cell::num(median_of(v, |s| s.cpu_s))),
        ));
        out.push(level_table(
            d,
            "by-rate-mem",
            "Peak memory (MiB) per offered rate".into(),
            "The cgroup's memory high-water mark up to the end of the step. Medians over runs.",
            &cols,
            &rate,
            &|v| quoted_cell(d, v, &|v| Cell::num(median_of(v, |s| s.mem_peak_mib))),
        ));
    }

    let delay = |s: &StepRow| s.upstream_delay_ms.map(|d| format!("{} ms", num(d as f64)));
    let cols = columns(d, &delay);
    if !cols.is_empty() {
        out.push(level_table(
            d,
            "by-delay-response",
            "Average response time (ms) per upstream delay".into(),
            "How the service copes with a slow dependency. Medians over runs. X: fewer than 90 % of the requests succeeded.",
            &cols,
            &delay,
            &|v| response_cell(d, v),
        ));
    }

    let mut names: Vec<&str> = d.runs.iter().flat_map(|r| r.figures.iter().map(|(n, _)| n.as_str())).collect();
    names.sort();
    names.dedup();
    if !names.is_empty() {
        let mut t = Table {
            id: "figures".into(),
            caption: "Scenario figures".into(),
            note: "Figures the scenario's dependencies report after each run (medians over runs).".into(),
            head: std::iter::once("service".to_string()).chain(names.iter().map(|n| n.to_string())).collect(),
            rows: Vec::new(),
        };
        for (g, grp) in d.groups.iter().enumerate() {
            let mut cells = vec![Cell::header(grp.name.clone())];
            for n in &names {
                let v =
                    Spread::of(d.group_runs(g).flat_map(|r| r.figures.iter().filter(|(k, _)| k == n).map(|(_, v)| *v)));
                cells.push(Cell::num(v.map(|s| s.median)));
            }
            t.rows.push(Row { cells, data: vec![("service".into(), grp.name.clone())] });
        }
        out.push(t);
    }
    out
}

/// Successful requests/s per load step (median over runs): the Markdown report's stand-in for chart 3.
pub fn rps_by_step(d: &Dataset) -> Option<Table> {
    let label = |s: &StepRow| Some(s.label.clone());
    let mut cols: Vec<Column> = Vec::new();
    for r in &d.runs {
        for s in &r.steps {
            if !cols.iter().any(|c| c.seq == s.seq) {
                cols.push(Column { seq: s.seq, value: s.label.clone(), head: s.label.clone() });
            }
        }
    }
    if cols.is_empty() {
        return None;
    }
    cols.sort_by_key(|c| c.seq);
    let heads: Vec<String> = cols.iter().map(|c| c.head.clone()).collect();
    for c in &mut cols {
        if heads.iter().filter(|h| **h == c.head).count() > 1 {
            c.head = format!("{} (step {})", c.head, c.seq);
        }
    }
    Some(level_table(
        d,
        "rps-by-step",
        "Successful requests/s per step".into(),
        "Median over runs.",
        &cols,
        &label,
        &|v| quoted_cell(d, v, &|v| Cell::num(median_of(v, |s| Some(s.success_rps)))),
    ))
}

//! A study's page (docs/study.md): its question and cells, one round table per limits cell (every service
//! and variant with its figures and a verdict against the round's best, by compare's statistic), the SLO
//! sizing when the study has an SLO (sizing.rs), then the full report of its runs (one chart series per variant).
use super::charts::Chart;
use super::compare::{judge, Values};
use super::data::Dataset;
use super::summary::{group_summaries, run_figures, GroupSummary};
use super::table::{num, Cell, Row, Table};
use crate::study::file::Study;
use anyhow::{bail, Result};
use std::path::Path;

/// The study's own section, rendered above the report's usual ones.
pub struct StudySection {
    pub title: String,
    pub paragraphs: Vec<String>,
    pub tables: Vec<Table>,
    pub charts: Vec<Chart>,
}

/// Family-wise false-positive rate of a round's verdicts (as `compare`'s default).
const ALPHA: f64 = 0.05;

/// Renders the study's page (HTML) and its Markdown beside it, from what the store holds of the study.
pub fn write(db: &Path, study: &Study, html_path: &Path) -> Result<()> {
    let reader = super::data::open(db)?;
    let filter = super::filter::Filter::parse(&[format!("label={}", study.name)])?;
    let mut d = super::data::load(&reader, &db.display().to_string(), &filter, true)?;
    if d.runs.is_empty() {
        bail!(
            "{} holds no runs of study `{}` yet; run `svcbench study {}` first",
            db.display(),
            study.name,
            study.path.display()
        );
    }
    d.include_invalid = false;
    let section = section(&d, study);
    let mut report = super::build(d, 0.0275);
    report.study = Some(section);
    report.duets = super::duets::sections(&reader, &filter)?;
    super::write_output(html_path, &super::html::render(&report))?;
    let md = html_path.with_extension("md");
    super::write_output(&md, &super::markdown::render(&report))?;
    crate::errln!("svcbench: study report written to {} and {}", html_path.display(), md.display());
    Ok(())
}

pub(super) fn section(d: &Dataset, study: &Study) -> StudySection {
    let sums = group_summaries(d, 0.0275);
    let keys: Vec<String> = study.cells.iter().map(crate::cell::AxisCell::key).collect();
    let multi = keys.len() > 1;
    let mut paragraphs = vec![format!("Question: {}", study.file.question)];
    if let Some(seed) = &study.file.seed {
        paragraphs.push(format!("The seed: {seed}"));
    }
    let sessions = d.sessions.len();
    let noisy: usize = d.sessions.iter().map(|s| s.warnings.len()).sum();
    paragraphs.push(format!(
        "{} service(s) and variant(s) × {} limits cell(s) × {} run(s), profile `{}`, from {sessions} session(s){}. \
         Figures are medians over the counted runs (completed, or ended by the service, under the limits asked) \
         of each run's peak among its valid steps; the verdict compares each row with the round's best on peak req/s (Welch's test on \
         the logs, Holm-corrected over the round at α = {ALPHA}).",
        d.groups.iter().map(|g| &g.service.name).collect::<std::collections::BTreeSet<_>>().len(),
        keys.len(),
        study.runs,
        study.profile,
        if noisy > 0 { format!("; {noisy} machine warning(s) recorded, see Setup") } else { String::new() }
    ));
    paragraphs.extend(machines_warning(d));
    let mut tables = Vec::new();
    for key in &keys {
        let groups: Vec<usize> =
            (0..d.groups.len()).filter(|&g| !multi || d.groups[g].cell.as_deref() == Some(key.as_str())).collect();
        if groups.is_empty() {
            continue;
        }
        tables.push(round_table(d, &sums, &groups, if multi { Some(key) } else { None }));
    }
    let mut charts = Vec::new();
    if let Some(slo) = &study.file.slo {
        tables.push(super::sizing::table(d, slo, &keys));
        charts.extend(super::sizing::chart(d, slo, &study.file.limits.cpus));
    }
    StudySection { title: study.file.title.clone(), paragraphs, tables, charts }
}

/// A study resumed over sessions on different CPU models pools their runs in each row: said above the
/// rounds, with which session ran where, since a figure's spread is then partly the machines' (CPU time
/// per request most of all: the same service's differed 1.8× between two models of this project's VMs).
fn machines_warning(d: &Dataset) -> Option<String> {
    let mut by_model: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
    for s in &d.sessions {
        by_model.entry(s.cpu_model.as_deref().unwrap_or("an unrecorded CPU")).or_default().push(s.id.to_string());
    }
    if by_model.len() < 2 {
        return None;
    }
    let each: Vec<String> = by_model
        .iter()
        .map(|(model, ids)| format!("{model} (session{} {})", if ids.len() > 1 { "s" } else { "" }, ids.join(", ")))
        .collect();
    Some(format!(
        "Warning: its sessions ran on {} CPU models, {}: each row pools runs of different machines, so its \
         ranges are partly the machines' (CPU time per request most of all); a report filtered by session \
         (`--filter session=…`) shows one machine's.",
        by_model.len(),
        each.join("; ")
    ))
}

/// The runs cell, and beside it how many steps of those runs the peak leaves out: a row whose peak rests on
/// a few valid steps reads as slower in the round, and the reader should see that next to its verdict.
fn runs_and_steps_cell(d: &Dataset, g: usize, s: &GroupSummary) -> Cell {
    let runs = super::sections::runs_cell(s);
    let (left_out, steps) = steps_left_out_of(d, g);
    if left_out == 0 {
        return runs;
    }
    let why = format!("steps left out of the peak: {}", s.steps_left_out.join("; "));
    let title = runs.title.map_or(why.clone(), |t| format!("{t}\n{why}"));
    Cell::text(format!("{}; {left_out} of {steps} steps left out", runs.text)).class("warn").title(title)
}

/// Steps not valid, and all steps, of the runs that enter a group's figures (as the summary counts them).
fn steps_left_out_of(d: &Dataset, g: usize) -> (usize, usize) {
    let runs = d.group_runs(g).filter(|r| d.include_invalid || r.enters_figures());
    let steps: Vec<bool> = runs.flat_map(|r| r.steps.iter().map(|s| s.validity().valid())).collect();
    let left_out = if d.include_invalid { 0 } else { steps.iter().filter(|v| !**v).count() };
    (left_out, steps.len())
}

/// Per-run peak req/s of a group (its counted runs), what the verdict tests.
fn peaks(d: &Dataset, g: usize) -> Vec<f64> {
    d.counted_runs(g).filter_map(|r| run_figures(r, 0.0, false).peak_rps).collect()
}

fn round_table(d: &Dataset, sums: &[GroupSummary], groups: &[usize], cell: Option<&str>) -> Table {
    let valid = groups.iter().filter(|&&g| sums[g].peak_rps.is_some()).count();
    let best = groups
        .iter()
        .copied()
        .filter(|&g| sums[g].peak_rps.is_some())
        .max_by(|&a, &b| sums[a].peak_rps.unwrap().median.total_cmp(&sums[b].peak_rps.unwrap().median));
    let values: Vec<Values> = groups
        .iter()
        .filter(|&&g| Some(g) != best)
        .map(|&g| Values {
            service: d.groups[g].name.clone(),
            step: None,
            metric: "peak_rps",
            unit: "req/s",
            higher_is_better: true,
            speed: true,
            base: best.map(|b| peaks(d, b)),
            new: Some(peaks(d, g)),
        })
        .collect();
    let (lines, _) = judge(&values, ALPHA);
    let head = [
        "service",
        "variant",
        "framework",
        "runs",
        "peak req/s",
        "at",
        "CPU µs/req",
        "peak memory MiB",
        "startup ms",
        "failed requests",
        "vs the round's best",
    ];
    let mut t = Table {
        id: format!("round-{}", cell.unwrap_or("all").replace([' ', '=', '.'], "-")),
        caption: match cell {
            Some(c) => format!("Round under {c}"),
            None => "The round".into(),
        },
        note: "peak req/s: median over runs of each run's highest valid step (range below); at: its connections \
               (closed model) or offered req/s (open); failed requests: median per run over all its steps. Runs \
               left out of the figures are counted in the Validity section. Steps left out are not in the peak (the \
               summary says why): where the load generator, a dependency or the machine failed them, the service \
               may serve more than its peak says. vs the round's best: the ratio with its own 95 % interval; the \
               verdict is Holm-corrected over the round's rows, so an interval that leaves out 1 can still be within \
               noise (`compare` gives each p)."
            .into(),
        head: head.map(String::from).to_vec(),
        rows: Vec::new(),
    };
    if valid < groups.len() {
        t.note.push_str(
            " A row has no valid peak: the highest is the only valid peak or the best of the valid peaks, not the \
             round's best.",
        );
    }
    for &g in groups {
        let grp = &d.groups[g];
        let s = &sums[g];
        let failed = crate::figures::median(
            d.counted_runs(g).map(|r| r.steps.iter().map(|x| x.requests_err).sum::<i64>() as f64),
        );
        let verdict = if !grp.service.build_ok && d.group_runs(g).next().is_none() {
            // Its build failed: no run to judge, but the round still names it.
            Cell::text("build failed").class("fail").title(grp.service.build_error.clone().unwrap_or_default())
        } else if Some(g) == best {
            // The round's best only when every row has a peak to be beaten by: beside a row without one (its
            // build failed, no valid step), the highest is not called the winner, nor coloured as one.
            match (valid, groups.len()) {
                (v, n) if v == n => Cell::text("best").class("ok"),
                (1, _) => Cell::text("only valid peak"),
                _ => Cell::text("best of the valid peaks"),
            }
        } else {
            match lines.iter().find(|l| l.service == grp.name) {
                Some(l) => {
                    // The interval with the ratio: a ratio far from 1 can still be within noise.
                    let ratio = super::compare::ratio_with_interval(l).map(|r| format!("{r} ")).unwrap_or_default();
                    let class = if l.verdict == "slower" { "fail" } else { "num" };
                    // compare's sides are BASE and NEW; here the round's best and this row.
                    let word = match l.verdict.as_str() {
                        // "only in NEW": no row has a valid peak, so there is no best to compare with.
                        "no data in NEW" | "no data" | "only in NEW" => "no valid peak",
                        "no data in BASE" => "the best has no valid peak",
                        w => w,
                    };
                    let mut c = Cell::text(format!("{ratio}{word}")).class(class);
                    if let Some(n) = &l.note {
                        c = c.title(n.clone());
                    }
                    c
                }
                None => Cell::text("–"),
            }
        };
        let at = s.peak_at.map(|a| {
            if s.peak_at_rate {
                format!("{} req/s", num(a.median))
            } else {
                format!("c={}", num(a.median))
            }
        });
        t.rows.push(Row {
            cells: vec![
                Cell::header(grp.service.base_name.clone()),
                Cell::text(grp.service.variant.clone().unwrap_or_else(|| "(base)".into())),
                Cell::text(format!("{} {}", grp.service.framework, grp.service.framework_version).trim().to_string()),
                runs_and_steps_cell(d, g, s),
                Cell::spread("peak_rps", s.peak_rps),
                Cell::text(at.unwrap_or_else(|| "–".into())),
                Cell::spread("cpu_us_per_req", s.cpu_us_per_req),
                Cell::spread("peak_mem_mib", s.peak_mem_mib),
                Cell::spread("startup_ms", s.startup_ms),
                Cell::num(failed),
                verdict,
            ],
            data: vec![("service".into(), grp.name.clone())],
        });
    }
    t
}

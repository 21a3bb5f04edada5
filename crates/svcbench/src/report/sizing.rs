//! A study's sizing (docs/study.md): whether each service holds the study's SLO in each limits cell, the
//! smallest cell that holds, and the SLO's p99 over the CPU axis. A run's death under its limits is the
//! service's answer there (it does not hold), not a lost measurement; only a measurement that failed
//! (an interrupted run, limits not applied, a step flagged only for the generator or the machine) leaves
//! a run unjudged.
use super::charts::{self, Axis, Chart, Point, Series};
use super::data::{Dataset, Run, StepRow};
use super::table::{num, Cell, Row, Table};
use crate::study::file::Slo;
use loadgen::{LoadAxis, LoadModel};

/// What one run says of the SLO.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Verdict {
    /// Its step at the rate met every objective; its p99 there.
    Held(Option<f64>),
    /// Its step at the rate missed (its p99 there), or the service failed or died before reaching the rate.
    Missed(Option<f64>),
}

/// Whether the rate is reached: the offered rate where the load is one, else the answered req/s.
fn reaches(s: &StepRow, slo: &Slo) -> bool {
    match s.load().map(|m| (m.axis(), m.load())) {
        Some((LoadAxis::OfferedRate, rate)) => slo.reached_by_offered(rate),
        _ => s.success_rps >= slo.at_rps,
    }
}

/// One run's verdict at its lowest step reaching the rate whose measurement held (a valid step, or one
/// flagged only for the service's own failures); None when its steps at the rate were all unsound.
fn judge_run(run: &Run, slo: &Slo, include_invalid: bool) -> Option<Verdict> {
    let load = |s: &StepRow| s.load().map_or(0.0, |m| m.load());
    let judged = run
        .steps
        .iter()
        .filter(|s| reaches(s, slo))
        .filter(|s| include_invalid || s.validity().service_failures_only())
        .min_by(|a, b| load(a).total_cmp(&load(b)));
    match judged {
        Some(s) => {
            let p99_ok = slo.p99_ms.is_none_or(|lim| s.p99.is_some_and(|p| p <= lim));
            let ok_ok = slo.success.is_none_or(|min| s.success_ratio() >= min);
            let held = p99_ok && ok_ok && (include_invalid || s.validity().valid());
            Some(if held { Verdict::Held(s.p99) } else { Verdict::Missed(s.p99) })
        }
        // Nothing sound at the rate: the measurement's failure when a step there exists; otherwise the run
        // ended below the rate, the service's failure (it died, or the profile's stop rule ended it).
        None => (!run.steps.iter().any(|s| reaches(s, slo))).then_some(Verdict::Missed(None)),
    }
}

/// A group's judgement: held, its median p99 at the rate, and how many of its judged runs held.
struct GroupSlo {
    held: bool,
    p99: Option<f64>,
    runs_held: usize,
    runs_judged: usize,
}

/// A group holds the SLO when more than half of its judged runs do (so a ✓ never rests on a tie, and its
/// median p99 is within the objective); the runs judged are the counted ones and those the service ended.
fn group_slo(d: &Dataset, g: usize, slo: &Slo) -> Option<GroupSlo> {
    let verdicts: Vec<Verdict> = d.counted_runs(g).filter_map(|r| judge_run(r, slo, d.include_invalid)).collect();
    if verdicts.is_empty() {
        return None;
    }
    let runs_held = verdicts.iter().filter(|v| matches!(v, Verdict::Held(_))).count();
    let p99 = crate::figures::median(verdicts.iter().filter_map(|v| match v {
        Verdict::Held(p) | Verdict::Missed(p) => *p,
    }));
    Some(GroupSlo { held: runs_held * 2 > verdicts.len(), p99, runs_held, runs_judged: verdicts.len() })
}

fn slo_text(slo: &Slo) -> String {
    let mut parts = Vec::new();
    if let Some(p) = slo.p99_ms {
        parts.push(format!("p99 ≤ {} ms", num(p)));
    }
    if let Some(s) = slo.success {
        parts.push(format!("≥ {} % answered successfully", s * 100.0));
    }
    format!("{} at {} req/s", parts.join(" and "), num(slo.at_rps))
}

/// The cells of a service no run was judged in: a smaller one might hold, and a service judged nowhere has
/// not failed everywhere.
#[derive(Default)]
struct Unjudged {
    all: usize,
    /// Those before the first cell that holds (smaller limits).
    smaller: usize,
}

impl Unjudged {
    fn count(&mut self, after_a_hold: bool) {
        self.all += 1;
        if !after_a_hold {
            self.smaller += 1;
        }
    }

    /// The last column: the smallest limits that hold, saying which cells went unjudged.
    fn answer(&self, smallest: Option<String>, cells: usize) -> String {
        match smallest {
            Some(key) if self.smaller > 0 => format!("{key} ({} smaller not judged)", self.smaller),
            Some(key) => key,
            None if self.all == cells => "not judged in any cell".into(),
            None if self.all > 0 => format!("none of those judged ({} not judged)", self.all),
            None => "none of these".into(),
        }
    }
}

/// Services × cells: whether each holds the SLO, and the smallest limits at which it does.
pub fn table(d: &Dataset, slo: &Slo, keys: &[String]) -> Table {
    let mut services: Vec<String> = Vec::new();
    for g in &d.groups {
        if !services.contains(&g.service.name) {
            services.push(g.service.name.clone());
        }
    }
    let mut head = vec!["service".to_string()];
    head.extend(keys.iter().cloned());
    head.push("smallest limits that hold".into());
    let mut t = Table {
        id: "sizing".into(),
        caption: format!("Sizing: {}", slo_text(slo)),
        note: "Per cell: ✓ when more than half of the runs judged hold the SLO at their lowest step reaching the \
               rate, ✗ when they do not, with the median p99 there and how many runs held. A run that died under \
               its limits is judged: it does not hold. \"not reached\": no run measured a step at the rate (the \
               service failed or died below it). A run is not judged when its measurement failed (interrupted, \
               limits not applied, its steps at the rate flagged for the generator or the machine); a cell with \
               no run judged shows –. Cells are ordered by CPU quota, then memory cap (then links): the first \
               that holds is the sizing answer, with the smaller cells not judged counted beside it (one of \
               them might hold)."
            .into(),
        head,
        rows: Vec::new(),
    };
    for svc in &services {
        let mut cells = vec![Cell::header(svc.clone())];
        let mut smallest = None;
        let mut unjudged = Unjudged::default();
        for key in keys {
            let g = d
                .groups
                .iter()
                .position(|g| &g.service.name == svc && (keys.len() == 1 || g.cell.as_deref() == Some(key)));
            let Some(j) = g.and_then(|g| group_slo(d, g, slo)) else {
                unjudged.count(smallest.is_some());
                cells.push(Cell::text("–"));
                continue;
            };
            let figure = j.p99.map(|p| format!("{} ms", num(p))).unwrap_or_else(|| "not reached".into());
            let text = format!("{} {figure} · {}/{}", if j.held { "✓" } else { "✗" }, j.runs_held, j.runs_judged);
            cells.push(if j.held {
                smallest.get_or_insert(key.clone());
                Cell::text(text).class("ok")
            } else {
                Cell::text(text).class("fail")
            });
        }
        cells.push(Cell::text(unjudged.answer(smallest, keys.len())));
        t.rows.push(Row { cells, data: vec![("service".into(), svc.clone())] });
    }
    t
}

/// The SLO figure (median p99 at the rate) over the CPU axis: one line per service and memory cap.
pub fn chart(d: &Dataset, slo: &Slo, cpus: &[f64]) -> Option<Chart> {
    if cpus.len() < 2 {
        return None;
    }
    let mut series: Vec<Series> = Vec::new();
    for (g, grp) in d.groups.iter().enumerate() {
        let Some(cell) = &grp.cell else { continue };
        let asked = |f: fn(&Run) -> Option<f64>| crate::figures::median(d.group_runs(g).filter_map(f));
        let (Some(quota), memory) = (asked(|r| r.asked_cpus), asked(|r| r.asked_memory_mib)) else { continue };
        let mut line = match memory {
            Some(m) => format!("{} {} MiB", grp.service.name, num(m)),
            None => grp.service.name.clone(),
        };
        // With a link axis, a line per links entry too.
        if let Some(links) = crate::cell::links_of_key(cell) {
            line = format!("{line} {links}");
        }
        let Some(p99) = group_slo(d, g, slo).and_then(|j| j.p99) else { continue };
        let idx = match series.iter().position(|s| s.run == line) {
            Some(i) => i,
            None => {
                series.push(Series {
                    group: grp.service.name.clone(),
                    run: line,
                    color: charts::color(series.len()),
                    points: Vec::new(),
                });
                series.len() - 1
            }
        };
        series[idx].points.push(Point { x: quota, y: p99, step: cell.clone(), flag: None });
    }
    for s in &mut series {
        s.points.sort_by(|a, b| a.x.total_cmp(&b.x));
    }
    (!series.is_empty()).then(|| Chart {
        id: "slo".into(),
        title: format!("p99 at {} req/s over the CPU quota", num(slo.at_rps)),
        note: format!(
            "Median p99 of the runs judged, at their lowest step reaching the rate; one line per service and \
             memory cap. The SLO: {}.",
            slo_text(slo)
        ),
        kind: "line",
        x: Axis { name: "CPU quota".into(), scale: "linear", unit: "CPUs".into(), categories: Vec::new() },
        y: Axis { name: "p99".into(), scale: "log", unit: "ms".into(), categories: Vec::new() },
        series,
    })
}

//! The third phase of a session: its runs, interleaved (runner/plan.rs), each under its cell's limits and
//! links, with the time left said between them.
use super::run::{run_one, CellRun, RunStatus};
use super::{plan, progress, SessionCtx, SessionSummary};
use crate::cell::AxisCell;
use crate::manifest::Service;
use crate::network::Network;
use anyhow::Result;
use std::sync::atomic::Ordering;

pub fn run_all(
    ctx: &mut SessionCtx,
    ready: &[Service],
    cells: &[AxisCell],
    mut network: Option<&mut Network>,
) -> Result<SessionSummary> {
    let mut summary = SessionSummary { session_id: ctx.session_id, ..Default::default() };
    let names: Vec<String> = ready.iter().map(|s| s.name().to_string()).collect();
    let keys: Vec<String> = cells.iter().map(AxisCell::key).collect();
    let todo = plan::plan(&names, &keys, ctx.opts.plan.runs, &ctx.opts.plan.completed);
    let mut left = progress::TimeLeft::new(todo.len(), progress::estimate(1, ctx.profile.total_duration()));
    for (i, p) in todo.iter().enumerate() {
        if ctx.stop.load(Ordering::Relaxed) {
            break;
        }
        let svc = &ready[p.service];
        let spec = &cells[p.cell];
        if let (Some(n), Some(links)) = (network.as_deref_mut(), &spec.links) {
            n.set_links(links);
        }
        let cell = CellRun { limits: &spec.limits, key: &keys[p.cell], of: cells.len() };
        ctx.later_runs = left.after_this_run();
        let (status, err) = run_one(ctx, svc, &cell, p.run_index)?;
        match status {
            RunStatus::Completed => summary.runs_ok += 1,
            RunStatus::Interrupted => summary.runs_interrupted += 1,
            RunStatus::Failed => {
                summary.runs_failed += 1;
                let why = err.clone().unwrap_or_else(|| "failed".into());
                match summary.failed_runs.iter_mut().find(|f| f.0 == svc.name()) {
                    Some(f) => f.1 += 1,
                    None => summary.failed_runs.push((svc.name().to_string(), 1, why)),
                }
            }
        }
        if let Some(e) = err {
            crate::errln!("svcbench: {} run {} {}: {e}", svc.name(), p.run_index, status.as_str());
        }
        if todo.len() > 1 && i + 1 < todo.len() && !ctx.stop.load(Ordering::Relaxed) {
            crate::errln!("svcbench: {}", left.run_done());
        }
    }
    summary.interrupted = ctx.stop.load(Ordering::Relaxed);
    Ok(summary)
}

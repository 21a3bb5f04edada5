//! One run: a fresh sandboxed process of the service under its cell's limits, its startup time and idle
//! memory, the scenario's conformance checks, then the profile's steps (runner/step.rs), each stored as it
//! ends; a death under the limits is recorded as the run's outcome.
use super::{step, SessionCtx};
use crate::manifest::Service;
use crate::sandbox::Limits;
use crate::service::instance::{Instance, StartSpec, StuckAtMemoryCap};
use crate::store::DeathCause;
use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The limits a run is measured under, and their key in the store.
pub struct CellRun<'a> {
    pub limits: &'a Limits,
    pub key: &'a str,
    /// How many cells the session has (one: the key is not shown).
    pub of: usize,
}

/// How a run ended, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    Completed,
    Interrupted,
    Failed,
}

impl RunStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Completed => "completed",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Failed => "failed",
        }
    }
}

/// How long a service is left idle after startup before its idle memory is read.
const IDLE_SETTLE: Duration = Duration::from_millis(1000);

pub fn start_spec<'a>(
    ctx: &'a SessionCtx,
    svc: &Service,
    limits: &'a Limits,
    what: &str,
    placeholders: &'a BTreeMap<String, String>,
    overrides: &'a BTreeMap<String, String>,
) -> StartSpec<'a> {
    StartSpec {
        sandbox_name: format!("{}-{}-{what}", ctx.tag, svc.sandbox_part()),
        limits,
        cgroup: ctx.opts.cgroup,
        dep_placeholders: placeholders,
        log_dir: &ctx.work_dir,
        log_name: format!("{}-{what}.log", svc.name()),
        env_overrides: overrides,
        host: &ctx.hosts.service,
        remote: ctx.remote_service.as_ref(),
        labels: vec![("svcbench.session".into(), ctx.session_id.to_string())],
        account: crate::sandbox::service_user::Account::Main,
    }
}

/// One run, stored; returns its status and why it did not complete. Only a store that cannot be written is
/// an error here.
pub fn run_one(
    ctx: &mut SessionCtx,
    svc: &Service,
    cell: &CellRun,
    run_index: u32,
) -> Result<(RunStatus, Option<String>)> {
    let run_id = ctx.store.start_run(ctx.session_id, svc.name(), run_index)?;
    ctx.store.record_cell(
        run_id,
        &crate::store::RunCell {
            key: cell.key.to_string(),
            cpus: cell.limits.cpus,
            memory_mib: cell.limits.memory_bytes.map(|b| b as f64 / 1048576.0),
        },
    )?;
    // The previous run's service is gone by now: what still uses these CPUs is someone else.
    if ctx.session_runs > 0 {
        let cpus: Vec<usize> = ctx.service_cpus.iter().chain(&ctx.loadgen_cpus).copied().collect();
        if let Some(w) = crate::sandbox::quiet_cpus::check(&cpus, Duration::from_millis(300)) {
            crate::errln!("svcbench: WARNING: {} run {run_index}: {w}", svc.name());
            ctx.store.add_run_warnings(run_id, &[w])?;
        }
    }
    ctx.session_runs += 1;
    let mut unlimited = Vec::new();
    let r = measure(ctx, svc, cell, (run_index, run_id), &mut unlimited);
    let stopped = ctx.stop.load(Ordering::Relaxed);
    let (status, err) = match &r {
        Ok(()) if stopped => (RunStatus::Interrupted, None),
        Ok(()) => (RunStatus::Completed, None),
        Err(e) if stopped => (RunStatus::Interrupted, Some(format!("{e:#}"))),
        Err(e) => (RunStatus::Failed, Some(format!("{e:#}"))),
    };
    for (name, value) in ctx.deps.after_run() {
        ctx.store.add_run_figure(run_id, &name, value)?;
    }
    let store_changes = ctx.deps.changed_by_run();
    if !store_changes.is_empty() {
        crate::errln!(
            "svcbench: WARNING: {} run {run_index}: the service changed the store, the run is marked invalid: {}",
            svc.name(),
            store_changes.join("; ")
        );
    }
    let flags = crate::figures::validity::run_flags(status.as_str(), &unlimited, &store_changes);
    ctx.store.finish_run(run_id, status.as_str(), err.as_deref(), &flags)?;
    Ok((status, err))
}

/// The sandbox's name for a run's service: the run, and with several cells the cell key's letters, digits
/// and dots (a cgroup's name).
fn sandbox_what(cell: &CellRun, run_index: u32) -> String {
    if cell.of > 1 {
        let key: String = cell.key.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '.').collect();
        format!("run{run_index}-cell{key}")
    } else {
        format!("run{run_index}")
    }
}

/// Everything measured of one run: startup, checks, steps, its end.
fn measure(
    ctx: &mut SessionCtx,
    svc: &Service,
    cell: &CellRun,
    (run_index, run_id): (u32, i64),
    unlimited: &mut Vec<String>,
) -> Result<()> {
    ctx.deps.before_run(&format!("{}-run{run_index}", svc.name()))?;
    let what = sandbox_what(cell, run_index);
    let (mut inst, started) = start(ctx, svc, cell, &what, (run_index, run_id), unlimited)?;
    check_conformance(ctx, svc, &mut inst, &started, (run_index, run_id))?;
    let steps = run_steps(ctx, svc, cell, &mut inst, (run_index, run_id), &what)?;
    if let Some(line) = inst.pids_limit_note() {
        crate::errln!("svcbench: WARNING: {} run {run_index}: {line}", svc.name());
        ctx.store.add_run_warnings(run_id, &[line])?;
    }
    let last = inst.sandbox.sample();
    let stopped = inst.sandbox.stop(ctx.opts.stop_grace);
    let ended_by_service = steps.death.is_some();
    // Not when svcbench itself was asked to stop: it then kills the service without a grace.
    if !ended_by_service && !stopped.graceful && !ctx.stop.load(Ordering::Relaxed) {
        say_ungraceful(svc, run_index, &stopped, ctx.opts.stop_grace);
    }
    ctx.store.record_end(
        run_id,
        &crate::store::RunEnd {
            total_requests_ok: steps.requests_ok,
            total_cpu_s: steps.cpu_before_restarts + last.cpu_s,
            shutdown_ms: (!ended_by_service).then_some(stopped.elapsed.as_secs_f64() * 1e3),
            stopped_gracefully: (!ended_by_service).then_some(stopped.graceful),
            exit_code: stopped.exit.and_then(|e| e.code),
            exit_signal: stopped.exit.and_then(|e| e.signal),
        },
    )?;
    match steps.death {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Said when it happens: the report's runs table alone would show it, and each such stop costs the whole grace.
fn say_ungraceful(svc: &Service, run_index: u32, stopped: &crate::sandbox::StopOutcome, grace: Duration) {
    let how = match stopped.exit {
        Some(e) if stopped.elapsed < grace => match (e.code, e.signal) {
            (_, Some(sig)) => format!("it ended by signal {sig}"),
            (Some(code), None) => format!("it exited with code {code}"),
            (None, None) => "it ended".to_string(),
        },
        _ => {
            // PID 1 of a PID namespace gets no default action for SIGTERM: an entrypoint without a handler
            // ignores it.
            let pid1 = match svc.manifest.container {
                Some(_) => " (an image's entrypoint runs as PID 1, which ignores SIGTERM unless it handles it)",
                None => "",
            };
            format!("it did not end within {} s of SIGTERM and was killed{pid1}", grace.as_secs())
        }
    };
    crate::errln!("svcbench: WARNING: {} run {run_index}: not a graceful stop: {how}; stored as such", svc.name());
}

/// Starts the run's service and records the limits the kernel holds (a mismatch makes the run unlimited),
/// its startup time and its idle memory. A death during startup is recorded with its cause.
fn start(
    ctx: &mut SessionCtx,
    svc: &Service,
    cell: &CellRun,
    what: &str,
    (run_index, run_id): (u32, i64),
    unlimited: &mut Vec<String>,
) -> Result<(Instance, crate::store::RunStartup)> {
    let placeholders = ctx.deps.placeholders();
    let empty = BTreeMap::new();
    let mut spec = start_spec(ctx, svc, cell.limits, what, &placeholders, &empty);
    spec.labels.push(("svcbench.run".into(), run_id.to_string()));
    let mut inst = Instance::spawn(svc, &spec)?;
    if let Some(user) = &inst.user {
        ctx.store.record_service_user(run_id, user)?;
    }
    let (held, mismatches) = inst.sandbox.limits_held(cell.limits);
    ctx.store.record_limits(
        run_id,
        &crate::store::RunLimits {
            cgroup_version: inst.sandbox.cgroup_version().into(),
            cpus: held.cpus,
            memory_mib: held.memory_bytes.map(|b| b as f64 / 1048576.0),
            cpuset: held.cpuset.clone(),
        },
    )?;
    if !mismatches.is_empty() {
        // The run goes on, flagged: its figures are not those of the limits asked.
        let w = format!("limits not held, the run is marked unlimited: {}", mismatches.join("; "));
        crate::errln!("svcbench: WARNING: {} run {run_index}: {w}", svc.name());
        ctx.store.add_run_warnings(run_id, std::slice::from_ref(&w))?;
    }
    *unlimited = mismatches;
    ctx.store.add_run_warnings(run_id, inst.sandbox.warnings())?;
    for w in inst.sandbox.warnings() {
        crate::errln!("svcbench: WARNING: {w}");
        ctx.store.add_session_warning(ctx.session_id, w)?;
    }
    let startup = match inst.wait_ready(svc, ctx.opts.plan.startup_timeout, &ctx.stop) {
        Ok(t) => (t, inst.startup_after_engine(t)),
        Err(e) => {
            let cause = if e.is::<StuckAtMemoryCap>() {
                Some(DeathCause::StuckAtMemoryCap)
            } else {
                inst.sandbox.try_exit().map(|_| DeathCause::of_exit(inst.oom_killed()))
            };
            if let Some(cause) = cause {
                ctx.store.record_death(run_id, &crate::store::RunDeath { cause, stage: "startup".into() })?;
            }
            return Err(e);
        }
    };
    std::thread::sleep(IDLE_SETTLE);
    let idle = inst.sandbox.sample();
    let started = crate::store::RunStartup {
        startup_ms: startup.0.as_secs_f64() * 1e3,
        startup_engine_ms: startup.1.map(|d| d.as_secs_f64() * 1e3),
        idle_mem_mib: idle.mem_mib,
        idle_rss_mib: idle.rss_mib,
        idle_threads: idle.threads,
    };
    ctx.store.record_startup(run_id, &started)?;
    if let Some(l) = inst.listening() {
        ctx.store.record_listening(run_id, &l.addrs_text(), l.warning.as_deref())?;
        if let Some(w) = &l.warning {
            crate::errln!("svcbench: WARNING: {} run {run_index}: {w}", svc.name());
        }
    }
    Ok((inst, started))
}

/// The scenario's conformance checks against the started service, stored; a death during them ends the run.
fn check_conformance(
    ctx: &mut SessionCtx,
    svc: &Service,
    inst: &mut Instance,
    started: &crate::store::RunStartup,
    (run_index, run_id): (u32, i64),
) -> Result<()> {
    let Some(checks) = crate::scenario::checks::run_checks_until(&inst.base_url(), &ctx.scenario.file.check, &ctx.stop)
    else {
        inst.sandbox.stop(ctx.opts.stop_grace);
        bail!("interrupted during the conformance checks");
    };
    ctx.store.add_checks(run_id, &checks)?;
    if let Some(exit) = inst.sandbox.try_exit() {
        let oom = inst.oom_killed();
        ctx.store.record_death(
            run_id,
            &crate::store::RunDeath { cause: DeathCause::of_exit(oom), stage: "checks".into() },
        )?;
        let what = if oom { "was OOM-killed" } else { "died" };
        bail!("{} {what} during the conformance checks ({exit}); last log lines: {}", svc.name(), inst.log_tail(3));
    }
    let failed = checks.iter().filter(|c| !c.passed).count();
    crate::errln!(
        "svcbench: {} run {run_index}: started in {:.1} ms, idle {:.1} MiB, checks {}/{} passed",
        svc.name(),
        started.startup_ms,
        started.idle_mem_mib,
        checks.len() - failed,
        checks.len()
    );
    Ok(())
}

/// What the steps of a run added up to.
struct StepsDone {
    requests_ok: u64,
    /// CPU time of the instances a fresh-start step replaced.
    cpu_before_restarts: f64,
    /// The run's first death under its limits: its outcome.
    death: Option<anyhow::Error>,
}

/// The profile's steps against the run's service; a step that starts afresh gets a new instance.
fn run_steps(
    ctx: &mut SessionCtx,
    svc: &Service,
    cell: &CellRun,
    inst: &mut Instance,
    (run_index, run_id): (u32, i64),
    what: &str,
) -> Result<StepsDone> {
    let steps = ctx.profile.steps.clone();
    let mut done = StepsDone { requests_ok: 0, cpu_before_restarts: 0.0, death: None };
    for (i, step) in steps.iter().enumerate() {
        if ctx.stop.load(Ordering::Relaxed) {
            break;
        }
        if step.fresh_start && i > 0 {
            done.cpu_before_restarts += inst.sandbox.sample().cpu_s;
            inst.sandbox.stop(ctx.opts.stop_grace);
            let (placeholders, empty) = (ctx.deps.placeholders(), BTreeMap::new());
            let what = format!("{what}-step{}", i + 1);
            *inst = Instance::spawn(svc, &start_spec(ctx, svc, cell.limits, &what, &placeholders, &empty))?;
            inst.wait_ready(svc, ctx.opts.plan.startup_timeout, &ctx.stop)?;
        }
        let left: Duration = steps[i + 1..].iter().map(|s| s.duration).sum::<Duration>() + ctx.later_runs;
        let under = if cell.of > 1 { format!(" [{}]", cell.key) } else { String::new() };
        let (n, of) = (i + 1, steps.len());
        let prefix =
            format!("{}{under} run {run_index}/{} step {n}/{of} {}", svc.name(), ctx.opts.plan.runs, step.label());
        let out = step::run_step(ctx, inst, (svc.name(), run_index, run_id), n as u32, step, &prefix, left)?;
        done.requests_ok += out.requests_ok;
        if out.interrupted {
            break;
        }
        if out.oom_killed || out.crashed {
            record_step_death(ctx, svc, inst, (run_index, run_id), (n, step), out.oom_killed, &mut done)?;
            // A later step that starts the service afresh is a measurement of its own (seed 004's resource
            // table: each rate after a fresh start), so one level's death does not cost the others.
            if steps.get(n).is_some_and(|s| s.fresh_start) {
                continue;
            }
            break;
        }
        if let Some(min) = ctx.profile.stop_below_success {
            if out.success_ratio < min {
                crate::errln!(
                    "svcbench: {} run {run_index}: {:.0} % succeeded in step {n} (< {:.0} %): profile's stop rule ends the run",
                    svc.name(), out.success_ratio * 100.0, min * 100.0
                );
                break;
            }
        }
    }
    Ok(done)
}

/// A service OOM-killed or crashed in a step: said, and the run's first death stored as its outcome (the
/// step's own flags name every death).
fn record_step_death(
    ctx: &mut SessionCtx,
    svc: &Service,
    inst: &mut Instance,
    (run_index, run_id): (u32, i64),
    (n, step): (usize, &crate::profile::Step),
    oom_killed: bool,
    done: &mut StepsDone,
) -> Result<()> {
    let what = if oom_killed { "OOM-killed" } else { "crashed" };
    // The kernel counts an OOM kill a moment before the killed process is reaped.
    let exit = inst
        .sandbox
        .wait_exit(Duration::from_secs(2))
        .map_or_else(|| "its main process still runs".to_string(), |e| e.to_string());
    crate::errln!("svcbench: {} run {run_index}: {what} in step {n} ({exit})", svc.name());
    if done.death.is_none() {
        ctx.store.record_death(
            run_id,
            &crate::store::RunDeath { cause: DeathCause::of_exit(oom_killed), stage: format!("step {n}") },
        )?;
        done.death = Some(anyhow::anyhow!("service {what} in step {n} ({}): {exit}", step.label()));
    }
    Ok(())
}

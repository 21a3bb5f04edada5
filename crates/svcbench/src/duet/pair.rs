//! One pair of a duet: both services started fresh, each in its own sandbox under the same limits, every
//! profile step driven at both at the same moment by a generator each, and each second of the step read
//! from both cgroups at the same instants: the pair's slices.
use super::deps::DuetDeps;
use super::reading::{read_now, Reading};
use super::setup::{load_config, DuetSetup};
use super::slices::{guard, store_guard, SideSlice, Slice};
use crate::profile::Step;
use crate::sandbox::service_user::Account;
use crate::service::instance::{Instance, StartSpec};
use crate::store::DuetMode;
use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Whether A is started and driven first in this pair: every other pair swaps, so neither side's position
/// (start order, generator order) decides.
pub fn a_first(pair: u32) -> bool {
    pair.is_multiple_of(2)
}

/// Runs one pair through the profile, each side with fresh files of its own (deps.rs) and its scenario's
/// checks passed before any load; returns its slices, each judged by the guards.
pub fn run_pair(setup: &DuetSetup, deps: &mut DuetDeps, pair: u32, stop: &Arc<AtomicBool>) -> Result<Vec<Slice>> {
    let order: [usize; 2] = if a_first(pair) { [0, 1] } else { [1, 0] };
    let placeholders = deps.before_pair(pair)?;
    // Dropped (stopped, cgroups removed) when this returns, on every path.
    let mut started: [Option<Instance>; 2] = [None, None];
    for &side in &order {
        let svc = setup.services[side];
        let letter = ["a", "b"][side];
        let mut inst = Instance::spawn(
            svc,
            &StartSpec {
                sandbox_name: format!("{}-duet-pair{}-{letter}", std::process::id(), pair + 1),
                limits: setup.limits,
                cgroup: setup.cgroup,
                dep_placeholders: &placeholders[side],
                log_dir: setup.work_dir,
                log_name: format!("{}-pair{}-{letter}.log", svc.name(), pair + 1),
                env_overrides: &BTreeMap::new(),
                host: &crate::network::Host::local(),
                remote: None,
                labels: Vec::new(),
                // Each side a user of its own: neither can signal, trace or read the other.
                account: [Account::Main, Account::Peer][side],
            },
        )?;
        inst.wait_ready(svc, crate::runner::STARTUP_TIMEOUT, stop)?;
        check_side(setup, &inst, deps, (pair, side), stop)?;
        started[side] = Some(inst);
    }
    let [Some(a), Some(b)] = &mut started else { unreachable!("both sides started above") };
    let mut slices = Vec::new();
    for (seq, step) in setup.profile.steps.iter().enumerate() {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if let Some(ms) = step.upstream_delay_ms {
            if !deps.set_delay_ms(ms)? {
                bail!(
                    "profile step {seq} sets upstream_delay_ms but scenario `{}` has no upstream dependency",
                    setup.scenario.name()
                );
            }
        }
        let mut step_slices = match setup.mode {
            DuetMode::Alternating => super::alternate::drive_step(setup, [&*a, &*b], step, seq as u32, pair, stop)?,
            DuetMode::SideBySide => drive_step(setup, [&*a, &*b], order, step, seq as u32, stop)?,
        };
        for s in &mut step_slices {
            s.pair = pair;
            s.invalid = store_guard(s, setup.store_cpus).or_else(|| guard(s, setup.limits.cpus, open_rate(step)));
        }
        slices.extend(step_slices);
        for (inst, svc) in [(&mut *a, setup.services[0]), (&mut *b, setup.services[1])] {
            if let Some(exit) = inst.sandbox.try_exit() {
                let how = if inst.oom_killed() { "was OOM-killed" } else { "ended" };
                bail!("{} {how} during the duet ({exit}); last log lines: {}", svc.name(), inst.log_tail(3));
            }
        }
    }
    for inst in started.iter_mut().flatten() {
        inst.sandbox.stop(crate::runner::STOP_GRACE);
    }
    let (figures, changed) = deps.after_pair();
    for (side, figures) in figures.iter().enumerate().filter(|(_, f)| !f.is_empty()) {
        let each: Vec<String> = figures.iter().map(|(k, v)| format!("{k} {v:.0}")).collect();
        crate::errln!("svcbench: pair {} {}: {}", pair + 1, ["A", "B"][side], each.join(", "));
    }
    // As a run that changed its store is invalid: the data is no longer the scenario's.
    if !changed.is_empty() {
        let why = format!("the store changed during the pair: {}", changed.join("; "));
        crate::errln!("svcbench: WARNING: pair {}: {why}; its slices are left out", pair + 1);
        for s in &mut slices {
            s.invalid.get_or_insert_with(|| why.clone());
        }
    }
    Ok(slices)
}

/// The scenario's checks against one side just started: a side that answers them wrongly is not compared
/// (the pair fails, saying which checks and why).
fn check_side(
    setup: &DuetSetup,
    inst: &Instance,
    deps: &DuetDeps,
    (pair, side): (u32, usize),
    stop: &Arc<AtomicBool>,
) -> Result<()> {
    let Some(checks) = crate::scenario::checks::run_checks_until(&inst.base_url(), &setup.scenario.file.check, stop)
    else {
        bail!("interrupted during the checks");
    };
    let failed: Vec<String> =
        checks.iter().filter(|c| !c.passed).map(|c| format!("{}: {}", c.name, c.reason)).collect();
    let files = deps.own_files(side);
    let files = if files.is_empty() { String::new() } else { format!(", its own {}", files.join(", ")) };
    let name = setup.services[side].name();
    crate::errln!(
        "svcbench: pair {} {} ({name}): checks {}/{} passed{files}",
        pair + 1,
        ["A", "B"][side],
        checks.len() - failed.len(),
        checks.len()
    );
    if !failed.is_empty() {
        bail!("{name} failed {} of its checks: {}", failed.len(), failed.join("; "));
    }
    Ok(())
}

/// The step's fixed open-model rate (None: closed model, or a ramp).
fn open_rate(step: &Step) -> Option<f64> {
    match &step.load {
        loadgen::Model::Open(o) if o.rate.start == o.rate.end => Some(o.rate.start),
        _ => None,
    }
}

/// Drives one step at both sides at once (generators started in `order`) while a reader takes both cgroups'
/// counters at every second boundary; the step's whole seconds become slices.
fn drive_step(
    setup: &DuetSetup,
    insts: [&Instance; 2],
    order: [usize; 2],
    step: &Step,
    seq: u32,
    stop: &Arc<AtomicBool>,
) -> Result<Vec<Slice>> {
    let cfgs = &[load_config(setup, insts[0], step, seq, stop)?, load_config(setup, insts[1], step, seq, stop)?];
    let probes = [insts[0].sandbox.probe(), insts[1].sandbox.probe()];
    let seconds = step.duration.as_secs() as u32;
    let t0 = Instant::now();
    let (reports, readings) = std::thread::scope(|scope| {
        let reader = scope.spawn(|| {
            let mut out = vec![read_now(&probes, setup.store)];
            for k in 1..=seconds {
                let due = t0 + Duration::from_secs(k as u64);
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
                out.push(read_now(&probes, setup.store));
                if stop.load(Ordering::Relaxed) {
                    break;
                }
            }
            out
        });
        let gens: Vec<_> =
            order.iter().map(|&side| (side, scope.spawn(move || loadgen::run(&cfgs[side], None)))).collect();
        let mut reports: [Option<Result<loadgen::LoadReport>>; 2] = [None, None];
        for (side, g) in gens {
            reports[side] = Some(g.join().unwrap_or_else(|_| Err(anyhow::anyhow!("a generator thread panicked"))));
        }
        (reports, reader.join().expect("the counter reader does not panic"))
    });
    let [Some(ra), Some(rb)] = reports else { unreachable!("both generators joined") };
    let (ra, rb) = (ra?, rb?);
    Ok(slices_of(&readings, [&ra.timeline, &rb.timeline], setup.gen_cpus.len(), seq, order[0] == 0))
}

/// Whole seconds read at both ends and completed by both generators.
fn slices_of(
    readings: &[Reading],
    timelines: [&[loadgen::SecondStats]; 2],
    gen_cpus: usize,
    step: u32,
    a_first: bool,
) -> Vec<Slice> {
    let second = |t: &[loadgen::SecondStats], k: u64| t.iter().find(|s| s.second == k).copied();
    readings
        .windows(2)
        .enumerate()
        .filter_map(|(k, w)| {
            let (sa, sb) = (second(timelines[0], k as u64)?, second(timelines[1], k as u64)?);
            let seconds = w[1].at.duration_since(w[0].at).as_secs_f64();
            let side = |i: usize, s: loadgen::SecondStats| SideSlice {
                ok: s.ok,
                errors: s.errors,
                cpu_s: w[1].cpu_s[i] - w[0].cpu_s[i],
                throttled_s: w[1].throttled_s[i] - w[0].throttled_s[i],
                p50_ms: s.p50_ms,
                p99_ms: s.p99_ms,
            };
            Some(Slice {
                pair: 0,
                a_first,
                step,
                second: k as u32,
                seconds,
                a: side(0, sa),
                b: side(1, sb),
                generator_busy: (w[1].generator_cpu_s - w[0].generator_cpu_s) / (seconds * gen_cpus.max(1) as f64),
                store_cpu_s: w[0].store_cpu_s.zip(w[1].store_cpu_s).map(|(a, b)| (b - a).max(0.0)),
                invalid: None,
            })
        })
        .collect()
}

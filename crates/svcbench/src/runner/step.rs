//! One step: the load generator drives the service while the sampler reads its sandbox; then the step's
//! figures are computed and written to the store at once.
use super::progress::Progress;
use super::SessionCtx;
use crate::profile::{Step, StepLoad};
use crate::sandbox::sampler::{summarize, Sampler};
use crate::store::StepRecord;
use anyhow::{Context, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub struct StepOutcome {
    pub requests_ok: u64,
    pub success_ratio: f64,
    pub crashed: bool,
    pub oom_killed: bool,
    pub interrupted: bool,
}

/// Above this share of its CPUs, a process is taken as saturated (client or dependency, not the service,
/// may then be the bottleneck).
const SATURATED: f64 = 0.9;

#[allow(clippy::too_many_arguments)]
pub fn run_step(
    ctx: &mut SessionCtx,
    inst: &mut super::instance::Instance,
    (service, run_index, run_id): (&str, u32, i64),
    seq: u32,
    step: &Step,
    prefix: &str,
    left_after: std::time::Duration,
) -> Result<StepOutcome> {
    let mix_name = step.mix_name(ctx.opts.mix.as_deref()).to_string();
    let mut mix_spec = ctx.scenario.mix(&mix_name)?.clone();
    let success = mix_spec.success_set().with_context(|| format!("mix `{mix_name}`"))?;
    // The mix's seed (else the run's --seed), shifted per step: repeated steps draw other values, and
    // a second run of the same profile draws the same ones.
    mix_spec.seed = Some(mix_spec.seed.unwrap_or(ctx.opts.seed).wrapping_add(seq as u64));
    let mix = mix_spec.resolve(&ctx.scenario.dir).with_context(|| {
        format!("scenario `{}`, mix `{mix_name}` (a missing values file: is the scenario's dataset built?)", ctx.scenario.name())
    })?;
    if let Some(ms) = step.upstream_delay_ms {
        if !ctx.deps.set_delay_ms(ms)? {
            anyhow::bail!("profile step {seq} sets upstream_delay_ms but scenario `{}` has no upstream dependency", ctx.scenario.name());
        }
    }
    let model = match step.load {
        StepLoad::Closed { connections } => loadgen::Model::Closed { connections },
        StepLoad::Open { start, end, max_connections } => loadgen::Model::Open {
            rate: loadgen::RateRamp { start, end, steps: None },
            max_connections,
        },
    };
    let target = loadgen::Target { host: "127.0.0.1".into(), port: inst.port };
    let mut cfg = loadgen::LoadConfig::new(target, mix, model);
    cfg.duration = step.duration;
    cfg.threads = ctx.loadgen_cpus.len().max(1);
    cfg.cpu_affinity = Some(ctx.loadgen_cpus.clone());
    cfg.request_timeout = ctx.profile.request_timeout;
    if let Some(s) = success {
        cfg.success = s;
    }
    let step_stop = Arc::new(AtomicBool::new(false));
    cfg.stop = Some(step_stop.clone());
    let live = Arc::new(loadgen::LiveStats::default());

    // Figures at the step's start.
    let kernel_peak = inst.sandbox.reset_peak();
    let sampler = Sampler::start(inst.sandbox.probe(), Some(step_stop.clone()));
    if let Some(m) = &ctx.metrics {
        *m.lock().unwrap() = crate::metrics::Current {
            service: service.to_string(),
            run: run_index,
            step: step.label(),
            live: Some(live.clone()),
            probe: Some(inst.sandbox.probe()),
        };
    }

    let progress = Progress::start(prefix.to_string(), step.duration, left_after, live.clone(), ctx.stop.clone(), step_stop.clone());
    // Counters are read right around the load, so the step's CPU time covers the load and nothing else.
    let dep_before = ctx.deps.cpu_s();
    let calls_before = ctx.deps.calls();
    let before = inst.sandbox.sample();
    let report = loadgen::run(&cfg, Some(live));
    let after = inst.sandbox.sample();
    let dep_after = ctx.deps.cpu_s();
    let calls_after = ctx.deps.calls();
    drop(progress);
    let samples = sampler.take();
    drop(sampler);
    if let Some(m) = &ctx.metrics {
        m.lock().unwrap().live = None;
    }
    let report = report.context("load generator failed")?;
    let interrupted = ctx.stop.load(Ordering::Relaxed);

    let summary = summarize(&samples);
    let exited = inst.sandbox.try_exit();
    let oom_killed = after.oom_kills > before.oom_kills;
    let crashed = exited.is_some() && !oom_killed;
    let dep_cpu_s = match (dep_before, dep_after) {
        (Some(a), Some(b)) => Some(b - a),
        _ => None,
    };
    let dur = report.duration_s.max(1e-9);
    let client_cpus = cfg.threads as u32;
    let mem_peak = if kernel_peak { inst.sandbox.kernel_peak_mib() } else { None };
    let rec = StepRecord {
        seq,
        label: step.label(),
        model: if matches!(step.load, StepLoad::Closed { .. }) { "closed" } else { "open" },
        connections: match step.load {
            StepLoad::Closed { connections } => Some(connections as u64),
            _ => None,
        },
        rate: match step.load {
            StepLoad::Open { start, .. } => Some(start),
            _ => None,
        },
        rate_end: match step.load {
            StepLoad::Open { end, .. } => Some(end),
            _ => None,
        },
        mix: mix_name,
        upstream_delay_ms: step.upstream_delay_ms,
        cpu_s: Some((after.cpu_s - before.cpu_s).max(0.0)),
        mem_peak_mib: Some(mem_peak.unwrap_or(0.0).max(summary.mem_peak_mib).max(after.mem_mib)),
        rss_peak_mib: Some(summary.rss_peak_mib.max(after.rss_mib)),
        threads_max: Some(summary.threads_max.max(after.threads)),
        throttled_s: Some((after.throttled_s - before.throttled_s).max(0.0)),
        client_cpus,
        client_saturated: report.client_cpu_s / (dur * client_cpus as f64) > SATURATED,
        dep_cpu_s,
        // Dependencies run on the load generator's CPUs: together they can saturate them while each
        // alone stays below the mark (OpenSearch at 0.86 CPU + the generator at 0.14 on one core).
        dep_saturated: dep_cpu_s.is_some_and(|c| {
            c / (dur * ctx.deps.cpus() as f64) > SATURATED
                || (c + report.client_cpu_s) / (dur * client_cpus as f64) > SATURATED
        }),
        oom_killed,
        crashed,
        dependency_calls: match (calls_before, calls_after) {
            (Some(a), Some(b)) => Some(b - a),
            _ => None,
        },
    };
    if !interrupted {
        ctx.store.add_step(run_id, &rec, &report, &samples)?;
    }
    let total = report.requests_ok + report.requests_err;
    Ok(StepOutcome {
        requests_ok: report.requests_ok,
        success_ratio: if total == 0 { 0.0 } else { report.requests_ok as f64 / total as f64 },
        crashed,
        oom_killed,
        interrupted,
    })
}

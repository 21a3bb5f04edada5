//! One step: the load generator drives the service while the sampler reads its sandbox; then the step's
//! figures and validity are derived (figures/) and written to the store at once.
use super::progress::Progress;
use super::SessionCtx;
use crate::figures::validity::FlagCode;
use crate::figures::validity::{
    dependency_flags, dependency_queue_flag, open_file_flag, service_end_flags, DependencyUsage,
};
use crate::figures::{Flag, Validity};
use crate::profile::Step;
use crate::sandbox::sampler::{summarize, Sample, SampleSummary, Sampler};
use crate::store::StepRow;
use anyhow::{Context, Result};
use loadgen::LoadModel;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub struct StepOutcome {
    pub requests_ok: u64,
    /// figures::success_ratio: what the profile's stop rule and the report both use.
    pub success_ratio: f64,
    pub crashed: bool,
    pub oom_killed: bool,
    pub interrupted: bool,
}

/// What the sandbox and the dependencies measured around the load.
struct Around {
    before: Sample,
    after: Sample,
    samples: Vec<Sample>,
    /// The samples' peaks, summarised once for the step's figures and its flags.
    summary: SampleSummary,
    mem_peak_kernel: Option<f64>,
    dep_cpu_s: Option<f64>,
    dep_wait_s: Option<f64>,
    dep_calls: Option<u64>,
    /// Connection attempts dropped during the step at the service's full accept queue, and at its
    /// dependencies'.
    listen_drops: Option<u64>,
    dep_listen_drops: Option<u64>,
    probe_ms: Option<f64>,
}

/// One step, stored as it ends (unless interrupted): its load configured, driven while the sandbox is read,
/// its figures and flags derived.
#[allow(clippy::too_many_arguments)]
pub fn run_step(
    ctx: &mut SessionCtx,
    inst: &mut crate::service::instance::Instance,
    (service, run_index, run_id): (&str, u32, i64),
    seq: u32,
    step: &Step,
    prefix: &str,
    left_after: std::time::Duration,
) -> Result<StepOutcome> {
    let load = configure(ctx, inst, step, seq)?;
    let (report, around) = drive(ctx, inst, &load, (service, run_index, run_id, seq), step, prefix, left_after)?;
    let interrupted = ctx.stop.load(Ordering::Relaxed);
    let exited = inst.sandbox.try_exit();
    // Read again once the end is known: a container's group may be gone before its counter was sampled,
    // and the engine's verdict (or the kernel's log) is read only at its exit.
    let ooms_at_end = if exited.is_some() { inst.sandbox.sample().oom_kills } else { 0 };
    let oom_killed = around.after.oom_kills.max(ooms_at_end) > around.before.oom_kills;
    let crashed = exited.is_some() && !oom_killed;
    let mut row = step_row(seq, step, &load.mix_name, &report, &around, report.threads.max(1));
    let mut flags = step_flags(ctx, inst, step, &report, &row, &around);
    flags.extend(service_end_flags(oom_killed, crashed));
    flags.extend(open_file_flag(around.summary.open_files_peak.map(|o| (o.count, o.limit))));
    flags.extend(dependency_queue_flag(around.dep_listen_drops));
    row.oom_killed = oom_killed;
    row.crashed = crashed;
    row.client_saturated = flags.iter().any(|f| f.code == FlagCode::GeneratorSaturated);
    row.dep_saturated = flags.iter().any(|f| f.code == FlagCode::DependencySaturated);
    let validity = Validity { flags };
    row.valid = Some(validity.valid());
    row.flags = Some(validity.to_json());
    if !interrupted {
        ctx.store.add_step(run_id, &row, &around.samples)?;
        print_step_line(prefix, &row, &validity);
    }
    Ok(StepOutcome {
        requests_ok: report.requests_ok,
        success_ratio: row.success_ratio(),
        crashed,
        oom_killed,
        interrupted,
    })
}

/// A step's load as the generator takes it.
struct StepLoadConfig {
    cfg: loadgen::LoadConfig,
    /// The mix as the scenario names it (agents get it to resolve themselves).
    mix_spec: loadgen::MixSpec,
    mix_name: String,
}

/// The generator's configuration for a step: its mix (seeded per step), its model, and the dependency's
/// delay where the step sets one.
fn configure(
    ctx: &mut SessionCtx,
    inst: &crate::service::instance::Instance,
    step: &Step,
    seq: u32,
) -> Result<StepLoadConfig> {
    let mix = ctx.opts.plan.mix.as_deref();
    let (cfg, mix_spec, mix_name) = load_config(
        &ctx.scenario,
        mix,
        ctx.opts.plan.seed,
        step,
        seq,
        inst.target(),
        &ctx.loadgen_cpus,
        ctx.profile.request_timeout,
    )?;
    if let Some(ms) = step.upstream_delay_ms {
        if !ctx.deps.set_delay_ms(ms)? {
            anyhow::bail!(
                "profile step {seq} sets upstream_delay_ms but scenario `{}` has no upstream dependency",
                ctx.scenario.name()
            );
        }
    }
    Ok(StepLoadConfig { cfg, mix_spec, mix_name })
}

/// The generator's configuration for one step of a scenario's mix (the step's own mix, else `mix`, else the
/// default), seeded per step; with the mix as asked and its name. Runs and duets configure their steps here.
#[allow(clippy::too_many_arguments)]
pub fn load_config(
    scenario: &crate::scenario::Scenario,
    mix: Option<&str>,
    seed: u64,
    step: &Step,
    seq: u32,
    target: loadgen::Target,
    gen_cpus: &[usize],
    request_timeout: std::time::Duration,
) -> Result<(loadgen::LoadConfig, loadgen::MixSpec, String)> {
    let mix_name = step.mix_name(mix).to_string();
    let mut mix_spec = scenario.mix(&mix_name)?.clone();
    let success = mix_spec.success_set().with_context(|| format!("mix `{mix_name}`"))?;
    // The mix's seed (else the run's --seed), shifted per step: repeated steps draw other values, and
    // a second run of the same profile draws the same ones.
    mix_spec.seed = Some(mix_spec.seed.unwrap_or(seed).wrapping_add(seq as u64));
    // The scenario's mixes were resolved when it was read, but for value files a dataset build writes:
    // only their absence is a dataset's to explain.
    let hint = if mix_spec.lacks_value_files(&scenario.dir) {
        " (a missing values file: is the scenario's dataset built?)"
    } else {
        ""
    };
    let resolved = mix_spec
        .clone()
        .resolve(&scenario.dir)
        .with_context(|| format!("scenario `{}`, mix `{mix_name}`{hint}", scenario.name()))?;
    let mut cfg = loadgen::LoadConfig::new(target, resolved, step.load.clone());
    cfg.duration = step.duration;
    cfg.keepalive = step.keepalive;
    cfg.pacing = step.pacing;
    cfg.threads = gen_cpus.len().max(1);
    cfg.cpu_affinity = Some(gen_cpus.to_vec());
    cfg.request_timeout = request_timeout;
    if let Some(s) = success {
        cfg.success = s;
    }
    Ok((cfg, mix_spec, mix_name))
}

/// Drives the step's load (here, or from generator agents) while the sampler reads the sandbox; the
/// machine-speed probe before and after, the dependencies' counters right around the load.
#[allow(clippy::too_many_arguments)]
fn drive(
    ctx: &mut SessionCtx,
    inst: &mut crate::service::instance::Instance,
    load: &StepLoadConfig,
    (service, run_index, run_id, seq): (&str, u32, i64, u32),
    step: &Step,
    prefix: &str,
    left_after: std::time::Duration,
) -> Result<(loadgen::LoadReport, Around)> {
    let mut cfg = load.cfg.clone();
    let step_stop = Arc::new(AtomicBool::new(false));
    cfg.stop = Some(step_stop.clone());
    let live = Arc::new(loadgen::LiveStats::default());
    // The machine-speed probe runs on every CPU the step uses, before the load and after it.
    let mut probe_cpus = ctx.service_cpus.clone();
    probe_cpus.extend(ctx.loadgen_cpus.iter().filter(|c| !ctx.service_cpus.contains(c)));
    let probe_before = crate::speed_probe::measure(&probe_cpus);
    // Figures at the step's start.
    let kernel_peak = inst.sandbox.reset_peak();
    let sampler = Sampler::start(inst.sandbox.probe(), Some(step_stop.clone()));
    if let Some(m) = &ctx.metrics {
        m.publish(crate::metrics::Current {
            service: service.to_string(),
            run: run_index,
            step: step.label(),
            live: Some(live.clone()),
            probe: Some(inst.sandbox.probe()),
        });
    }
    let agents = ctx.opts.generators > 1 || ctx.opts.hosts_plan.as_ref().is_some_and(|p| p.uses_agents());
    let progress = Progress::start(
        prefix.to_string(),
        step.duration,
        left_after,
        (!agents).then(|| live.clone()),
        ctx.stop.clone(),
        step_stop.clone(),
    );
    // Counters are read right around the load, so the step's CPU time covers the load and nothing else.
    // Accept-queue drops are read outside that window: they walk the namespace's socket tables.
    let probe = inst.sandbox.probe();
    let drops_before = (probe.listen_drops(), ctx.deps.listen_drops());
    let (dep_before, dep_wait_before, calls_before) = (ctx.deps.cpu_s(), ctx.deps.wait_s(), ctx.deps.calls());
    let before = inst.sandbox.sample();
    let report = if agents {
        drive_agents(ctx, inst, &cfg, &load.mix_spec, (run_id, seq), &step_stop)
    } else {
        // On the client's host: under --net its packets cross the client-service link.
        ctx.hosts.client().within(|| loadgen::run(&cfg, Some(live)))?
    };
    let after = inst.sandbox.sample();
    let (dep_after, dep_wait_after, calls_after) = (ctx.deps.cpu_s(), ctx.deps.wait_s(), ctx.deps.calls());
    let drops_after = (probe.listen_drops(), ctx.deps.listen_drops());
    drop(progress);
    let samples = sampler.take();
    drop(sampler);
    if let Some(m) = &ctx.metrics {
        m.step_ended();
    }
    let report = report.context("load generator failed")?;
    let probe_after = crate::speed_probe::measure(&probe_cpus);
    let diff = |a: Option<f64>, b: Option<f64>| a.zip(b).map(|(a, b)| (b - a).max(0.0));
    let counted = |a: Option<u64>, b: Option<u64>| a.zip(b).map(|(a, b)| b.saturating_sub(a));
    let around = Around {
        mem_peak_kernel: if kernel_peak { inst.sandbox.kernel_peak_mib() } else { None },
        before,
        after,
        summary: summarize(&samples),
        samples,
        dep_cpu_s: diff(dep_before, dep_after),
        dep_wait_s: diff(dep_wait_before, dep_wait_after),
        dep_calls: counted(calls_before, calls_after),
        listen_drops: counted(drops_before.0, drops_after.0),
        dep_listen_drops: counted(drops_before.1, drops_after.1),
        // The slower of the two readings: a slowdown at either end of the step counts.
        probe_ms: match (probe_before, probe_after) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        },
    };
    Ok((report, around))
}

/// Several agents: one on each generator host (a hosts file's, or the network's generator namespaces),
/// their reports merged.
fn drive_agents(
    ctx: &SessionCtx,
    inst: &crate::service::instance::Instance,
    cfg: &loadgen::LoadConfig,
    mix_spec: &loadgen::MixSpec,
    (run_id, seq): (i64, u32),
    step_stop: &AtomicBool,
) -> Result<loadgen::LoadReport> {
    use super::agents::AgentAt;
    let places: Vec<AgentAt> = match &ctx.opts.hosts_plan {
        Some(plan) => plan
            .generators
            .iter()
            .map(|p| match p {
                crate::remote::hosts_file::Place::Local => AgentAt::Here(ctx.hosts.client()),
                remote => AgentAt::Ssh(remote),
            })
            .collect(),
        None => (0..ctx.opts.generators).map(|i| AgentAt::Here(ctx.hosts.generator(i))).collect(),
    };
    let agents = super::agents::AgentStep {
        config: cfg,
        mix: mix_spec,
        mix_dir: &ctx.scenario.dir,
        url: inst.base_url(),
        dir: ctx.work_dir.join("agents").join(format!("run-{run_id}")),
        seq,
    };
    super::agents::run(&agents, &places, &[&ctx.stop, step_stop])
}

/// The step's flags: the generator's own judgements first (headroom, open-model fidelity, starved
/// connections), then what only svcbench sees (a growing backlog, the dependencies' CPU).
fn step_flags(
    ctx: &SessionCtx,
    inst: &crate::service::instance::Instance,
    step: &Step,
    report: &loadgen::LoadReport,
    row: &StepRow,
    around: &Around,
) -> Vec<Flag> {
    let mut flags: Vec<Flag> = report.flags();
    if let Some(offered) = step.load.held_rate(report) {
        let p50s: Vec<f64> = report.timeline.iter().map(|s| s.p50_ms).collect();
        flags.extend(crate::figures::validity::sustain_flag(offered, row.success_rps, &p50s));
    }
    if let Some(dep_cpu_s) = around.dep_cpu_s {
        let usage = DependencyUsage { cpu_s: dep_cpu_s, wait_s: around.dep_wait_s, cpus: ctx.deps.cpus() };
        // A store elsewhere does not compete with the generator for its CPUs.
        let (generator_cpu_s, shared) = if ctx.deps.share_generator_cpus() {
            (report.client_cpu_s, ctx.loadgen_cpus.len().max(1))
        } else {
            (0.0, usage.cpus)
        };
        let held = inst.sandbox.limits_held(&crate::sandbox::Limits::default()).0;
        let cpuset = held.cpuset.as_deref().and_then(|c| crate::cpus::parse(c).ok()).map(|c| c.len());
        let bound = crate::figures::service_cpu_bound(
            row.cpu_s.unwrap_or(0.0),
            report.duration_s,
            held.cpus,
            cpuset.filter(|n| *n > 0),
        );
        flags.extend(dependency_flags(&usage, generator_cpu_s, shared, report.duration_s, bound));
    }
    flags
}

/// The closing line of a step: its figure and, when it may not be quoted, why.
fn print_step_line(prefix: &str, row: &StepRow, v: &Validity) {
    let mut line = format!(
        "svcbench: {prefix}: {:.0} req/s, {:.1} % ok, p99 {} ms",
        row.success_rps,
        row.success_ratio() * 100.0,
        row.p99.map(|p| format!("{p:.2}")).unwrap_or_else(|| "–".into())
    );
    // Each dropped attempt's client waited 1 s or more to send its SYN again: it explains a latency.
    for (drops, whose) in [(row.listen_drops, "its"), (row.dep_listen_drops, "a dependency's")] {
        if let Some(d) = drops.filter(|d| *d > 0) {
            line.push_str(&format!(", {d} connection attempts dropped at {whose} full accept queue"));
        }
    }
    if !v.valid() {
        line.push_str(&format!(" — NOT VALID: {} ({})", v.summary(), v.details()));
    }
    crate::errln!("{line}");
}

/// Every stored figure of the step, from the generator's report and the sandbox's readings.
fn step_row(seq: u32, step: &Step, mix: &str, r: &loadgen::LoadReport, a: &Around, threads: usize) -> StepRow {
    let row = load_figures(seq, step, mix, r, threads);
    // The service's side, from its sandbox's samples and accounting around the step.
    let summary = &a.summary;
    let cpu_s = Some((a.after.cpu_s - a.before.cpu_s).max(0.0));
    let mem_peak = Some(a.mem_peak_kernel.unwrap_or(0.0).max(summary.mem_peak_mib).max(a.after.mem_mib));
    StepRow {
        cpu_s,
        cpu_ms_per_req: crate::figures::cpu_ms_per_req(cpu_s, r.requests_ok),
        mem_peak_mib: mem_peak,
        mem_mib_s_per_req: crate::figures::mem_mib_s_per_req(mem_peak, row.success_rps),
        rss_peak_mib: Some(summary.rss_peak_mib.max(a.after.rss_mib)),
        threads_max: Some(summary.threads_max.max(a.after.threads) as i64),
        open_files_peak: summary.open_files_peak.map(|o| o.count as i64),
        open_files_limit: summary.open_files_peak.map(|o| o.limit as i64),
        throttled_s: Some((a.after.throttled_s - a.before.throttled_s).max(0.0)),
        dep_cpu_s: a.dep_cpu_s,
        dep_wait_s: a.dep_wait_s,
        probe_ms: a.probe_ms,
        samples: a.samples.len() as i64,
        dependency_calls: a.dep_calls.map(|c| c as i64),
        listen_drops: a.listen_drops.map(|d| d as i64),
        dep_listen_drops: a.dep_listen_drops.map(|d| d as i64),
        ..row
    }
}

/// The step's row as the load generator saw it: what was offered, answered and how fast.
fn load_figures(seq: u32, step: &Step, mix: &str, r: &loadgen::LoadReport, threads: usize) -> StepRow {
    let e = &r.errors;
    let l = &r.latency;
    let open = r.open.as_ref();
    let i = |x: u64| x as i64;
    let ok = r.requests_ok;
    // Throughput counts what completed inside the step's window; the open model's answers during the drain
    // count for success and latency only.
    let rps = if r.duration_s > 0.0 { r.requests_ok_in_window as f64 / r.duration_s } else { 0.0 };
    let outcomes = crate::figures::Outcomes {
        ok,
        errors: r.requests_err,
        stalled: r.connections.stalled,
        intended: step.load.offered(r),
    };
    let load = step.load.stored();
    let conn = &r.connections;
    StepRow {
        seq: seq as i64,
        label: step.label(),
        model: load.model.into(),
        connections: load.connections.map(|c| c as i64),
        rate: load.rate,
        rate_end: load.rate_end,
        mix: mix.to_string(),
        upstream_delay_ms: step.upstream_delay_ms.map(|d| d as i64),
        duration_s: r.duration_s,
        requests_ok: i(ok),
        requests_ok_in_window: Some(i(r.requests_ok_in_window)),
        requests_err: i(r.requests_err),
        err_connect: i(e.connect_refused + e.connect_timeout),
        err_timeout: i(e.request_timeout),
        err_read: i(e.reset + e.closed_early),
        err_status: i(e.status),
        err_malformed: i(e.malformed),
        err_connect_refused: Some(i(e.connect_refused)),
        err_connect_timeout: Some(i(e.connect_timeout)),
        err_client_resource: Some(i(e.client_resource)),
        err_reset: Some(i(e.reset)),
        err_closed_early: Some(i(e.closed_early)),
        connect_attempts_failed: Some(i(r.connect_attempts_failed)),
        status_counts: serde_json::to_string(&r.status_counts).unwrap_or_else(|_| "{}".into()),
        success_rps: rps,
        success_ratio: Some(crate::figures::success_ratio(&outcomes)),
        error_ratio: r.error_ratio(),
        p50: Some(l.p50),
        p75: Some(l.p75),
        p90: Some(l.p90),
        p99: Some(l.p99),
        p999: Some(l.p999),
        p9999: Some(l.p9999),
        max_ms: Some(l.max),
        mean_ms: Some(l.mean),
        latency_hdr: r.latency_hdr.clone(),
        open_intended: open.map(|o| i(o.intended)),
        open_late: open.map(|o| i(o.sent_late)),
        open_unsent: open.map(|o| i(o.unsent)),
        open_max_lateness_ms: open.map(|o| o.max_lateness_ms),
        open_lag_p50_ms: open.map(|o| o.lag_p50_ms),
        open_lag_p99_ms: open.map(|o| o.lag_p99_ms),
        open_lag_max_ms: open.map(|o| o.lag_max_ms),
        open_achieved_rate: open.map(|o| o.achieved_rate),
        conn_used: Some(i(conn.used)),
        conn_starved: Some(i(conn.starved)),
        conn_never_connected: Some(i(conn.never_connected)),
        answers_min: Some(i(conn.answers_min)),
        answers_median: Some(i(conn.answers_median)),
        answers_max: Some(i(conn.answers_max)),
        oldest_unanswered_ms: Some(conn.oldest_unanswered_ms),
        stalled: Some(i(conn.stalled)),
        in_flight_at_end: Some(i(r.in_flight_at_end)),
        client_cpu_s: Some(r.client_cpu_s),
        client_cpus: Some(threads as i64),
        client_workers: serde_json::to_string(&r.workers).ok(),
        timeline: serde_json::to_string(&r.timeline).unwrap_or_else(|_| "[]".into()),
        ..Default::default()
    }
}

//! `svcbench run`: plan (services × runs, interleaved), build, start dependencies, then for every run a
//! fresh sandboxed process through startup, checks and the profile's steps, each written to the store
//! as soon as it ends.
pub mod agents;
pub mod alone;
pub mod build;
pub mod build_many;
pub mod build_stamp;
pub mod instance;
pub mod lifecycle;
pub mod progress;
pub mod service_sandbox;
pub mod start_command;
pub mod step;
pub mod warmup;

use crate::deps::{DepContext, Dependencies};
use crate::guard;
use crate::manifest::Service;
use crate::profile::Profile;
use crate::sandbox::{CgroupChoice, Limits};
use crate::scenario::Scenario;
use crate::store::{DeathCause, SessionRecord, Store};
use anyhow::{bail, Context, Result};
use instance::{Instance, StartSpec};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long a service may take to answer its readiness path (`--startup-timeout`'s default, and `study`,
/// `check` and `up`).
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a service may take to end after SIGTERM before it is killed.
pub const STOP_GRACE: Duration = Duration::from_secs(15);
/// Seed of the request value draws when none is given.
pub const SEED: u64 = 1;

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub services: Vec<PathBuf>,
    pub scenario: Option<String>,
    pub profile: String,
    pub runs: u32,
    pub limits: Limits,
    pub loadgen_cpuset: Option<String>,
    pub db: PathBuf,
    pub label: Option<String>,
    pub cgroup: CgroupChoice,
    pub step_duration: Option<Duration>,
    pub mix: Option<String>,
    pub skip_build: bool,
    pub startup_timeout: Duration,
    pub stop_grace: Duration,
    pub seed: u64,
    pub command_line: String,
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// Machine-speed drift (0.10 = 10 %) beyond which a step is flagged.
    pub probe_tolerance: f64,
    /// Measure even where the limits cannot be applied (runs recorded as unlimited).
    pub allow_unlimited: bool,
    /// Queue behind another measurement on this machine instead of refusing.
    pub wait_lock: bool,
    /// The axes of a study: every service runs under each of these cells (CPU quota and memory cap, the
    /// CPU set being `limits`'s; and the links, with a link axis). Empty: `limits` alone.
    pub cells: Vec<AxisCell>,
    /// The study this session belongs to (stored with the session).
    pub study: Option<String>,
    /// Runs already completed per (service, cell key), from earlier sessions of a resumed study: the plan
    /// starts after them.
    pub completed: BTreeMap<(String, String), u32>,
    /// `--net`: the generator, the service and the dependencies in namespaces of their own, joined by these
    /// links (empty: no emulated delay). None: everything on loopback.
    pub net: Option<Vec<crate::network::Link>>,
    /// Generator agents per step (1: the generator runs inside svcbench).
    pub generators: usize,
    /// Dependencies that already run (`--dep KIND=URL`).
    pub given_deps: crate::deps::GivenDeps,
    /// `--hosts`: where the generator agents run and the service listens.
    pub hosts_plan: Option<crate::network::hosts_file::HostsPlan>,
}

/// One cell of a study's axes: the limits a run is measured under, and with a link axis the links.
#[derive(Debug, Clone, PartialEq)]
pub struct AxisCell {
    pub limits: Limits,
    /// None: the session's links (`--link`), the same for every cell.
    pub links: Option<Vec<crate::network::Link>>,
}

impl RunOptions {
    /// Every cell, with the session's CPU set.
    pub fn cell_specs(&self) -> Vec<AxisCell> {
        if self.cells.is_empty() {
            return vec![AxisCell { limits: self.limits.clone(), links: None }];
        }
        self.cells
            .iter()
            .map(|c| AxisCell {
                limits: Limits { cpuset: self.limits.cpuset.clone(), ..c.limits.clone() },
                ..c.clone()
            })
            .collect()
    }

    /// The links the network is made with: the session's, then every pair a cell of the link axis names
    /// (a cell that leaves a pair out runs it without delay).
    fn links_to_make(&self) -> Option<Vec<crate::network::Link>> {
        let mut links = self.net.clone()?;
        for l in self.cells.iter().filter_map(|c| c.links.as_ref()).flatten() {
            if !links.iter().any(|k| k.joins((l.from, l.to))) {
                links.push(l.clone());
            }
        }
        Some(links)
    }
}

/// One run to do: which service, under which limits, its index among that cell's runs.
#[derive(Debug, Clone)]
pub struct PlannedRun {
    pub service: usize,
    pub cell: usize,
    pub run_index: u32,
}

/// Every run of a session, interleaved (A1 B1 A2 B2 …, the cells within each round), so that a drift of the
/// machine over time spreads over every service and limit instead of landing on one. Runs already
/// completed (a resumed study) are left out.
pub fn plan(
    services: &[String],
    cells: &[String],
    runs: u32,
    completed: &BTreeMap<(String, String), u32>,
) -> Vec<PlannedRun> {
    let mut out = Vec::new();
    for run_index in 1..=runs {
        for (c, cell) in cells.iter().enumerate() {
            for (s, svc) in services.iter().enumerate() {
                if completed.get(&(svc.clone(), cell.clone())).copied().unwrap_or(0) >= run_index {
                    continue;
                }
                out.push(PlannedRun { service: s, cell: c, run_index });
            }
        }
    }
    out
}

/// What every step of the session shares.
pub struct SessionCtx {
    pub opts: RunOptions,
    pub scenario: Scenario,
    pub profile: Profile,
    pub store: Store,
    pub session_id: i64,
    pub deps: Dependencies,
    pub loadgen_cpus: Vec<usize>,
    /// The service's CPU set (the machine-speed probe runs there between steps).
    pub service_cpus: Vec<usize>,
    /// Runs started so far in this session.
    pub session_runs: u32,
    /// The estimated time of the session's runs after the current one: the live progress line counts it in,
    /// so that a study of hours says its own time left, not only the run's.
    pub later_runs: Duration,
    pub stop: Arc<AtomicBool>,
    pub work_dir: PathBuf,
    pub tag: String,
    /// Live metrics endpoint (--metrics-listen), when asked for.
    pub metrics: Option<crate::metrics::Shared>,
    /// Where the generator, the service and the dependencies run (loopback, or `--net` namespaces).
    pub hosts: crate::network::Hosts,
    /// The service's own machine (a hosts file's `[service] at`), where it is built and started.
    pub remote_service: Option<Arc<crate::remote_service::client::RemoteService>>,
}

pub struct SessionSummary {
    pub session_id: i64,
    pub runs_ok: usize,
    pub runs_interrupted: usize,
    pub runs_failed: usize,
    pub interrupted: bool,
}

/// Loads the services and finds their (single) scenario.
pub fn load_services(paths: &[PathBuf], scenario: Option<&str>) -> Result<(Vec<Service>, Scenario)> {
    if paths.is_empty() {
        bail!("no service given; pass service folders, e.g. services/hello/go-nethttp");
    }
    let mut services = Vec::new();
    for p in paths {
        services.extend(Service::load_spec(&p.to_string_lossy())?);
    }
    let mut names = std::collections::BTreeSet::new();
    for s in &services {
        if !names.insert(s.name().to_string()) {
            bail!("service name `{}` is given twice; names must be unique", s.name());
        }
    }
    let wanted = scenario.map(String::from).unwrap_or_else(|| services[0].manifest.scenario.clone());
    if scenario.is_none() {
        if let Some(other) = services.iter().find(|s| s.manifest.scenario != wanted) {
            bail!(
                "services of different scenarios ({} is `{}`, {} is `{}`); run one scenario at a time",
                services[0].name(),
                wanted,
                other.name(),
                other.manifest.scenario
            );
        }
    }
    // A service folder outside the checkout still finds the bundled scenarios (SVCBENCH_HOME, or the checkout
    // the binary was built in).
    let bundled = crate::paths::project_dir("scenarios").ok();
    let sc = Scenario::find(&wanted, &services[0].dir, bundled.as_deref())?;
    Ok((services, sc))
}

/// Resolves the CPU split: the service's cpuset (from --cpuset or the default split) and the generator's.
/// Refuses, before any work, CPUs that do not exist here, a generator sharing the service's CPUs when the
/// user chose either set, and a quota the service's CPUs could never reach.
pub fn cpu_split(limits: &mut Limits, loadgen_cpuset: Option<&str>) -> Result<Vec<usize>> {
    split_cpus(limits, loadgen_cpuset, &crate::sandbox::procfs::allowed_cpus())
}

fn split_cpus(limits: &mut Limits, loadgen_cpuset: Option<&str>, allowed: &[usize]) -> Result<Vec<usize>> {
    let (svc_default, gen_default) = crate::cpus::default_split(allowed);
    let all = crate::cpus::format(allowed);
    let chosen = limits.cpuset.is_some() || loadgen_cpuset.is_some();
    let check = |option: &str, set: &[usize]| -> Result<()> {
        if let Some(c) = set.iter().find(|c| !allowed.contains(c)) {
            bail!(
                "{option} names CPU {c}, which this machine does not have or does not allow svcbench (allowed: {all})"
            );
        }
        Ok(())
    };
    let svc = match &limits.cpuset {
        Some(s) => crate::cpus::parse(s)?,
        None => svc_default,
    };
    check("--cpuset", &svc)?;
    limits.cpuset = Some(crate::cpus::format(&svc));
    let gen = match loadgen_cpuset {
        Some(s) => crate::cpus::parse(s)?,
        None => {
            let rest: Vec<usize> = allowed.iter().copied().filter(|c| !svc.contains(c)).collect();
            if rest.is_empty() && chosen {
                bail!(
                    "--cpuset {} takes every CPU here ({all}), leaving none for the load generator: give the service \
                     fewer CPUs",
                    crate::cpus::format(&svc)
                );
            }
            if rest.is_empty() {
                gen_default
            } else {
                rest
            }
        }
    };
    check("--loadgen-cpuset", &gen)?;
    if chosen {
        if let Some(c) = gen.iter().find(|c| svc.contains(c)) {
            bail!(
                "--cpuset {} and --loadgen-cpuset {} share CPU {c}: the generator would take the service's CPU time; \
                 give them disjoint sets",
                crate::cpus::format(&svc),
                crate::cpus::format(&gen)
            );
        }
    }
    if let Some(q) = limits.cpus {
        if q > svc.len() as f64 {
            bail!(
                "--cpus {q} is more than the {} CPU(s) of the service's cpuset ({}): the quota could never be reached; \
                 lower --cpus or widen --cpuset",
                svc.len(),
                crate::cpus::format(&svc)
            );
        }
    }
    Ok(gen)
}

/// Refuses a session whose limits this machine cannot apply (a cgroup version not mounted, a controller
/// missing, no write access): a sandbox is set up and read back before anything is built. With
/// `--allow-unlimited` the session goes on and every run is recorded as unlimited.
fn preflight_limits(opts: &RunOptions) -> Result<Vec<String>> {
    let mut mismatches = Vec::new();
    for limits in opts.cell_specs().into_iter().map(|c| c.limits) {
        let name = format!("{}-preflight", std::process::id());
        let sandbox = crate::sandbox::Sandbox::new(&name, &limits, opts.cgroup);
        mismatches.extend(sandbox.limits_held(&limits).1);
    }
    if !mismatches.is_empty() && !opts.allow_unlimited {
        bail!(
            "the limits cannot be applied on this machine ({}): choose another --cgroup or fix the cgroup mount, or \
             pass --allow-unlimited to measure without them (every run is then marked unlimited)",
            mismatches.join("; ")
        );
    }
    Ok(mismatches)
}

pub fn run_session(mut opts: RunOptions, stop: Arc<AtomicBool>) -> Result<SessionSummary> {
    let (services, scenario) = load_services(&opts.services, opts.scenario.as_deref())?;
    opts.given_deps.check(&scenario.file.dependency, scenario.name())?;
    let mut profile = Profile::find(&opts.profile, None)?;
    if let Some(d) = opts.step_duration {
        profile = profile.with_step_duration(d)?;
    }
    if opts.mix.is_none() && !scenario.file.step_mixes.is_empty() {
        profile = profile.with_step_mixes(&scenario.file.step_mixes);
    }
    for s in &profile.steps {
        scenario.mix(s.mix_name(opts.mix.as_deref()))?;
    }
    if opts.runs == 0 {
        bail!("--runs must be at least 1");
    }
    agents::check_split(&profile.steps, opts.generators)?;
    // The quota check holds for the largest quota of the limits axis.
    let widest = opts
        .cell_specs()
        .iter()
        .filter_map(|c| c.limits.cpus)
        .fold(opts.limits.cpus, |a, b| Some(a.map_or(b, |a: f64| a.max(b))));
    let asked_cpus = std::mem::replace(&mut opts.limits.cpus, widest);
    let loadgen_cpus = cpu_split(&mut opts.limits, opts.loadgen_cpuset.as_deref())?;
    opts.limits.cpus = asked_cpus;
    let cells = opts.cell_specs();
    let results_dir = opts.db.parent().map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    // One measurement at a time, then whatever a killed svcbench left behind, then the limits: all before
    // anything is built or started.
    let _machine = guard::machine_lock::acquire("run", opts.wait_lock)?;
    for line in guard::leftovers::clean(&results_dir) {
        eprintln!("{line}");
    }
    let service_at = opts.hosts_plan.as_ref().and_then(|p| p.service_at.clone());
    if service_at.is_some() {
        crate::remote_service::client::check_services(&services)?;
    }
    // A service on another machine is limited there: its answers say what was held.
    let unlimited = if service_at.is_none() { preflight_limits(&opts)? } else { Vec::new() };
    // The other machines answer (ssh, and svcbench there) before anything is built; their facts are stored.
    let other_hosts = match &opts.hosts_plan {
        Some(plan) => crate::network::ssh::other_hosts(plan, &scenario, &opts.given_deps)?,
        None => Vec::new(),
    };
    let store_at = opts.hosts_plan.as_ref().and_then(|p| p.store.clone());
    let cgroup_version =
        match if opts.cgroup == CgroupChoice::Auto { crate::sandbox::cgroup::detect() } else { opts.cgroup } {
            CgroupChoice::V1 => "v1",
            CgroupChoice::V2 => "v2",
            _ => "none",
        };
    let store = Store::open(&opts.db)?;
    let session_id = store.create_session(&SessionRecord {
        label: opts.label.clone(),
        command: opts.command_line.clone(),
        scenario: scenario.name().to_string(),
        profile: profile.name.clone(),
        runs_per_service: opts.runs,
        host: crate::host::facts(),
        cgroup_version: cgroup_version.to_string(),
        // A limit that varies along a study's axis is recorded per run (its cell), not per session.
        limit_cpus: cells
            .iter()
            .all(|c| c.limits.cpus == cells[0].limits.cpus)
            .then_some(cells[0].limits.cpus)
            .flatten(),
        limit_memory_mib: cells
            .iter()
            .all(|c| c.limits.memory_bytes == cells[0].limits.memory_bytes)
            .then_some(cells[0].limits.memory_bytes.map(|b| b as f64 / 1048576.0))
            .flatten(),
        study: opts.study.clone(),
        service_cpuset: opts.limits.cpuset.clone(),
        loadgen_cpuset: Some(crate::cpus::format(&loadgen_cpus)),
        probe_tolerance: opts.probe_tolerance,
    })?;
    if !other_hosts.is_empty() {
        store.record_other_hosts(session_id, &other_hosts)?;
    }
    // Made before the dependencies and dropped after them (locals drop in reverse), so nothing still runs
    // in a namespace when it is removed.
    let mut network = match opts.links_to_make() {
        Some(links) => {
            let mut n = crate::network::Network::create(&links, &loadgen_cpus, opts.generators)?;
            // The checks and the warm-up run under the first cell, as do their limits.
            if let Some(first) = &cells[0].links {
                n.set_links(first);
            }
            let axis = cells.iter().any(|c| c.links.is_some());
            let described =
                if axis { format!("{}; the links of each run are its cell's", n.describe()) } else { n.describe() };
            eprintln!("svcbench: network: {described}");
            store.record_network(session_id, &described)?;
            Some(n)
        }
        None => None,
    };
    if network.is_none() && opts.generators > 1 {
        store.record_network(session_id, &format!("loopback; {} generator agents", opts.generators))?;
    }
    let mut hosts = network.as_ref().map(|n| n.hosts()).unwrap_or_else(crate::network::Hosts::local);
    if let Some(plan) = &opts.hosts_plan {
        if let Some(addr) = plan.service_addr {
            // Generators on other machines reach the service at this machine's address.
            hosts.service = crate::network::Host { addr, netns: None };
        }
        let places: Vec<String> = plan.generators.iter().map(|p| p.describe()).collect();
        let store_at =
            plan.store.as_ref().map(|s| format!("; store {} ({})", s.place.describe(), s.address)).unwrap_or_default();
        let service_place = plan.service_at.as_ref().map(|s| format!(" on {}", s.place.describe())).unwrap_or_default();
        let described = format!(
            "hosts file: service {}{service_place}{store_at}; generators {}",
            hosts.service.addr,
            places.join(", ")
        );
        eprintln!("svcbench: {described}");
        store.record_network(session_id, &described)?;
    }
    let measured: Vec<usize> = crate::cpus::parse(opts.limits.cpuset.as_deref().unwrap_or(""))?
        .into_iter()
        .chain(loadgen_cpus.clone())
        .collect();
    if let Some(w) = guard::quiet_cpus::check(&measured, Duration::from_millis(500)) {
        eprintln!("svcbench: WARNING: {w}");
        store.add_session_warning(session_id, &w)?;
    }
    if !unlimited.is_empty() {
        let w = format!("limits not applied (--allow-unlimited): {}", unlimited.join("; "));
        eprintln!("svcbench: WARNING: {w}");
        store.add_session_warning(session_id, &w)?;
    }
    let tag = format!("{}-{session_id}", std::process::id());
    // Absolute: services run in their own folders, and paths handed to them ({dep.sqlite.path}) must hold there.
    // Named after the store too: session numbers restart in every store, logs must not mix.
    let store_name = opts.db.file_stem().and_then(|s| s.to_str()).unwrap_or("svcbench");
    let work_dir = std::path::absolute(results_dir.join("work").join(format!("{store_name}-session-{session_id}")))?;
    std::fs::create_dir_all(&work_dir).with_context(|| format!("cannot create {}", work_dir.display()))?;
    // From here on, a later svcbench can end what this one started if this one is killed.
    guard::open_lock(&work_dir, &opts.db, session_id);
    eprintln!(
        "svcbench: session {session_id}: {} service(s) × {}{} run(s), scenario `{}`, profile `{}` ({} steps, {} per run); store {}",
        services.len(),
        if cells.len() > 1 { format!("{} cells × ", cells.len()) } else { String::new() },
        opts.runs, scenario.name(), profile.name, profile.steps.len(),
        progress::fmt_duration(profile.total_duration()), opts.db.display()
    );
    eprintln!("svcbench:   scenario: {}", scenario.file.description);
    for v in services.iter().filter(|s| s.variant.is_some()) {
        let what = v.description.clone().unwrap_or_else(|| format!("{:?}", v.manifest.env));
        eprintln!("svcbench:   variant {}: {what}", v.name());
    }
    eprintln!("svcbench:   profile:  {} ({})", profile.description, profile.path.display());

    let result = (|| -> Result<SessionSummary> {
        // The service's machine runs (and builds) it until this closure ends (dropped after `ctx`).
        let remote_service = match &service_at {
            Some(at) => Some(crate::remote_service::client::RemoteService::connect(at)?),
            None => None,
        };
        // Build each service once; a failed build is recorded and that service skipped.
        // Variants that differ only in how they run share their base's build.
        let mut ready = Vec::new();
        let mut builds: BTreeMap<String, std::result::Result<(f64, u64), String>> = BTreeMap::new();
        for svc in &services {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let built = match builds.get(&svc.build_key()) {
                // The build it reuses, and what that build took (its artifacts are here, or were measured
                // on the service's machine).
                Some(Ok((seconds, bytes))) if remote_service.is_some() => Ok((*seconds, *bytes)),
                Some(Ok((seconds, _))) => {
                    svc.artifact_bytes().map(|bytes| (*seconds, bytes)).map_err(|e| format!("{e:#}"))
                }
                Some(Err(e)) => Err(e.clone()),
                None => {
                    let b = match &remote_service {
                        Some(r) => r.build(svc, opts.skip_build),
                        None => build::build(svc, &work_dir, opts.skip_build),
                    }
                    .map(|b| (b.seconds, b.artifact_bytes))
                    .map_err(|e| format!("{e:#}"));
                    builds.insert(svc.build_key(), b.clone());
                    b
                }
            };
            match built {
                Ok((seconds, bytes)) => {
                    store.add_service(session_id, svc, true, Some(seconds), None, Some(bytes))?;
                    ready.push(svc.clone());
                }
                Err(e) => {
                    eprintln!("svcbench: {e}");
                    store.add_service(session_id, svc, false, None, Some(&e), None)?;
                }
            }
        }
        // A store on another machine runs until this closure ends (dropped after `ctx`, which uses it).
        let remote = match &store_at {
            Some(at) => Some(crate::deps::remote::RemoteDeps::start(at, scenario.name(), true, &stop)?),
            None => None,
        };
        let given = remote.as_ref().map_or_else(|| opts.given_deps.clone(), |r| r.given(&opts.given_deps));
        let deps = Dependencies::start(
            &scenario.file.dependency,
            &DepContext {
                work_dir: &work_dir,
                scenario_dir: &scenario.dir,
                cpuset: Some(crate::cpus::format(&loadgen_cpus)),
                cgroup: opts.cgroup,
                session_tag: tag.clone(),
                for_load: true,
                host: hosts.store.clone(),
                given: &given,
            },
        )?;
        let mut ctx = SessionCtx {
            opts: opts.clone(),
            scenario: scenario.clone(),
            profile,
            store,
            session_id,
            deps,
            loadgen_cpus,
            service_cpus: crate::cpus::parse(opts.limits.cpuset.as_deref().unwrap_or(""))?,
            session_runs: 0,
            later_runs: Duration::ZERO,
            stop: stop.clone(),
            work_dir: work_dir.clone(),
            tag,
            metrics: match opts.metrics_listen {
                Some(a) => Some(crate::metrics::serve(a)?),
                None => None,
            },
            hosts: hosts.clone(),
            remote_service: remote_service.clone(),
        };
        for svc in &ready {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let placeholders = ctx.deps.placeholders();
            let spec = start_spec(&ctx, svc, &cells[0].limits, "refusal", &placeholders, &svc.manifest.broken_env);
            match lifecycle::check_refusal(svc, spec, &stop) {
                Ok(Some((refused, detail))) => {
                    eprintln!("svcbench: {}: wrong dependency address: {detail}", svc.name());
                    ctx.store.set_refusal(session_id, svc.name(), refused, &detail)?;
                }
                Ok(None) => {}
                Err(e) => ctx.store.set_refusal(session_id, svc.name(), false, &format!("{e:#}"))?,
            }
        }
        if let (Some(spec), Some(first)) = (&scenario.file.warmup, ready.first()) {
            let placeholders = ctx.deps.placeholders();
            let empty = BTreeMap::new();
            eprintln!("svcbench: warming the dependencies through {} until its throughput settles", first.name());
            let start = start_spec(&ctx, first, &cells[0].limits, "warmup", &placeholders, &empty);
            let w = warmup::warm_up(
                spec,
                &scenario,
                first,
                &start,
                warmup::LoadFrom { cpus: &ctx.loadgen_cpus, host: ctx.hosts.client() },
                opts.startup_timeout,
                &stop,
            )?;
            eprintln!(
                "svcbench: warm-up {} after {:.0} s: {} req/s per window",
                if w.settled { "settled" } else { "did NOT settle" },
                w.seconds,
                w.windows.iter().map(|x| format!("{x:.0}")).collect::<Vec<_>>().join(", ")
            );
            if !w.settled {
                ctx.store.add_session_warning(
                    session_id,
                    &format!("the dependencies' warm-up did not settle within its limit ({:.0} s)", w.seconds),
                )?;
            }
            ctx.store.record_warmup(session_id, &serde_json::to_string(&w)?)?;
        }
        let mut summary =
            SessionSummary { session_id, runs_ok: 0, runs_interrupted: 0, runs_failed: 0, interrupted: false };
        let names: Vec<String> = ready.iter().map(|s| s.name().to_string()).collect();
        let keys: Vec<String> = cells.iter().map(cell_key).collect();
        let todo = plan(&names, &keys, opts.runs, &opts.completed);
        let mut left = progress::TimeLeft::new(todo.len(), progress::estimate(1, ctx.profile.total_duration()));
        for (i, p) in todo.iter().enumerate() {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let svc = &ready[p.service];
            let spec = &cells[p.cell];
            if let (Some(n), Some(links)) = (network.as_mut(), &spec.links) {
                n.set_links(links);
            }
            let cell = Cell { limits: &spec.limits, key: &keys[p.cell], of: cells.len() };
            ctx.later_runs = left.after_this_run();
            let (status, err) = run_one(&mut ctx, svc, &cell, p.run_index)?;
            match status {
                "completed" => summary.runs_ok += 1,
                "interrupted" => summary.runs_interrupted += 1,
                _ => summary.runs_failed += 1,
            }
            if let Some(e) = err {
                eprintln!("svcbench: {} run {} {status}: {e}", svc.name(), p.run_index);
            }
            if todo.len() > 1 && i + 1 < todo.len() && !stop.load(Ordering::Relaxed) {
                eprintln!("svcbench: {}", left.run_done());
            }
        }
        summary.interrupted = stop.load(Ordering::Relaxed);
        for (link, carried, dropped) in network.iter().flat_map(|n| n.link_counts()) {
            eprintln!("svcbench: link {link}: {carried} packets carried, {dropped} dropped");
        }
        let slow = ctx.store.flag_machine_speed(session_id, opts.probe_tolerance)?;
        if slow > 0 {
            eprintln!(
                "svcbench: {slow} step(s) ran while the machine-speed probe was more than {:.0} % off the session's \
                 median: flagged, left out of the peaks",
                opts.probe_tolerance * 100.0
            );
        }
        ctx.store.finish_session(session_id, if summary.interrupted { "interrupted" } else { "completed" })?;
        Ok(summary)
    })();
    if result.is_err() {
        if let Ok(s) = Store::open(&opts.db) {
            let _ = s.finish_session(session_id, "failed");
        }
    }
    // Every part has been stopped by now (their sandboxes are dropped): nothing for a later svcbench to end.
    guard::close_lock();
    result
}

/// The limits a run is measured under, and their key in the store.
pub struct Cell<'a> {
    pub limits: &'a Limits,
    pub key: &'a str,
    /// How many cells the session has (one: the key is not shown).
    pub of: usize,
}

/// The store's key of a cell of a study's axes: `cpus=0.5 memory=256M`, with a link axis followed by
/// ` links=service-store=delay:2ms` (`links=none` for a cell without delay).
pub fn cell_key(c: &AxisCell) -> String {
    let l = &c.limits;
    let cpus = l.cpus.map(|c| format!("{c}")).unwrap_or_else(|| "none".into());
    let mem = match l.memory_bytes {
        Some(b) if b % (1 << 30) == 0 => format!("{}G", b >> 30),
        Some(b) => format!("{}M", b >> 20),
        None => "none".into(),
    };
    match &c.links {
        Some(links) => {
            format!("cpus={cpus} memory={mem} links={}", crate::network::link::describe(links).replace(' ', ""))
        }
        None => format!("cpus={cpus} memory={mem}"),
    }
}

fn start_spec<'a>(
    ctx: &'a SessionCtx,
    svc: &Service,
    limits: &'a Limits,
    what: &str,
    placeholders: &'a BTreeMap<String, String>,
    overrides: &'a BTreeMap<String, String>,
) -> StartSpec<'a> {
    StartSpec {
        sandbox_name: format!("{}-{}-{what}", ctx.tag, svc.name().replace('@', "-")),
        limits,
        cgroup: ctx.opts.cgroup,
        dep_placeholders: placeholders,
        log_dir: &ctx.work_dir,
        log_name: format!("{}-{what}.log", svc.name()),
        env_overrides: overrides,
        host: &ctx.hosts.service,
        remote: ctx.remote_service.as_ref(),
    }
}

/// How long a service is left idle after startup before its idle memory is read.
const IDLE_SETTLE: Duration = Duration::from_millis(1000);

/// One run, stored; returns its status as stored (completed, interrupted, failed) and why it did not
/// complete. Only a store that cannot be written is an error here.
fn run_one(ctx: &mut SessionCtx, svc: &Service, cell: &Cell, run_index: u32) -> Result<(&'static str, Option<String>)> {
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
        if let Some(w) = guard::quiet_cpus::check(&cpus, Duration::from_millis(300)) {
            eprintln!("svcbench: WARNING: {} run {run_index}: {w}", svc.name());
            ctx.store.add_run_warnings(run_id, &[w])?;
        }
    }
    ctx.session_runs += 1;
    let mut unlimited = Vec::new();
    let r = run_one_inner(ctx, svc, cell, run_index, run_id, &mut unlimited);
    let (status, err) = match &r {
        Ok(()) if ctx.stop.load(Ordering::Relaxed) => ("interrupted", None),
        Ok(()) => ("completed", None),
        Err(e) if ctx.stop.load(Ordering::Relaxed) => ("interrupted", Some(format!("{e:#}"))),
        Err(e) => ("failed", Some(format!("{e:#}"))),
    };
    for (name, value) in ctx.deps.after_run() {
        ctx.store.add_run_figure(run_id, &name, value)?;
    }
    let flags = crate::figures::validity::run_flags(status, &unlimited);
    ctx.store.finish_run(run_id, status, err.as_deref(), &flags)?;
    Ok((status, err))
}

fn run_one_inner(
    ctx: &mut SessionCtx,
    svc: &Service,
    cell: &Cell,
    run_index: u32,
    run_id: i64,
    unlimited: &mut Vec<String>,
) -> Result<()> {
    ctx.deps.before_run(&format!("{}-run{run_index}", svc.name()))?;
    let placeholders = ctx.deps.placeholders();
    let empty = BTreeMap::new();
    let what = if cell.of > 1 {
        // A sandbox's (cgroup's) name: the key's letters, digits and dots only.
        let key: String = cell.key.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '.').collect();
        format!("run{run_index}-cell{key}")
    } else {
        format!("run{run_index}")
    };
    let mut inst = Instance::spawn(svc, &start_spec(ctx, svc, cell.limits, &what, &placeholders, &empty))?;
    if let Some(user) = &inst.user {
        ctx.store.record_service_user(run_id, user)?;
    }
    // What the kernel holds, not what was asked: a mismatch makes the run unlimited.
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
    *unlimited = mismatches;
    ctx.store.add_run_warnings(run_id, inst.sandbox.warnings())?;
    for w in inst.sandbox.warnings() {
        eprintln!("svcbench: WARNING: {w}");
        ctx.store.add_session_warning(ctx.session_id, w)?;
    }
    let startup = match inst.wait_ready(svc, ctx.opts.startup_timeout, &ctx.stop) {
        Ok(t) => t,
        Err(e) => {
            let cause = if e.is::<instance::StuckAtMemoryCap>() {
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
    ctx.store.record_startup(
        run_id,
        &crate::store::RunStartup {
            startup_ms: startup.as_secs_f64() * 1e3,
            idle_mem_mib: idle.mem_mib,
            idle_rss_mib: idle.rss_mib,
            idle_threads: idle.threads,
        },
    )?;
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
    eprintln!(
        "svcbench: {} run {run_index}: started in {:.1} ms, idle {:.1} MiB, checks {}/{} passed",
        svc.name(),
        startup.as_secs_f64() * 1e3,
        idle.mem_mib,
        checks.len() - failed,
        checks.len()
    );

    let steps = ctx.profile.steps.clone();
    let mut total_ok = 0u64;
    let mut cpu_before_restarts = 0.0;
    let mut outcome_err = None;
    for (i, step) in steps.iter().enumerate() {
        if ctx.stop.load(Ordering::Relaxed) {
            break;
        }
        if step.fresh_start && i > 0 {
            cpu_before_restarts += inst.sandbox.sample().cpu_s;
            inst.sandbox.stop(ctx.opts.stop_grace);
            let what = format!("{what}-step{}", i + 1);
            inst = Instance::spawn(svc, &start_spec(ctx, svc, cell.limits, &what, &placeholders, &empty))?;
            inst.wait_ready(svc, ctx.opts.startup_timeout, &ctx.stop)?;
        }
        let left: Duration = steps[i + 1..].iter().map(|s| s.duration).sum::<Duration>() + ctx.later_runs;
        let under = if cell.of > 1 { format!(" [{}]", cell.key) } else { String::new() };
        let prefix = format!(
            "{}{under} run {run_index}/{} step {}/{} {}",
            svc.name(),
            ctx.opts.runs,
            i + 1,
            steps.len(),
            step.label()
        );
        let out = step::run_step(ctx, &mut inst, (svc.name(), run_index, run_id), i as u32 + 1, step, &prefix, left)?;
        total_ok += out.requests_ok;
        if out.interrupted {
            break;
        }
        if out.oom_killed || out.crashed {
            let what = if out.oom_killed { "OOM-killed" } else { "crashed" };
            // The kernel counts an OOM kill a moment before the killed process is reaped.
            let exit = inst
                .sandbox
                .wait_exit(Duration::from_secs(2))
                .map_or_else(|| "its main process still runs".to_string(), |e| e.to_string());
            eprintln!("svcbench: {} run {run_index}: {what} in step {} ({exit})", svc.name(), i + 1);
            // The run's first death is its outcome; the step's own flags name every death.
            if outcome_err.is_none() {
                ctx.store.record_death(
                    run_id,
                    &crate::store::RunDeath {
                        cause: DeathCause::of_exit(out.oom_killed),
                        stage: format!("step {}", i + 1),
                    },
                )?;
                outcome_err = Some(anyhow::anyhow!("service {what} in step {} ({}): {exit}", i + 1, step.label()));
            }
            // A later step that starts the service afresh is a measurement of its own (seed 004's resource
            // table: each rate after a fresh start), so one level's death does not cost the others.
            if steps.get(i + 1).is_some_and(|s| s.fresh_start) {
                continue;
            }
            break;
        }
        if let Some(min) = ctx.profile.stop_below_success {
            if out.success_ratio < min {
                eprintln!(
                    "svcbench: {} run {run_index}: {:.0} % succeeded in step {} (< {:.0} %): profile's stop rule ends the run",
                    svc.name(), out.success_ratio * 100.0, i + 1, min * 100.0
                );
                break;
            }
        }
    }
    let last = inst.sandbox.sample();
    let stopped = inst.sandbox.stop(ctx.opts.stop_grace);
    ctx.store.record_end(
        run_id,
        &crate::store::RunEnd {
            total_requests_ok: total_ok,
            total_cpu_s: cpu_before_restarts + last.cpu_s,
            shutdown_ms: outcome_err.is_none().then_some(stopped.elapsed.as_secs_f64() * 1e3),
            stopped_gracefully: outcome_err.is_none().then_some(stopped.graceful),
            exit_code: stopped.exit.and_then(|e| e.code),
            exit_signal: stopped.exit.and_then(|e| e.signal),
        },
    )?;
    match outcome_err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// `svcbench check`: build, start, run the conformance checks, stop. Returns the results.
pub fn check_service(
    path: &std::path::Path,
    scenario: Option<&str>,
    skip_build: bool,
    cgroup: CgroupChoice,
    work_dir: &std::path::Path,
    stop: Arc<AtomicBool>,
) -> Result<Vec<crate::scenario::checks::CheckResult>> {
    let (services, scenario) = load_services(&[path.to_path_buf()], scenario)?;
    let svc = &services[0];
    std::fs::create_dir_all(work_dir)?;
    let work_dir = &std::path::absolute(work_dir)?;
    let mut limits = Limits::default();
    let gen = cpu_split(&mut limits, None)?;
    let how = alone::Alone {
        service_at: None,
        what: "check",
        limits: &limits,
        loadgen_cpus: &gen,
        cgroup,
        work_dir,
        skip_build,
        for_load: false,
        net: None,
        given: &crate::deps::GivenDeps::default(),
        store_at: None,
        service_addr: None,
    };
    let mut started = alone::start(svc, &scenario, &how, &stop)?;
    let inst = &mut started.inst;
    eprintln!("svcbench: {} answered after {:.1} ms", svc.name(), started.startup.as_secs_f64() * 1e3);
    let Some(results) = crate::scenario::checks::run_checks_until(&inst.base_url(), &scenario.file.check, &stop) else {
        inst.sandbox.stop(STOP_GRACE);
        bail!("interrupted during the conformance checks");
    };
    inst.sandbox.stop(Duration::from_secs(15));
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(cpuset: Option<&str>, cpus: Option<f64>, gen: Option<&str>) -> Result<(String, Vec<usize>)> {
        let mut l = Limits { cpus, memory_bytes: None, cpuset: cpuset.map(String::from) };
        let g = split_cpus(&mut l, gen, &[0, 1])?;
        Ok((l.cpuset.unwrap(), g))
    }

    #[test]
    fn cpu_sets_are_checked_before_any_work() {
        assert_eq!(split(None, None, None).unwrap(), ("1".into(), vec![0]));
        assert_eq!(split(Some("0"), Some(1.0), None).unwrap(), ("0".into(), vec![1]));
        let err = |c, q, g| split(c, q, g).unwrap_err().to_string();
        assert!(err(Some("7"), None, None).contains("CPU 7"));
        assert!(err(None, None, Some("5")).contains("--loadgen-cpuset names CPU 5"));
        assert!(err(Some("0-1"), None, None).contains("leaving none for the load generator"));
        assert!(err(Some("1"), None, Some("0-1")).contains("share CPU 1"));
        assert!(err(Some("1"), Some(999.0), None).contains("--cpus 999 is more than the 1 CPU(s)"));
        assert!(err(Some("1"), Some(1.5), None).contains("could never be reached"));
    }
}

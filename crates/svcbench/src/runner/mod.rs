//! `svcbench run`: a session in phases, each in a file of its own — preflight (everything checked before
//! anything is built or started), prepare (the stored session, the network, builds, dependencies, the
//! refusal checks, the warm-up), the interleaved runs (run_loop.rs; one run in run.rs, one step in step.rs),
//! and finish (machine-speed flags, the session's end). Every step is written to the store as it ends.
pub mod agents;
pub mod finish;
pub mod lifecycle;
pub mod plan;
pub mod preflight;
pub mod prepare;
pub mod progress;
pub mod run;
pub mod run_loop;
pub mod step;
pub mod unique_names;
pub mod warmup;

#[cfg(test)]
mod session_tests;

pub use plan::{load_services, plan, PlannedRun};

use crate::cell::AxisCell;
use crate::deps::Dependencies;
use crate::guard;
use crate::profile::Profile;
use crate::sandbox::{CgroupChoice, Limits};
use crate::scenario::Scenario;
use crate::store::Store;
use anyhow::Result;
use preflight::Preflight;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// How long a service may take to answer its readiness path (`--startup-timeout`'s default, and `study`,
/// `check` and `up`).
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a service may take to end after SIGTERM before it is killed.
pub const STOP_GRACE: Duration = Duration::from_secs(15);
/// Seed of the request value draws when none is given.
pub const SEED: u64 = 1;

/// What one session measures: the parts a command decides itself (`run` from its arguments, `study` per
/// cell).
#[derive(Debug, Clone)]
pub struct SessionPlan {
    pub services: Vec<PathBuf>,
    pub scenario: Option<String>,
    pub profile: String,
    pub runs: u32,
    pub limits: Limits,
    pub loadgen_cpuset: Option<String>,
    pub db: PathBuf,
    pub label: Option<String>,
    pub step_duration: Option<Duration>,
    pub mix: Option<String>,
    pub startup_timeout: Duration,
    pub seed: u64,
    pub metrics_listen: Option<std::net::SocketAddr>,
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
    /// How container services start (`--runtime`).
    pub runtime: crate::manifest::Runtime,
}

/// A session's options: its plan, and what every measuring command shares (options/session.rs builds
/// them from both).
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub plan: SessionPlan,
    pub cgroup: CgroupChoice,
    pub skip_build: bool,
    pub stop_grace: Duration,
    pub command_line: String,
    /// Machine-speed drift (0.10 = 10 %) beyond which a step is flagged.
    pub probe_tolerance: f64,
    /// Measure even where the limits cannot be applied (runs recorded as unlimited).
    pub allow_unlimited: bool,
    /// Queue behind another measurement on this machine instead of refusing.
    pub wait_lock: bool,
    /// Generator agents per step (1: the generator runs inside svcbench).
    pub generators: usize,
    /// Dependencies that already run (`--dep KIND=URL`).
    pub given_deps: crate::deps::GivenDeps,
    /// `--hosts`: where the generator agents run and the service listens.
    pub hosts_plan: Option<crate::remote::hosts_file::HostsPlan>,
}

impl RunOptions {
    /// Every cell, with the session's CPU set.
    pub fn cell_specs(&self) -> Vec<AxisCell> {
        if self.plan.cells.is_empty() {
            return vec![AxisCell { limits: self.plan.limits.clone(), links: None }];
        }
        self.plan
            .cells
            .iter()
            .map(|c| AxisCell {
                limits: Limits { cpuset: self.plan.limits.cpuset.clone(), ..c.limits.clone() },
                ..c.clone()
            })
            .collect()
    }

    /// The links the network is made with: the session's, then every pair a cell of the link axis names
    /// (a cell that leaves a pair out runs it without delay).
    fn links_to_make(&self) -> Option<Vec<crate::network::Link>> {
        let mut links = self.plan.net.clone()?;
        for l in self.plan.cells.iter().filter_map(|c| c.links.as_ref()).flatten() {
            if !links.iter().any(|k| k.joins((l.from, l.to))) {
                links.push(l.clone());
            }
        }
        Some(links)
    }
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
    pub remote_service: Option<Arc<dyn crate::service::instance::StartsElsewhere>>,
}

#[derive(Debug, Default)]
pub struct SessionSummary {
    pub session_id: i64,
    pub runs_ok: usize,
    pub runs_interrupted: usize,
    pub runs_failed: usize,
    pub interrupted: bool,
    /// Services that were not measured as asked, each with why (its build failed, its image is missing,
    /// its folder refused), in the order met: the runs they would have had count as failed.
    pub not_measured: Vec<finish::NotMeasured>,
    /// Per service whose runs failed: how many, and the first one's reason.
    pub failed_runs: Vec<(String, usize, String)>,
    /// Steps of this session's runs stored as not valid (flagged), and all its steps.
    pub invalid_steps: usize,
    pub steps: usize,
}

/// A whole session, phase after phase. Whatever ends it, the session is stored as ended and every part it
/// started is stopped.
pub fn run_session(opts: RunOptions, stop: Arc<AtomicBool>) -> Result<SessionSummary> {
    let pre = preflight::preflight(opts)?;
    let opened = prepare::open_session(&pre).map_err(crate::exit::failed)?;
    let session_id = opened.session_id;
    // From here on something was started: an error is the session's failure (exit 1), not a refusal.
    let result = run_opened(&pre, opened, &stop).map_err(crate::exit::failed);
    if result.is_err() {
        if let Ok(s) = Store::open(&pre.opts.plan.db) {
            let _ = s.finish_session(session_id, "failed");
        }
    }
    // Every part has been stopped by now (their sandboxes are dropped): nothing for a later svcbench to end.
    guard::close_lock();
    result
}

/// Prepare, run, finish. Locals drop in reverse: the session's parts (in `ctx`, declared last) end before the
/// network they ran in and before the machines a hosts file names.
fn run_opened(pre: &Preflight, opened: prepare::Opened, stop: &Arc<AtomicBool>) -> Result<SessionSummary> {
    let service_at = pre.opts.hosts_plan.as_ref().and_then(|p| p.service_at.clone());
    let remote_service = service_at.as_ref().map(crate::remote::service_client::RemoteService::connect).transpose()?;
    let (ready, not_built) = prepare::build_services(pre, &opened, remote_service.as_ref(), stop)?;
    let store_at = pre.opts.hosts_plan.as_ref().and_then(|p| p.store.clone());
    let remote_store = match &store_at {
        Some(at) => Some(crate::remote::deps_client::RemoteDeps::start(at, pre.scenario.name(), true, stop)?),
        None => None,
    };
    let given = remote_store.as_ref().map_or_else(|| pre.opts.given_deps.clone(), |r| r.given(&pre.opts.given_deps));
    let deps = prepare::start_dependencies(pre, &opened, &given)?;
    let prepare::Opened { store, session_id, work_dir, tag, mut network, hosts } = opened;
    let mut ctx = SessionCtx {
        opts: pre.opts.clone(),
        scenario: pre.scenario.clone(),
        profile: pre.profile.clone(),
        store,
        session_id,
        deps,
        loadgen_cpus: pre.loadgen_cpus.clone(),
        service_cpus: crate::cpus::parse(pre.opts.plan.limits.cpuset.as_deref().unwrap_or(""))?,
        session_runs: 0,
        later_runs: Duration::ZERO,
        stop: stop.clone(),
        work_dir,
        tag,
        metrics: pre.opts.plan.metrics_listen.map(crate::metrics::serve).transpose()?,
        hosts,
        remote_service: remote_service.clone().map(|r| r as Arc<dyn crate::service::instance::StartsElsewhere>),
    };
    prepare::check_refusals(&mut ctx, &ready, &pre.cells[0])?;
    prepare::warm_up(&mut ctx, &ready, &pre.cells[0])?;
    let mut summary = run_loop::run_all(&mut ctx, &ready, &pre.cells, network.as_mut())?;
    summary.not_measured = finish::not_measured(&ctx, not_built, &pre.cells);
    finish::finish(&mut ctx, network.as_ref(), &mut summary)?;
    Ok(summary)
}

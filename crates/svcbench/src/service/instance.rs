//! One started service: its sandbox, port and log, from spawn to readiness (the startup time) to stop.
use super::service_sandbox::ServiceSandbox;
use crate::manifest::Service;
use crate::network::Host;
use crate::readiness::{wait_ready, FirstAnswer, Readiness};
use crate::sandbox::service_user;
use crate::sandbox::{CgroupChoice, Limits};
use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct Instance {
    pub sandbox: Box<dyn ServiceSandbox>,
    /// Where it runs: loopback, the service's namespace under `--net`, or the service's own machine.
    pub host: Host,
    pub port: u16,
    pub log_path: PathBuf,
    pub spawned_at: Instant,
    /// The user the service runs as (None: on its own machine, which knows).
    pub user: Option<String>,
    /// The service's private HOME, removed with the instance.
    pub _home: Option<tempfile::TempDir>,
    /// Its first answer, watched from the spawn on (see [`Instance::watched`]).
    pub first_answer: Option<FirstAnswer>,
}

/// How long the first-answer watch may poll at most: the readiness wait's own timeout decides a startup
/// that never answers; the watch ends with it (or with the instance) long before this.
const WATCHED_FOR: Duration = Duration::from_secs(3600);

/// The readiness wait's error for a service that sat at its memory cap without answering, so that the
/// runner can store that end as such.
#[derive(Debug)]
pub struct StuckAtMemoryCap(String);

impl std::fmt::Display for StuckAtMemoryCap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StuckAtMemoryCap {}

/// Everything a service start needs besides the service itself.
pub struct StartSpec<'a> {
    pub sandbox_name: String,
    pub limits: &'a Limits,
    pub cgroup: CgroupChoice,
    pub dep_placeholders: &'a BTreeMap<String, String>,
    pub log_dir: &'a Path,
    pub log_name: String,
    /// Overrides applied on top of the manifest's env (the lifecycle check's broken addresses).
    pub env_overrides: &'a BTreeMap<String, String>,
    /// Where the service runs (loopback, or its namespace under `--net`).
    pub host: &'a Host,
    /// The service's own machine (a hosts file's `[service] at`), where it is started instead.
    pub remote: Option<&'a std::sync::Arc<dyn StartsElsewhere>>,
    /// Labels of a container service (its session and run), so that what a killed svcbench left is found.
    pub labels: Vec<(String, String)>,
    /// Which services' user it runs as: a duet's second side has one of its own.
    pub account: service_user::Account,
}

/// Where a service can be started instead of this machine (a hosts file's `[service] at`).
pub trait StartsElsewhere: Send + Sync {
    fn start(self: Arc<Self>, svc: &Service, spec: &StartSpec) -> anyhow::Result<Instance>;
}

/// Share of the memory cap at which a starting service counts as at its cap.
const AT_CAP: f64 = 0.97;
/// How long a starting service may sit at its memory cap before svcbench gives up on it.
pub const STUCK_AT_CAP: Duration = Duration::from_secs(10);

impl Instance {
    /// Waits for the first HTTP answer on the readiness path; returns the startup time. A service that
    /// dies is told apart as OOM-killed or exited; one that sits at its memory cap without answering (a JVM
    /// thrashing in a too small container) is given up on after [`STUCK_AT_CAP`], not after `timeout`.
    pub fn wait_ready(&mut self, svc: &Service, timeout: Duration, stop: &AtomicBool) -> Result<Duration> {
        let cap = self.sandbox.limits_held(&Limits::default()).0.memory_bytes.map(|b| b as f64 / 1048576.0);
        let probe = self.sandbox.probe();
        let (mut last_look, mut at_cap_since, mut stuck) = (Instant::now(), None::<Instant>, false);
        let watch = self.take_first_answer(&svc.manifest.readiness, timeout);
        let sandbox = &mut self.sandbox;
        let gone = || {
            if sandbox.try_exit().is_some() {
                return true;
            }
            let Some(cap) = cap else { return false };
            if last_look.elapsed() < Duration::from_millis(100) {
                return false;
            }
            last_look = Instant::now();
            if probe.sample().mem_mib >= AT_CAP * cap {
                stuck = at_cap_since.get_or_insert(last_look).elapsed() >= STUCK_AT_CAP;
            } else {
                at_cap_since = None;
            }
            stuck
        };
        let readiness = wait_ready(&watch, self.spawned_at, timeout, gone, stop);
        // A service that ran out of processes fails in ways of its own (a fork refused, a thread pool that
        // cannot start): said first, whatever the end looked like.
        let hit = self.pids_limit_note().map(|l| format!("; {l}")).unwrap_or_default();
        match readiness {
            Readiness::Ready { after } => Ok(after),
            Readiness::Exited if stuck => Err(StuckAtMemoryCap(format!(
                "{} sat at its memory cap ({:.0} MiB) for {} s without answering {}: raise --memory{hit}; last log lines: {}",
                svc.name(),
                cap.unwrap_or(0.0),
                STUCK_AT_CAP.as_secs(),
                svc.manifest.readiness,
                self.log_tail(3)
            ))
            .into()),
            Readiness::Exited if self.sandbox.sample().oom_kills > 0 => bail!(
                "{} was OOM-killed during startup (memory cap {:.0} MiB): raise --memory{hit}; last log lines: {}",
                svc.name(),
                cap.unwrap_or(0.0),
                self.log_tail(3)
            ),
            Readiness::Exited => bail!(
                "{} exited during startup ({}){hit}; last log lines: {}",
                svc.name(),
                self.sandbox.try_exit().map(|e| e.to_string()).unwrap_or_default(),
                self.log_tail(3)
            ),
            Readiness::Interrupted => bail!("interrupted"),
            Readiness::TimedOut => bail!(
                "{} did not answer on {} within {timeout:?}{hit}; last log lines: {}",
                svc.name(),
                svc.manifest.readiness,
                self.log_tail(3)
            ),
        }
    }

    /// One line when the service has hit its cgroup's process limit (forks or new threads refused), naming
    /// the limit and the fix; None while it has not, or where that is not counted.
    pub fn pids_limit_note(&self) -> Option<String> {
        let refused = self.sandbox.pids_refused().filter(|n| *n > 0)?;
        let limit = self.sandbox.limits_held(&Limits::default()).0.pids;
        Some(crate::sandbox::cgroup::pids_hit_line(limit, refused))
    }

    /// Where the service's processes listen, as read from /proc, judged against its `{host}`; None when it
    /// runs on another machine (not read there).
    pub fn listening(&self) -> Option<crate::sandbox::listening::Listening> {
        let pids = self.sandbox.pids()?;
        Some(crate::sandbox::listening::Listening::read(&pids, self.host.addr.into()))
    }

    /// Starts watching for the service's first answer from a thread of its own, right after its spawn, so
    /// that what svcbench does before its readiness wait (reading a container's limits back while the
    /// runtime still sets them, up to seconds; a pod's cgroup lookup) does not stretch the startup it times.
    pub fn watched(mut self, readiness: &str) -> Instance {
        self.first_answer = Some(FirstAnswer::watch(self.addr(), readiness, WATCHED_FOR));
        self
    }

    /// The watch of its first answer, for a readiness wait: the one started at the spawn, or (an instance
    /// made without [`Instance::watched`]) one started now, watching for at most `timeout`.
    pub fn take_first_answer(&mut self, readiness: &str, timeout: Duration) -> FirstAnswer {
        let addr = self.addr();
        self.first_answer.take().unwrap_or_else(|| FirstAnswer::watch(addr, readiness, timeout))
    }

    /// From the engine's "started" to the first answer, `startup` after the spawn (a container service; None
    /// for a process): the startup the seeds timed, without the engine's own set-up.
    pub fn startup_after_engine(&self, startup: Duration) -> Option<Duration> {
        let ready_at = std::time::SystemTime::now() - self.spawned_at.elapsed().saturating_sub(startup);
        ready_at.duration_since(self.sandbox.started_by_engine()?).ok()
    }

    /// Whether the service was OOM-killed (its cgroup's counter), once it has ended.
    pub fn oom_killed(&self) -> bool {
        self.sandbox.sample().oom_kills > 0
    }

    pub fn addr(&self) -> std::net::SocketAddr {
        (self.host.addr, self.port).into()
    }

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr())
    }

    /// What the load generator aims at.
    pub fn target(&self) -> loadgen::Target {
        loadgen::Target { host: self.host.addr.to_string(), port: self.port }
    }

    /// The last lines of the service's log, on one line, for error messages.
    pub fn log_tail(&self, n: usize) -> String {
        if let Some(tail) = self.sandbox.log_tail(n) {
            return tail;
        }
        let tail = crate::bounded::last_lines(&self.log_path, n, crate::bounded::MESSAGE_LINE_CHARS).join(" | ");
        if tail.is_empty() {
            format!("(log {} is empty)", self.log_path.display())
        } else {
            format!("{tail} (log: {})", self.log_path.display())
        }
    }
}

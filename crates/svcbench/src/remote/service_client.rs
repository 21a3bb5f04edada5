//! This side of a service on another machine: the ssh connection to `svcbench serve-service` there, and the
//! sandbox and probe that stand here for the service's own sandbox there.
use super::service_protocol::{BuiltThere, Reply, Request, StartedThere};
use crate::manifest::Service;
use crate::remote::hosts_file::{Place, RemotePlace};
use crate::remote::ssh::FarProcess;
use crate::sandbox::cgroup::Applied;
use crate::sandbox::process::{shell_quote, Exit};
use crate::sandbox::sampler::Sample;
use crate::sandbox::{Limits, Probe, StopOutcome};
use crate::service::instance::{Instance, StartSpec};
use crate::service::{instance::StartsElsewhere, service_sandbox::ServiceSandbox};
use anyhow::{bail, Context, Result};
use serde::de::DeserializeOwned;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a question other than a build or a stop may wait for its answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a build there may take.
const BUILD_TIMEOUT: Duration = Duration::from_secs(60 * 60);

pub struct RemoteService {
    far: Mutex<Connection>,
    /// Where it runs, for messages.
    pub place: String,
    /// Where the service listens there: what the generators aim at.
    pub address: Ipv4Addr,
    /// This checkout's root: a service is named to the other side by its path inside the checkout.
    root: PathBuf,
}

struct Connection {
    far: FarProcess,
    /// Set when an answer did not come: a late one would answer the next question.
    broken: Option<String>,
}

impl RemoteService {
    /// Starts `svcbench serve-service` there; it builds and starts services when asked.
    pub fn connect(at: &RemotePlace) -> Result<Arc<RemoteService>> {
        let Place::Ssh { svcbench, .. } = &at.place else { bail!("[service] at = \"local\" starts nothing remote") };
        let root = checkout_root()?;
        let command = format!(
            "cd {} && exec {} serve-service --listen {}",
            shell_quote(&at.dir),
            shell_quote(svcbench),
            at.address
        );
        crate::errln!("svcbench: the service runs on {} (listening on {})", at.place.describe(), at.address);
        let far = FarProcess::spawn(&at.place, &command, "service")?;
        Ok(Arc::new(RemoteService {
            place: far.place.clone(),
            far: Mutex::new(Connection { far, broken: None }),
            address: at.address,
            root,
        }))
    }

    fn spec_of(&self, svc: &Service) -> Result<String> {
        name_in_checkout(&self.root, svc)
    }

    /// Asks one question and waits for its answer (a build may be cut short by Ctrl-C).
    fn call<T: DeserializeOwned>(&self, req: &Request, within: Duration) -> Result<T> {
        let mut c = self.far.lock().unwrap();
        if let Some(why) = &c.broken {
            bail!("service host {}: {why}", self.place);
        }
        c.far.send(&serde_json::to_string(req)?)?;
        let t0 = Instant::now();
        let line = loop {
            match c.far.lines.recv_timeout(Duration::from_millis(100)) {
                Ok(line) => break line,
                Err(RecvTimeoutError::Timeout) => {
                    let why = if t0.elapsed() > within {
                        format!("no answer within {} s", within.as_secs())
                    } else if matches!(req, Request::Build { .. }) && crate::guard::signals::interrupted() {
                        "interrupted during the build".to_string()
                    } else {
                        continue;
                    };
                    c.broken = Some(why.clone());
                    bail!("service host {}: {why}", self.place);
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let why = format!(
                        "`svcbench serve-service` there ended{}: {}; check the hosts file's [service] dir (a \
                         svcbench checkout there) and svcbench path",
                        c.far.how_it_ended(),
                        c.far.last_words()
                    );
                    c.broken = Some("the connection ended".into());
                    bail!("service host {}: {why}", self.place);
                }
            }
        };
        let reply: Reply = serde_json::from_str(&line)
            .with_context(|| format!("service host {}: not an answer: {line}", self.place))?;
        match reply {
            Ok(v) => Ok(serde_json::from_value(v)?),
            Err(e) => bail!("service host {}: {e}", self.place),
        }
    }

    /// Builds it there.
    pub fn build(&self, svc: &Service, skip: bool) -> Result<crate::service::build::Built> {
        let b: BuiltThere = self.call(&Request::Build { service: self.spec_of(svc)?, skip }, BUILD_TIMEOUT)?;
        Ok(crate::service::build::Built { seconds: b.seconds, artifact_bytes: b.artifact_bytes })
    }
}

impl StartsElsewhere for RemoteService {
    /// Starts it there in its sandbox, listening on that machine's address. The CPU pinning of this
    /// machine's plan does not apply there: the service has that machine's CPUs, under its quota.
    fn start(self: Arc<Self>, svc: &Service, spec: &StartSpec) -> Result<Instance> {
        let spawned_at = Instant::now();
        let s: StartedThere = self.call(
            &Request::Start {
                service: self.spec_of(svc)?,
                sandbox_name: spec.sandbox_name.clone(),
                limits: without_cpuset(spec.limits),
                cgroup: spec.cgroup,
                placeholders: spec.dep_placeholders.clone(),
                env_overrides: spec.env_overrides.clone(),
                log_name: spec.log_name.clone(),
            },
            ANSWER_TIMEOUT,
        )?;
        let sandbox = RemoteSandbox {
            svc: self.clone(),
            id: s.id,
            cgroup_version: s.cgroup_version,
            warnings: s.warnings,
            open_files_every: s.open_files_every,
            exit: None,
        };
        Ok(Instance {
            sandbox: Box::new(sandbox),
            host: crate::network::Host { addr: self.address, netns: None },
            port: s.port,
            log_path: PathBuf::from(format!("{} on {}", spec.log_name, self.place)),
            spawned_at,
            user: None,
            _home: None,
            first_answer: None,
        }
        .watched(&svc.manifest.readiness))
    }
}

/// This checkout's root folder (where services/ is).
fn checkout_root() -> Result<PathBuf> {
    let root = crate::paths::project_dir("services")?
        .parent()
        .map(Path::to_path_buf)
        .context("the checkout's services/ folder has no parent")?;
    Ok(std::fs::canonicalize(&root).unwrap_or(root))
}

/// A service's name for the other side: its folder inside the checkout, and its variant.
fn name_in_checkout(root: &Path, svc: &Service) -> Result<String> {
    let dir = std::fs::canonicalize(&svc.dir).unwrap_or_else(|_| svc.dir.clone());
    let rel = dir.strip_prefix(root).map_err(|_| {
        anyhow::anyhow!(
            "{}: a service on another host is built there from the checkout, at the same path; this one is outside \
             this checkout ({}): move it into the checkout on both machines",
            svc.dir.display(),
            root.display()
        )
    })?;
    let rel = rel.to_str().context("a service path that is not UTF-8")?;
    Ok(match &svc.variant {
        Some(v) => format!("{rel}@{v}"),
        None => rel.to_string(),
    })
}

/// Refuses, before anything is built, services the other machine's checkout cannot have.
pub fn check_services(services: &[Service]) -> Result<()> {
    let root = checkout_root()?;
    services.iter().try_for_each(|s| name_in_checkout(&root, s).map(|_| ()))
}

fn without_cpuset(l: &Limits) -> Limits {
    Limits { cpuset: None, ..l.clone() }
}

/// A service's sandbox on the other machine, seen from here.
pub struct RemoteSandbox {
    svc: Arc<RemoteService>,
    id: u64,
    cgroup_version: String,
    pub warnings: Vec<String>,
    open_files_every: u64,
    exit: Option<Exit>,
}

/// What stands for a service whose machine no longer answers: it has ended (the far side stops it when the
/// connection closes).
const LOST: Exit = Exit { code: None, signal: None };

impl ServiceSandbox for RemoteSandbox {
    fn warnings(&self) -> &[String] {
        &self.warnings
    }

    fn cgroup_version(&self) -> &str {
        &self.cgroup_version
    }

    fn probe(&self) -> Arc<dyn Probe> {
        Arc::new(RemoteProbe { svc: self.svc.clone(), id: self.id, open_files_every: self.open_files_every })
    }

    fn sample(&self) -> Sample {
        self.probe().sample()
    }

    fn reset_peak(&self) -> bool {
        self.svc.call(&Request::ResetPeak { id: self.id }, ANSWER_TIMEOUT).unwrap_or(false)
    }

    fn kernel_peak_mib(&self) -> Option<f64> {
        self.svc.call(&Request::KernelPeak { id: self.id }, ANSWER_TIMEOUT).ok().flatten()
    }

    fn limits_held(&self, asked: &Limits) -> (Applied, Vec<String>) {
        let asked = without_cpuset(asked);
        self.svc
            .call(&Request::LimitsHeld { id: self.id, asked }, ANSWER_TIMEOUT)
            .unwrap_or_else(|e| (Applied::default(), vec![format!("limits not read: {e:#}")]))
    }

    fn try_exit(&mut self) -> Option<Exit> {
        if self.exit.is_none() {
            self.exit = self.svc.call(&Request::TryExit { id: self.id }, ANSWER_TIMEOUT).unwrap_or(Some(LOST));
        }
        self.exit
    }

    /// Waits up to `timeout` for the main process to end by itself, as `Sandbox::wait_exit` (the far side is
    /// asked every 20 ms).
    fn wait_exit(&mut self, timeout: Duration) -> Option<Exit> {
        crate::poll::until(timeout, Duration::from_millis(20), || self.try_exit())
    }

    fn stop(&mut self, grace: Duration) -> StopOutcome {
        let req = Request::Stop { id: self.id, grace_ms: grace.as_millis() as u64 };
        match self.svc.call::<StopOutcome>(&req, grace + ANSWER_TIMEOUT) {
            Ok(o) => {
                self.exit = self.exit.or(o.exit);
                o
            }
            Err(e) => {
                crate::errln!("svcbench: {e:#}");
                StopOutcome { exit: Some(self.exit.unwrap_or(LOST)), elapsed: Duration::ZERO, graceful: false }
            }
        }
    }

    fn log_tail(&self, lines: usize) -> Option<String> {
        Some(
            self.svc
                .call(&Request::LogTail { id: self.id, lines }, ANSWER_TIMEOUT)
                .unwrap_or_else(|e| format!("(log not read: {e:#})")),
        )
    }
}

impl Drop for RemoteSandbox {
    /// Stops what is left of it there and removes its sandbox.
    fn drop(&mut self) {
        let _ = self.svc.call::<serde_json::Value>(&Request::Remove { id: self.id }, ANSWER_TIMEOUT);
    }
}

struct RemoteProbe {
    svc: Arc<RemoteService>,
    id: u64,
    open_files_every: u64,
}

impl Probe for RemoteProbe {
    fn sample(&self) -> Sample {
        self.sample_with_open_files(false)
    }

    fn sample_with_open_files(&self, open_files: bool) -> Sample {
        self.svc
            .call(&Request::Sample { id: self.id, open_files }, ANSWER_TIMEOUT)
            .unwrap_or(Sample { alive: false, ..Sample::default() })
    }

    fn runqueue_wait_s(&self) -> Option<f64> {
        self.svc.call(&Request::RunqueueWait { id: self.id }, ANSWER_TIMEOUT).ok().flatten()
    }

    fn open_files_every(&self) -> u64 {
        self.open_files_every
    }

    fn listen_drops(&self) -> Option<u64> {
        self.svc.call(&Request::ListenDrops { id: self.id }, ANSWER_TIMEOUT).ok().flatten()
    }
}

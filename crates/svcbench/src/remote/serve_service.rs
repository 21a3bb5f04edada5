//! `svcbench serve-service` (hidden): the service's side of a hosts file's `[service] at = "ssh://…"`. Run
//! over ssh in a svcbench checkout on the service's machine, it builds and starts the services it is asked
//! for, each in its sandbox, and answers questions about them (protocol.rs) until its input closes; then it
//! stops and removes every one of them.
use super::service_protocol::{BuiltThere, Reply, Request, StartedThere};
use crate::manifest::Service;
use crate::network::Host;
use crate::service::instance::{Instance, StartSpec};
use anyhow::{Context, Result};
use std::collections::HashMap;
use std::io::Write;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct ServeServiceArgs {
    /// The address the services listen on (one of this machine's, reachable from the generators').
    #[arg(long)]
    pub listen: Ipv4Addr,
    /// Where logs go.
    #[arg(long, default_value = "results/work/service")]
    pub work_dir: PathBuf,
}

/// The services started so far, by id; dropping one stops it and removes its sandbox.
struct Served {
    listen: Ipv4Addr,
    work_dir: PathBuf,
    instances: HashMap<u64, Instance>,
    next_id: u64,
}

pub fn run(a: ServeServiceArgs, stop: Arc<AtomicBool>) -> Result<i32> {
    let (work_dir, requests) =
        crate::remote::ssh::far_side_setup(a.listen, &a.work_dir, "serve-service", stop.clone())?;
    let mut served = Served { listen: a.listen, work_dir, instances: HashMap::new(), next_id: 1 };
    let mut out = std::io::stdout();
    while !stop.load(Ordering::Relaxed) {
        let line = match requests.recv_timeout(Duration::from_millis(100)) {
            Ok(l) => l,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        let reply: Reply = match serde_json::from_str::<Request>(&line) {
            Ok(req) => served.answer(req).map_err(|e| format!("{e:#}").replace('\n', " ")),
            Err(e) => Err(format!("not a request ({e}): is svcbench the same version on both machines?")),
        };
        if writeln!(out, "{}", serde_json::to_string(&reply)?).and_then(|_| out.flush()).is_err() {
            break;
        }
    }
    crate::errln!("svcbench: stopping the service(s) started here");
    drop(served);
    Ok(0)
}

/// A service of this checkout: `services/x` or `services/x@variant`, relative to the current folder.
fn load(spec: &str) -> Result<Service> {
    if Path::new(spec).is_absolute() || spec.split('/').any(|p| p == "..") {
        anyhow::bail!("{spec:?}: a service is named by its path inside the checkout");
    }
    Service::load_spec(spec)?.into_iter().next().with_context(|| format!("{spec}: no service"))
}

impl Served {
    fn answer(&mut self, req: Request) -> Result<serde_json::Value> {
        use serde_json::to_value;
        Ok(match req {
            Request::Build { service, skip } => {
                let svc = load(&service)?;
                let b = crate::service::build::build(&svc, &self.work_dir, skip)?;
                to_value(BuiltThere { seconds: b.seconds, artifact_bytes: b.artifact_bytes })?
            }
            Request::Start { service, sandbox_name, limits, cgroup, placeholders, env_overrides, log_name } => {
                let svc = load(&service)?;
                let host = Host { addr: self.listen, netns: None };
                let inst = Instance::spawn(
                    &svc,
                    &StartSpec {
                        sandbox_name,
                        limits: &limits,
                        cgroup,
                        dep_placeholders: &placeholders,
                        log_dir: &self.work_dir,
                        log_name,
                        env_overrides: &env_overrides,
                        host: &host,
                        remote: None,
                        labels: Vec::new(),
                        account: crate::sandbox::service_user::Account::Main,
                    },
                )?;
                let id = self.next_id;
                self.next_id += 1;
                let started = StartedThere {
                    id,
                    port: inst.port,
                    cgroup_version: inst.sandbox.cgroup_version().to_string(),
                    warnings: inst.sandbox.warnings().to_vec(),
                    open_files_every: inst.sandbox.probe().open_files_every(),
                };
                self.instances.insert(id, inst);
                to_value(started)?
            }
            Request::Remove { id } => {
                self.instances.remove(&id);
                serde_json::Value::Null
            }
            Request::Sample { id, open_files } => {
                to_value(self.get(id)?.sandbox.probe().sample_with_open_files(open_files))?
            }
            Request::RunqueueWait { id } => to_value(self.get(id)?.sandbox.probe().runqueue_wait_s())?,
            Request::ListenDrops { id } => to_value(self.get(id)?.sandbox.probe().listen_drops())?,
            Request::ResetPeak { id } => to_value(self.get(id)?.sandbox.reset_peak())?,
            Request::KernelPeak { id } => to_value(self.get(id)?.sandbox.kernel_peak_mib())?,
            Request::LimitsHeld { id, asked } => to_value(self.get(id)?.sandbox.limits_held(&asked))?,
            Request::TryExit { id } => to_value(self.get(id)?.sandbox.try_exit())?,
            Request::Stop { id, grace_ms } => to_value(self.get(id)?.sandbox.stop(Duration::from_millis(grace_ms)))?,
            Request::LogTail { id, lines } => to_value(self.get(id)?.log_tail(lines))?,
        })
    }

    fn get(&mut self, id: u64) -> Result<&mut Instance> {
        self.instances.get_mut(&id).with_context(|| format!("no service {id} runs here"))
    }
}

//! One service on its own with its scenario's dependencies, outside a session: what `svcbench check`
//! (check.rs) and `svcbench up` (up.rs) start — build, network, dependencies, the service under its limits,
//! its readiness.
pub mod check;
pub mod up;

use crate::deps::{DepContext, Dependencies};
use crate::manifest::Service;
use crate::network::{Hosts, Link, Network};
use crate::sandbox::{CgroupChoice, Limits};
use crate::scenario::Scenario;
use crate::service::build;
use crate::service::instance::{Instance, StartSpec};
use anyhow::Result;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// How to start it.
pub struct Alone<'a> {
    /// Names its sandboxes and logs: `check`, `up`.
    pub what: &'a str,
    pub limits: &'a Limits,
    /// Where the dependencies and the links' relays run.
    pub loadgen_cpus: &'a [usize],
    pub cgroup: CgroupChoice,
    pub work_dir: &'a Path,
    pub skip_build: bool,
    /// How long the service has to answer its readiness path (`--startup-timeout`).
    pub startup_timeout: Duration,
    /// Load the scenario's load dataset too (not only what the checks use).
    pub for_load: bool,
    /// `--net` and its links; None: loopback.
    pub net: Option<&'a [Link]>,
    /// Dependencies that already run (`--dep KIND=URL`).
    pub given: &'a crate::deps::GivenDeps,
    /// A hosts file's `[store]`: the dependencies started on that machine over ssh.
    pub store_at: Option<&'a crate::remote::hosts_file::RemotePlace>,
    /// A hosts file's `[service] address`: where the service listens (None: loopback, or its namespace).
    pub service_addr: Option<std::net::Ipv4Addr>,
    /// A hosts file's `[service] at`: the service built and run on that machine over ssh.
    pub service_at: Option<&'a crate::remote::hosts_file::RemotePlace>,
}

/// The started parts. Field order is drop order: the service, then its dependencies, then the network
/// they ran on.
pub struct StartedAlone {
    pub inst: Instance,
    /// Held so that the dependencies run as long as the service does.
    _deps: Dependencies,
    /// Dependencies on another machine, stopped there when this is dropped (after the ones above use them).
    _remote: Option<crate::remote::deps_client::RemoteDeps>,
    pub network: Option<Network>,
    pub placeholders: BTreeMap<String, String>,
    pub startup: Duration,
}

pub fn start(svc: &Service, scenario: &Scenario, how: &Alone, stop: &AtomicBool) -> Result<StartedAlone> {
    how.given.check(&scenario.file.dependency, scenario.name())?;
    // The service's machine runs it as long as the instance holds it.
    let remote_service = how.service_at.map(crate::remote::service_client::RemoteService::connect).transpose()?;
    let elsewhere = remote_service.clone().map(|r| r as std::sync::Arc<dyn crate::service::instance::StartsElsewhere>);
    match &remote_service {
        Some(r) => r.build(svc, how.skip_build)?,
        None => build::build(svc, how.work_dir, how.skip_build)?,
    };
    let network = how.net.map(|l| Network::create(l, how.loadgen_cpus, 1)).transpose()?;
    let mut hosts = network.as_ref().map(|n| n.hosts()).unwrap_or_else(Hosts::local);
    if let Some(addr) = how.service_addr {
        hosts.service = crate::network::Host { addr, netns: None };
    }
    let remote = match how.store_at {
        Some(at) => Some(crate::remote::deps_client::RemoteDeps::start(at, scenario.name(), how.for_load, stop)?),
        None => None,
    };
    let given = remote.as_ref().map_or_else(|| how.given.clone(), |r| r.given(how.given));
    let tag = format!("{}-{}", std::process::id(), how.what);
    let mut deps = Dependencies::start(
        &scenario.file.dependency,
        &DepContext {
            work_dir: how.work_dir,
            scenario_dir: &scenario.dir,
            cpuset: Some(crate::cpus::format(how.loadgen_cpus)),
            cgroup: how.cgroup,
            session_tag: tag.clone(),
            for_load: how.for_load,
            host: hosts.store.clone(),
            given: &given,
            account: crate::sandbox::service_user::Account::Main,
        },
    )?;
    deps.before_run(how.what)?;
    let placeholders = deps.placeholders();
    let mut inst = Instance::spawn(
        svc,
        &StartSpec {
            sandbox_name: format!("{tag}-{}", svc.sandbox_part()),
            limits: how.limits,
            cgroup: how.cgroup,
            dep_placeholders: &placeholders,
            log_dir: how.work_dir,
            log_name: format!("{}-{}.log", svc.name(), how.what),
            env_overrides: &BTreeMap::new(),
            host: &hosts.service,
            remote: elsewhere.as_ref(),
            labels: Vec::new(),
            account: crate::sandbox::service_user::Account::Main,
        },
    )?;
    let startup = inst.wait_ready(svc, how.startup_timeout, stop)?;
    Ok(StartedAlone { inst, _deps: deps, _remote: remote, network, placeholders, startup })
}

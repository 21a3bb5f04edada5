//! `svcbench up SERVICE`: the scenario's dependencies (data loaded) and the service under its limits, on
//! loopback or the `--net` network, kept running until Ctrl-C and then torn down as a run is — so a user can
//! point their own tools (a test suite, another load tool, a browser) at a service with its real store.
use crate::alone::{self, Alone};
use crate::cpus::cpu_split;
use crate::options::{LimitsArgs, NetworkArgs};
use crate::runner::load_services;
use crate::sandbox::CgroupChoice;
use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(clap::Args, Debug)]
pub struct UpArgs {
    /// Service folder (`dir` or `dir@variant`).
    pub service: PathBuf,
    #[arg(long)]
    pub scenario: Option<String>,
    #[command(flatten)]
    pub limits: LimitsArgs,
    #[arg(long, value_enum, default_value = "auto")]
    pub cgroup: CgroupChoice,
    /// Use the service as it is built (skip its build command).
    #[arg(long)]
    pub no_build: bool,
    /// Where logs go.
    #[arg(long, default_value = "results/work/up")]
    pub work_dir: PathBuf,
    #[command(flatten)]
    pub startup: crate::options::StartupArgs,
    #[command(flatten)]
    pub network: NetworkArgs,
    #[command(flatten)]
    pub given: crate::options::DepArgs,
    /// A hosts file: its `[store]` starts the dependencies on that machine over ssh, its `[service]` runs the
    /// service on another machine (`at`) or says where it listens here (`address`) (docs/network.md);
    /// generators are not used here
    #[arg(long, value_name = "FILE")]
    pub hosts: Option<PathBuf>,
}

pub fn run_up(a: UpArgs, stop: Arc<AtomicBool>) -> Result<i32> {
    // Every input is checked before anything is built or started.
    let (services, scenario) = load_services(std::slice::from_ref(&a.service), a.scenario.as_deref())?;
    if services.len() != 1 {
        bail!("svcbench up starts one service; name one variant (dir@variant), not dir@*");
    }
    let svc = &services[0];
    let mut limits = a.limits.limits()?;
    let gen = cpu_split(&mut limits.cpuset, limits.cpus, None)?;
    let links = a.network.links()?;
    let given = a.given.given()?;
    crate::deps::check_store_links(
        links.as_deref().unwrap_or_default(),
        &scenario.file.dependency,
        scenario.name(),
        &given,
    )?;
    let plan = match &a.hosts {
        Some(path) if a.network.asked() => {
            bail!("--hosts places parts on machines, --net and --link on namespaces of this one: give one or the other ({})", path.display())
        }
        Some(path) => Some(crate::remote::hosts_file::HostsPlan::load(path)?),
        None => None,
    };
    if let Some(plan) = &plan {
        plan.check_here()?;
        if plan.uses_agents() {
            bail!(
                "svcbench up drives no load: leave the [[generator]] entries out of {}",
                a.hosts.as_ref().unwrap().display()
            );
        }
        crate::remote::host_checks::other_hosts(plan, &scenario, &given)?;
        if plan.service_at.is_some() {
            crate::remote::service_client::check_services(&services)?;
        }
    }
    crate::safe_fs::Folder::make(&a.work_dir).context("--work-dir")?;
    let work_dir = std::path::absolute(&a.work_dir)?;
    // results/work/up → the results folder, whose work/ holds the lock files of killed sessions.
    let results_dir = work_dir.parent().and_then(|p| p.parent()).unwrap_or(&work_dir);
    for line in crate::teardown::leftovers::clean(results_dir) {
        crate::errln!("{line}");
    }
    let how = Alone {
        what: "up",
        limits: &limits,
        loadgen_cpus: &gen,
        cgroup: a.cgroup,
        work_dir: &work_dir,
        skip_build: a.no_build,
        startup_timeout: a.startup.startup_timeout,
        for_load: true,
        net: links.as_deref(),
        given: &given,
        store_at: plan.as_ref().and_then(|p| p.store.as_ref()),
        service_addr: plan.as_ref().and_then(|p| p.service_addr),
        service_at: plan.as_ref().and_then(|p| p.service_at.as_ref()),
    };
    // Stopped and removed in its field order when this ends: service, dependencies, network.
    // Started: a failure now is the service's (exit 1), a stop before it is up an interruption (130).
    let stopped = || stop.load(Ordering::Relaxed);
    let mut started = alone::start(svc, &scenario, &how, &stop).map_err(|e| crate::exit::after_start(e, stopped()))?;
    let inst = &mut started.inst;
    let (held, mismatches) = inst.sandbox.limits_held(&limits);
    for m in &mismatches {
        crate::errln!("svcbench: WARNING: limits not as asked: {m}");
    }
    crate::errln!(
        "svcbench: {} is up after {:.0} ms (CPU quota {}, memory cap {}, CPUs {}); Ctrl-C stops everything",
        svc.name(),
        started.startup.as_secs_f64() * 1e3,
        held.cpus.map(|c| format!("{c}")).unwrap_or_else(|| "none".into()),
        held.memory_bytes.map(|b| format!("{} MiB", b >> 20)).unwrap_or_else(|| "none".into()),
        held.cpuset.as_deref().unwrap_or("any"),
    );
    // Said before the URLs, so that a script reading them finds this already written.
    say_where_parts_listen(svc.name(), inst, &started.placeholders);
    // On stdout, one `name url` per line, for scripts.
    crate::outln!("service {}", inst.base_url());
    for (k, v) in started.placeholders.iter().filter(|(k, _)| k.ends_with(".url") || k.ends_with(".path")) {
        crate::outln!("{k} {v}");
    }
    if let Some(n) = &started.network {
        crate::errln!("svcbench: network: {}", n.describe());
        crate::errln!(
            "svcbench: the client's namespace for your own tools: ip netns exec svcbench-{}-client …",
            std::process::id()
        );
    }
    while !stop.load(Ordering::Relaxed) {
        if let Some(exit) = inst.sandbox.try_exit() {
            return Err(crate::exit::Failed(format!(
                "{} ended by itself ({exit}); last log lines: {}",
                svc.name(),
                inst.log_tail(3)
            ))
            .into());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    crate::errln!("svcbench: stopping {} and its dependencies", svc.name());
    inst.sandbox.stop(crate::runner::STOP_GRACE);
    // Its one end in order: kept up until asked to stop, it did what it was asked.
    Ok(crate::exit::DONE)
}

/// Where each part listens, on stderr: the service as its sockets say (/proc), the dependencies at the address
/// they were started on (or given), a file-backed one as a file.
fn say_where_parts_listen(
    name: &str,
    inst: &crate::service::instance::Instance,
    placeholders: &std::collections::BTreeMap<String, String>,
) {
    let listening = inst.listening();
    match &listening {
        Some(l) if l.addrs.is_empty() => crate::errln!("svcbench: {name} listens on no TCP socket svcbench could read"),
        Some(l) => crate::errln!("svcbench: {name} listens on {}", l.addrs_text()),
        None => crate::errln!("svcbench: {name} listens on {} (on its own machine)", inst.addr()),
    }
    if let Some(w) = listening.and_then(|l| l.warning) {
        crate::errln!("svcbench: WARNING: {w}");
    }
    for (k, v) in placeholders {
        let dep = k.strip_prefix("dep.").unwrap_or(k);
        if let Some(kind) = dep.strip_suffix(".url") {
            crate::errln!("svcbench: {kind} listens on {}", v.split_once("://").map_or(v.as_str(), |(_, rest)| rest));
        } else if let Some(kind) = dep.strip_suffix(".path") {
            crate::errln!("svcbench: {kind} is a file, {v}: nothing listens");
        }
    }
}

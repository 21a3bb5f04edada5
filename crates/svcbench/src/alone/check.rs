//! `svcbench check`: one service built and started alone with its dependencies, its scenario's conformance
//! checks run once, then stopped. Dependencies are started for it, or given running (`--dep`).
use crate::options::StartupArgs;
use crate::sandbox::listening::Listening;
use crate::sandbox::{CgroupChoice, Limits};
use crate::scenario::checks::CheckResult;
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// Service folder.
    pub service: PathBuf,
    #[arg(long)]
    pub scenario: Option<String>,
    #[arg(long)]
    pub no_build: bool,
    #[arg(long, value_enum, default_value = "auto")]
    pub cgroup: CgroupChoice,
    /// Where logs go.
    #[arg(long, default_value = "results/work/check")]
    pub work_dir: PathBuf,
    #[command(flatten)]
    pub startup: StartupArgs,
    /// Check against dependencies already running (e.g. one OpenSearch for several services).
    #[command(flatten)]
    pub given: crate::options::DepArgs,
}

/// `svcbench check`: build, start, run the conformance checks, stop. Returns the results.
pub fn check_service(
    a: &CheckArgs,
    given: &crate::deps::GivenDeps,
    stop: Arc<AtomicBool>,
) -> Result<Vec<crate::scenario::checks::CheckResult>> {
    let (services, scenario) = crate::runner::load_services(std::slice::from_ref(&a.service), a.scenario.as_deref())?;
    let svc = &services[0];
    crate::safe_fs::Folder::make(&a.work_dir).context("--work-dir")?;
    let work_dir = &std::path::absolute(&a.work_dir)?;
    // What a killed svcbench left (its services, cgroups, --net namespaces) goes first, as for run and up.
    // results/work/check → the results folder, whose work/ holds the lock files of the old kind.
    let results_dir = work_dir.parent().and_then(|p| p.parent()).unwrap_or(work_dir);
    for line in crate::teardown::leftovers::clean(results_dir) {
        crate::errln!("{line}");
    }
    let mut limits = Limits::default();
    let gen = crate::cpus::cpu_split(&mut limits.cpuset, limits.cpus, None)?;
    let how = super::Alone {
        service_at: None,
        what: "check",
        limits: &limits,
        loadgen_cpus: &gen,
        cgroup: a.cgroup,
        work_dir,
        skip_build: a.no_build,
        startup_timeout: a.startup.startup_timeout,
        // A store of its own holds the conformance sample only; a given one is shared with runs and so
        // holds what a run loads (the checks pass on both).
        for_load: !given.urls.is_empty(),
        net: None,
        given,
        store_at: None,
        service_addr: None,
    };
    // Built and started: a failure now is the service's (exit 1, it was not checked), a stop is a stop (130).
    let stopped = || stop.load(std::sync::atomic::Ordering::Relaxed);
    let mut started = super::start(svc, &scenario, &how, &stop).map_err(|e| crate::exit::after_start(e, stopped()))?;
    let inst = &mut started.inst;
    crate::errln!("svcbench: {} answered after {:.1} ms", svc.name(), started.startup.as_secs_f64() * 1e3);
    let listening = inst.listening();
    let Some(mut results) = crate::scenario::checks::run_checks_until(&inst.base_url(), &scenario.file.check, &stop)
    else {
        inst.sandbox.stop(crate::runner::STOP_GRACE);
        return Err(
            crate::exit::Interrupted(format!("{}: interrupted during the conformance checks", svc.name())).into()
        );
    };
    if let Some(l) = listening {
        results.push(listening_check(&l, inst.host.addr));
    }
    inst.sandbox.stop(crate::runner::STOP_GRACE);
    Ok(results)
}

/// A service reachable on every interface is reachable from every network this machine is on: `check` fails
/// it (a run warns and stores the warning), and fails a service whose sockets it could not read at all, where
/// it would otherwise pass unchecked. (Not read for a service on another machine.)
fn listening_check(l: &Listening, host: std::net::Ipv4Addr) -> CheckResult {
    let reason = match &l.warning {
        Some(w) => w.clone(),
        None if l.addrs.is_empty() => {
            "svcbench could read no listening TCP socket of the service (its processes' /proc), so where it \
             listens is not known"
                .to_string()
        }
        None => String::new(),
    };
    CheckResult { name: format!("listens only on the address it is given ({host})"), passed: reason.is_empty(), reason }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listening_check_fails_a_wildcard_and_a_service_whose_sockets_were_not_read() {
        let host = std::net::Ipv4Addr::LOCALHOST;
        let on = |a: &str, warning: Option<&str>| Listening {
            addrs: if a.is_empty() { vec![] } else { vec![a.parse().unwrap()] },
            warning: warning.map(String::from),
        };
        assert!(listening_check(&on("127.0.0.1:8080", None), host).passed);
        let wild = listening_check(&on("0.0.0.0:8080", Some("listens on every interface")), host);
        assert!(!wild.passed && wild.reason == "listens on every interface");
        let unread = listening_check(&on("", None), host);
        assert!(!unread.passed && unread.reason.contains("could read no listening TCP socket"), "{}", unread.reason);
    }
}

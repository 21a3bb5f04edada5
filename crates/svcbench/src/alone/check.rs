//! `svcbench check`: one service built and started alone with its dependencies, its scenario's conformance
//! checks run once, then stopped. Dependencies are started for it, or given running (`--dep`).
use crate::sandbox::{CgroupChoice, Limits};
use anyhow::{bail, Result};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// `svcbench check`: build, start, run the conformance checks, stop. Returns the results.
pub fn check_service(
    path: &std::path::Path,
    scenario: Option<&str>,
    skip_build: bool,
    cgroup: CgroupChoice,
    work_dir: &std::path::Path,
    given: &crate::deps::GivenDeps,
    stop: Arc<AtomicBool>,
) -> Result<Vec<crate::scenario::checks::CheckResult>> {
    let (services, scenario) = crate::runner::load_services(&[path.to_path_buf()], scenario)?;
    let svc = &services[0];
    std::fs::create_dir_all(work_dir)?;
    let work_dir = &std::path::absolute(work_dir)?;
    let mut limits = Limits::default();
    let gen = crate::cpus::cpu_split(&mut limits.cpuset, limits.cpus, None)?;
    let how = super::Alone {
        service_at: None,
        what: "check",
        limits: &limits,
        loadgen_cpus: &gen,
        cgroup,
        work_dir,
        skip_build,
        // A store of its own holds the conformance sample only; a given one is shared with runs and so
        // holds what a run loads (the checks pass on both).
        for_load: !given.urls.is_empty(),
        net: None,
        given,
        store_at: None,
        service_addr: None,
    };
    let mut started = super::start(svc, &scenario, &how, &stop)?;
    let inst = &mut started.inst;
    eprintln!("svcbench: {} answered after {:.1} ms", svc.name(), started.startup.as_secs_f64() * 1e3);
    if let Some(w) = inst.listening().and_then(|l| l.warning) {
        eprintln!("svcbench: WARNING: {}: {w}", svc.name());
    }
    let Some(results) = crate::scenario::checks::run_checks_until(&inst.base_url(), &scenario.file.check, &stop) else {
        inst.sandbox.stop(crate::runner::STOP_GRACE);
        bail!("interrupted during the conformance checks");
    };
    inst.sandbox.stop(Duration::from_secs(15));
    Ok(results)
}

//! `svcbench serve-deps` (hidden): the store's side of a hosts file's `[store]`. Run over ssh in a svcbench
//! checkout on the store's machine, it starts the scenario's dependencies there (data loaded), listening on
//! the address given, prints `dep.<kind>.url URL` lines and then `ready` on stdout, and keeps them until its
//! input closes (svcbench on the other end stopped, was killed, or lost the connection) or Ctrl-C, then
//! stops and removes them as a run does.
use crate::deps::{DepContext, Dependencies, GivenDeps, GIVEN_KINDS};
use crate::sandbox::CgroupChoice;
use crate::scenario::Scenario;
use anyhow::{bail, Result};
use std::io::Write;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What `svcbench serve-deps` prints on stdout once every dependency is up.
pub const READY: &str = "ready";

#[derive(clap::Args, Debug)]
pub struct ServeDepsArgs {
    /// Scenario name (looked up in this checkout) or folder.
    #[arg(long)]
    pub scenario: String,
    /// The address the dependencies listen on (one of this machine's, reachable from the service's).
    #[arg(long)]
    pub listen: Ipv4Addr,
    /// Load the scenario's load dataset too (a run), not only what the checks use.
    #[arg(long)]
    pub for_load: bool,
    #[arg(long, value_enum, default_value = "auto")]
    pub cgroup: CgroupChoice,
    /// Where logs and data files go.
    #[arg(long, default_value = "results/work/store")]
    pub work_dir: PathBuf,
}

/// The scenario's dependencies that cannot run on another machine, named in one line; None if all can.
pub fn not_placeable(scenario: &Scenario) -> Option<String> {
    let kinds: Vec<&str> =
        scenario.file.dependency.iter().map(|d| d.kind.as_str()).filter(|k| !GIVEN_KINDS.contains(k)).collect();
    if scenario.file.dependency.is_empty() {
        Some(format!("scenario `{}` has no dependency to place on another host", scenario.name()))
    } else if !kinds.is_empty() {
        Some(format!(
            "scenario `{}`'s {} dependency runs beside svcbench (it is a file, or svcbench steers it per step); only {} can run on another host",
            scenario.name(),
            kinds.join(", "),
            GIVEN_KINDS.join(", ")
        ))
    } else {
        None
    }
}

pub fn run(a: ServeDepsArgs, stop: Arc<AtomicBool>) -> Result<i32> {
    let here = std::env::current_dir()?;
    let bundled = crate::paths::project_dir("scenarios").ok();
    let scenario = Scenario::find(&a.scenario, &here, bundled.as_deref())?;
    if let Some(why) = not_placeable(&scenario) {
        bail!("{why}");
    }
    // svcbench at the other end of ssh went away (stopped, killed, disconnected): stop as on Ctrl-C.
    let (work_dir, _input) = crate::remote::ssh::far_side_setup(a.listen, &a.work_dir, "serve-deps", stop.clone())?;
    let mut deps = Dependencies::start(
        &scenario.file.dependency,
        &DepContext {
            work_dir: &work_dir,
            scenario_dir: &scenario.dir,
            cpuset: None,
            cgroup: a.cgroup,
            session_tag: format!("{}-store", std::process::id()),
            for_load: a.for_load,
            host: crate::network::Host { addr: a.listen, netns: None },
            given: &GivenDeps::default(),
            account: crate::sandbox::service_user::Account::Main,
        },
    )?;
    deps.before_run("store")?;
    let mut out = std::io::stdout().lock();
    for (k, v) in deps.placeholders().iter().filter(|(k, _)| k.ends_with(".url")) {
        writeln!(out, "{k} {v}")?;
    }
    writeln!(out, "{READY}")?;
    out.flush()?;
    drop(out);
    crate::errln!("svcbench: the scenario's dependencies are up on {}; they stop when svcbench there does", a.listen);
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
    }
    crate::errln!("svcbench: stopping the scenario's dependencies");
    drop(deps);
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundled(name: &str) -> Scenario {
        Scenario::load(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(name)).unwrap()
    }

    #[test]
    fn only_a_store_given_by_url_can_move_to_another_host() {
        assert_eq!(not_placeable(&bundled("locations")), None);
        let users = not_placeable(&bundled("users")).unwrap();
        assert!(users.contains("sqlite") && users.contains("only opensearch"), "{users}");
        let upstream = not_placeable(&bundled("upstream")).unwrap();
        assert!(upstream.contains("upstream dependency"), "{upstream}");
        assert!(not_placeable(&bundled("hello")).unwrap().contains("no dependency"));
    }
}

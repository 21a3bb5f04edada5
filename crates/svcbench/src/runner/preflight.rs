//! The first phase of a session: everything is checked before anything is built or started — the
//! services and their scenario, the profile, the CPU split, one measurement at a time on this machine,
//! what a killed svcbench left behind, the limits this machine can apply, the other machines' answers.
use super::RunOptions;
use crate::cell::AxisCell;
use crate::guard;
use crate::manifest::Service;
use crate::profile::Profile;
use crate::scenario::Scenario;
use anyhow::{bail, Context, Result};
use std::path::PathBuf;

/// A session checked and ready to prepare; it holds the machine's lock until it ends.
pub struct Preflight {
    pub opts: RunOptions,
    pub services: Vec<Service>,
    pub scenario: Scenario,
    pub profile: Profile,
    pub cells: Vec<AxisCell>,
    pub loadgen_cpus: Vec<usize>,
    /// Where the store is: the session's work folder goes beside it.
    pub results_dir: PathBuf,
    /// Limits this machine could not apply (`--allow-unlimited`): every run is then unlimited.
    pub unlimited: Vec<String>,
    pub other_hosts: Vec<crate::host::OtherHost>,
    pub _machine: guard::machine_lock::MachineLock,
}

/// What a session's options name, loaded and checked against each other: nothing asked of other machines,
/// nothing locked, built or started. `study --plan` runs these checks too: a plan says only what a run would do.
pub struct Checked {
    pub services: Vec<Service>,
    pub scenario: Scenario,
    pub profile: Profile,
    pub cells: Vec<AxisCell>,
    pub loadgen_cpus: Vec<usize>,
}

pub fn check_inputs(opts: &mut RunOptions) -> Result<Checked> {
    let (mut services, scenario) = super::plan::load_services(&opts.plan.services, opts.plan.scenario.as_deref())?;
    runtime_for(&mut services, opts)?;
    opts.given_deps.check(&scenario.file.dependency, scenario.name())?;
    let links = opts.links_to_make().unwrap_or_default();
    crate::deps::check_store_links(&links, &scenario.file.dependency, scenario.name(), &opts.given_deps)?;
    let profile = load_profile(opts, &scenario)?;
    if opts.plan.runs == 0 {
        bail!("--runs must be at least 1");
    }
    let bundled = crate::paths::bundled_dir("profiles");
    super::agents::check_split(&profile.name, &profile.steps, opts.generators, bundled.as_deref())?;
    // The quota check holds for the largest quota of the limits axis.
    let widest = opts
        .cell_specs()
        .iter()
        .filter_map(|c| c.limits.cpus)
        .fold(opts.plan.limits.cpus, |a, b| Some(a.map_or(b, |a: f64| a.max(b))));
    let asked_cpus = std::mem::replace(&mut opts.plan.limits.cpus, widest);
    let loadgen_cpus = crate::cpus::cpu_split(
        &mut opts.plan.limits.cpuset,
        opts.plan.limits.cpus,
        opts.plan.loadgen_cpuset.as_deref(),
    )?;
    opts.plan.limits.cpus = asked_cpus;
    let cells = opts.cell_specs();
    Ok(Checked { services, scenario, profile, cells, loadgen_cpus })
}

pub fn preflight(mut opts: RunOptions) -> Result<Preflight> {
    let Checked { services, scenario, profile, cells, loadgen_cpus } = check_inputs(&mut opts)?;
    let results_dir = opts.plan.db.parent().map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."));
    // The other machines answer (ssh, and svcbench there) before anything is built, and before this
    // machine's lock is taken: a mistyped host fails at once, not after another measurement ends. Their
    // facts are stored.
    let other_hosts = match &opts.hosts_plan {
        Some(plan) => crate::remote::host_checks::other_hosts(plan, &scenario, &opts.given_deps)?,
        None => Vec::new(),
    };
    refuse_unlimited_service_host(&other_hosts, opts.allow_unlimited)?;
    // One measurement at a time, then whatever a killed svcbench left behind, then the limits: all before
    // anything is built or started.
    let machine = guard::machine_lock::acquire("run", opts.wait_lock)?;
    for line in crate::teardown::leftovers::clean(&results_dir) {
        crate::errln!("{line}");
    }
    let service_at = opts.hosts_plan.as_ref().and_then(|p| p.service_at.clone());
    // A container service needs an engine that answers: said in one line before anything is built.
    for svc in services.iter().filter(|s| s.manifest.container.is_some()) {
        if service_at.is_some() {
            bail!(
                "{}: a container service runs on this machine only; drop `[service] at` from the hosts file",
                svc.name()
            );
        }
        let engine = crate::service::container_start::engine(svc)
            .with_context(|| format!("{} runs as a container", svc.name()))?;
        // Every service's image can be built before any of them is.
        crate::service::container_start::check_bases(svc, &engine)?;
        if svc.manifest.container.as_ref().is_some_and(|c| c.runtime == crate::sandbox::container::Runtime::Kube) {
            crate::sandbox::container::kube::check_engine(&engine).with_context(|| svc.name().to_string())?;
        }
    }
    if service_at.is_some() {
        crate::remote::service_client::check_services(&services)?;
    }
    // A service on another machine is limited there: its answers say what was held.
    let unlimited = if service_at.is_none() { check_limits(&opts)? } else { Vec::new() };
    Ok(Preflight {
        opts,
        services,
        scenario,
        profile,
        cells,
        loadgen_cpus,
        results_dir,
        unlimited,
        other_hosts,
        _machine: machine,
    })
}

/// `--runtime kube`: every service runs as a played Pod, so each must be a container service with Podman
/// as its engine, on the host's network (Podman 4.3's pods cannot join a namespace by its path).
fn runtime_for(services: &mut [Service], opts: &RunOptions) -> Result<()> {
    use crate::sandbox::container::Runtime;
    if opts.plan.runtime == Runtime::Engine {
        return Ok(());
    }
    if opts.plan.net.is_some() {
        bail!(
            "--runtime kube runs the Pod on the host's network: Podman 4.3's pods cannot join the run's namespace \
             (--net, --link); drop those or --runtime kube"
        );
    }
    for svc in services.iter_mut() {
        let name = svc.name().to_string();
        let Some(c) = svc.manifest.container.as_mut() else {
            bail!("{name} runs as a process, and --runtime kube plays container services only; give its @container variant or drop --runtime kube")
        };
        c.runtime = Runtime::Kube;
    }
    Ok(())
}

/// The profile as this session runs it: its steps' durations and mixes, every mix known to the scenario.
fn load_profile(opts: &RunOptions, scenario: &Scenario) -> Result<Profile> {
    let mut profile = Profile::find(&opts.plan.profile)?;
    if let Some(d) = opts.plan.step_duration {
        profile = profile.with_step_duration(d)?;
    }
    if opts.plan.mix.is_none() && !scenario.file.step_mixes.is_empty() {
        profile = profile.with_step_mixes(&scenario.file.step_mixes);
    }
    for s in &profile.steps {
        scenario.mix(s.mix_name(opts.plan.mix.as_deref()))?;
    }
    Ok(profile)
}

/// A service on another machine is held to its limits there: a machine without the cgroup controllers is
/// refused as this one would be, unless `--allow-unlimited`.
fn refuse_unlimited_service_host(hosts: &[crate::host::OtherHost], allow_unlimited: bool) -> Result<()> {
    match hosts.iter().find(|h| h.role == "service" && h.facts.limits == Some(false)) {
        Some(h) if !allow_unlimited => bail!(
            "the limits cannot be applied on the service's host {} (no cgroup hierarchy with the cpu and memory \
             controllers there): fix its cgroup mount, or pass --allow-unlimited to measure without them (every run \
             is then marked unlimited)",
            h.place
        ),
        _ => Ok(()),
    }
}

/// Refuses a session whose limits this machine cannot apply (a cgroup version not mounted, a controller
/// missing, no write access): a sandbox is set up and read back before anything is built. With
/// `--allow-unlimited` the session goes on and every run is recorded as unlimited.
fn check_limits(opts: &RunOptions) -> Result<Vec<String>> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{HostFacts, OtherHost};

    #[test]
    fn a_service_host_that_cannot_hold_limits_is_refused_unless_unlimited_is_allowed() {
        let host = |role: &str, limits| OtherHost {
            role: role.into(),
            place: "ssh://root@bench2".into(),
            facts: HostFacts { limits, ..HostFacts::default() },
        };
        let e = refuse_unlimited_service_host(&[host("service", Some(false))], false).unwrap_err().to_string();
        assert!(e.contains("service's host ssh://root@bench2") && e.contains("--allow-unlimited"), "{e}");
        assert!(refuse_unlimited_service_host(&[host("service", Some(false))], true).is_ok());
        // A generator host's limits do not matter; an older svcbench that does not say is let through.
        assert!(refuse_unlimited_service_host(&[host("generator 1", Some(false))], false).is_ok());
        assert!(refuse_unlimited_service_host(&[host("service", None)], false).is_ok());
        assert!(refuse_unlimited_service_host(&[host("service", Some(true))], false).is_ok());
    }
}

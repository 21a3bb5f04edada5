//! The second phase of a session: the session as stored (its record, its warnings, its work folder and
//! lock), the emulated network or the hosts file's places, the builds, the dependencies, the check that each
//! service refuses a wrong dependency address, and the dependencies' warm-up.
use super::preflight::Preflight;
use super::run::start_spec;
use super::{progress, warmup, SessionCtx};
use crate::deps::{DepContext, Dependencies};
use crate::guard;
use crate::manifest::Service;
use crate::network::{Hosts, Network};
use crate::remote::service_client::RemoteService;
use crate::sandbox::CgroupChoice;
use crate::store::{SessionRecord, Store};
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The session as stored, and where its parts run.
pub struct Opened {
    pub store: Store,
    pub session_id: i64,
    pub work_dir: PathBuf,
    /// Names the session's sandboxes: this process and the session.
    pub tag: String,
    /// Made before the dependencies and dropped after them, so nothing still runs in a namespace when it
    /// is removed.
    pub network: Option<Network>,
    pub hosts: Hosts,
}

pub fn open_session(pre: &Preflight) -> Result<Opened> {
    let (opts, cells) = (&pre.opts, &pre.cells);
    let store = Store::open(&opts.plan.db)?;
    let session_id = store.create_session(&session_record(pre))?;
    if !pre.other_hosts.is_empty() {
        store.record_other_hosts(session_id, &pre.other_hosts)?;
    }
    let network = make_network(pre, &store, session_id)?;
    let hosts = place_parts(pre, network.as_ref(), &store, session_id)?;
    let measured: Vec<usize> = crate::cpus::parse(opts.plan.limits.cpuset.as_deref().unwrap_or(""))?
        .into_iter()
        .chain(pre.loadgen_cpus.clone())
        .collect();
    if let Some(w) = crate::sandbox::quiet_cpus::check(&measured, Duration::from_millis(500)) {
        crate::errln!("svcbench: WARNING: {w}");
        store.add_session_warning(session_id, &w)?;
    }
    if !pre.unlimited.is_empty() {
        let w = format!("limits not applied (--allow-unlimited): {}", pre.unlimited.join("; "));
        crate::errln!("svcbench: WARNING: {w}");
        store.add_session_warning(session_id, &w)?;
    }
    let tag = format!("{}-{session_id}", std::process::id());
    // Absolute: services run in their own folders, and paths handed to them ({dep.sqlite.path}) must hold there.
    let store_name = crate::paths::store_name(&opts.plan.db);
    let work_dir =
        std::path::absolute(pre.results_dir.join("work").join(format!("{store_name}-session-{session_id}")))?;
    crate::safe_fs::Folder::make(&work_dir).context("the store's work folder")?;
    // From here on, a later svcbench can end what this one started if this one is killed.
    guard::open_lock(&opts.plan.db, session_id);
    let (profile, scenario) = (&pre.profile, &pre.scenario);
    crate::errln!(
        "svcbench: session {session_id}: {} service(s) × {}{} run(s), scenario `{}`, profile `{}` ({} steps, {} per run); store {}",
        pre.services.len(),
        if cells.len() > 1 { format!("{} cells × ", cells.len()) } else { String::new() },
        opts.plan.runs, scenario.name(), profile.name, profile.steps.len(),
        progress::fmt_duration(profile.total_duration()), opts.plan.db.display()
    );
    crate::errln!("svcbench:   scenario: {}", scenario.file.description);
    for v in pre.services.iter().filter(|s| s.variant.is_some()) {
        let what = v.description.clone().unwrap_or_else(|| format!("{:?}", v.manifest.env));
        crate::errln!("svcbench:   variant {}: {what}", v.name());
    }
    crate::errln!("svcbench:   profile:  {} ({})", profile.description, profile.path.display());
    Ok(Opened { store, session_id, work_dir, tag, network, hosts })
}

fn session_record(pre: &Preflight) -> SessionRecord {
    let (opts, cells) = (&pre.opts, &pre.cells);
    let cgroup = if opts.cgroup == CgroupChoice::Auto { crate::sandbox::cgroup::detect() } else { opts.cgroup };
    let cgroup_version = match cgroup {
        CgroupChoice::V1 => "v1",
        CgroupChoice::V2 => "v2",
        _ => "none",
    };
    // A limit that varies along a study's axis is recorded per run (its cell), not per session.
    let same = |f: &dyn Fn(&crate::cell::AxisCell) -> Option<f64>| {
        cells.iter().all(|c| f(c) == f(&cells[0])).then(|| f(&cells[0])).flatten()
    };
    SessionRecord {
        label: opts.plan.label.clone(),
        command: opts.command_line.clone(),
        scenario: pre.scenario.name().to_string(),
        profile: pre.profile.name.clone(),
        runs_per_service: opts.plan.runs,
        host: crate::host::facts(),
        cgroup_version: cgroup_version.to_string(),
        limit_cpus: same(&|c| c.limits.cpus),
        limit_memory_mib: same(&|c| c.limits.memory_bytes.map(|b| b as f64 / 1048576.0)),
        study: opts.plan.study.clone(),
        service_cpuset: opts.plan.limits.cpuset.clone(),
        loadgen_cpuset: Some(crate::cpus::format(&pre.loadgen_cpus)),
        probe_tolerance: opts.probe_tolerance,
    }
}

fn make_network(pre: &Preflight, store: &Store, session_id: i64) -> Result<Option<Network>> {
    let Some(links) = pre.opts.links_to_make() else {
        if pre.opts.generators > 1 {
            store.record_network(session_id, &format!("loopback; {} generator agents", pre.opts.generators))?;
        }
        return Ok(None);
    };
    let mut n = Network::create(&links, &pre.loadgen_cpus, pre.opts.generators)?;
    // The checks and the warm-up run under the first cell, as do their limits.
    if let Some(first) = &pre.cells[0].links {
        n.set_links(first);
    }
    let axis = pre.cells.iter().any(|c| c.links.is_some());
    let described = if axis { format!("{}; the links of each run are its cell's", n.describe()) } else { n.describe() };
    crate::errln!("svcbench: network: {described}");
    store.record_network(session_id, &described)?;
    Ok(Some(n))
}

/// Where the generator, the service and the dependencies run: loopback, the network's namespaces, or the
/// hosts file's machines.
fn place_parts(pre: &Preflight, network: Option<&Network>, store: &Store, session_id: i64) -> Result<Hosts> {
    let mut hosts = network.map(|n| n.hosts()).unwrap_or_else(Hosts::local);
    if let Some(plan) = &pre.opts.hosts_plan {
        if let Some(addr) = plan.service_addr {
            // Generators on other machines reach the service at this machine's address.
            hosts.service = crate::network::Host { addr, netns: None };
        }
        let places: Vec<String> = plan.generators.iter().map(|p| p.describe()).collect();
        let store_at =
            plan.store.as_ref().map(|s| format!("; store {} ({})", s.place.describe(), s.address)).unwrap_or_default();
        let service_place = plan.service_at.as_ref().map(|s| format!(" on {}", s.place.describe())).unwrap_or_default();
        let described = format!(
            "hosts file: service {}{service_place}{store_at}; generators {}",
            hosts.service.addr,
            places.join(", ")
        );
        crate::errln!("svcbench: {described}");
        store.record_network(session_id, &described)?;
    }
    Ok(hosts)
}

/// A service that could not be built (or its image made, or its folder reached), and why.
pub type NotBuilt = (String, String);

/// Builds each service once (here, or on the service's machine); a failed build is recorded and that
/// service skipped. Variants that differ only in how they run share their base's build. Returns the
/// services ready to run, and those that are not with why (said again in the session's last line).
pub fn build_services(
    pre: &Preflight,
    opened: &Opened,
    remote_service: Option<&Arc<RemoteService>>,
    stop: &AtomicBool,
) -> Result<(Vec<Service>, Vec<NotBuilt>)> {
    let (store, session_id) = (&opened.store, opened.session_id);
    let mut ready = Vec::new();
    let mut not_built = Vec::new();
    let mut builds: BTreeMap<String, std::result::Result<(f64, Option<u64>), String>> = BTreeMap::new();
    for svc in &pre.services {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let built = match builds.get(&svc.build_key()) {
            // The build it reuses, and what that build took (its artifacts are here, or were measured
            // on the service's machine).
            Some(Ok((seconds, bytes))) if remote_service.is_some() => Ok((*seconds, *bytes)),
            Some(Ok((seconds, _))) => crate::service::build::artifact_bytes(svc, &opened.work_dir)
                .map(|bytes| (*seconds, bytes))
                .map_err(|e| format!("{e:#}")),
            Some(Err(e)) => Err(e.clone()),
            None => {
                let b = match remote_service {
                    Some(r) => r.build(svc, pre.opts.skip_build),
                    None => crate::service::build::build(svc, &opened.work_dir, pre.opts.skip_build),
                }
                .map(|b| (b.seconds, b.artifact_bytes))
                .map_err(|e| format!("{e:#}"));
                builds.insert(svc.build_key(), b.clone());
                b
            }
        };
        match built {
            Ok((seconds, bytes)) => {
                store.add_service(session_id, svc, true, Some(seconds), None, bytes)?;
                store.set_runtime(session_id, svc.name(), &crate::service::container_start::runtime_of(svc)?)?;
                ready.push(svc.clone());
            }
            Err(e) => {
                crate::errln!("svcbench: {e}");
                store.add_service(session_id, svc, false, None, Some(&e), None)?;
                not_built.push((svc.name().to_string(), e));
            }
        }
    }
    Ok((ready, not_built))
}

/// The scenario's dependencies, on the generator's CPUs (or the store the hosts file names, or one given).
pub fn start_dependencies(pre: &Preflight, opened: &Opened, given: &crate::deps::GivenDeps) -> Result<Dependencies> {
    Dependencies::start(
        &pre.scenario.file.dependency,
        &DepContext {
            work_dir: &opened.work_dir,
            scenario_dir: &pre.scenario.dir,
            cpuset: Some(crate::cpus::format(&pre.loadgen_cpus)),
            cgroup: pre.opts.cgroup,
            session_tag: opened.tag.clone(),
            for_load: true,
            host: opened.hosts.store.clone(),
            given,
            account: crate::sandbox::service_user::Account::Main,
        },
    )
}

/// Each service started once with its manifest's wrong dependency addresses: it must refuse, not pretend.
pub fn check_refusals(ctx: &mut SessionCtx, ready: &[Service], first: &crate::cell::AxisCell) -> Result<()> {
    for svc in ready {
        if ctx.stop.load(Ordering::Relaxed) {
            break;
        }
        let placeholders = ctx.deps.placeholders();
        let spec = start_spec(ctx, svc, &first.limits, "refusal", &placeholders, &svc.manifest.broken_env);
        match super::lifecycle::check_refusal(svc, spec, &ctx.stop) {
            Ok(Some((refused, detail))) => {
                // The check passing reads as such, not as an error of the service's.
                let verdict = if refused { "passed" } else { "FAILED" };
                crate::errln!(
                    "svcbench: {}: lifecycle check {verdict} (started with a wrong dependency address on purpose): {detail}",
                    svc.name()
                );
                ctx.store.set_refusal(ctx.session_id, svc.name(), refused, &detail)?;
            }
            Ok(None) => {}
            Err(e) => ctx.store.set_refusal(ctx.session_id, svc.name(), false, &format!("{e:#}"))?,
        }
    }
    Ok(())
}

/// The scenario's warm-up of its dependencies (seed 000's Elasticsearch caches), through the first service.
pub fn warm_up(ctx: &mut SessionCtx, ready: &[Service], first: &crate::cell::AxisCell) -> Result<()> {
    let (Some(spec), Some(svc)) = (ctx.scenario.file.warmup.clone(), ready.first()) else { return Ok(()) };
    let placeholders = ctx.deps.placeholders();
    let empty = BTreeMap::new();
    crate::errln!("svcbench: warming the dependencies through {} until its throughput settles", svc.name());
    let start = start_spec(ctx, svc, &first.limits, "warmup", &placeholders, &empty);
    let w = warmup::warm_up(
        &spec,
        &ctx.scenario,
        svc,
        &start,
        warmup::LoadFrom { cpus: &ctx.loadgen_cpus, host: ctx.hosts.client() },
        ctx.opts.plan.startup_timeout,
        &ctx.stop,
    )?;
    crate::errln!(
        "svcbench: warm-up {} after {:.0} s: {} req/s per window",
        if w.settled { "settled" } else { "did NOT settle" },
        w.seconds,
        w.windows.iter().map(|x| format!("{x:.0}")).collect::<Vec<_>>().join(", ")
    );
    if !w.settled {
        ctx.store.add_session_warning(
            ctx.session_id,
            &format!("the dependencies' warm-up did not settle within its limit ({:.0} s)", w.seconds),
        )?;
    }
    ctx.store.record_warmup(ctx.session_id, &serde_json::to_string(&w)?)?;
    Ok(())
}

//! `svcbench pod`: a container service as a Kubernetes Pod spec (docs/kubernetes.md), the one
//! `run --runtime kube` plays. Every input is checked before anything is built.
use crate::cli::PodArgs;
use crate::manifest::Service;
use crate::sandbox::container::pod_spec;
use crate::sandbox::Limits;
use anyhow::{bail, Context, Result};

/// The one service the argument names, with a `[container]`.
fn service(arg: &str) -> Result<Service> {
    let mut all = Service::load_spec(arg)?;
    if all.len() != 1 {
        bail!("{arg}: names {} services; give one, as a folder or folder@variant", all.len());
    }
    let svc = all.remove(0);
    if svc.manifest.container.is_none() {
        let with: Vec<String> = svc_variants_with_container(&svc);
        let hint = match with.first() {
            Some(v) => format!("; its variant {v} has one: svcbench pod {arg}@{v}"),
            None => "; add one (docs/manifest.md)".into(),
        };
        bail!("{}: its manifest has no [container], so there is no image to run as a Pod{hint}", svc.name());
    }
    Ok(svc)
}

/// The variants of a service that run as containers, for the hint.
fn svc_variants_with_container(svc: &Service) -> Vec<String> {
    svc.manifest.variant.iter().filter(|(_, v)| v.container.is_some()).map(|(n, _)| n.clone()).collect()
}

/// The limits as asked, each in what a Pod can say.
fn limits(a: &PodArgs) -> Result<Limits> {
    let mut limits = a.limits.limits()?;
    if let Some(n) = limits.pids {
        bail!("--pids {n}: a Pod's process limit is its manifest's [container] pids_limit; set it there");
    }
    if let Some(c) = limits.cpus {
        pod_spec::millicores(c)?;
    }
    if let Some(set) = &limits.cpuset {
        let cpus = crate::cpus::parse(set).with_context(|| format!("--cpuset {set:?}"))?;
        if let Some(q) = limits.cpus.filter(|q| *q > cpus.len() as f64) {
            bail!(
                "--cpus {q} is more than the {} CPU(s) of --cpuset {set}; give a smaller quota or more CPUs",
                cpus.len()
            );
        }
        limits.cpuset = Some(crate::cpus::format(&cpus));
    }
    Ok(limits)
}

pub fn run(a: &PodArgs) -> Result<i32> {
    if a.port == Some(0) {
        bail!("--port 0: give the port the service listens on, 1 to 65535");
    }
    let svc = service(&a.service)?;
    let limits = limits(a)?;
    if let Some(dir) = a.output.as_ref().and_then(|o| o.parent()).filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            bail!("-o {}: the folder {} does not exist", a.output.as_ref().unwrap().display(), dir.display());
        }
    }
    // The image the Pod names is the one a run would start: built (or pulled) here, as `svcbench build` does.
    crate::service::build::build(&svc, &a.work_dir, a.no_build)?;
    let yaml = crate::service::container_start::pod_for(&svc, &limits, a.port)?;
    if limits.cpus.is_none() || limits.memory_bytes.is_none() {
        crate::errln!(
            "svcbench: no {}: the Pod's QoS class is Burstable, not Guaranteed (requests equal limits only for what is given)",
            if limits.cpus.is_none() { "--cpus" } else { "--memory cap" }
        );
    }
    match &a.output {
        Some(path) => {
            std::fs::write(path, &yaml).with_context(|| format!("cannot write {}", path.display()))?;
            crate::errln!("svcbench: {} as a Pod in {}", svc.name(), path.display());
        }
        None => crate::out!("{yaml}"),
    }
    Ok(0)
}

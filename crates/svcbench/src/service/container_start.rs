//! A service run from an image (a manifest's `[container]`, or `run --image`): its image made available
//! (built from its Containerfile only when the context changed), then started by the engine under the
//! run's limits, on the run's network, as an unprivileged user, labelled with its session and run.
use super::instance::{Instance, StartSpec};
use super::service_sandbox::ServiceSandbox;
use crate::manifest::{fill_placeholders, ContainerSection, Service};
use crate::sandbox::cgroup::Applied;
use crate::sandbox::container::engine::Engine;
use crate::sandbox::container::image::{self, Source};
use crate::sandbox::container::run::{ContainerSandbox, ContainerSpec, LABEL_GROUP};
use crate::sandbox::process::Exit;
use crate::sandbox::sampler::Sample;
use crate::sandbox::{Limits, Probe, StopOutcome};
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// The user a container service runs as (nobody:nogroup): never root, whatever the image says.
pub const CONTAINER_USER: &str = "65534:65534";
/// The pids limit when the manifest gives none.
pub const DEFAULT_PIDS_LIMIT: u32 = 4096;

fn section(svc: &Service) -> Result<&ContainerSection> {
    svc.manifest.container.as_ref().with_context(|| format!("{} has no [container]", svc.name()))
}

/// Where the service's image comes from.
pub fn source(svc: &Service) -> Result<Source> {
    let c = section(svc)?;
    match (&c.image, &c.containerfile) {
        (Some(tag), _) => Ok(Source::Tag(tag.clone())),
        (None, Some(cf)) => {
            let containerfile = svc.dir.join(cf);
            let context = match &c.context {
                Some(ctx) => svc.dir.join(ctx),
                None => containerfile.parent().unwrap_or(&svc.dir).to_path_buf(),
            };
            Ok(Source::Build { containerfile, context, repository: image::repository_for(svc.name()) })
        }
        (None, None) => bail!("{}: [container] names neither `image` nor `containerfile`", svc.name()),
    }
}

pub fn engine(svc: &Service) -> Result<Engine> {
    Engine::detect(section(svc)?.engine.as_deref())
}

/// Builds or pulls the image where it is missing; its size in bytes (the service's artifact size).
pub fn ensure_image(svc: &Service, log_dir: &Path) -> Result<u64> {
    let engine = engine(svc)?;
    std::fs::create_dir_all(log_dir)?;
    let log = log_dir.join(format!("image-{}.log", svc.name()));
    let (tag, _) = image::ensure(&engine, &source(svc)?, &log)?;
    image::size_bytes(&engine, &tag)
}

/// The port the service listens on: the image's fixed one (free on its address, or the start would
/// collide), else a free one given to it through `{port}`.
fn port_for(c: &ContainerSection, spec: &StartSpec) -> Result<u16> {
    let Some(p) = c.port else { return crate::readiness::free_port() };
    if spec.host.netns.is_none() && std::net::TcpListener::bind((spec.host.addr, p)).is_err() {
        bail!(
            "port {p} on {} is in use, and the image listens on it (`port` in [container]): stop what holds it, or \
             let the image listen on {{port}} from its env or args",
            spec.host.addr
        );
    }
    Ok(p)
}

/// The manifest of an image run without one (`run --image TAG`): a folder under `folder` named after the
/// tag, holding a `svcbench.toml` whose readiness is `/` and whose checks are the scenario's.
pub fn manifest_for_image(tag: &str, port: Option<u16>, scenario: &str, folder: &Path) -> Result<std::path::PathBuf> {
    if tag.trim().is_empty() || tag.contains(char::is_whitespace) {
        bail!("--image {tag:?} is not an image tag; give one like hello:1 or localhost/name:tag");
    }
    let name = image::repository_for(tag).replacen("svcbench-", "image-", 1);
    let dir = folder.join(&name);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let listen = match port {
        Some(p) => format!("port = {p}\n"),
        None => String::new(),
    };
    let env = if port.is_none() { "\n[env]\nPORT = \"{port}\"\nHOST = \"{host}\"\n" } else { "" };
    let text = format!(
        "# Written by `svcbench run --image`: the image {tag} as a service of the {scenario} scenario.\n\
         name = {name:?}\nscenario = {scenario:?}\nlanguage = \"image\"\nframework = \"image\"\n\
         framework_version = {tag:?}\nmodel = \"async\"\nreadiness = \"/\"\n{env}\n[container]\nimage = {tag:?}\n{listen}"
    );
    std::fs::write(dir.join("svcbench.toml"), text).with_context(|| format!("cannot write {}", dir.display()))?;
    Ok(dir)
}

pub fn spawn(svc: &Service, spec: &StartSpec) -> Result<Instance> {
    let c = section(svc)?;
    let engine = engine(svc)?;
    let src = source(svc)?;
    let tag = image::tag_of(&src)?;
    if !image::exists(&engine, &tag) {
        image::ensure(&engine, &src, &spec.log_dir.join(format!("image-{}.log", svc.name())))?;
    }
    let port = port_for(c, spec)?;
    let mut values: BTreeMap<String, String> = spec.dep_placeholders.clone();
    values.insert("port".into(), port.to_string());
    values.insert("host".into(), spec.host.addr.to_string());
    let manifest_file = svc.dir.join("svcbench.toml");
    let fill = |what: &str, text: &str| {
        fill_placeholders(text, &values).with_context(|| format!("{}: {what}", manifest_file.display()))
    };
    let mut merged = svc.manifest.env.clone();
    merged.extend(spec.env_overrides.clone());
    let env = merged.iter().map(|(k, v)| Ok((k.clone(), fill(&format!("env.{k}"), v)?))).collect::<Result<Vec<_>>>()?;
    let args = c.args.iter().map(|a| fill("[container] args", a)).collect::<Result<Vec<_>>>()?;
    let mut labels = crate::sandbox::container::cleanup::owner_labels();
    labels.push((LABEL_GROUP.into(), spec.sandbox_name.clone()));
    labels.extend(spec.labels.iter().cloned());
    let container = ContainerSpec {
        name: spec.sandbox_name.clone(),
        image: tag,
        args,
        env,
        limits: spec.limits.clone(),
        pids_limit: c.pids_limit.unwrap_or(DEFAULT_PIDS_LIMIT),
        netns: spec.host.netns.as_ref().map(|n| n.name.clone()),
        user: CONTAINER_USER.into(),
        labels,
    };
    std::fs::create_dir_all(spec.log_dir)?;
    let log_path = spec.log_dir.join(&spec.log_name);
    let log = std::fs::File::create(&log_path).with_context(|| format!("cannot create {}", log_path.display()))?;
    let spawned_at = Instant::now();
    let sandbox = ContainerSandbox::start(&engine, container, log)?;
    Ok(Instance {
        sandbox: Box::new(sandbox),
        host: spec.host.clone(),
        port,
        log_path,
        spawned_at,
        user: Some(format!("{CONTAINER_USER} in a container")),
        _home: None,
    })
}

impl ServiceSandbox for ContainerSandbox {
    fn limits_held(&self, asked: &Limits) -> (Applied, Vec<String>) {
        ContainerSandbox::limits_held(self, asked)
    }
    fn cgroup_version(&self) -> &str {
        ContainerSandbox::cgroup_version(self)
    }
    fn warnings(&self) -> &[String] {
        &self.warnings
    }
    fn probe(&self) -> Arc<dyn Probe> {
        ContainerSandbox::probe(self)
    }
    fn sample(&self) -> Sample {
        ContainerSandbox::probe(self).sample()
    }
    fn reset_peak(&self) -> bool {
        ContainerSandbox::reset_peak(self)
    }
    fn kernel_peak_mib(&self) -> Option<f64> {
        ContainerSandbox::kernel_peak_mib(self)
    }
    fn try_exit(&mut self) -> Option<Exit> {
        ContainerSandbox::try_exit(self)
    }
    fn wait_exit(&mut self, timeout: Duration) -> Option<Exit> {
        ContainerSandbox::wait_exit(self, timeout)
    }
    fn stop(&mut self, grace: Duration) -> StopOutcome {
        ContainerSandbox::stop(self, grace)
    }
    fn pids(&self) -> Option<Vec<i32>> {
        Some(ContainerSandbox::pids(self))
    }
    fn log_tail(&self, lines: usize) -> Option<String> {
        ContainerSandbox::log_tail(self, lines)
    }
    fn started_by_engine(&self) -> Option<SystemTime> {
        ContainerSandbox::engine_started_at(self)
    }
}

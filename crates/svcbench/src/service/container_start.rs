//! A service run from an image (a manifest's `[container]`, or `run --image`): its image made available
//! (built from its Containerfile only when the context changed), then started by the engine under the
//! run's limits, on the run's network, as an unprivileged user, labelled with its session and run.
use super::instance::{Instance, StartSpec};
use super::service_sandbox::ServiceSandbox;
use crate::manifest::{fill_placeholders, ContainerSection, Service};
use crate::sandbox::cgroup::Applied;
use crate::sandbox::container::engine::Engine;
use crate::sandbox::container::image::{self, Source};
use crate::sandbox::container::run::ContainerSandbox;
use crate::sandbox::container::spec::{container_name, ContainerSpec, LABEL_GROUP};
use crate::sandbox::container::{pod_spec, Runtime};
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

/// How a service runs, as the store keeps it (`service.runtime`): `process`, `container (<engine program>)`
/// or `pod (podman kube play)`, so that runs of one service as a process, an image and a Pod stay told apart.
pub fn runtime_of(svc: &Service) -> Result<String> {
    let Some(c) = svc.manifest.container.as_ref() else { return Ok("process".into()) };
    Ok(match c.runtime {
        Runtime::Kube => "pod (podman kube play)".into(),
        Runtime::Engine => format!("container ({})", engine(svc)?.program),
    })
}

pub fn engine(svc: &Service) -> Result<Engine> {
    Engine::detect(section(svc)?.engine.as_deref())
}

/// Refuses a Containerfile whose local base `engine` lacks, before anything of the service is built.
pub fn check_bases(svc: &Service, engine: &Engine) -> Result<()> {
    if let Source::Build { containerfile, .. } = source(svc)? {
        image::check_bases(engine, &containerfile).with_context(|| svc.name().to_string())?;
    }
    Ok(())
}

/// The ID of the image the service runs, as its engine holds it now (None: no engine, or not built or
/// pulled yet).
pub fn image_id(svc: &Service) -> Option<String> {
    image::id(&engine(svc).ok()?, &image::tag_of(&source(svc).ok()?).ok()?)
}

/// Builds or pulls the image where it is missing; its size in bytes (the service's artifact size).
pub fn ensure_image(svc: &Service, log_dir: &Path) -> Result<u64> {
    let engine = engine(svc)?;
    crate::safe_fs::Folder::make(log_dir)?;
    let log = log_dir.join(format!("image-{}.log", svc.name()));
    let (tag, _) = image::ensure(&engine, &source(svc)?, &log)?;
    let bytes = image::size_bytes(&engine, &tag)?;
    // Which engine ran it is part of the figures' context: a `docker` CLI may drive Docker or Podman's API.
    crate::errln!(
        "svcbench: {}: image {tag}, {:.1} MiB, by `{}` ({:?})",
        svc.name(),
        bytes as f64 / (1u64 << 20) as f64,
        engine.program,
        engine.kind
    );
    Ok(bytes)
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
    let made = crate::safe_fs::Folder::make(&dir).context("run --image's manifest folder")?;
    // A fixed port is the image's own; otherwise it is handed one in PORT. The container shares the host's
    // network: HOST tells an image that reads it where to listen, also when its port is fixed (one that
    // ignores it is warned about, and failed by `check`, if it listens on all).
    let (listen, port_env) = match port {
        Some(p) => (format!("port = {p}\n"), ""),
        None => (String::new(), "PORT = \"{port}\"\n"),
    };
    let text = format!(
        "# Written by `svcbench run --image`: the image {tag} as a service of the {scenario} scenario.\n\
         name = {name:?}\nscenario = {scenario:?}\nlanguage = \"image\"\nframework = \"image\"\n\
         framework_version = {tag:?}\nmodel = \"async\"\nreadiness = \"/\"\n\n[env]\n{port_env}HOST = \"{{host}}\"\n\n\
         [container]\nimage = {tag:?}\n{listen}"
    );
    made.write("svcbench.toml", text)?;
    Ok(dir)
}

/// What a container start fills the manifest's placeholders and names with: the same for `<engine> run`,
/// for `kube play` and for `svcbench pod`, so that they run one and the same container.
pub struct Resolved {
    /// The run's sandbox name (the container's and the pod's name are made from it).
    pub name: String,
    pub image: String,
    pub port: u16,
    /// The address the service listens on (`{host}`).
    pub host: String,
    /// The run's network namespace under `--net`; None: the host's network.
    pub netns: Option<String>,
    pub dep_placeholders: BTreeMap<String, String>,
    pub env_overrides: BTreeMap<String, String>,
    /// Labels beyond `svcbench.service` (a run's owner, session, run and group).
    pub labels: Vec<(String, String)>,
}

/// The label naming the service a container or pod runs.
pub const LABEL_SERVICE: &str = "svcbench.service";

/// The container a service's manifest and the run's values make: env and args with every placeholder
/// filled, the limits, the pids limit, the unprivileged user and the labels. Pure: nothing is started.
pub fn container_spec(svc: &Service, r: &Resolved, limits: &Limits) -> Result<ContainerSpec> {
    let c = section(svc)?;
    let mut values: BTreeMap<String, String> = r.dep_placeholders.clone();
    values.insert("port".into(), r.port.to_string());
    values.insert("host".into(), r.host.clone());
    let manifest_file = svc.dir.join("svcbench.toml");
    let fill = |what: &str, text: &str| {
        fill_placeholders(text, &values).with_context(|| format!("{}: {what}", manifest_file.display()))
    };
    let mut merged = svc.manifest.env.clone();
    merged.extend(r.env_overrides.clone());
    let env = merged.iter().map(|(k, v)| Ok((k.clone(), fill(&format!("env.{k}"), v)?))).collect::<Result<Vec<_>>>()?;
    let args = c.args.iter().map(|a| fill("[container] args", a)).collect::<Result<Vec<_>>>()?;
    let mut labels = vec![(LABEL_SERVICE.to_string(), svc.name().to_string())];
    labels.extend(r.labels.iter().cloned());
    let (mounts, user) = dependency_folders(&r.dep_placeholders)?;
    Ok(ContainerSpec {
        name: r.name.clone(),
        image: r.image.clone(),
        args,
        env,
        limits: limits.clone(),
        // The manifest's own limit, else the run's (`--pids`, or the default every cgroup gets).
        pids_limit: c.pids_limit.unwrap_or_else(|| u32::try_from(limits.pids_max()).unwrap_or(u32::MAX)),
        capabilities: crate::sandbox::container::confinement::capability_names(&c.capabilities)?,
        netns: r.netns.clone(),
        user,
        labels,
        mounts,
    })
}

/// The folders a dependency shares with the service (its `dep.<kind>.folder` placeholder: SQLite's
/// database and journal), mounted at the same path so that the paths in the service's env hold inside; the
/// container then runs as the unprivileged user owning them, who alone may write there. Without any, as
/// [`CONTAINER_USER`].
fn dependency_folders(placeholders: &BTreeMap<String, String>) -> Result<(Vec<String>, String)> {
    use std::os::unix::fs::MetadataExt;
    let folders: Vec<String> = placeholders
        .iter()
        .filter(|(k, _)| k.starts_with("dep.") && k.ends_with(".folder"))
        .map(|(_, v)| v.clone())
        .collect();
    let mut user = CONTAINER_USER.to_string();
    if let Some(first) = folders.first() {
        let m = std::fs::metadata(first).with_context(|| format!("a dependency's folder {first}"))?;
        user = format!("{}:{}", m.uid(), m.gid());
    }
    Ok((folders, user))
}

/// The Pod spec of a container as YAML: what `svcbench pod` prints and `run --runtime kube` plays.
pub fn pod_yaml(svc: &Service, container: &ContainerSpec, pod: &str, port: u16, host: &str) -> Result<String> {
    let p = pod_spec::build(container, pod, &svc.manifest.readiness, port, host)?;
    pod_spec::to_yaml(&p, &format!("{} as a Kubernetes Pod, written by svcbench (docs/kubernetes.md)", svc.name()))
}

/// The port `svcbench pod` gives the service when none is asked: the image's fixed one, else this.
pub const POD_PORT: u16 = 8080;

/// `svcbench pod`: the service's Pod under `limits`, its placeholders filled as for a container run on the
/// host's network (loopback), without a run's owner, session or run labels (a pod played by hand is never
/// a killed svcbench's leftover).
pub fn pod_for(svc: &Service, limits: &Limits, port: Option<u16>) -> Result<String> {
    let c = section(svc)?;
    let port = match (port, c.port) {
        (Some(asked), Some(fixed)) if asked != fixed => bail!(
            "--port {asked}: {} listens on {fixed} whatever it is told (`port` in its [container]); drop --port",
            svc.name()
        ),
        (asked, fixed) => asked.or(fixed).unwrap_or(POD_PORT),
    };
    let resolved = Resolved {
        name: svc.name().to_string(),
        image: image::tag_of(&source(svc)?)?,
        port,
        host: std::net::Ipv4Addr::LOCALHOST.to_string(),
        netns: None,
        dep_placeholders: BTreeMap::new(),
        env_overrides: BTreeMap::new(),
        labels: Vec::new(),
    };
    let container = container_spec(svc, &resolved, limits)
        .context("svcbench pod fills only {port} and {host}; a service that needs a dependency's address cannot be written as a Pod yet")?;
    pod_yaml(svc, &container, &pod_spec::pod_name(&container_name(svc.name())), port, &resolved.host)
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
    let mut labels = crate::sandbox::container::cleanup::owner_labels();
    labels.push((LABEL_GROUP.into(), spec.sandbox_name.clone()));
    labels.extend(spec.labels.iter().cloned());
    let resolved = Resolved {
        name: spec.sandbox_name.clone(),
        image: tag,
        port,
        host: spec.host.addr.to_string(),
        netns: spec.host.netns.as_ref().map(|n| n.name.clone()),
        dep_placeholders: spec.dep_placeholders.clone(),
        env_overrides: spec.env_overrides.clone(),
        labels,
    };
    let container = container_spec(svc, &resolved, spec.limits)?;
    let log_path = spec.log_dir.join(&spec.log_name);
    let log = crate::safe_fs::create_file(&log_path)?;
    let spawned_at = Instant::now();
    let sandbox = match c.runtime {
        Runtime::Engine => ContainerSandbox::start(&engine, container, log)?,
        Runtime::Kube => {
            // The spec `svcbench pod` would write for these values, kept beside the log, played as it is.
            let pod = pod_spec::pod_name(&container_name(&spec.sandbox_name));
            let yaml = pod_yaml(svc, &container, &pod, port, &resolved.host)?;
            let file = log_path.with_extension("pod.yaml");
            crate::safe_fs::write_file(&file, yaml)?;
            ContainerSandbox::start_kube(&engine, container, &pod, &file, log)?
        }
    };
    let inst = Instance {
        sandbox: Box::new(sandbox),
        host: spec.host.clone(),
        port,
        log_path,
        spawned_at,
        user: Some(format!("{CONTAINER_USER} in a container")),
        _home: None,
        first_answer: None,
    }
    .watched(&svc.manifest.readiness);
    // Dropped, and so removed, when refused: nothing of an unconfined image is measured.
    if let Some(why) = inst.sandbox.confinement_refusal() {
        bail!(why);
    }
    Ok(inst)
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
    fn confinement_refusal(&self) -> Option<String> {
        ContainerSandbox::confinement_refusal(self)
    }
}

//! The service manifest `svcbench.toml` (docs/manifest.md): how to build, start and describe a service.
use anyhow::{bail, Context, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ProgrammingModel {
    Async,
    Blocking,
}

impl ProgrammingModel {
    pub fn as_str(self) -> &'static str {
        match self {
            ProgrammingModel::Async => "async",
            ProgrammingModel::Blocking => "blocking",
        }
    }
}

/// Who the service runs as when svcbench runs as root (docs/security.md).
#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RunAs {
    /// The unprivileged system user `svcbench`.
    #[default]
    Svcbench,
    /// root, for the rare service that needs it; the report says so.
    Root,
}

/// How long a build may take when the manifest gives no `build_timeout`.
pub const DEFAULT_BUILD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30 * 60);

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub name: String,
    pub scenario: String,
    pub language: String,
    pub framework: String,
    pub framework_version: String,
    /// The programming model (`model` in the file: blocking threads or async), not the load model.
    #[serde(rename = "model")]
    pub programming_model: ProgrammingModel,
    #[serde(default)]
    pub build: Option<String>,
    /// Environment of the build command (cargo profile settings, RUSTFLAGS, Maven properties).
    #[serde(default)]
    pub build_env: BTreeMap<String, String>,
    /// Files or folders outside the service folder that the build reads (relative to it): a change there
    /// rebuilds the service as a change inside does.
    #[serde(default)]
    pub build_inputs: Vec<String>,
    /// How long the build may take ("30m", "90s"): past it, the build's process group is ended.
    #[serde(default, with = "humantime_serde_opt")]
    pub build_timeout: Option<std::time::Duration>,
    /// The start command of a process service (none for a container service).
    #[serde(default)]
    pub run: String,
    /// `[container]`: the service runs from an image instead of as a process (docs/containers.md).
    #[serde(default)]
    pub container: Option<ContainerSection>,
    /// The user the service runs as when svcbench is root: `svcbench` (default) or `root`.
    #[serde(default)]
    pub run_as: RunAs,
    #[serde(default)]
    pub artifacts: Vec<String>,
    pub readiness: String,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Overrides that point the service at a wrong dependency: it must then refuse to start.
    #[serde(default)]
    pub broken_env: BTreeMap<String, String>,
    /// Named variants of this service (an engine, a build profile, a worker count), each its own series.
    #[serde(default)]
    pub variant: BTreeMap<String, Variant>,
}

/// `[variant.<name>]`: what a variant changes in its service's manifest. Absent keys keep the base's value;
/// `env` and `build_env` are merged over the base's.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Variant {
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub framework: Option<String>,
    #[serde(default)]
    pub framework_version: Option<String>,
    #[serde(default)]
    #[serde(rename = "model")]
    pub programming_model: Option<ProgrammingModel>,
    #[serde(default)]
    pub build: Option<String>,
    #[serde(default)]
    pub build_env: BTreeMap<String, String>,
    #[serde(default)]
    pub run: Option<String>,
    #[serde(default)]
    pub artifacts: Option<Vec<String>>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default, with = "humantime_serde_opt")]
    pub build_timeout: Option<std::time::Duration>,
    #[serde(default)]
    pub run_as: Option<RunAs>,
    /// A `[container]` of the variant's own (replacing the base's whole): the same service as an image.
    #[serde(default)]
    pub container: Option<ContainerSection>,
}

/// `[container]`: where the image comes from and how it is run.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ContainerSection {
    /// A local or pullable tag.
    #[serde(default)]
    pub image: Option<String>,
    /// A Containerfile (relative to the service folder) the engine builds, tagged by its context's content.
    #[serde(default)]
    pub containerfile: Option<String>,
    /// The build context (relative to the service folder); default: the Containerfile's folder.
    #[serde(default)]
    pub context: Option<String>,
    /// The port the image listens on whatever it is told; none: it listens on `{port}` from env or args.
    #[serde(default)]
    pub port: Option<u16>,
    /// Words after the image (its command or arguments), with placeholders.
    #[serde(default)]
    pub args: Vec<String>,
    /// `docker` or `podman`; default: Docker where its daemon answers, else Podman.
    #[serde(default)]
    pub engine: Option<String>,
    /// The container's pids limit (default 4096).
    #[serde(default)]
    pub pids_limit: Option<u32>,
    /// The capabilities the service needs (`NET_BIND_SERVICE`); every other one is dropped.
    #[serde(default)]
    pub capabilities: Vec<String>,
    /// How it is started: set by `run --runtime`, never by a manifest.
    #[serde(skip)]
    pub runtime: Runtime,
}

/// How a container service is started: `<engine> run` (the default), or its Pod spec played by
/// `podman kube play`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Runtime {
    #[default]
    Engine,
    Kube,
}

/// `build_timeout` as a human duration ("30m"), read with humantime, so that a bad one names itself.
mod humantime_serde_opt {
    use serde::{Deserialize, Deserializer};
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<std::time::Duration>, D::Error> {
        let text = String::deserialize(d)?;
        match humantime::parse_duration(&text) {
            Ok(t) if !t.is_zero() && t <= std::time::Duration::from_secs(24 * 3600) => Ok(Some(t)),
            Ok(_) => Err(serde::de::Error::custom(format!(
                "build_timeout {text:?} must be more than 0 and at most 24h, e.g. \"30m\""
            ))),
            Err(e) => {
                Err(serde::de::Error::custom(format!("build_timeout {text:?}: {e}; write e.g. \"30m\" or \"90s\"")))
            }
        }
    }
}

/// A manifest together with the folder it came from. For a variant, the manifest is the base's with the
/// variant applied, and its name is `base@variant`.
#[derive(Debug, Clone)]
pub struct Service {
    pub dir: PathBuf,
    pub manifest: Manifest,
    /// The base service's name (the name without `@variant`).
    pub base_name: String,
    pub variant: Option<String>,
    /// The variant's `description`, for people.
    pub description: Option<String>,
    /// The artifacts of every build of the folder, the base's and each variant's: none of them is an input
    /// of another's build stamp (a variant's binary beside the base's must not make the base build again).
    pub folder_artifacts: Vec<String>,
    /// The commit the service was taken from when named `FOLDER#REV` (its `dir` is then in a copy of that
    /// commit's tree); None: the folder as it is.
    pub revision: Option<crate::revision::Revision>,
}

/// Separates a service argument into its folder and variant: `services/x@jetty`, `services/x@*` (the base
/// and every variant). A path that exists as given is never split.
pub fn split_spec(spec: &str) -> (&str, Option<&str>) {
    if Path::new(spec).exists() {
        return (spec, None);
    }
    match spec.rsplit_once('@') {
        Some((path, v)) if !v.contains('/') => (path, Some(v)),
        _ => (spec, None),
    }
}

impl Service {
    /// Loads the services a command-line argument names: a folder (the base), `folder@variant`, or
    /// `folder@*` (the base, then every variant in name order).
    pub fn load_spec(spec: &str) -> Result<Vec<Service>> {
        let (path, variant) = split_spec(spec);
        let base = match crate::revision::split(path) {
            (_, None) => Service::load(Path::new(path))?,
            (folder, Some(rev)) => Service::at_revision(Path::new(folder), rev)?,
        };
        match variant {
            None => Ok(vec![base]),
            // `x@` is a variant name cut off (or a shell's completion), not the base: refused, not guessed.
            Some("") => {
                let known: Vec<&str> = base.manifest.variant.keys().map(|k| k.as_str()).collect();
                bail!(
                    "{spec}: no variant name after `@`; name the folder alone for the base{}",
                    match known.is_empty() {
                        true => format!(" (`{}` declares no [variant.*] tables)", base.name()),
                        false => format!(", `@NAME` for one variant ({}) or `@*` for all", known.join(", ")),
                    }
                )
            }
            Some("*") => {
                let names: Vec<String> = base.manifest.variant.keys().cloned().collect();
                if names.is_empty() {
                    bail!("{spec}: `{}` declares no [variant.*] tables; name the folder alone", base.name());
                }
                let mut all = vec![base.clone()];
                for n in names {
                    all.push(base.with_variant(&n)?);
                }
                Ok(all)
            }
            Some(v) => Ok(vec![base.with_variant(v)?]),
        }
    }

    /// The service in `folder` as it is at git revision `rev`, its name marked with the commit.
    fn at_revision(folder: &Path, rev: &str) -> Result<Service> {
        let (dir, revision) = crate::revision::check_out(folder, rev)?;
        let mut base = Service::load(&dir).with_context(|| format!("{}#{rev}", folder.display()))?;
        base.manifest.name.push_str(&revision.name_suffix());
        base.base_name = base.manifest.name.clone();
        base.revision = Some(revision);
        Ok(base)
    }

    /// This (base) service with one of its variants applied.
    pub fn with_variant(&self, name: &str) -> Result<Service> {
        let Some(v) = self.manifest.variant.get(name) else {
            let known: Vec<&str> = self.manifest.variant.keys().map(|k| k.as_str()).collect();
            bail!(
                "{}: no variant `{name}` in {}; variants here: {} (see [variant.*] in docs/manifest.md)",
                self.name(),
                self.dir.join("svcbench.toml").display(),
                if known.is_empty() { "none".to_string() } else { known.join(", ") }
            );
        };
        let mut m = self.manifest.clone();
        m.name = format!("{}@{name}", self.manifest.name);
        if let Some(f) = &v.framework {
            m.framework = f.clone();
        }
        if let Some(f) = &v.framework_version {
            m.framework_version = f.clone();
        }
        if let Some(x) = v.programming_model {
            m.programming_model = x;
        }
        if let Some(b) = &v.build {
            m.build = Some(b.clone());
        }
        m.build_env.extend(v.build_env.clone());
        if let Some(r) = &v.run {
            m.run = r.clone();
        }
        if let Some(a) = &v.artifacts {
            m.artifacts = a.clone();
        }
        if let Some(t) = v.build_timeout {
            m.build_timeout = Some(t);
        }
        if let Some(r) = v.run_as {
            m.run_as = r;
        }
        if let Some(c) = &v.container {
            m.container = Some(c.clone());
        }
        m.env.extend(v.env.clone());
        m.variant.clear();
        Ok(Service {
            dir: self.dir.clone(),
            manifest: m,
            base_name: self.base_name.clone(),
            variant: Some(name.into()),
            description: v.description.clone(),
            folder_artifacts: self.folder_artifacts.clone(),
            revision: self.revision.clone(),
        })
    }

    /// What decides the build's output: services (or variants) with the same key share one build.
    pub fn build_key(&self) -> String {
        format!("{}|{:?}|{:?}", self.dir.display(), self.manifest.build, self.manifest.build_env)
    }

    /// Loads `DIR/svcbench.toml` (or the file itself when given a path to a `.toml`).
    pub fn load(path: &Path) -> Result<Service> {
        let file = if path.is_dir() { path.join("svcbench.toml") } else { path.to_path_buf() };
        if !path.exists() {
            bail!("{}: no such file or folder; give a service folder (one with a svcbench.toml)", path.display());
        }
        if !file.exists() {
            bail!(
                "{}: no svcbench.toml here; a service folder needs a manifest (see docs/manifest.md)",
                path.display()
            );
        }
        let manifest: Manifest = crate::toml_file::read(&file)?;
        let dir = file
            .parent()
            .unwrap_or(Path::new("."))
            .canonicalize()
            .with_context(|| format!("cannot resolve folder of {}", file.display()))?;
        if manifest.name.trim().is_empty() {
            bail!("{}: key `name` is empty; give the service a unique name", file.display());
        }
        check_name(&manifest.name).map_err(|e| anyhow::anyhow!("{}: key `name` {e}", file.display()))?;
        if !manifest.readiness.starts_with('/') {
            bail!("{}: key `readiness` must be a path starting with '/', got {:?}", file.display(), manifest.readiness);
        }
        let mut folder_artifacts = manifest.artifacts.clone();
        folder_artifacts.extend(manifest.variant.values().flat_map(|v| v.artifacts.iter().flatten().cloned()));
        let base = Service {
            dir,
            base_name: manifest.name.clone(),
            manifest,
            variant: None,
            description: None,
            folder_artifacts,
            revision: None,
        };
        base.check_start(&file)?;
        base.check_variants(&file)?;
        if let Some(missing) = base.manifest.build_inputs.iter().find(|i| !base.dir.join(i).exists()) {
            bail!(
                "{}: build input {missing:?} does not exist (paths are relative to the service folder); fix or \
                 remove it in `build_inputs`",
                file.display()
            );
        }
        Ok(base)
    }

    /// A process service has a `run`; a container service exactly one image source, which exists.
    fn check_start(&self, file: &Path) -> Result<()> {
        let Some(c) = &self.manifest.container else {
            if self.manifest.run.trim().is_empty() {
                bail!("{}: key `run` is missing; give the start command, or a [container] with `image` or `containerfile`", file.display());
            }
            return Ok(());
        };
        match (&c.image, &c.containerfile) {
            (Some(_), Some(_)) | (None, None) => bail!(
                "{}: [container] needs exactly one of `image` (a tag) or `containerfile` (a path in the service folder)",
                file.display()
            ),
            (None, Some(cf)) if !self.dir.join(cf).is_file() => {
                bail!("{}: [container] containerfile {cf:?} is not a file in {}", file.display(), self.dir.display())
            }
            _ => {}
        }
        crate::capabilities::capability_names(&c.capabilities)
            .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
        // A context the build makes (e.g. Maven's `target/`) is not there before the build: only a service
        // without a build must have it already.
        let unbuilt = self.manifest.build.as_deref().is_none_or(|b| b.trim().is_empty());
        if let Some(ctx) = c.context.as_ref().filter(|ctx| unbuilt && !self.dir.join(ctx).is_dir()) {
            bail!("{}: [container] context {ctx:?} is not a folder in {}", file.display(), self.dir.display());
        }
        Ok(())
    }

    /// Variant names are plain words, and variants built differently never share an artifact path: each
    /// build must land in its own folder (e.g. `CARGO_TARGET_DIR`), or the last build would be measured for all.
    fn check_variants(&self, file: &Path) -> Result<()> {
        let mut builds: Vec<(String, String, Vec<String>)> =
            vec![("the base".into(), self.build_key(), self.manifest.artifacts.clone())];
        for name in self.manifest.variant.keys() {
            check_name(name).map_err(|e| anyhow::anyhow!("{}: variant name {e}", file.display()))?;
            let v = self.with_variant(name)?;
            v.check_start(file)?;
            builds.push((format!("variant `{name}`"), v.build_key(), v.manifest.artifacts.clone()));
        }
        for (i, (a, ka, arts_a)) in builds.iter().enumerate() {
            for (b, kb, arts_b) in &builds[..i] {
                if ka != kb {
                    if let Some(shared) = arts_a.iter().find(|x| arts_b.contains(x)) {
                        bail!(
                            "{}: {a} is built differently from {b} but both name the artifact {shared:?}; give {a} its \
                             own build output and `artifacts` (e.g. build_env CARGO_TARGET_DIR = \"target/<variant>\")",
                            file.display()
                        );
                    }
                }
            }
        }
        Ok(())
    }

    pub fn name(&self) -> &str {
        &self.manifest.name
    }

    /// The build's time limit: the manifest's `build_timeout`, else [`DEFAULT_BUILD_TIMEOUT`].
    /// The name as part of a sandbox's (a cgroup's, a container's) name: no '@' or '#'.
    pub fn sandbox_part(&self) -> String {
        self.name().replace(['@', '#'], "-")
    }

    pub fn build_timeout(&self) -> std::time::Duration {
        self.manifest.build_timeout.unwrap_or(DEFAULT_BUILD_TIMEOUT)
    }

    /// Total size in bytes of the artifact files or folders (missing ones are an error: the build did not
    /// produce what the manifest promised).
    pub fn artifact_bytes(&self) -> Result<Option<u64>> {
        // No `artifacts` named: the size is unknown, not zero.
        if self.manifest.artifacts.is_empty() {
            return Ok(None);
        }
        let mut total = 0;
        for a in &self.manifest.artifacts {
            let p = self.dir.join(a);
            total += path_size(&p).with_context(|| {
                format!(
                    "{}: artifact {:?} not found after the build; fix `artifacts` or the build command",
                    self.dir.join("svcbench.toml").display(),
                    a
                )
            })?;
        }
        Ok(Some(total))
    }
}

fn path_size(p: &Path) -> Result<u64> {
    let meta = std::fs::metadata(p)?;
    if meta.is_dir() {
        let mut sum = 0;
        for entry in std::fs::read_dir(p)? {
            sum += path_size(&entry?.path())?;
        }
        Ok(sum)
    } else {
        Ok(meta.len())
    }
}

/// The placeholders a process service's manifest may name beside its dependencies' (service/instance.rs
/// fills them), and those a container service's may (service/container_start.rs).
pub const PROCESS_PLACEHOLDERS: [&str; 4] = ["port", "host", "dir", "java"];
pub const CONTAINER_PLACEHOLDERS: [&str; 2] = ["port", "host"];

/// The `{key}`s a text names, in order.
fn placeholder_keys(text: &str) -> Vec<&str> {
    let mut keys = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('}') else { break };
        keys.push(&after[..end]);
        rest = &after[end + 1..];
    }
    keys
}

impl Service {
    /// Every placeholder of the start command, the env and the container's args is one this service gets:
    /// a typo (`{prot}`) is told before anything is built, not once per run after the build. `dep_kinds`: the
    /// scenario's dependency kinds; a `{dep.<kind>.<field>}` of one of them is checked when it starts (its
    /// fields are the dependency's own).
    pub fn check_placeholders(&self, dep_kinds: &[&str]) -> Result<()> {
        let container = self.manifest.container.as_ref();
        let known: &[&str] = if container.is_some() { &CONTAINER_PLACEHOLDERS } else { &PROCESS_PLACEHOLDERS };
        let mut texts: Vec<(String, &str)> = Vec::new();
        if container.is_none() {
            texts.push(("run".into(), &self.manifest.run));
        }
        texts.extend(self.manifest.env.iter().map(|(k, v)| (format!("env.{k}"), v.as_str())));
        texts.extend(self.manifest.broken_env.iter().map(|(k, v)| (format!("broken_env.{k}"), v.as_str())));
        texts
            .extend(container.into_iter().flat_map(|c| c.args.iter().map(|a| ("[container] args".into(), a.as_str()))));
        for (what, text) in texts {
            for key in placeholder_keys(text) {
                let dep_kind = key.strip_prefix("dep.").and_then(|k| k.split('.').next());
                if known.contains(&key) || dep_kind.is_some_and(|k| dep_kinds.contains(&k)) {
                    continue;
                }
                let deps: Vec<String> = dep_kinds.iter().map(|k| format!("dep.{k}.…")).collect();
                bail!(
                    "{}: {what}: unknown placeholder {{{key}}}; known here: {}",
                    self.dir.join("svcbench.toml").display(),
                    known.iter().map(|k| k.to_string()).chain(deps).collect::<Vec<_>>().join(", ")
                );
            }
        }
        Ok(())
    }
}

/// Fills `{port}`, `{host}`, `{dir}`, `{dep.<kind>.<field>}`, `{java}` placeholders. An unknown placeholder is an error
/// naming it, so that a typo does not start a service with a literal `{dep.opensarch.url}`.
pub fn fill_placeholders(text: &str, values: &BTreeMap<String, String>) -> Result<String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let key = &after[..end];
        match values.get(key) {
            Some(v) => out.push_str(v),
            None => {
                let known: Vec<&str> = values.keys().map(|k| k.as_str()).collect();
                bail!("unknown placeholder {{{key}}}; known here: {}", known.join(", "))
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Longest service or variant name: it becomes part of file, folder and cgroup names, which the
/// kernel bounds (255 bytes a component) along with the prefixes svcbench adds.
pub const MAX_NAME_LEN: usize = 64;

/// A service or variant name goes into file and cgroup names: letters, digits, '.', '_' and '-', no
/// leading dot (no hidden file, no `..`), at most [`MAX_NAME_LEN`] characters.
pub fn check_name(name: &str) -> std::result::Result<(), String> {
    if name.is_empty()
        || name.len() > MAX_NAME_LEN
        || name.starts_with('.')
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
    {
        return Err(format!(
            "{name:?} must be 1 to {MAX_NAME_LEN} letters, digits, '.', '_' or '-', not starting with '.' (it names \
             files and cgroups)"
        ));
    }
    Ok(())
}

/// A manifest's text for tests: `name` in `scenario` with the identity keys filled in, then `rest` (run,
/// readiness, build, variants, …).
#[cfg(test)]
pub fn test_manifest(name: &str, scenario: &str, rest: &str) -> String {
    format!(
        "name = {name:?}\nscenario = {scenario:?}\nlanguage = \"sh\"\nframework = \"sh\"\nframework_version = \"1\"\n\
         model = \"blocking\"\n{rest}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn write(dir: &Path, text: &str) {
        std::fs::write(dir.join("svcbench.toml"), text).unwrap();
    }

    const GOOD: &str = r#"
name = "x"
scenario = "hello"
language = "rust"
framework = "actix-web"
framework_version = "4"
model = "async"
run = "./x"
readiness = "/"
[env]
PORT = "{port}"
"#;

    #[test]
    fn loads_a_good_manifest() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), GOOD);
        let s = Service::load(d.path()).unwrap();
        assert_eq!(s.name(), "x");
        assert_eq!(s.manifest.programming_model, ProgrammingModel::Async);
        assert_eq!(s.manifest.env["PORT"], "{port}");
    }

    #[test]
    fn a_placeholder_the_service_does_not_get_is_named_before_anything_starts() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), &GOOD.replace("{port}", "{prot}"));
        let e = Service::load(d.path()).unwrap().check_placeholders(&[]).unwrap_err().to_string();
        assert!(e.contains("env.PORT: unknown placeholder {prot}; known here: port, host, dir, java"), "{e}");
        // A dependency of the scenario gives its own; another's is unknown.
        write(d.path(), &GOOD.replace("./x", "./x --db {dep.sqlite.path}"));
        let s = Service::load(d.path()).unwrap();
        assert!(s.check_placeholders(&["sqlite"]).is_ok());
        let e = s.check_placeholders(&["upstream"]).unwrap_err().to_string();
        assert!(
            e.contains("run: unknown placeholder {dep.sqlite.path}; known here: port, host, dir, java, dep.upstream.…"),
            "{e}"
        );
    }

    /// Every bundled service and variant names only placeholders it gets.
    #[test]
    fn the_bundled_services_name_only_placeholders_they_get() {
        let services = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../services");
        let mut checked = 0;
        for scenario in std::fs::read_dir(&services).unwrap().flatten() {
            let spec = crate::scenario::Scenario::load(
                &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(scenario.file_name()),
            )
            .unwrap();
            let kinds: Vec<&str> = spec.file.dependency.iter().map(|d| d.kind.as_str()).collect();
            for dir in std::fs::read_dir(scenario.path())
                .unwrap()
                .flatten()
                .filter(|d| d.path().join("svcbench.toml").is_file())
            {
                for s in Service::load_spec(&format!("{}@*", dir.path().display())).unwrap() {
                    s.check_placeholders(&kinds).unwrap();
                    checked += 1;
                }
            }
        }
        assert!(checked > 20, "{checked} services and variants");
    }

    #[test]
    fn a_missing_folder_and_a_folder_without_a_manifest_are_told_apart() {
        let d = tempfile::tempdir().unwrap();
        let e = format!("{:#}", Service::load(&d.path().join("no-such-service")).unwrap_err());
        assert!(e.contains("no-such-service: no such file or folder"), "{e}");
        let e = format!("{:#}", Service::load(d.path()).unwrap_err());
        assert!(e.contains("no svcbench.toml here"), "{e}");
    }

    #[test]
    fn the_artifact_size_is_unknown_without_artifacts_and_summed_with_them() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), GOOD);
        assert_eq!(Service::load(d.path()).unwrap().artifact_bytes().unwrap(), None);
        std::fs::write(d.path().join("x"), [0u8; 1000]).unwrap();
        write(d.path(), &GOOD.replace("run = ", "artifacts = [\"x\"]\nrun = "));
        assert_eq!(Service::load(d.path()).unwrap().artifact_bytes().unwrap(), Some(1000));
    }

    #[test]
    fn a_container_context_the_build_makes_need_not_exist_before_it() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("Containerfile"), "FROM scratch\n").unwrap();
        let container = "[container]\ncontainerfile = \"Containerfile\"\ncontext = \"target\"\n";
        // A variant's image built from what the base's build leaves in target/, on a fresh clone.
        let built = GOOD.replace("run = ", "build = \"mvn package\"\nrun = ")
            + "[variant.container]\ncontainer = { containerfile = \"Containerfile\", context = \"target\" }\n";
        write(d.path(), &built);
        assert!(Service::load_spec(&format!("{}@container", d.path().display())).is_ok());
        // Without a build nothing will make it: said at load.
        write(d.path(), &format!("{GOOD}{container}"));
        let e = format!("{:#}", Service::load(d.path()).unwrap_err());
        assert!(e.contains("context \"target\" is not a folder"), "{e}");
    }

    #[test]
    fn a_missing_build_input_is_named_at_load() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), &GOOD.replace("run = ", "build_inputs = [\"../nowhere\"]\nrun = "));
        let e = Service::load(d.path()).unwrap_err().to_string();
        assert!(e.contains("build input \"../nowhere\" does not exist") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn names_that_would_escape_file_or_cgroup_names_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let long = "a".repeat(MAX_NAME_LEN + 1);
        for bad in ["../../etc", ".hidden", "a/b", "a b", "x\ny", "é", long.as_str()] {
            write(d.path(), &GOOD.replace(r#"name = "x""#, &format!("name = {bad:?}")));
            let e = format!("{:#}", Service::load(d.path()).unwrap_err());
            assert!(e.contains("key `name`") && e.contains("letters, digits"), "{bad:?}: {e}");
            assert!(!e.contains('\n'), "one line: {e}");
        }
        for good in ["hello-go-nethttp", "a.b_c", &"a".repeat(MAX_NAME_LEN)] {
            write(d.path(), &GOOD.replace(r#"name = "x""#, &format!("name = {good:?}")));
            assert_eq!(Service::load(d.path()).unwrap().name(), good);
        }
    }

    #[test]
    fn unknown_key_names_file_and_key() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), &format!("{GOOD}\n[extra]\nfoo = 1\n").replace("readiness", "readyness"));
        let e = Service::load(d.path()).unwrap_err().to_string();
        assert!(e.contains("svcbench.toml"), "{e}");
        assert!(e.contains("unknown field `readyness`: did you mean `readiness`?"), "{e}");
        assert!(!e.contains('\n'), "one line: {e}");
    }

    #[test]
    fn missing_key_is_named() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), &GOOD.replace("framework_version = \"4\"\n", ""));
        let e = Service::load(d.path()).unwrap_err().to_string();
        assert!(e.contains("framework_version"), "{e}");
    }

    const VARIANTS: &str = r#"
[variant.jetty]
framework = "x (Jetty)"
env = { ENGINE = "jetty" }

[variant.lto]
build = "cargo build --release"
build_env = { CARGO_TARGET_DIR = "target/lto" }
run = "target/lto/release/x"
artifacts = ["target/lto/release/x"]
"#;

    #[test]
    fn variants_apply_over_the_base_and_carry_their_own_name() {
        let d = tempfile::tempdir().unwrap();
        write(
            d.path(),
            &format!(
                "{}\nartifacts = [\"target/release/x\"]\n[env]\nPORT = \"{{port}}\"\nENGINE = \"netty\"\n{VARIANTS}",
                GOOD.replace("[env]\nPORT = \"{port}\"\n", "")
            ),
        );
        let spec = format!("{}@*", d.path().display());
        let all = Service::load_spec(&spec).unwrap();
        let names: Vec<&str> = all.iter().map(|s| s.name()).collect();
        assert_eq!(names, ["x", "x@jetty", "x@lto"]);
        let jetty = &all[1];
        assert_eq!(jetty.base_name, "x");
        assert_eq!(jetty.variant.as_deref(), Some("jetty"));
        assert_eq!(jetty.manifest.env["ENGINE"], "jetty");
        assert_eq!(jetty.manifest.env["PORT"], "{port}", "the base's env stays under the variant's");
        assert_eq!(jetty.manifest.framework, "x (Jetty)");
        assert_eq!(jetty.build_key(), all[0].build_key(), "an env-only variant shares the base's build");
        let lto = &all[2];
        assert_ne!(lto.build_key(), all[0].build_key());
        assert_eq!(lto.manifest.run, "target/lto/release/x");
        let one = Service::load_spec(&format!("{}@lto", d.path().display())).unwrap();
        assert_eq!(one.len(), 1);
        let e = Service::load_spec(&format!("{}@nope", d.path().display())).unwrap_err().to_string();
        assert!(e.contains("no variant `nope`") && e.contains("jetty, lto"), "{e}");
        let e = Service::load_spec(&format!("{}@", d.path().display())).unwrap_err().to_string();
        assert!(e.ends_with("@: no variant name after `@`; name the folder alone for the base, `@NAME` for one variant (jetty, lto) or `@*` for all"), "{e}");
    }

    #[test]
    fn variants_built_differently_may_not_share_an_artifact() {
        let d = tempfile::tempdir().unwrap();
        let text = format!("{GOOD}\n{VARIANTS}")
            .replace("run = \"target/lto/release/x\"\nartifacts = [\"target/lto/release/x\"]\n", "");
        let text = text.replace("run = \"./x\"", "run = \"./x\"\nartifacts = [\"x\"]");
        write(d.path(), &text);
        let e = Service::load(d.path()).unwrap_err().to_string();
        assert!(
            e.contains("variant `lto` is built differently from the base") && e.contains("CARGO_TARGET_DIR"),
            "{e}"
        );
        assert!(!e.contains('\n'), "one line: {e}");
    }

    #[test]
    fn run_as_and_build_timeout_read_with_defaults_and_variant_overrides() {
        let d = tempfile::tempdir().unwrap();
        let text = GOOD.replace("run = ", "build_timeout = \"90s\"\nrun = ");
        write(d.path(), &format!("{text}\n[variant.priv]\nrun_as = \"root\"\nbuild_timeout = \"2h\"\n"));
        let all = Service::load_spec(&format!("{}@*", d.path().display())).unwrap();
        assert_eq!((all[0].manifest.run_as, all[0].build_timeout()), (RunAs::Svcbench, Duration::from_secs(90)));
        assert_eq!((all[1].manifest.run_as, all[1].build_timeout()), (RunAs::Root, Duration::from_secs(7200)));
        write(d.path(), GOOD);
        assert_eq!(Service::load(d.path()).unwrap().build_timeout(), DEFAULT_BUILD_TIMEOUT);
        for (bad, says) in [
            ("build_timeout = \"soon\"", "build_timeout \"soon\""),
            ("build_timeout = \"0s\"", "more than 0"),
            ("run_as = \"admin\"", "admin"),
        ] {
            write(d.path(), &GOOD.replace("run = ", &format!("{bad}\nrun = ")));
            let e = format!("{:#}", Service::load(d.path()).unwrap_err());
            assert!(e.contains(says) && !e.contains('\n'), "{bad}: {e}");
        }
    }

    #[test]
    fn placeholders_fill_and_unknown_fails() {
        let mut v = BTreeMap::new();
        v.insert("port".to_string(), "8080".to_string());
        assert_eq!(fill_placeholders("a{port}b", &v).unwrap(), "a8080b");
        let e = fill_placeholders("{dep.x.url}", &v).unwrap_err().to_string();
        assert!(e.contains("dep.x.url"), "{e}");
    }
}

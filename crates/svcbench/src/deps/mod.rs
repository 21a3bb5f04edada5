//! Dependencies of a scenario: real servers (or a file) that svcbench starts before the runs, hands to
//! the service through placeholders, measures during steps, and stops afterwards. One file per kind.
pub mod opensearch;
pub mod sqlite;
pub mod upstream;

use crate::sandbox::Probe;
use crate::scenario::DependencySpec;
use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

pub trait Dependency {
    /// Placeholders the service manifest may use, e.g. `dep.upstream.url`.
    fn placeholders(&self) -> BTreeMap<String, String>;
    /// Called before each run (sqlite: a fresh database file).
    fn before_run(&mut self, _run_label: &str) -> Result<()> {
        Ok(())
    }
    /// Figures recorded with the run after it ends (sqlite: the database size).
    fn after_run(&mut self) -> Vec<(String, f64)> {
        vec![]
    }
    /// What the run changed in a store it must leave as it was, one sentence each, asked once after each
    /// run (OpenSearch: its indices' documents, mappings, settings, aliases).
    fn changed_by_run(&mut self) -> Vec<String> {
        vec![]
    }
    /// Reader of the dependency's own CPU and memory, when it is a process.
    fn probe(&self) -> Option<Arc<dyn Probe>> {
        None
    }
    /// CPUs the dependency may use (for "the store was saturated" marks).
    fn cpus(&self) -> usize {
        1
    }
    /// Applies a profile step's upstream delay (only the mock upstream has one).
    fn set_delay_ms(&mut self, _ms: u64) -> Result<bool> {
        Ok(false)
    }
    /// Calls received so far (only the mock upstream counts them).
    fn calls(&self) -> Option<u64> {
        None
    }
    /// Whether it runs on the load generator's CPUs (svcbench places what it starts there), so that the
    /// two together can saturate them. A store on another machine does not.
    fn shares_generator_cpus(&self) -> bool {
        true
    }
}

/// Where dependencies put their files and which CPUs they may use.
pub struct DepContext<'a> {
    pub work_dir: &'a Path,
    pub scenario_dir: &'a Path,
    pub cpuset: Option<String>,
    pub cgroup: crate::sandbox::CgroupChoice,
    pub session_tag: String,
    /// False for `svcbench check`: dependencies need only what the checks use (no load dataset).
    pub for_load: bool,
    /// Where dependencies run and listen: loopback, or the store's namespace under `--net`.
    pub host: crate::network::Host,
    /// Dependencies that already run elsewhere (`--dep opensearch=URL`): used, not started.
    pub given: &'a GivenDeps,
    /// The account of the service the files made for it belong to (a duet's side B: the peer's).
    pub account: crate::sandbox::service_user::Account,
}

/// Dependencies the user runs and svcbench uses instead of starting its own (`--dep KIND=URL`).
#[derive(Debug, Clone, Default)]
pub struct GivenDeps {
    /// Kind → URL.
    pub urls: BTreeMap<String, String>,
    /// `--dep-readonly`: a given dependency lacking the scenario's data is refused, not loaded.
    pub readonly: bool,
}

/// The kinds that can be given by URL: a store with data of its own. The mock upstream and the SQLite
/// file are svcbench's own, made per session.
pub const GIVEN_KINDS: [&str; 1] = ["opensearch"];

impl GivenDeps {
    /// Parses `KIND=URL` values; refuses what could never work, in one line each.
    pub fn parse(values: &[String], readonly: bool) -> Result<GivenDeps> {
        let mut urls = BTreeMap::new();
        for v in values {
            let how = "write it as opensearch=http://HOST:PORT";
            let Some((kind, url)) = v.split_once('=') else { bail!("--dep `{v}`: no `=`; {how}") };
            if !GIVEN_KINDS.contains(&kind) {
                bail!("--dep `{v}`: a `{kind}` dependency cannot be given by URL (svcbench makes its own); given by URL: {}", GIVEN_KINDS.join(", "));
            }
            let rest = url.strip_prefix("http://").or_else(|| url.strip_prefix("https://"));
            if rest.is_none_or(|r| r.trim_end_matches('/').is_empty()) {
                bail!("--dep `{v}`: `{url}` is not an http:// or https:// URL; {how}");
            }
            if urls.insert(kind.to_string(), url.trim_end_matches('/').to_string()).is_some() {
                bail!("--dep {kind} is given twice; give each dependency once");
            }
        }
        if readonly && urls.is_empty() {
            bail!("--dep-readonly is about a dependency given with --dep KIND=URL; give one, or leave it out");
        }
        Ok(GivenDeps { urls, readonly })
    }

    /// Refuses a given dependency the scenario does not have.
    pub fn check(&self, specs: &[DependencySpec], scenario: &str) -> Result<()> {
        for kind in self.urls.keys() {
            if !specs.iter().any(|s| &s.kind == kind) {
                bail!("--dep {kind}=…: scenario `{scenario}` has no `{kind}` dependency");
            }
        }
        Ok(())
    }

    pub fn get(&self, kind: &str) -> Option<&String> {
        self.urls.get(kind)
    }
}

/// The kinds that are a file beside the service, not a server: nothing of theirs crosses a network.
const FILE_KINDS: [&str; 1] = ["sqlite"];

/// Whether a dependency of this kind is a file beside one service, so that two services measured at once
/// each need their own (a server is shared).
pub fn is_per_service(kind: &str) -> bool {
    FILE_KINDS.contains(&kind)
}

/// Refuses a link to the store's host (`service-store`, `client-store`) where svcbench starts nothing there
/// for it to carry: a scenario without dependencies, one whose only dependency is a file beside the service,
/// a store given by URL (`--dep`). One line, before anything is built, as a hosts file's `[store]` is.
pub fn check_store_links(
    links: &[crate::network::Link],
    specs: &[DependencySpec],
    scenario: &str,
    given: &GivenDeps,
) -> Result<()> {
    use crate::network::Role;
    let Some(link) = links.iter().find(|l| l.from == Role::Store || l.to == Role::Store) else { return Ok(()) };
    let on_store_host = |s: &&DependencySpec| !FILE_KINDS.contains(&s.kind.as_str()) && given.get(&s.kind).is_none();
    if specs.iter().any(|s| on_store_host(&s)) {
        return Ok(());
    }
    let why = if specs.is_empty() {
        format!("scenario `{scenario}` has no dependency to place on the store's host")
    } else {
        let each: Vec<String> = specs
            .iter()
            .map(|s| match given.get(&s.kind) {
                Some(url) => format!("its {} is given at {url} (--dep), not on the store's host", s.kind),
                None => format!("its {} dependency is a file beside the service", s.kind),
            })
            .collect();
        format!("scenario `{scenario}` has nothing on the store's host for the link to carry: {}", each.join("; "))
    };
    bail!("--link {link}: {why}; leave the link out")
}

pub struct Dependencies {
    pub items: Vec<Box<dyn Dependency>>,
}

impl Dependencies {
    pub fn start(specs: &[DependencySpec], ctx: &DepContext) -> Result<Dependencies> {
        let mut items: Vec<Box<dyn Dependency>> = Vec::new();
        for spec in specs {
            if ctx.given.get(&spec.kind).is_none() {
                crate::errln!("svcbench: starting dependency `{}`", spec.kind);
            }
            let d: Box<dyn Dependency> = match spec.kind.as_str() {
                "sqlite" => Box::new(sqlite::SqliteFile::new(&spec.options, ctx)?),
                "upstream" => Box::new(upstream::Upstream::start(&spec.options, ctx)?),
                "opensearch" => opensearch::start(&spec.options, ctx)?,
                other => bail!("unknown dependency kind `{other}`; known: sqlite, upstream, opensearch"),
            };
            items.push(d);
        }
        Ok(Dependencies { items })
    }

    /// Every dependency's placeholders, and for each `dep.<kind>.url` its parts `dep.<kind>.host` and
    /// `dep.<kind>.port`, for services that read their store's host and port separately.
    pub fn placeholders(&self) -> BTreeMap<String, String> {
        with_url_parts(self.items.iter().flat_map(|d| d.placeholders()).collect())
    }

    pub fn before_run(&mut self, label: &str) -> Result<()> {
        self.items.iter_mut().try_for_each(|d| d.before_run(label))
    }

    pub fn after_run(&mut self) -> Vec<(String, f64)> {
        self.items.iter_mut().flat_map(|d| d.after_run()).collect()
    }

    pub fn changed_by_run(&mut self) -> Vec<String> {
        self.items.iter_mut().flat_map(|d| d.changed_by_run()).collect()
    }

    /// Combined CPU seconds of all dependency processes now (None when none is a process, or one could
    /// not be read: "dependency not measured", never a guess).
    pub fn cpu_s(&self) -> Option<f64> {
        let probes: Vec<_> = self.items.iter().filter_map(|d| d.probe()).collect();
        let total: f64 = probes.iter().map(|p| p.sample().cpu_s).sum();
        (!probes.is_empty() && total.is_finite()).then_some(total)
    }

    /// Combined seconds the dependency processes' threads have waited for a CPU (None when unreadable).
    pub fn wait_s(&self) -> Option<f64> {
        let probes: Vec<_> = self.items.iter().filter_map(|d| d.probe()).collect();
        (!probes.is_empty()).then(|| probes.iter().filter_map(|p| p.runqueue_wait_s()).sum())
    }

    /// Whether any measured dependency runs on the load generator's CPUs.
    pub fn share_generator_cpus(&self) -> bool {
        self.items.iter().any(|d| d.probe().is_some() && d.shares_generator_cpus())
    }

    pub fn cpus(&self) -> usize {
        self.items.iter().filter(|d| d.probe().is_some()).map(|d| d.cpus()).sum::<usize>().max(1)
    }

    pub fn set_delay_ms(&mut self, ms: u64) -> Result<bool> {
        let mut any = false;
        for d in &mut self.items {
            any |= d.set_delay_ms(ms)?;
        }
        Ok(any)
    }

    pub fn calls(&self) -> Option<u64> {
        self.items.iter().find_map(|d| d.calls())
    }

    /// Connection attempts dropped so far at the full accept queues of the dependencies svcbench started
    /// (None when none could be read).
    pub fn listen_drops(&self) -> Option<u64> {
        self.items.iter().filter_map(|d| d.probe()?.listen_drops()).reduce(|a, b| a + b)
    }
}

fn with_url_parts(mut values: BTreeMap<String, String>) -> BTreeMap<String, String> {
    let parts: Vec<(String, String)> = values
        .iter()
        .filter_map(|(k, v)| {
            let base = k.strip_suffix(".url")?;
            let authority = v.split("://").nth(1)?.split('/').next()?;
            let (host, port) = authority.rsplit_once(':')?;
            Some([(format!("{base}.host"), host.to_string()), (format!("{base}.port"), port.to_string())])
        })
        .flatten()
        .collect();
    for (k, v) in parts {
        values.entry(k).or_insert(v);
    }
    values
}

/// Option helpers for the kind-specific keys of a `[[dependency]]`.
pub(crate) fn opt_u64(options: &toml::Table, key: &str, default: u64) -> Result<u64> {
    match options.get(key) {
        None => Ok(default),
        Some(toml::Value::Integer(i)) if *i >= 0 => Ok(*i as u64),
        Some(v) => bail!("dependency option `{key}` must be a non-negative integer, got {v}"),
    }
}

pub(crate) fn reject_unknown(kind: &str, options: &toml::Table, known: &[&str]) -> Result<()> {
    for k in options.keys() {
        if !known.contains(&k.as_str()) {
            bail!("dependency `{kind}`: unknown option `{k}`; known: {}", known.join(", "));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::network::Link;

    #[test]
    fn a_link_to_the_store_needs_a_server_svcbench_starts_there() {
        let specs = |name: &str| {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios").join(name);
            crate::scenario::Scenario::load(&dir).unwrap().file.dependency
        };
        let link = |t: &str| vec![Link::parse(t).unwrap()];
        let none = GivenDeps::default();
        let refused = |scenario: &str, links: &[Link], given: &GivenDeps| {
            check_store_links(links, &specs(scenario), scenario, given).map_err(|e| e.to_string())
        };
        let hello = refused("hello", &link("service-store=delay:5ms"), &none).unwrap_err();
        assert!(hello.contains("`hello` has no dependency") && !hello.contains('\n'), "{hello}");
        let users = refused("users", &link("store-service=delay:2ms"), &none).unwrap_err();
        assert!(users.contains("sqlite dependency is a file"), "{users}");
        let given = GivenDeps::parse(&["opensearch=http://10.0.0.9:9200".into()], false).unwrap();
        let far = refused("locations", &link("service-store=delay:2ms"), &given).unwrap_err();
        assert!(far.contains("given at http://10.0.0.9:9200"), "{far}");
        refused("locations", &link("service-store=delay:2ms"), &none).unwrap();
        refused("upstream", &link("service-store=delay:2ms"), &none).unwrap();
        refused("hello", &link("client-service=delay:2ms"), &none).unwrap();
    }

    #[test]
    fn a_url_placeholder_comes_with_its_host_and_port() {
        let v =
            super::with_url_parts([("dep.opensearch.url".to_string(), "http://10.213.0.4:9200".to_string())].into());
        assert_eq!(v["dep.opensearch.host"], "10.213.0.4");
        assert_eq!(v["dep.opensearch.port"], "9200");
        assert_eq!(v.len(), 3);
    }
}

//! The `opensearch` dependency kind: the locations scenario's real Elasticsearch-compatible store. Either
//! svcbench starts a node (distribution.rs, node.rs), placed in a sandbox of its own on the load
//! generator's CPUs so that its CPU time per step is measured beside the service's, or the user gives one
//! that already runs (`--dep opensearch=URL`, existing.rs). Either way loader.rs puts the scenario's data
//! in it; a node svcbench starts itself gets it from a snapshot of an earlier start when there is one
//! (snapshot.rs: a few seconds instead of half a minute of bulk loading), and a given node never does.
pub mod distribution;
pub mod existing;
pub mod loader;
pub mod node;
pub mod options;
mod ownership;
pub mod snapshot;
pub mod store_check;

use super::{opt_u64, reject_unknown, DepContext, Dependency};
use crate::sandbox::{Limits, Probe, Sandbox};
use anyhow::{Context, Result};
use node::OpenSearch;
use options::OpenSearchOptions;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The version a scenario gets when it names none.
pub const DEFAULT_VERSION: &str = "3.6.0";

/// Where distributions and snapshots are kept: `$SVCBENCH_CACHE/opensearch`, by default under
/// /var/cache/svcbench (readable by the unprivileged user the node runs as).
pub fn cache_dir() -> PathBuf {
    std::env::var("SVCBENCH_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from("/var/cache/svcbench"))
        .join("opensearch")
}

pub struct OpenSearchDependency {
    node: OpenSearch,
    cpus: usize,
    watch: store_check::Watch,
}

/// Starts the scenario's store, or uses the one given with `--dep opensearch=URL`.
pub fn start(options: &toml::Table, ctx: &DepContext) -> Result<Box<dyn Dependency>> {
    reject_unknown("opensearch", options, &["kind", "version", "heap_mb", "sample", "load_dataset"])?;
    let text = |k: &str| options.get(k).and_then(|v| v.as_str()).map(String::from);
    let sample_dir = text("sample").map(|s| find_sample(&s, ctx.scenario_dir)).transpose()?;
    let load_dataset = ctx.for_load && options.get("load_dataset").and_then(|v| v.as_bool()).unwrap_or(true);
    let files = loader::data_files(sample_dir.as_deref(), ctx.scenario_dir, load_dataset)?;
    let store_dir = ctx.scenario_dir.join("store");
    if let Some(url) = ctx.given.get("opensearch") {
        return Ok(Box::new(existing::ExistingOpenSearch::open(url, &store_dir, &files, ctx.given.readonly)?));
    }
    Ok(Box::new(OpenSearchDependency::start(options, ctx, &store_dir, &files)?))
}

impl OpenSearchDependency {
    fn start(
        options: &toml::Table,
        ctx: &DepContext,
        store_dir: &Path,
        files: &[PathBuf],
    ) -> Result<OpenSearchDependency> {
        let text = |k: &str| options.get(k).and_then(|v| v.as_str()).map(String::from);
        let opts = OpenSearchOptions {
            version: text("version").unwrap_or_else(|| DEFAULT_VERSION.into()),
            heap_mb: opt_u64(options, "heap_mb", 512)? as u32,
            port: crate::readiness::free_port()?,
            bind: ctx.host.addr,
            cache_dir: cache_dir(),
        };
        // It starts and loads its data on every CPU svcbench may use (half the time of one CPU), then is
        // pinned to the generator's CPUs before anything is measured.
        let every = crate::cpus::format(&crate::sandbox::procfs::allowed_cpus());
        let limits = Limits { cpuset: ctx.cpuset.as_ref().map(|_| every), ..Limits::default() };
        let mut sandbox = Sandbox::new(&format!("{}-opensearch", ctx.session_tag), &limits, ctx.cgroup);
        sandbox.place_on(&ctx.host);
        let node = OpenSearch::start(&opts, sandbox).context("cannot start the OpenSearch store")?;
        node.snapshots().fill(&loader::Loader::new(&node.url()), &opts.version, store_dir, files)?;
        if let Some(set) = &ctx.cpuset {
            node.pin(set).context("cannot pin the OpenSearch store to the load generator's CPUs")?;
        }
        let cpus = ctx.cpuset.as_deref().map(crate::cpus::count).unwrap_or(1);
        let watch = store_check::Watch::new(&node.url());
        Ok(OpenSearchDependency { node, cpus, watch })
    }
}

impl Dependency for OpenSearchDependency {
    fn placeholders(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("dep.opensearch.url".to_string(), self.node.url())])
    }

    fn probe(&self) -> Option<Arc<dyn Probe>> {
        Some(self.node.probe())
    }

    fn cpus(&self) -> usize {
        self.cpus
    }

    fn before_run(&mut self, _run_label: &str) -> Result<()> {
        self.watch.start().context("cannot read the OpenSearch store's indices before the run")
    }

    fn changed_by_run(&mut self) -> Vec<String> {
        self.watch.changes()
    }
}

/// The conformance sample: `SVCBENCH_SAMPLE_DIR` when set, else `sample` (a path such as
/// `shared/data/locations-sample`) in the scenario folder or any folder above it, so a checkout works
/// wherever it sits beside `shared/`. Missing is an error: a store without the sample fails every
/// check for a reason that has nothing to do with the service.
fn find_sample(sample: &str, scenario_dir: &Path) -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os("SVCBENCH_SAMPLE_DIR").map(PathBuf::from) {
        return if dir.join("city.ndjson").is_file() {
            Ok(dir)
        } else {
            anyhow::bail!(
                "SVCBENCH_SAMPLE_DIR={}: no city.ndjson there; point it at the locations sample folder",
                dir.display()
            )
        };
    }
    // An absolute `sample` replaces the folder in `join`, so it is covered too.
    let rel = Path::new(sample);
    for dir in scenario_dir.ancestors() {
        let c = dir.join(rel);
        if c.join("city.ndjson").is_file() {
            return Ok(c);
        }
    }
    anyhow::bail!(
        "dependency `opensearch`: the conformance sample {sample:?} (city.ndjson, region.ndjson) is not in {} or any folder above it; put the checkout beside shared/ or set SVCBENCH_SAMPLE_DIR",
        scenario_dir.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sample_is_found_above_the_scenario_or_named_as_missing() {
        let root = tempfile::tempdir().unwrap();
        let sample = root.path().join("shared/data/locations-sample");
        std::fs::create_dir_all(&sample).unwrap();
        std::fs::write(sample.join("city.ndjson"), "").unwrap();
        let scenario = root.path().join("a/b/checkout/scenarios/locations");
        std::fs::create_dir_all(&scenario).unwrap();
        assert_eq!(find_sample("shared/data/locations-sample", &scenario).unwrap(), sample);
        let err = find_sample("shared/data/nope", &scenario).unwrap_err().to_string();
        assert!(err.contains("shared/data/nope") && err.contains("SVCBENCH_SAMPLE_DIR"), "{err}");
    }
}

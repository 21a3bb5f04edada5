//! The `opensearch` dependency kind: the locations scenario's real Elasticsearch-compatible store
//! (opensearch.rs starts it and loads the data), placed in a sandbox of its own on the load generator's
//! CPUs so that its CPU time per step is measured beside the service's.
use super::opensearch::{OpenSearch, OpenSearchOptions};
use super::{opt_u64, reject_unknown, DepContext, Dependency};
use crate::sandbox::{Limits, Probe, Sandbox};
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

pub struct OpenSearchDependency {
    // Field order matters: the node stops before its sandbox is removed.
    node: OpenSearch,
    sandbox: Sandbox,
    cpus: usize,
}

impl OpenSearchDependency {
    pub fn start(options: &toml::Table, ctx: &DepContext) -> Result<OpenSearchDependency> {
        reject_unknown("opensearch", options, &["kind", "version", "heap_mb", "sample", "load_dataset"])?;
        let text = |k: &str| options.get(k).and_then(|v| v.as_str()).map(String::from);
        let sample_dir = text("sample").map(|s| ctx.scenario_dir.join(s)).filter(|p| p.exists());
        let opts = OpenSearchOptions {
            version: text("version").unwrap_or_else(|| "3.6.0".into()),
            heap_mb: opt_u64(options, "heap_mb", 512)? as u32,
            port: crate::net::free_port()?,
            cache_dir: std::env::var("SVCBENCH_CACHE").map(PathBuf::from).unwrap_or_else(|_| PathBuf::from("/var/cache/svcbench")).join("opensearch"),
            scenario_dir: ctx.scenario_dir.to_path_buf(),
            sample_dir,
            load_dataset: ctx.for_load && options.get("load_dataset").and_then(|v| v.as_bool()).unwrap_or(true),
        };
        let node = OpenSearch::start(&opts).context("cannot start the OpenSearch store")?;
        let limits = Limits { cpuset: ctx.cpuset.clone(), ..Limits::default() };
        let mut sandbox = Sandbox::new(&format!("{}-opensearch", ctx.session_tag), &limits, ctx.cgroup);
        sandbox.adopt(node.pid())?;
        let cpus = ctx.cpuset.as_deref().map(crate::cpus::count).unwrap_or(1);
        Ok(OpenSearchDependency { node, sandbox, cpus })
    }
}

impl Dependency for OpenSearchDependency {
    fn kind(&self) -> &'static str {
        "opensearch"
    }

    fn placeholders(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("dep.opensearch.url".to_string(), self.node.url())])
    }

    fn probe(&self) -> Option<Arc<dyn Probe>> {
        Some(self.sandbox.probe())
    }

    fn cpus(&self) -> usize {
        self.cpus
    }
}

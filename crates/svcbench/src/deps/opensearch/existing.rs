//! An OpenSearch node svcbench did not start (`--dep opensearch=URL`): a store on another machine, or a
//! cluster that already exists. svcbench checks that it answers and which version it is, puts the
//! scenario's data in it where missing (loader.rs), and reads the node's own CPU time from its node
//! statistics API, so that the dependency-headroom rule still judges every step. Nothing is stopped or
//! removed at the end: the node is the user's.
use super::loader::Loader;
use crate::deps::Dependency;
use crate::sandbox::sampler::Sample;
use crate::sandbox::Probe;
use anyhow::{anyhow, Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// How long a read of the node statistics may wait (they are read around every step).
const STATS_TIMEOUT: Duration = Duration::from_secs(5);

pub struct ExistingOpenSearch {
    url: String,
    probe: Option<Arc<NodeStats>>,
    cpus: usize,
    watch: super::store_check::Watch,
}

impl ExistingOpenSearch {
    pub fn open(url: &str, store_dir: &Path, files: &[PathBuf], readonly: bool) -> Result<ExistingOpenSearch> {
        let loader = Loader::new(url);
        let version = loader.version()?;
        let done = loader.ensure(store_dir, files, readonly)?;
        crate::errln!("svcbench: using the running OpenSearch at {} ({version}): {done}", loader.url);
        let stats = NodeStats { url: loader.url.clone() };
        let (probe, cpus) = match (stats.cpu_s(), stats.processors()) {
            (Ok(cpu_s), Ok(cpus)) => {
                crate::errln!(
                    "svcbench: the store's CPU comes from its node statistics ({cpus} processors; process CPU so far {cpu_s:.1} s)"
                );
                (Some(Arc::new(stats)), cpus)
            }
            (Err(e), _) | (_, Err(e)) => {
                crate::errln!(
                    "svcbench: WARNING: dependency not measured: the node statistics of {} cannot be read ({e:#}); steps get no dependency-headroom judgement",
                    loader.url
                );
                (None, 1)
            }
        };
        let watch = super::store_check::Watch::new(&loader.url);
        Ok(ExistingOpenSearch { url: loader.url, probe, cpus, watch })
    }
}

impl Dependency for ExistingOpenSearch {
    fn placeholders(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("dep.opensearch.url".to_string(), self.url.clone())])
    }

    fn probe(&self) -> Option<Arc<dyn Probe>> {
        self.probe.clone().map(|p| p as Arc<dyn Probe>)
    }

    fn cpus(&self) -> usize {
        self.cpus
    }

    fn before_run(&mut self, _run_label: &str) -> Result<()> {
        self.watch.start().with_context(|| format!("cannot read the store's indices at {} before the run", self.url))
    }

    fn changed_by_run(&mut self) -> Vec<String> {
        self.watch.changes()
    }

    /// On this machine (a loopback address) it may share the generator's CPUs; elsewhere it does not.
    fn shares_generator_cpus(&self) -> bool {
        let rest = self.url.split("://").nth(1).unwrap_or("");
        let host = match rest.strip_prefix('[') {
            Some(v6) => v6.split(']').next().unwrap_or(""),
            None => rest.split(['/', ':']).next().unwrap_or(""),
        };
        host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }
}

/// The node's own figures from `/_nodes/stats` (every node of the cluster, summed): the process's CPU
/// time and its heap. OpenSearch refreshes its process statistics about once a second, so a step's CPU
/// time is good to about a second of the node's CPU.
struct NodeStats {
    url: String,
}

impl NodeStats {
    fn get(&self, path: &str) -> Result<serde_json::Value> {
        let req = crate::http_client::agent(STATS_TIMEOUT).get(&format!("{}{path}", self.url));
        super::loader::request(req, None, STATS_TIMEOUT)
    }

    /// Summed over the nodes; an error when no node reports it.
    fn sum(v: &serde_json::Value, field: impl Fn(&serde_json::Value) -> Option<f64>) -> Result<f64> {
        let nodes = v["nodes"].as_object().ok_or_else(|| anyhow!("no nodes in the answer"))?;
        let values: Vec<f64> = nodes.values().filter_map(field).collect();
        if values.is_empty() {
            return Err(anyhow!("no node reports it"));
        }
        Ok(values.iter().sum())
    }

    fn cpu_s(&self) -> Result<f64> {
        let v = self.get("/_nodes/stats/process")?;
        Ok(Self::sum(&v, |n| n["process"]["cpu"]["total_in_millis"].as_f64())? / 1000.0)
    }

    fn heap_mib(&self) -> Result<f64> {
        let v = self.get("/_nodes/stats/jvm")?;
        Ok(Self::sum(&v, |n| n["jvm"]["mem"]["heap_used_in_bytes"].as_f64())? / (1024.0 * 1024.0))
    }

    fn processors(&self) -> Result<usize> {
        let v = self.get("/_nodes/os")?;
        Ok(Self::sum(&v, |n| n["os"]["allocated_processors"].as_f64())?.max(1.0) as usize)
    }
}

impl Probe for NodeStats {
    fn sample(&self) -> Sample {
        Sample {
            cpu_s: self.cpu_s().unwrap_or(f64::NAN),
            mem_mib: self.heap_mib().unwrap_or(0.0),
            alive: true,
            ..Sample::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_on_loopback_shares_the_machine_and_one_elsewhere_does_not() {
        let at = |url: &str| {
            ExistingOpenSearch {
                url: url.into(),
                probe: None,
                cpus: 1,
                watch: super::super::store_check::Watch::new(url),
            }
            .shares_generator_cpus()
        };
        assert!(at("http://127.0.0.1:9200") && at("http://localhost:9200/") && at("http://[::1]:9200"));
        assert!(!at("http://10.0.0.5:9200") && !at("https://search.example:443"));
    }

    #[test]
    fn a_store_that_accepts_and_never_answers_fails_within_its_timeout_in_one_line() {
        let url = format!("http://{}", crate::http_client::silent_peer());
        let t0 = std::time::Instant::now();
        let err = ExistingOpenSearch::open(&url, Path::new("/nonexistent"), &[], true).err().expect("no store there");
        let took = t0.elapsed();
        assert!(took < Duration::from_secs(15), "the store's silence held the run for {took:?}");
        let line = format!("{err:#}");
        assert!(!line.contains('\n'), "{line}");
        assert!(line.starts_with(&format!("no OpenSearch answers at {url}")), "{line}");
        assert!(line.contains("no answer within 10 s"), "{line}");
    }
}

//! The scenario's data in an OpenSearch node, started by svcbench or not: its indices created from
//! `<scenario>/store/*.json`, the conformance sample and the load dataset (`<scenario>/dataset/`, built
//! with `build.py` when missing) bulk-loaded with refreshes off, and the counts checked.
use crate::http_client::READ_TIMEOUT;
use anyhow::{anyhow, bail, Context, Result};
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Bulk requests are cut at about this size: big enough to be quick, small enough for a 512 MiB heap.
const BULK_BYTES: usize = 4 << 20;
/// Versioned indices and the files (in `<scenario>/store/`) that hold their settings, mappings and alias.
pub(super) const INDICES: [&str; 2] = ["region_v1", "city_v1"];
/// Bulk files in load order (regions first, as cities refer to them).
const BULK_FILES: [&str; 2] = ["region.ndjson", "city.ndjson"];
/// How long the node may take to say who it is: the first question, a node that cannot answer it is no store.
const VERSION_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one bulk request may wait for each read of its answer (a 4 MiB piece indexed on a small heap).
const BULK_TIMEOUT: Duration = Duration::from_secs(600);

/// The bulk files of the scenario's data, in load order: the conformance sample's, then (for load) the
/// dataset's, built first when missing, so a dataset that cannot be built fails before a node starts.
pub fn data_files(sample_dir: Option<&Path>, scenario_dir: &Path, load_dataset: bool) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    if let Some(sample) = sample_dir {
        files.extend(BULK_FILES.iter().map(|f| sample.join(f)));
    }
    if load_dataset {
        let out = ensure_dataset(&scenario_dir.join("dataset"))?;
        files.extend(BULK_FILES.iter().map(|f| out.join(f)));
    }
    Ok(files)
}

/// The index a bulk file fills: `region.ndjson` → `region_v1`.
fn index_of(file: &Path) -> Option<&'static str> {
    let stem = file.file_stem()?.to_str()?;
    INDICES.into_iter().find(|i| i.strip_suffix("_v1") == Some(stem))
}

/// The file (`<scenario>/store/<index>.json`) that holds an index's settings, mappings and alias.
pub(super) fn index_definition(store_dir: &Path, index: &str) -> PathBuf {
    store_dir.join(format!("{index}.json"))
}

/// Documents the bulk files hold, by the index each fills.
pub(super) fn expected_counts(files: &[PathBuf]) -> Result<std::collections::BTreeMap<&'static str, u64>> {
    let mut expected = std::collections::BTreeMap::new();
    for f in files {
        let index = index_of(f).ok_or_else(|| anyhow!("{}: no index of the scenario takes it", f.display()))?;
        *expected.entry(index).or_default() += documents_in(f)?;
    }
    Ok(expected)
}

/// Documents in a bulk file (an action line and a document line each).
fn documents_in(file: &Path) -> Result<u64> {
    let f = fs::File::open(file).with_context(|| format!("cannot open {}", file.display()))?;
    let lines = BufReader::new(f).lines().map_while(|l| l.ok()).filter(|l| !l.trim().is_empty()).count();
    Ok(lines as u64 / 2)
}

/// An OpenSearch node's HTTP API, at `url`.
pub struct Loader {
    pub url: String,
    /// For the short questions (counts, indices, settings): [`crate::http_client::READ_TIMEOUT`].
    agent: ureq::Agent,
}

impl Loader {
    pub fn new(url: &str) -> Loader {
        Loader { url: url.trim_end_matches('/').to_string(), agent: crate::http_client::agent(READ_TIMEOUT) }
    }

    /// A node svcbench just started: every index created, every file loaded.
    pub fn load_fresh(&self, store_dir: &Path, files: &[PathBuf]) -> Result<()> {
        self.create_indices(store_dir, &INDICES)?;
        self.load(files)
    }

    /// `distribution version` of the node (`opensearch 3.6.0`), or why it cannot be reached.
    pub fn version(&self) -> Result<String> {
        let v = request(crate::http_client::agent(VERSION_TIMEOUT).get(&self.url), None, VERSION_TIMEOUT)
            .with_context(|| format!("no OpenSearch answers at {}", self.url))?;
        let number = v["version"]["number"].as_str().ok_or_else(|| anyhow!("{} is not OpenSearch: {v}", self.url))?;
        Ok(format!("{} {number}", v["version"]["distribution"].as_str().unwrap_or("elasticsearch")))
    }

    /// A node svcbench did not start: indices that hold the scenario's data are used as they are, missing
    /// ones are created and loaded (refused with `readonly`), and an index holding other data is refused,
    /// since svcbench changes no data it did not load. Returns what it did, for the log.
    pub fn ensure(&self, store_dir: &Path, files: &[PathBuf], readonly: bool) -> Result<String> {
        let expected = expected_counts(files)?;
        let mut missing = Vec::new();
        for index in INDICES {
            let want = expected.get(index).copied().unwrap_or(0);
            match self.count(index)? {
                None => missing.push(index),
                Some(n) if n == want => {}
                Some(n) => bail!(
                    "the store at {} holds {n} documents in index {index}, the scenario's data {want}: svcbench changes no data it did not load; delete the index there or point --dep at another node",
                    self.url
                ),
            }
        }
        if missing.is_empty() {
            return Ok(format!("indices {} hold the scenario's data", INDICES.join(", ")));
        }
        if readonly {
            bail!(
                "--dep-readonly: the store at {} has no index {}; load it (leave out --dep-readonly) or point --dep at a node that has it",
                self.url,
                missing.join(", ")
            );
        }
        self.create_indices(store_dir, &missing)?;
        let to_load: Vec<PathBuf> =
            files.iter().filter(|f| index_of(f).is_some_and(|i| missing.contains(&i))).cloned().collect();
        self.load(&to_load)?;
        Ok(format!("created and loaded {}", missing.join(", ")))
    }

    /// Documents in `index`; None when it does not exist.
    fn count(&self, index: &str) -> Result<Option<u64>> {
        match self.agent.get(&format!("{}/{index}/_count", self.url)).call() {
            Ok(r) => {
                let v = crate::bounded::json_body(r, crate::http_client::MAX_SHORT_ANSWER_BYTES)?;
                Ok(Some(v["count"].as_u64().ok_or_else(|| anyhow!("no count in {v}"))?))
            }
            Err(ureq::Error::Status(404, _)) => Ok(None),
            Err(e) => bail!(
                "cannot count the documents of {index} at {}: {}",
                self.url,
                crate::http_client::describe(&e, READ_TIMEOUT)
            ),
        }
    }

    fn create_indices(&self, store_dir: &Path, indices: &[&str]) -> Result<()> {
        for index in indices {
            let path = index_definition(store_dir, index);
            let body = fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
            let req = self.agent.put(&format!("{}/{index}", self.url)).set("Content-Type", "application/json");
            request(req, Some(&body), READ_TIMEOUT)
                .with_context(|| format!("cannot create index {index} from {}", path.display()))?;
        }
        Ok(())
    }

    /// Bulk-loads the files in order with refreshes off, then refreshes once and checks each loaded
    /// index's count.
    fn load(&self, files: &[PathBuf]) -> Result<()> {
        if files.is_empty() {
            return Ok(());
        }
        let indices: Vec<&str> = INDICES.into_iter().filter(|i| files.iter().any(|f| index_of(f) == Some(i))).collect();
        self.set_refresh_interval(&indices, Some("-1"))?;
        let agent = crate::http_client::agent(BULK_TIMEOUT);
        let bulk_url = format!("{}/_bulk?filter_path=errors,items.*.error", self.url);
        let mut loaded = std::collections::BTreeMap::<&str, u64>::new();
        for path in files {
            let started = Instant::now();
            let docs = bulk_file(&agent, &bulk_url, path)?;
            *loaded.entry(index_of(path).unwrap_or("?")).or_default() += docs;
            crate::errln!(
                "svcbench: loaded {docs} documents from {} in {:.1} s",
                path.display(),
                started.elapsed().as_secs_f64()
            );
        }
        self.set_refresh_interval(&indices, None)?;
        request(self.agent.post(&format!("{}/_refresh", self.url)), None, READ_TIMEOUT)?;
        self.check_counts(&loaded, "loading")
    }

    /// Each index holds exactly the documents `expected` gives it, after `how` ("loading", "restoring") them.
    pub(super) fn check_counts(&self, expected: &std::collections::BTreeMap<&str, u64>, how: &str) -> Result<()> {
        for (index, docs) in expected {
            let stored = self.count(index)?.unwrap_or(0);
            if stored != *docs {
                bail!("OpenSearch holds {stored} documents in {index} after {how} {docs}");
            }
        }
        Ok(())
    }

    /// `None` restores the default.
    fn set_refresh_interval(&self, indices: &[&str], value: Option<&str>) -> Result<()> {
        let body = serde_json::json!({"index": {"refresh_interval": value}}).to_string();
        let url = format!("{}/{}/_settings", self.url, indices.join(","));
        request(self.agent.put(&url).set("Content-Type", "application/json"), Some(&body), READ_TIMEOUT)?;
        Ok(())
    }
}

/// Sends `body` (if any) and returns the JSON answer; a non-2xx answer is an error carrying
/// OpenSearch's reason; one that does not come within `timeout` (the agent's read timeout) says so.
pub(super) fn request(req: ureq::Request, body: Option<&str>, timeout: Duration) -> Result<serde_json::Value> {
    let sent = match body {
        Some(body) => req.send_string(body),
        None => req.call(),
    };
    match sent {
        Ok(resp) => crate::bounded::json_body(resp, crate::http_client::MAX_ANSWER_BYTES),
        Err(ureq::Error::Status(code, resp)) => {
            let text = crate::bounded::text_body(resp, crate::http_client::MAX_SHORT_ANSWER_BYTES)
                .unwrap_or_else(|e| e.to_string());
            bail!("OpenSearch answered {code}: {}", crate::bounded::cut(&text, 500))
        }
        Err(e) => bail!("{}", crate::http_client::describe(&e, timeout)),
    }
}

/// Sends an NDJSON bulk file (action line, document line, …) in pieces of about BULK_BYTES; returns
/// the number of documents. Any item error fails the load.
fn bulk_file(agent: &ureq::Agent, bulk_url: &str, path: &Path) -> Result<u64> {
    let file = fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut lines = BufReader::new(file).lines();
    let (mut chunk, mut docs) = (String::new(), 0u64);
    loop {
        let action = lines.next().transpose()?;
        if let Some(action) = &action {
            if action.trim().is_empty() {
                continue;
            }
            let doc = lines
                .next()
                .transpose()?
                .ok_or_else(|| anyhow!("{}: action line without a document", path.display()))?;
            chunk.push_str(action);
            chunk.push('\n');
            chunk.push_str(&doc);
            chunk.push('\n');
            docs += 1;
        }
        if (action.is_none() && !chunk.is_empty()) || chunk.len() >= BULK_BYTES {
            let req = agent.post(bulk_url).set("Content-Type", "application/x-ndjson");
            let resp = request(req, Some(&chunk), BULK_TIMEOUT)
                .with_context(|| format!("bulk load of {} failed", path.display()))?;
            if resp["errors"].as_bool() != Some(false) {
                let first = resp["items"].as_array().and_then(|items| items.first()).cloned().unwrap_or_default();
                bail!("bulk load of {} failed: {first}", path.display());
            }
            chunk.clear();
        }
        if action.is_none() {
            return Ok(docs);
        }
    }
}

// ---------------------------------------------------------------- load dataset

/// `<dataset>/out/`, built with `build.py` in a private virtualenv when its files are missing.
fn ensure_dataset(dataset_dir: &Path) -> Result<PathBuf> {
    let out = dataset_dir.join("out");
    let complete = |out: &Path| BULK_FILES.iter().chain(["city-ids.txt"].iter()).all(|f| out.join(f).is_file());
    if complete(&out) {
        return Ok(out);
    }
    let started = Instant::now();
    crate::errln!("svcbench: building the load dataset with {} (once)", dataset_dir.join("build.py").display());
    let venv = dataset_dir.join(".venv");
    let python = venv.join("bin/python");
    if !python.is_file() {
        run(
            crate::child::helper("python3", crate::child::Needs::Toolchains).arg("-m").arg("venv").arg(&venv),
            "python3 -m venv",
        )?;
    }
    run(
        crate::child::helper(&python, crate::child::Needs::Toolchains)
            .args(["-m", "pip", "install", "-q", "-r"])
            .arg(dataset_dir.join("requirements.txt")),
        "pip install -r requirements.txt",
    )?;
    run(
        crate::child::helper(&python, crate::child::Needs::Toolchains)
            .arg(dataset_dir.join("build.py"))
            .arg("--out")
            .arg(&out),
        "build.py",
    )?;
    if !complete(&out) {
        bail!("{} ran but {} is incomplete", dataset_dir.join("build.py").display(), out.display());
    }
    crate::errln!("svcbench: built the load dataset in {:.0} s", started.elapsed().as_secs_f64());
    Ok(out)
}

/// Runs a helper of the data build with its output on svcbench's stderr: stdout is for what svcbench itself
/// prints (`svcbench up`'s `name url` lines, which scripts read).
fn run(cmd: &mut Command, what: &str) -> Result<()> {
    let status = cmd
        .stdout(std::process::Stdio::from(std::io::stderr()))
        .status()
        .with_context(|| format!("cannot run {what}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bulk_files_name_their_index_and_count_their_documents() {
        assert_eq!(index_of(Path::new("/x/out/region.ndjson")), Some("region_v1"));
        assert_eq!(index_of(Path::new("city.ndjson")), Some("city_v1"));
        assert_eq!(index_of(Path::new("poi.ndjson")), None);
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("city.ndjson");
        fs::write(&f, "{\"index\":{}}\n{\"id\":1}\n\n{\"index\":{}}\n{\"id\":2}\n").unwrap();
        assert_eq!(documents_in(&f).unwrap(), 2);
    }
}

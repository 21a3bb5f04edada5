//! The parts of what a study's runs measured that live outside its file, its profile and its services'
//! code: the scenario (its checks, mixes, dependencies, warm-up and data files, each hashed apart so that a
//! refused resume names which), svcbench's own build, and each container service's image.
use crate::manifest::Service;
use crate::scenario::Scenario;
use anyhow::{Context, Result};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn hex(digest: &[u8]) -> String {
    digest.iter().take(12).map(|b| format!("{b:02x}")).collect()
}

/// The scenario's sections as svcbench reads them: a name for each (as a refused resume says it) and the
/// keys of scenario.toml it holds. Its description is not among them: it measures nothing.
const SECTIONS: &[(&str, &[&str])] = &[
    ("checks", &["check"]),
    ("mixes", &["mix", "step_mixes"]),
    ("dependencies (their kind, version, delay, data)", &["dependency"]),
    ("warm-up", &["warmup"]),
];

/// The name of the scenario's data files' hash.
pub const DATA: &str = "data files";

/// Each part of the scenario, hashed: its sections and its folder's other files (value lists, the load
/// dataset; not a virtualenv or Python's caches).
pub fn scenario_parts(scenario: &Scenario) -> Result<BTreeMap<String, String>> {
    let path = scenario.dir.join("scenario.toml");
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    let table: toml::Table = text.parse().with_context(|| format!("cannot parse {}", path.display()))?;
    let mut out = BTreeMap::new();
    for (name, keys) in SECTIONS {
        let part: toml::Table = keys.iter().filter_map(|k| Some((k.to_string(), table.get(*k)?.clone()))).collect();
        out.insert(name.to_string(), hex(&Sha256::digest(toml::to_string(&part)?.as_bytes())));
    }
    let mut files = Vec::new();
    data_files(&scenario.dir, &mut files)?;
    let mut h = Sha256::new();
    for f in files.iter().filter(|f| f.file_name().is_none_or(|n| n != "scenario.toml")) {
        let content = std::fs::read(f).with_context(|| format!("cannot read {}", f.display()))?;
        let name = f.strip_prefix(&scenario.dir).unwrap_or(f).display().to_string();
        h.update(format!("\n{name}\n{}\n", content.len()).as_bytes());
        h.update(&content);
    }
    out.insert(DATA.to_string(), hex(&h.finalize()));
    Ok(out)
}

/// The folder's files in a fixed order, without hidden entries, virtualenvs and Python's caches.
fn data_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| !n.starts_with('.') && n != "__pycache__"))
        .collect();
    entries.sort();
    for p in entries {
        let kind = std::fs::symlink_metadata(&p)?.file_type();
        if kind.is_dir() {
            data_files(&p, out)?;
        } else if kind.is_file() {
            out.push(p);
        }
    }
    Ok(())
}

/// svcbench's own build: a hash of the program that runs (/proc/self/exe), the same for every run of one
/// build and another after any rebuild that changed it.
pub fn svcbench_build() -> Result<String> {
    static BUILD: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    if let Some(b) = BUILD.get() {
        return Ok(b.clone());
    }
    let exe = std::fs::read("/proc/self/exe").context("cannot read svcbench's own program (/proc/self/exe)")?;
    Ok(BUILD.get_or_init(|| hex(&Sha256::digest(&exe))).clone())
}

/// Each container service's image as its engine holds it now (its ID); one not here yet is left out.
pub fn image_ids(services: &[Service]) -> BTreeMap<String, String> {
    services
        .iter()
        .filter(|s| s.manifest.container.is_some())
        .filter_map(|s| Some((s.name().to_string(), crate::service::container_start::image_id(s)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_part_of_the_scenario_is_hashed_apart() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let write = |toml: &str| std::fs::write(dir.join("scenario.toml"), toml).unwrap();
        let base = "name = \"s\"\ndescription = \"d\"\n[[dependency]]\nkind = \"upstream\"\ndelay_ms = 10\n\
                    [[check]]\nname = \"c\"\npath = \"/\"\n[check.expect]\nstatus = 200\n\
                    [mix.default]\n[[mix.default.request]]\nweight = 1\npath = \"/\"\n";
        write(base);
        std::fs::create_dir(dir.join("data")).unwrap();
        std::fs::write(dir.join("data/names.txt"), "a\nb\n").unwrap();
        let parts = || scenario_parts(&Scenario::load(dir).unwrap()).unwrap();
        let then = parts();
        let changed = |now: &BTreeMap<String, String>| -> Vec<String> {
            now.iter().filter(|(k, v)| then.get(*k) != Some(v)).map(|(k, _)| k.clone()).collect()
        };
        write(&base.replace("description = \"d\"", "description = \"other words\""));
        assert!(changed(&parts()).is_empty(), "the description measures nothing");
        write(&base.replace("delay_ms = 10", "delay_ms = 20"));
        assert_eq!(changed(&parts()), ["dependencies (their kind, version, delay, data)"]);
        write(&base.replace("status = 200", "status = 201"));
        assert_eq!(changed(&parts()), ["checks"]);
        write(&base.replace("weight = 1", "weight = 2"));
        assert_eq!(changed(&parts()), ["mixes"]);
        write(base);
        std::fs::write(dir.join("data/names.txt"), "a\nc\n").unwrap();
        assert_eq!(changed(&parts()), [DATA]);
        std::fs::write(dir.join("data/names.txt"), "a\nb\n").unwrap();
        std::fs::create_dir(dir.join("__pycache__")).unwrap();
        std::fs::write(dir.join("__pycache__/x.pyc"), "x").unwrap();
        assert!(changed(&parts()).is_empty(), "caches are not data");
    }

    #[test]
    fn svcbench_build_is_this_program_s() {
        let b = svcbench_build().unwrap();
        assert_eq!(b.len(), 24);
        assert_eq!(b, svcbench_build().unwrap());
    }
}

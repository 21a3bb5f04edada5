//! A scenario (`scenarios/<name>/scenario.toml`, docs/scenario.md): conformance checks, request mixes for
//! load, and the dependencies it needs. Data, not code.
pub mod checks;
mod validate;

use anyhow::{bail, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub dependency: Vec<DependencySpec>,
    #[serde(default)]
    pub check: Vec<checks::Check>,
    #[serde(default)]
    pub mix: BTreeMap<String, loadgen::MixSpec>,
    /// Mixes that every profile step naming no mix runs, one after the other (users: the seed's two
    /// replays, then the realistic mix). Empty: such steps run `default`.
    #[serde(default)]
    pub step_mixes: Vec<String>,
    /// Warm the dependencies before the first measured run (a store's caches, its JIT): without it the
    /// service measured first meets a cold store and loses to the order, not to its rivals.
    #[serde(default)]
    pub warmup: Option<WarmupSpec>,
}

/// `[warmup]`: drive the dependencies through a service with the scenario's mix until throughput settles.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WarmupSpec {
    #[serde(default = "warmup_connections")]
    pub connections: usize,
    #[serde(default)]
    pub mix: Option<String>,
    /// Length of one measured window, e.g. "2s".
    #[serde(default = "warmup_window")]
    pub window: String,
    /// Give up settling after this long, e.g. "60s".
    #[serde(default = "warmup_max")]
    pub max: String,
    /// Settled when two windows in a row differ by less than this share (0.05 = 5 %).
    #[serde(default = "warmup_tolerance")]
    pub tolerance: f64,
}

fn warmup_connections() -> usize {
    8
}
fn warmup_window() -> String {
    "2s".into()
}
fn warmup_max() -> String {
    "60s".into()
}
fn warmup_tolerance() -> f64 {
    0.05
}

/// One dependency: its kind selects the code in `deps/`; the other keys are that kind's options.
#[derive(Debug, Clone, Deserialize)]
pub struct DependencySpec {
    pub kind: String,
    #[serde(flatten)]
    pub options: toml::Table,
}

#[derive(Debug, Clone)]
pub struct Scenario {
    pub dir: PathBuf,
    pub file: ScenarioFile,
}

impl Scenario {
    pub fn load(dir: &Path) -> Result<Scenario> {
        let path = dir.join("scenario.toml");
        if !path.exists() {
            bail!("{}: no scenario.toml; a scenario folder needs one (see docs/scenario.md)", dir.display());
        }
        let file: ScenarioFile = crate::toml_file::read(&path)?;
        validate::validate(&file, dir, &path)?;
        Ok(Scenario { dir: dir.canonicalize()?, file })
    }

    /// Finds a scenario by name or path: a folder path is taken as is; a name is looked up as
    /// `scenarios/<name>` upwards from `near` and the current folder, then in `scenarios_dir` (the
    /// bundled ones), so a scenario of one's own beside a service wins over a bundled namesake.
    pub fn find(name_or_path: &str, near: &Path, scenarios_dir: Option<&Path>) -> Result<Scenario> {
        let p = Path::new(name_or_path);
        if p.join("scenario.toml").exists() {
            return Scenario::load(p);
        }
        let cwd = std::env::current_dir()?;
        for start in [near, cwd.as_path()] {
            for anc in start.ancestors() {
                let c = anc.join("scenarios").join(name_or_path);
                if c.join("scenario.toml").exists() {
                    return Scenario::load(&c);
                }
            }
        }
        if let Some(d) = scenarios_dir {
            let c = d.join(name_or_path);
            if c.join("scenario.toml").exists() {
                return Scenario::load(&c);
            }
        }
        let known = scenarios_dir
            .map(|d| crate::paths::names_in(d, |p| p.join("scenario.toml").exists().then(|| file_name(p))))
            .unwrap_or_default();
        let known =
            if known.is_empty() { String::new() } else { format!("; the bundled ones are {}", known.join(", ")) };
        bail!(
            "scenario `{name_or_path}` not found (looked for scenarios/{name_or_path}/scenario.toml above {}, the current folder and the svcbench checkout{known}); pass --scenario PATH, or set SVCBENCH_HOME to the checkout",
            near.display()
        )
    }

    pub fn name(&self) -> &str {
        &self.file.name
    }

    pub fn mix(&self, name: &str) -> Result<&loadgen::MixSpec> {
        self.file.mix.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.file.mix.keys().map(|k| k.as_str()).collect();
            anyhow::anyhow!("scenario `{}` has no mix `{name}`; it has: {}", self.name(), known.join(", "))
        })
    }
}

fn file_name(p: &Path) -> String {
    p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_scenarios_load_and_their_mixes_are_valid() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
        let mut names = Vec::new();
        for e in std::fs::read_dir(&root).unwrap().flatten() {
            let s = Scenario::load(&e.path()).unwrap();
            for m in &s.file.step_mixes {
                s.mix(m).unwrap();
            }
            for (name, spec) in &s.file.mix {
                spec.success_set().unwrap_or_else(|e| panic!("{}: mix {name}: {e:#}", s.name()));
                // Value files made by a dataset build (locations) exist only after it: those mixes are
                // resolved by the integration tests that build it.
                let generated = spec.values.values().any(|v| v.file.as_ref().is_some_and(|f| !s.dir.join(f).exists()));
                if !generated {
                    spec.clone().resolve(&s.dir).unwrap_or_else(|e| panic!("{}: mix {name}: {e:#}", s.name()));
                }
            }
            names.push(s.name().to_string());
        }
        names.sort();
        assert_eq!(names, ["hello", "locations", "upstream", "users"]);
        let users = Scenario::load(&root.join("users")).unwrap();
        assert!(users.mix("add-conflict").unwrap().success_set().unwrap().unwrap().contains(409));
    }
}

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

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub name: String,
    pub scenario: String,
    pub language: String,
    pub framework: String,
    pub framework_version: String,
    pub model: ProgrammingModel,
    #[serde(default)]
    pub build: Option<String>,
    pub run: String,
    #[serde(default)]
    pub artifacts: Vec<String>,
    pub readiness: String,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Overrides that point the service at a wrong dependency: it must then refuse to start.
    #[serde(default)]
    pub broken_env: BTreeMap<String, String>,
}

/// A manifest together with the folder it came from.
#[derive(Debug, Clone)]
pub struct Service {
    pub dir: PathBuf,
    pub manifest: Manifest,
}

impl Service {
    /// Loads `DIR/svcbench.toml` (or the file itself when given a path to a `.toml`).
    pub fn load(path: &Path) -> Result<Service> {
        let file = if path.is_dir() { path.join("svcbench.toml") } else { path.to_path_buf() };
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
        if !manifest.readiness.starts_with('/') {
            bail!("{}: key `readiness` must be a path starting with '/', got {:?}", file.display(), manifest.readiness);
        }
        Ok(Service { dir, manifest })
    }

    pub fn name(&self) -> &str {
        &self.manifest.name
    }

    /// Total size in bytes of the artifact files or folders (missing ones are an error: the build did not
    /// produce what the manifest promised).
    pub fn artifact_bytes(&self) -> Result<u64> {
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
        Ok(total)
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

/// Fills `{port}`, `{dir}`, `{dep.<kind>.<field>}`, `{java}` placeholders. An unknown placeholder is an error
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(s.manifest.model, ProgrammingModel::Async);
        assert_eq!(s.manifest.env["PORT"], "{port}");
    }

    #[test]
    fn unknown_key_names_file_and_key() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), &format!("{GOOD}\n[extra]\nfoo = 1\n").replace("readiness", "readyness"));
        let e = Service::load(d.path()).unwrap_err().to_string();
        assert!(e.contains("svcbench.toml"), "{e}");
        assert!(e.contains("readyness"), "{e}");
        assert!(!e.contains('\n'), "one line: {e}");
    }

    #[test]
    fn missing_key_is_named() {
        let d = tempfile::tempdir().unwrap();
        write(d.path(), &GOOD.replace("framework_version = \"4\"\n", ""));
        let e = Service::load(d.path()).unwrap_err().to_string();
        assert!(e.contains("framework_version"), "{e}");
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

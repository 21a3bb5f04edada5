//! What is sent: request templates, the value lists that fill them, and the weighted mix.
//!
//! A template's path, header values and body may hold `{name}` (a value from the list `name`)
//! and `{unique}` (a number never used before in the run). The mix file format is the one of a
//! scenario's `[mix.<name>]` table (docs/scenario.md), at the top level of its own file:
//!
//! ```toml
//! seed = 7                                   # optional: value and template draws repeat per seed
//! [[request]]
//! weight = 9                                 # relative weight, default 1
//! method = "GET"                             # default GET
//! path = "/city/v1/get?id={id}&language={language}"
//! headers = { Accept = "application/json" }
//! body = ""                                  # or body_file = "req.json" (relative to this file)
//! [values]
//! id = { file = "data/city-ids.txt", order = "random" }     # one value per line
//! language = { list = ["cs", "de", "en"], order = "round-robin" }
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};

pub(crate) mod template;

/// How values are drawn from a list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ValueOrder {
    /// Uniformly at random, from a generator seeded with the mix's seed: runs repeat exactly.
    #[default]
    Random,
    /// Each value in turn (threads interleave, so together they walk the list in order).
    RoundRobin,
}

impl std::str::FromStr for ValueOrder {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "random" => Ok(ValueOrder::Random),
            "round-robin" | "roundrobin" | "rr" => Ok(ValueOrder::RoundRobin),
            _ => bail!("value order '{s}' is unknown: use random or round-robin"),
        }
    }
}

/// Values for one `{name}` variable. Values go into the request as they are: keep them
/// URL-safe (percent-encoded) when they are used in a path.
#[derive(Debug, Clone, PartialEq)]
pub struct ValueList {
    pub name: String,
    pub values: Vec<String>,
    pub order: ValueOrder,
}

impl ValueList {
    /// One value per line; blank lines are skipped, surrounding whitespace trimmed.
    pub fn from_file(name: &str, path: &Path, order: ValueOrder) -> Result<ValueList> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("values '{name}': cannot read {}", path.display()))?;
        let values: Vec<String> = text.lines().map(str::trim).filter(|l| !l.is_empty()).map(str::to_string).collect();
        let list = ValueList { name: name.to_string(), values, order };
        list.validate().with_context(|| format!("values file {}", path.display()))?;
        Ok(list)
    }

    fn validate(&self) -> Result<()> {
        if !is_identifier(&self.name) || self.name == "unique" {
            bail!(
                "value list name '{}' is not usable: use letters, digits and _ (not starting with a digit), and not 'unique'",
                self.name
            );
        }
        if self.values.is_empty() {
            bail!("value list '{}' is empty: give at least one value", self.name);
        }
        if let Some(v) = self.values.iter().find(|v| v.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0)) {
            bail!("value list '{}': value {v:?} contains a line break or NUL", self.name);
        }
        Ok(())
    }
}

/// One kind of request in the mix.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestTemplate {
    pub method: String,
    /// Origin-form path with query, e.g. `/users/{id}?fields=all`.
    pub path: String,
    /// Added after `Host` (which is added unless given here); `Content-Length` is computed.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Relative share of the mix (0 = never sent).
    pub weight: u32,
}

impl RequestTemplate {
    pub fn new(method: &str, path: &str) -> RequestTemplate {
        RequestTemplate {
            method: method.to_string(),
            path: path.to_string(),
            headers: Vec::new(),
            body: Vec::new(),
            weight: 1,
        }
    }
}

/// The requests of a run: templates drawn by weight, variables filled from value lists.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestMix {
    pub templates: Vec<RequestTemplate>,
    pub values: Vec<ValueList>,
    /// Seeds the per-thread generators for template and value draws.
    pub seed: u64,
}

/// Seed used when none is given, so that two runs draw the same values.
pub const DEFAULT_SEED: u64 = 0x5eed;

impl RequestMix {
    /// One request, sent over and over.
    pub fn single(method: &str, path: &str) -> RequestMix {
        RequestMix { templates: vec![RequestTemplate::new(method, path)], values: Vec::new(), seed: DEFAULT_SEED }
    }

    /// Reads a weighted mix file (format in this module's docs); relative file names in it are
    /// relative to the file's folder.
    pub fn from_toml_file(path: &Path) -> Result<RequestMix> {
        MixSpec::from_toml_file(path)?.resolve_file(path)
    }

    pub fn value_list(&self, name: &str) -> Option<&ValueList> {
        self.values.iter().find(|v| v.name == name)
    }

    /// Checks the templates against the value lists (the same checks the engine's compiler makes).
    pub fn validate(&self) -> Result<()> {
        if self.templates.is_empty() {
            bail!("the request mix has no requests: add at least one");
        }
        if self.templates.iter().all(|t| t.weight == 0) {
            bail!("every request in the mix has weight 0: give at least one a positive weight");
        }
        for (i, v) in self.values.iter().enumerate() {
            v.validate()?;
            if self.values[..i].iter().any(|w| w.name == v.name) {
                bail!("value list '{}' is given twice", v.name);
            }
        }
        let lists: Vec<Arc<ValueList>> = self.values.iter().cloned().map(Arc::new).collect();
        for t in &self.templates {
            template::CompiledTemplate::compile(t, &lists, "localhost", true)?;
        }
        Ok(())
    }
}

/// Serde form of a mix (a mix file, or a scenario's `[mix.<name>]` table).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MixSpec {
    #[serde(default)]
    pub seed: Option<u64>,
    pub request: Vec<RequestSpec>,
    #[serde(default)]
    pub values: BTreeMap<String, ValuesSpec>,
    /// Statuses that count as success with this mix (e.g. "200-399,409" for a replay that hits a
    /// conflict on purpose); unset: the run's own setting (default 2xx and 3xx).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success: Option<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RequestSpec {
    #[serde(default = "default_weight")]
    pub weight: u32,
    #[serde(default = "default_method")]
    pub method: String,
    pub path: String,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub body: Option<String>,
    #[serde(default)]
    pub body_file: Option<PathBuf>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ValuesSpec {
    #[serde(default)]
    pub file: Option<PathBuf>,
    #[serde(default)]
    pub list: Option<Vec<String>>,
    #[serde(default)]
    pub order: ValueOrder,
}

fn default_weight() -> u32 {
    1
}

fn default_method() -> String {
    "GET".to_string()
}

impl MixSpec {
    /// Parses a mix file (format in this module's docs) without reading the files it names.
    pub fn from_toml_file(path: &Path) -> Result<MixSpec> {
        let text = std::fs::read_to_string(path).with_context(|| format!("cannot read mix file {}", path.display()))?;
        toml::from_str(&text)
            .map_err(|e| anyhow::anyhow!("mix file {}: {}", path.display(), e.to_string().trim().replace('\n', " ")))
    }

    /// `resolve` for a spec read from `path`: its file names are relative to the file's folder.
    pub fn resolve_file(self, path: &Path) -> Result<RequestMix> {
        let dir = path.parent().unwrap_or(Path::new("."));
        self.resolve(dir).with_context(|| format!("mix file {}", path.display()))
    }

    /// The `success` statuses, parsed; None when the mix leaves them to the run.
    pub fn success_set(&self) -> Result<Option<StatusSet>> {
        self.success.as_deref().map(|s| StatusSet::parse(s).context("success")).transpose()
    }

    /// Whether a values file the spec names (relative to `base_dir`) is not there: one a dataset build
    /// writes later, before which the spec cannot be resolved.
    pub fn lacks_value_files(&self, base_dir: &Path) -> bool {
        self.values.values().any(|v| v.file.as_ref().is_some_and(|f| !base_dir.join(f).exists()))
    }

    /// Loads the files the spec names (relative to `base_dir`) and checks the result.
    pub fn resolve(self, base_dir: &Path) -> Result<RequestMix> {
        let mut values = Vec::new();
        for (name, spec) in self.values {
            let list = match (spec.file, spec.list) {
                (Some(file), None) => ValueList::from_file(&name, &base_dir.join(file), spec.order)?,
                (None, Some(list)) => ValueList { name, values: list, order: spec.order },
                _ => bail!("values '{name}': give exactly one of file = \"...\" or list = [...]"),
            };
            values.push(list);
        }
        let mut templates = Vec::new();
        for (i, r) in self.request.into_iter().enumerate() {
            let body = match (r.body, r.body_file) {
                (Some(b), None) => b.into_bytes(),
                (None, Some(f)) => {
                    let f = base_dir.join(f);
                    std::fs::read(&f)
                        .with_context(|| format!("request {}: cannot read body file {}", i + 1, f.display()))?
                }
                (None, None) => Vec::new(),
                (Some(_), Some(_)) => bail!("request {}: give body or body_file, not both", i + 1),
            };
            templates.push(RequestTemplate {
                method: r.method,
                path: r.path,
                headers: r.headers.into_iter().collect(),
                body,
                weight: r.weight,
            });
        }
        let mix = RequestMix { templates, values, seed: self.seed.unwrap_or(DEFAULT_SEED) };
        mix.validate()?;
        Ok(mix)
    }
}

pub(crate) fn is_identifier(s: &str) -> bool {
    let mut bytes = s.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Which response statuses count as success (the others are `status` errors).
#[derive(Clone, PartialEq, Eq)]
pub struct StatusSet {
    bits: [u64; 16], // statuses 0..1023
    text: String,
}

impl StatusSet {
    /// A comma-separated list of statuses and inclusive ranges: `200-399,404`.
    pub fn parse(s: &str) -> Result<StatusSet> {
        let mut set = StatusSet { bits: [0; 16], text: s.trim().to_string() };
        let status = |v: &str| -> Result<u16> {
            v.trim().parse::<u16>().ok().filter(|c| (100..=999).contains(c)).ok_or_else(|| {
                anyhow!("success statuses '{s}': '{v}' is not an HTTP status (100-999); write e.g. 200-399,404")
            })
        };
        for part in s.split(',') {
            let (lo, hi) = match part.split_once('-') {
                Some((a, b)) => (status(a)?, status(b)?),
                None => {
                    let c = status(part)?;
                    (c, c)
                }
            };
            if lo > hi {
                bail!("success statuses '{s}': range '{part}' is reversed; write LOW-HIGH");
            }
            for c in lo..=hi {
                set.bits[c as usize / 64] |= 1 << (c % 64);
            }
        }
        Ok(set)
    }

    #[inline]
    pub fn contains(&self, status: u16) -> bool {
        let c = status as usize;
        c < 1024 && self.bits[c / 64] & (1 << (c % 64)) != 0
    }
}

impl Default for StatusSet {
    fn default() -> Self {
        StatusSet::parse("200-399").expect("valid default")
    }
}

impl std::fmt::Debug for StatusSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StatusSet({})", self.text)
    }
}

impl std::fmt::Display for StatusSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_file_round_trip() {
        let dir = std::env::temp_dir().join(format!("loadgen-mix-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("ids.txt"), "1\n\n 2 \n3\n").unwrap();
        std::fs::write(dir.join("body.json"), "{\"n\":\"{id}\"}").unwrap();
        std::fs::write(
            dir.join("mix.toml"),
            r#"
seed = 9
[[request]]
weight = 3
path = "/a/{id}?l={lang}"
headers = { Accept = "text/plain" }
[[request]]
method = "POST"
path = "/b/{unique}"
body_file = "body.json"
[values]
id = { file = "ids.txt" }
lang = { list = ["cs", "de"], order = "round-robin" }
"#,
        )
        .unwrap();
        let mix = RequestMix::from_toml_file(&dir.join("mix.toml")).unwrap();
        assert_eq!(mix.seed, 9);
        assert_eq!(mix.templates.len(), 2);
        assert_eq!(mix.templates[0].weight, 3);
        assert_eq!(mix.templates[0].method, "GET");
        assert_eq!(mix.templates[1].body, b"{\"n\":\"{id}\"}");
        assert_eq!(mix.value_list("id").unwrap().values, ["1", "2", "3"]);
        assert_eq!(mix.value_list("lang").unwrap().order, ValueOrder::RoundRobin);

        std::fs::write(dir.join("bad.toml"), "[[request]]\npath = \"/{nope}\"\n").unwrap();
        let err = format!("{:#}", RequestMix::from_toml_file(&dir.join("bad.toml")).unwrap_err());
        assert!(err.contains("nope"), "{err}");
        std::fs::write(dir.join("bad2.toml"), "[[request]]\npth = \"/\"\n").unwrap();
        let err = format!("{:#}", RequestMix::from_toml_file(&dir.join("bad2.toml")).unwrap_err());
        assert!(err.contains("pth"), "{err}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn bad_value_lists() {
        let mut mix = RequestMix::single("GET", "/{id}");
        mix.values.push(ValueList { name: "id".into(), values: vec![], order: ValueOrder::Random });
        assert!(mix.validate().is_err());
        mix.values[0].values.push("a\nb".into());
        assert!(mix.validate().is_err());
        mix.values[0].values = vec!["7".into()];
        assert!(mix.validate().is_ok());
    }
}

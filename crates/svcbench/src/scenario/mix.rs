//! Request mixes of a scenario, turned into the load generator's `RequestMix`.
use anyhow::{bail, Context, Result};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MixSpec {
    pub request: Vec<MixRequest>,
    #[serde(default)]
    pub values: BTreeMap<String, ValuesSpec>,
    /// Statuses that count as success for this mix (e.g. "200-399,409" for a replay that hits conflicts
    /// on purpose); default 2xx and 3xx.
    #[serde(default)]
    pub success: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MixRequest {
    #[serde(default = "one")]
    pub weight: u32,
    #[serde(default = "get")]
    pub method: String,
    pub path: String,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub body: String,
}

fn one() -> u32 {
    1
}
pub(crate) fn get() -> String {
    "GET".to_string()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValuesSpec {
    #[serde(default)]
    pub file: Option<String>,
    #[serde(default)]
    pub list: Option<Vec<String>>,
    #[serde(default = "random")]
    pub order: String,
}

fn random() -> String {
    "random".to_string()
}

impl MixSpec {
    pub fn to_request_mix(&self, scenario_dir: &Path, seed: u64) -> Result<loadgen::RequestMix> {
        let templates = self
            .request
            .iter()
            .map(|r| loadgen::RequestTemplate {
                method: r.method.clone(),
                path: r.path.clone(),
                headers: r.headers.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
                body: r.body.clone().into_bytes(),
                weight: r.weight,
            })
            .collect();
        let mut values = Vec::new();
        for (name, spec) in &self.values {
            let list = match (&spec.file, &spec.list) {
                (Some(f), None) => {
                    let p = scenario_dir.join(f);
                    let text = std::fs::read_to_string(&p).with_context(|| {
                        format!("values `{name}`: cannot read {} (is the dataset built?)", p.display())
                    })?;
                    text.lines().map(str::trim).filter(|l| !l.is_empty()).map(String::from).collect()
                }
                (None, Some(l)) => l.clone(),
                _ => bail!("values `{name}`: give exactly one of `file` or `list`"),
            };
            if list.is_empty() {
                bail!("values `{name}` is empty");
            }
            let order = match spec.order.as_str() {
                "random" => loadgen::ValueOrder::Random,
                "round-robin" => loadgen::ValueOrder::RoundRobin,
                o => bail!("values `{name}`: order {o:?} is not `random` or `round-robin`"),
            };
            values.push(loadgen::ValueList { name: name.clone(), values: list, order });
        }
        Ok(loadgen::RequestMix { templates, values, seed })
    }
}

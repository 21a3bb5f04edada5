//! Whether the service under test changed the store during a run. OpenSearch runs without its security
//! plugin (docs/security.md), so a service can write, delete or remap what every later run reads; before
//! and after each run svcbench reads each index's document count, mapping, settings and aliases, and a
//! difference marks the run invalid (docs/scenario.md, "The store's data").
use anyhow::{anyhow, Result};
use std::collections::BTreeMap;

/// One index as a run may not change it.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexState {
    pub docs: u64,
    pub mapping: serde_json::Value,
    pub settings: serde_json::Value,
    pub aliases: serde_json::Value,
}

/// The store's indices (those whose names do not start with `.`: a node makes its own system indices when
/// it needs them), by name.
pub type StoreState = BTreeMap<String, IndexState>;

/// Reads the state of the store at `url`, after a refresh (so that documents written without one count).
pub fn read(url: &str) -> Result<StoreState> {
    let agent = crate::http_client::agent(crate::http_client::READ_TIMEOUT);
    let get = |path: &str| {
        super::loader::request(agent.get(&format!("{url}/{path}")), None, crate::http_client::READ_TIMEOUT)
    };
    super::loader::request(agent.post(&format!("{url}/_refresh")), None, crate::http_client::READ_TIMEOUT)?;
    let (mappings, settings, aliases) = (get("_mapping")?, get("_settings?flat_settings=true")?, get("_alias")?);
    let counts = get("_cat/indices?format=json&h=index,docs.count")?;
    let mut out = StoreState::new();
    for row in counts.as_array().ok_or_else(|| anyhow!("the store's index list is not a list: {counts}"))? {
        let Some(name) = row["index"].as_str().filter(|n| !n.starts_with('.')) else { continue };
        // _cat gives numbers as text.
        let docs = row["docs.count"].as_str().and_then(|d| d.parse().ok()).unwrap_or(0);
        out.insert(
            name.to_string(),
            IndexState {
                docs,
                mapping: mappings[name]["mappings"].clone(),
                settings: settings[name]["settings"].clone(),
                aliases: aliases[name]["aliases"].clone(),
            },
        );
    }
    Ok(out)
}

/// What differs between the store before a run and after it, one sentence each (empty: unchanged).
pub fn changes(before: &StoreState, after: &StoreState) -> Vec<String> {
    let mut out = Vec::new();
    for (name, b) in before {
        let Some(a) = after.get(name) else {
            out.push(format!("index {name} was deleted"));
            continue;
        };
        if a.docs != b.docs {
            out.push(format!("index {name} held {} documents before and {} after", b.docs, a.docs));
        }
        for (what, x, y) in [
            ("mapping", &b.mapping, &a.mapping),
            ("settings", &b.settings, &a.settings),
            ("aliases", &b.aliases, &a.aliases),
        ] {
            if x != y {
                out.push(format!("index {name}'s {what} changed"));
            }
        }
    }
    for name in after.keys().filter(|n| !before.contains_key(*n)) {
        out.push(format!("index {name} was created"));
    }
    out
}

/// The store's state at the start of each run, and what changed by its end.
pub struct Watch {
    url: String,
    at_start: Option<StoreState>,
}

impl Watch {
    pub fn new(url: &str) -> Watch {
        Watch { url: url.to_string(), at_start: None }
    }

    /// Reads the state a run starts from.
    pub fn start(&mut self) -> Result<()> {
        self.at_start = Some(read(&self.url)?);
        Ok(())
    }

    /// What changed since [`Watch::start`]; a store that cannot be read is a change of its own (the run
    /// cannot be shown to have left it as it was).
    pub fn changes(&mut self) -> Vec<String> {
        let Some(before) = self.at_start.take() else { return Vec::new() };
        match read(&self.url) {
            Ok(after) => changes(&before, &after),
            Err(e) => vec![format!("the store could not be read after the run ({e:#})")],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn index(docs: u64) -> IndexState {
        IndexState {
            docs,
            mapping: json!({"properties": {"name": {"type": "text"}}}),
            settings: json!({"index.number_of_replicas": "0"}),
            aliases: json!({"city": {}}),
        }
    }

    fn store(indices: &[(&str, IndexState)]) -> StoreState {
        indices.iter().map(|(n, s)| (n.to_string(), s.clone())).collect()
    }

    #[test]
    fn an_unchanged_store_has_no_change() {
        let s = store(&[("city_v1", index(100)), ("region_v1", index(10))]);
        assert!(changes(&s, &s.clone()).is_empty());
    }

    #[test]
    fn every_kind_of_change_is_named() {
        let before = store(&[("city_v1", index(100)), ("region_v1", index(10)), ("gone", index(1))]);
        let mut city = index(99);
        city.mapping = json!({"properties": {"name": {"type": "keyword"}}});
        let mut region = index(10);
        region.settings = json!({"index.number_of_replicas": "3"});
        region.aliases = json!({});
        let after = store(&[("city_v1", city), ("region_v1", region), ("new", index(0))]);
        assert_eq!(
            changes(&before, &after),
            [
                "index city_v1 held 100 documents before and 99 after",
                "index city_v1's mapping changed",
                "index gone was deleted",
                "index region_v1's settings changed",
                "index region_v1's aliases changed",
                "index new was created",
            ]
        );
    }
}

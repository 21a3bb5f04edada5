//! Reading the project's TOML files (manifests, scenarios, profiles) with one-line errors that name the
//! file, the line and the key, so a user can fix a typo without reading a backtrace.
use anyhow::{Context, Result};
use serde::de::DeserializeOwned;
use std::path::Path;

pub fn read<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse(path, &text)
}

pub fn parse<T: DeserializeOwned>(path: &Path, text: &str) -> Result<T> {
    toml::from_str(text).map_err(|e| {
        let line = e.span().map(|s| text[..s.start].lines().count().max(1));
        let msg = e.message().replace('\n', " ");
        match line {
            Some(l) => anyhow::anyhow!("{}:{}: {}", path.display(), l, msg),
            None => anyhow::anyhow!("{}: {}", path.display(), msg),
        }
    })
}

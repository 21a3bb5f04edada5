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
        // The line the offending key starts on: newlines before it, plus one.
        let line = e.span().map(|s| text[..s.start].matches('\n').count() + 1);
        let msg = e.message().replace('\n', " ");
        match line {
            Some(l) => anyhow::anyhow!("{}:{}: {}", path.display(), l, msg),
            None => anyhow::anyhow!("{}: {}", path.display(), msg),
        }
    })
}

#[cfg(test)]
mod tests {
    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct T {
        a: u32,
        b: Option<u32>,
    }

    #[test]
    fn errors_name_the_offending_line() {
        let e = super::parse::<T>(std::path::Path::new("x.toml"), "a = 1\nb = 2\nnope = 3\n").unwrap_err();
        assert!(e.to_string().starts_with("x.toml:3: "), "{e}");
        let e = super::parse::<T>(std::path::Path::new("x.toml"), "a = 1\n\nb = \"x\"\n").unwrap_err();
        assert!(e.to_string().starts_with("x.toml:3: "), "{e}");
    }
}

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
        let msg = with_suggestion(&msg).or_else(|| in_plain_words(&msg)).unwrap_or(msg);
        match line {
            Some(l) => anyhow::anyhow!("{}:{}: {}", path.display(), l, msg),
            None => anyhow::anyhow!("{}: {}", path.display(), msg),
        }
    })
}

/// serde's words that name a Rust type or leave out the fix: a missing key is said to be needed, an unsigned
/// integer a whole number.
fn in_plain_words(msg: &str) -> Option<String> {
    if let Some(key) = msg.strip_prefix("missing field `").and_then(|r| r.strip_suffix('`')) {
        return Some(format!("missing key `{key}`: add `{key} = …` to the table the line names"));
    }
    // Only a negative number: a whole number too large for its key keeps serde's type, which says its range.
    let (head, ty) = msg.rsplit_once(", expected ")?;
    (head.contains("integer `-") && ["u8", "u16", "u32", "u64", "usize"].contains(&ty))
        .then(|| format!("{head}, expected a whole number, 0 or more"))
}

/// serde's "unknown field `readyness`, expected one of `name`, …, `readiness`, …" (or "unknown variant"), told
/// as the one key it most likely meant, when one is close enough to be a typo: a list of 18 keys hides it.
fn with_suggestion(msg: &str) -> Option<String> {
    let (kind, rest) =
        ["unknown field `", "unknown variant `"].iter().find_map(|p| msg.strip_prefix(p).map(|r| (*p, r)))?;
    let (given, expected) = rest.split_once('`')?;
    let best = closest_key(given, expected.split('`').skip(1).step_by(2))?;
    Some(format!("{kind}{given}`: did you mean `{best}`?"))
}

/// The key among `candidates` that `given` most likely misspells, if one is close enough to be a typo.
pub fn closest_key<'a>(given: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let (best, distance) =
        candidates.into_iter().map(|c| (c, strsim::damerau_levenshtein(given, c))).min_by_key(|(_, d)| *d)?;
    // One edit in a short key, two in a longer one: beyond that it is another key, not a typo.
    (distance <= 1 + given.len() / 6).then_some(best)
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

    #[test]
    fn a_misspelt_key_gets_the_key_it_most_likely_meant() {
        let said = |m: &str| super::with_suggestion(m);
        let keys = "expected one of `name`, `scenario`, `readiness`, `run`";
        assert_eq!(
            said(&format!("unknown field `readyness`, {keys}")).as_deref(),
            Some("unknown field `readyness`: did you mean `readiness`?")
        );
        assert_eq!(
            said(&format!("unknown field `scenaro`, {keys}")).as_deref(),
            Some("unknown field `scenaro`: did you mean `scenario`?")
        );
        // Nothing close: serde's list stays.
        assert_eq!(said(&format!("unknown field `image`, {keys}")), None);
        assert_eq!(
            said("unknown variant `asyn`, expected `async` or `blocking`").as_deref(),
            Some("unknown variant `asyn`: did you mean `async`?")
        );
        assert_eq!(said("missing field `run`"), None);
        assert_eq!(
            super::in_plain_words("missing field `run`").as_deref(),
            Some("missing key `run`: add `run = …` to the table the line names")
        );
        assert_eq!(
            super::in_plain_words("invalid value: integer `-3`, expected u32").as_deref(),
            Some("invalid value: integer `-3`, expected a whole number, 0 or more")
        );
        assert_eq!(super::in_plain_words("invalid value: integer `70000`, expected u16"), None);
        assert_eq!(super::in_plain_words("invalid type: string \"x\", expected f64"), None);
        // Through a real parse: file, line and the suggestion in one line.
        let e = super::parse::<T>(std::path::Path::new("x.toml"), "a = 1\nbb = 2\n").unwrap_err();
        assert_eq!(e.to_string(), "x.toml:2: unknown field `bb`: did you mean `b`?");
    }
}

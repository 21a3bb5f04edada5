//! `--filter`: which sessions and services a report or a compare side reads (syntax in docs/report.md).
//!
//! A filter is a list of `key=value` terms (comma-separated, or one `--filter` per term). Terms of the same
//! key are alternatives (OR); different keys must all hold (AND). Keys: `session` (id, `a-b` range or
//! `latest`), `label`, `service`, `scenario`, `profile` (globs with `*` and `?`). A bare number or range
//! is a session; a bare word is a label glob. Without a `session`, `label` or `scenario` term the
//! selection is the newest scenario's sessions: a report shows one scenario unless asked otherwise.
use anyhow::{bail, Result};

#[derive(Debug, Clone, Default)]
pub struct Filter {
    sessions: Vec<SessionSel>,
    labels: Vec<String>,
    services: Vec<String>,
    scenarios: Vec<String>,
    profiles: Vec<String>,
    /// Run indices within their session (`run=3`, `run=1-5`): resampled comparisons (bench/noise.sh).
    runs: Vec<(i64, i64)>,
    text: Vec<String>,
}

#[derive(Debug, Clone, Copy)]
enum SessionSel {
    Range(i64, i64),
    Latest,
}

/// What the filter needs to know of a session to decide on it.
pub struct SessionKey<'a> {
    pub id: i64,
    pub label: Option<&'a str>,
    pub scenario: &'a str,
    pub profile: &'a str,
}

impl Filter {
    pub fn parse(args: &[String]) -> Result<Filter> {
        let mut f = Filter::default();
        for term in args.iter().flat_map(|a| a.split(',')).map(str::trim).filter(|t| !t.is_empty()) {
            f.text.push(term.to_string());
            let (key, value) = match term.split_once('=') {
                Some((k, v)) => (k.trim(), v.trim()),
                None if term.starts_with(|c: char| c.is_ascii_digit()) || term == "latest" => ("session", term),
                None => ("label", term),
            };
            if value.is_empty() {
                bail!("--filter {term:?}: empty value (write e.g. service=go-*)");
            }
            match key {
                "session" | "s" => f.sessions.push(parse_session(value)?),
                "label" | "l" => f.labels.push(value.to_string()),
                "service" | "svc" => f.services.push(value.to_string()),
                "scenario" => f.scenarios.push(value.to_string()),
                "profile" => f.profiles.push(value.to_string()),
                "run" => f.runs.push(match parse_session(value)? {
                    SessionSel::Range(a, b) => (a, b),
                    SessionSel::Latest => bail!("--filter {term:?}: write a run number or a range like 1-3"),
                }),
                _ => bail!(
                    "--filter {term:?}: unknown key {key:?}; use session, label, service, scenario, profile or run"
                ),
            }
        }
        Ok(f)
    }

    /// True when the filter names sessions itself; otherwise the newest scenario is the default.
    pub fn picks_sessions(&self) -> bool {
        !self.sessions.is_empty() || !self.labels.is_empty() || !self.scenarios.is_empty()
    }

    pub fn session_matches(&self, s: &SessionKey, latest_id: i64) -> bool {
        let session_ok = self.sessions.is_empty()
            || self.sessions.iter().any(|sel| match *sel {
                SessionSel::Range(a, b) => (a..=b).contains(&s.id),
                SessionSel::Latest => s.id == latest_id,
            });
        let label_ok = self.labels.is_empty() || self.labels.iter().any(|g| s.label.is_some_and(|l| glob(g, l)));
        let scenario_ok = self.scenarios.is_empty() || self.scenarios.iter().any(|g| glob(g, s.scenario));
        let profile_ok = self.profiles.is_empty() || self.profiles.iter().any(|g| glob(g, s.profile));
        session_ok && label_ok && scenario_ok && profile_ok
    }

    /// A duet is shown when its label, scenario and profile match and either of its services does; a filter
    /// naming sessions picks sessions only (a duet is not one).
    pub fn duet_matches(&self, d: &crate::store::StoredDuet) -> bool {
        let label_ok =
            self.labels.is_empty() || self.labels.iter().any(|g| d.label.as_deref().is_some_and(|l| glob(g, l)));
        let scenario_ok = self.scenarios.is_empty() || self.scenarios.iter().any(|g| glob(g, &d.scenario));
        let profile_ok = self.profiles.is_empty() || self.profiles.iter().any(|g| glob(g, &d.profile));
        let service_ok = d.services.iter().any(|s| self.service_matches(s));
        self.sessions.is_empty() && label_ok && scenario_ok && profile_ok && service_ok
    }

    pub fn service_matches(&self, name: &str) -> bool {
        self.services.is_empty() || self.services.iter().any(|g| glob(g, name))
    }

    /// Whether a run (by its index within its session) is selected.
    pub fn run_matches(&self, run_index: i64) -> bool {
        self.runs.is_empty() || self.runs.iter().any(|&(a, b)| (a..=b).contains(&run_index))
    }

    /// The filter as the user wrote it, for the report's header.
    pub fn describe(&self) -> String {
        if self.text.is_empty() {
            "none (the newest scenario's sessions)".into()
        } else {
            self.text.join(", ")
        }
    }
}

fn parse_session(v: &str) -> Result<SessionSel> {
    if v == "latest" {
        return Ok(SessionSel::Latest);
    }
    let num = |s: &str| {
        s.trim()
            .parse::<i64>()
            .map_err(|_| anyhow::anyhow!("--filter session={v:?}: write an id, a range like 3-5, or latest"))
    };
    match v.split_once('-') {
        Some((a, b)) => Ok(SessionSel::Range(num(a)?, num(b)?)),
        None => {
            let n = num(v)?;
            Ok(SessionSel::Range(n, n))
        }
    }
}

/// Shell-style glob: `*` any run of characters, `?` one character; everything else literal.
pub fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    // Iterative matcher with backtracking to the last `*` (linear in practice).
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob("go-*", "go-nethttp"));
        assert!(glob("*actix", "rust-actix"));
        assert!(glob("r?st-*", "rust-actix"));
        assert!(glob("*", ""));
        assert!(!glob("go-*", "rust-actix"));
        assert!(glob("a*b*c", "aXXbYYc"));
        assert!(!glob("a*b*c", "aXXbYY"));
    }

    #[test]
    fn terms() {
        let f = Filter::parse(&["session=2-3,service=go-*".into(), "nightly".into()]).unwrap();
        let key = |id, label| SessionKey { id, label, scenario: "hello", profile: "quick" };
        assert!(f.session_matches(&key(2, Some("nightly")), 9));
        assert!(!f.session_matches(&key(4, Some("nightly")), 9));
        assert!(!f.session_matches(&key(3, None), 9));
        assert!(f.service_matches("go-nethttp") && !f.service_matches("rust-actix"));
        assert!(f.picks_sessions());
        let latest = Filter::parse(&["latest".into()]).unwrap();
        assert!(latest.session_matches(&key(9, None), 9) && !latest.session_matches(&key(8, None), 9));
        assert!(Filter::parse(&["colour=red".into()]).is_err());
        assert!(Filter::parse(&["session=x".into()]).is_err());
        assert!(!Filter::parse(&["service=x".into()]).unwrap().picks_sessions());
        let runs = Filter::parse(&["run=1,run=4-5".into()]).unwrap();
        assert!(runs.run_matches(1) && runs.run_matches(5) && !runs.run_matches(2));
        assert!(Filter::parse(&["run=latest".into()]).is_err());
    }
}

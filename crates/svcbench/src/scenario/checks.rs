//! Conformance checks: one request each, and what the answer must be. The verdict of every check is kept
//! with its reason, so a failing service shows exactly what it got wrong.
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Read;
use std::time::Duration;

fn get() -> String {
    "GET".to_string()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    pub name: String,
    #[serde(default = "get")]
    pub method: String,
    pub path: String,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub body: String,
    #[serde(default)]
    pub expect: Expect,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    pub status: Option<u16>,
    pub content_type: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    pub body: Option<String>,
    #[serde(default)]
    pub body_contains: OneOrMany,
    pub json: Option<toml::Value>,
    pub json_subset: Option<toml::Value>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    #[default]
    None,
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    fn items(&self) -> Vec<&str> {
        match self {
            OneOrMany::None => vec![],
            OneOrMany::One(s) => vec![s.as_str()],
            OneOrMany::Many(v) => v.iter().map(|s| s.as_str()).collect(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CheckResult {
    pub name: String,
    pub passed: bool,
    /// Why it failed (empty when it passed).
    pub reason: String,
}

/// What came back from the service.
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// Runs the checks on a thread of their own, so that a Ctrl-C ends the wait within a tenth of a second
/// (a check may wait 10 s on a stuck service). None when `stop` was set first.
pub fn run_checks_until(
    base_url: &str,
    checks: &[Check],
    stop: &std::sync::atomic::AtomicBool,
) -> Option<Vec<CheckResult>> {
    let (url, list) = (base_url.to_string(), checks.to_vec());
    let worker = std::thread::spawn(move || run_checks(&url, &list));
    while !worker.is_finished() {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // A panic in the checks is a bug to see, not an empty list that would read as "nothing failed".
    Some(worker.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
}

pub fn run_checks(base_url: &str, checks: &[Check]) -> Vec<CheckResult> {
    // Each check waits at most 10 s for its whole answer: a check that hangs fails, the next one runs.
    let within = Duration::from_secs(10);
    let agent = crate::http_client::builder(within).timeout(within).redirects(0).build();
    checks
        .iter()
        .map(|c| {
            let reason = match fetch(&agent, base_url, c) {
                Ok(answer) => judge(&c.expect, &answer).err().unwrap_or_default(),
                Err(e) => format!("request failed: {e}"),
            };
            CheckResult { name: c.name.clone(), passed: reason.is_empty(), reason }
        })
        .collect()
}

fn fetch(agent: &ureq::Agent, base_url: &str, c: &Check) -> Result<Answer, String> {
    let mut req = agent.request(&c.method, &format!("{base_url}{}", c.path));
    for (k, v) in &c.headers {
        req = req.set(k, v);
    }
    let resp = match req.send_bytes(c.body.as_bytes()) {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => return Err(e.to_string()),
    };
    let status = resp.status();
    let headers =
        resp.headers_names().into_iter().filter_map(|n| resp.header(&n).map(|v| (n.clone(), v.to_string()))).collect();
    let mut bytes = Vec::new();
    resp.into_reader().take(16 << 20).read_to_end(&mut bytes).map_err(|e| format!("reading body: {e}"))?;
    Ok(Answer { status, headers, body: String::from_utf8_lossy(&bytes).into_owned() })
}

/// Returns the first mismatch as a one-line reason.
pub fn judge(e: &Expect, a: &Answer) -> Result<(), String> {
    if let Some(s) = e.status {
        if a.status != s {
            return Err(format!("status {} (expected {s}); body: {}", a.status, snippet(&a.body)));
        }
    }
    if let Some(ct) = &e.content_type {
        let got = a.header("content-type").unwrap_or("");
        let media = got.split(';').next().unwrap_or("").trim();
        if !media.eq_ignore_ascii_case(ct) {
            return Err(format!("content-type {got:?} (expected {ct})"));
        }
    }
    for (k, v) in &e.headers {
        match a.header(k) {
            Some(got) if got == v => {}
            got => return Err(format!("header {k}: {got:?} (expected {v:?})")),
        }
    }
    if let Some(b) = &e.body {
        if &a.body != b {
            return Err(format!("body {} (expected {})", snippet(&a.body), snippet(b)));
        }
    }
    for needle in e.body_contains.items() {
        if !a.body.contains(needle) {
            return Err(format!("body does not contain {needle:?}: {}", snippet(&a.body)));
        }
    }
    if e.json.is_some() || e.json_subset.is_some() {
        let got: Value =
            serde_json::from_str(&a.body).map_err(|err| format!("body is not JSON ({err}): {}", snippet(&a.body)))?;
        if let Some(want) = &e.json {
            let want = serde_json::to_value(want).map_err(|e| e.to_string())?;
            if !json_equal(&got, &want) {
                return Err(format!("JSON {} (expected {})", snippet(&got.to_string()), snippet(&want.to_string())));
            }
        }
        if let Some(want) = &e.json_subset {
            let want = serde_json::to_value(want).map_err(|e| e.to_string())?;
            if let Err(at) = json_subset(&got, &want, "$") {
                return Err(format!("JSON differs at {at}: {}", snippet(&got.to_string())));
            }
        }
    }
    Ok(())
}

/// Equality where integers and floats of the same value match (TOML writes 50 and 50.0 differently).
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

/// Objects: every wanted key present with a matching value (recursively); arrays and scalars: equal.
fn json_subset(got: &Value, want: &Value, at: &str) -> Result<(), String> {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            for (k, wv) in w {
                let path = format!("{at}.{k}");
                match g.get(k) {
                    Some(gv) => json_subset(gv, wv, &path)?,
                    None => return Err(format!("{path} (missing)")),
                }
            }
            Ok(())
        }
        (Value::Array(g), Value::Array(w)) if g.len() == w.len() => {
            for (i, (gv, wv)) in g.iter().zip(w).enumerate() {
                json_subset(gv, wv, &format!("{at}[{i}]"))?;
            }
            Ok(())
        }
        _ if json_equal(got, want) => Ok(()),
        _ => Err(format!("{at} (got {}, expected {})", snippet(&got.to_string()), snippet(&want.to_string()))),
    }
}

fn snippet(s: &str) -> String {
    let one_line = s.replace(['\n', '\r'], " ");
    if one_line.chars().count() > 160 {
        format!("{:?}…", one_line.chars().take(160).collect::<String>())
    } else {
        format!("{one_line:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, ct: &str, body: &str) -> Answer {
        Answer { status, headers: vec![("Content-Type".into(), ct.into())], body: body.into() }
    }

    fn expect(toml_text: &str) -> Expect {
        toml::from_str(toml_text).unwrap()
    }

    #[test]
    fn status_content_type_and_body() {
        let e = expect("status = 200\ncontent_type = \"text/plain\"\nbody = \"Hello, World!\"");
        assert!(judge(&e, &answer(200, "text/plain; charset=utf-8", "Hello, World!")).is_ok());
        assert!(judge(&e, &answer(404, "text/plain", "Hello, World!")).unwrap_err().contains("status 404"));
        assert!(judge(&e, &answer(200, "text/html", "Hello, World!")).unwrap_err().contains("content-type"));
        assert!(judge(&e, &answer(200, "text/plain", "Hello")).unwrap_err().contains("body"));
    }

    #[test]
    fn json_equality_ignores_key_order_and_number_form() {
        let e = expect("json = { message = \"hi\", n = 50.0 }");
        assert!(judge(&e, &answer(200, "application/json", r#"{"n":50,"message":"hi"}"#)).is_ok());
        assert!(judge(&e, &answer(200, "application/json", r#"{"n":50,"message":"hi","x":1}"#)).is_err());
        assert!(judge(&e, &answer(200, "application/json", "not json")).unwrap_err().contains("not JSON"));
    }

    #[test]
    fn json_subset_names_the_path() {
        let e = expect("json_subset = { a = { b = 1 } }");
        assert!(judge(&e, &answer(200, "application/json", r#"{"a":{"b":1,"c":2},"d":3}"#)).is_ok());
        let err = judge(&e, &answer(200, "application/json", r#"{"a":{"b":2}}"#)).unwrap_err();
        assert!(err.contains("$.a.b"), "{err}");
    }

    #[test]
    fn body_contains_all_items() {
        let e = expect("body_contains = [\"City\", \"Multi\"]");
        assert!(judge(&e, &answer(200, "x", "CityResponse MultiCityResponse")).is_ok());
        assert!(judge(&e, &answer(200, "x", "CityResponse")).is_err());
    }
}

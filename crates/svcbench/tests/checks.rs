//! `svcbench check` on the bundled services of each scenario: build, start (with the scenario's real
//! dependencies), run the conformance checks. Every check must pass, and every service must listen only on
//! the `{host}` it is given (no warning about its listening addresses). The Locations services share one
//! OpenSearch, given running as a user would share theirs (starting and loading one takes about a minute).
//! `bench/checks.sh` checks every bundled service, those left out here included.
mod common;
use common::*;

/// Checked by `bench/checks.sh`, not here: nothing else in the suite runs them and their cold build takes
/// minutes of the suite's time on a 2-CPU machine (Rocket 0.5 with its store client: about 4.5 minutes).
const CHECKED_IN_BENCH: &[&str] = &["locations/rust-rocket"];

fn services_of(scenario: &str) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(repo().join("services").join(scenario))
        .map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.join("svcbench.toml").exists()).collect())
        .unwrap_or_default();
    v.retain(|p| !CHECKED_IN_BENCH.iter().any(|b| p.ends_with(b)));
    v.sort();
    v
}

fn check_all(scenario: &str, at_least: usize, extra: &[&str]) {
    let services = services_of(scenario);
    assert!(services.len() >= at_least, "{scenario}: expected at least {at_least} services, found {services:?}");
    let tmp = tempfile::tempdir().unwrap();
    let mut failed = Vec::new();
    for s in &services {
        let mut args = vec!["check", s.to_str().unwrap(), "--work-dir", tmp.path().to_str().unwrap()];
        args.extend(extra);
        let out = svcbench(&args, &repo());
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        // svcbench's warning when a service listens elsewhere than on {host} (e.g. on every interface).
        let misplaced: Vec<&str> =
            stderr.lines().filter(|l| l.contains("WARNING") && l.contains("listens on")).collect();
        if !misplaced.is_empty() {
            failed.push(format!("{}: {}", s.display(), misplaced.join("; ")));
        }
        if !out.status.success() || stdout.contains("FAIL") {
            failed.push(format!(
                "{}: {} {}",
                s.display(),
                stdout.lines().filter(|l| l.starts_with("FAIL")).collect::<Vec<_>>().join("; "),
                stderr.lines().last().unwrap_or("")
            ));
        }
    }
    assert!(failed.is_empty(), "failing services:\n{}", failed.join("\n"));
}

#[test]
fn hello_services_pass_their_checks() {
    check_all("hello", 3, &[]);
    assert_no_leftovers("services/hello/");
}

#[test]
fn users_services_pass_their_checks() {
    check_all("users", 3, &[]);
    assert_no_leftovers("services/users/");
}

#[test]
fn upstream_services_pass_their_checks() {
    check_all("upstream", 7, &[]);
    assert_no_leftovers("services/upstream/");
}

#[test]
fn locations_services_pass_their_checks() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut up, url) = opensearch_up(tmp.path());
    check_all("locations", 4, &["--dep", &format!("opensearch={url}")]);
    assert!(
        up.interrupt(std::time::Duration::from_secs(60)).is_some(),
        "svcbench up did not stop on Ctrl-C: {}",
        std::fs::read_to_string(tmp.path().join("up.err")).unwrap_or_default()
    );
    assert_no_leftovers("opensearch");
    assert_no_leftovers("services/locations/");
}

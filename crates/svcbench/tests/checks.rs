//! `svcbench check` on every bundled service of each scenario: build, start (with the scenario's real
//! dependencies), run the conformance checks. Every check must pass, and every service must listen only on
//! the `{host}` it is given (no warning about its listening addresses).
mod common;
use common::*;

fn services_of(scenario: &str) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(repo().join("services").join(scenario))
        .map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.join("svcbench.toml").exists()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

fn check_all(scenario: &str, at_least: usize) {
    let services = services_of(scenario);
    assert!(services.len() >= at_least, "{scenario}: expected at least {at_least} services, found {services:?}");
    let tmp = tempfile::tempdir().unwrap();
    let mut failed = Vec::new();
    for s in &services {
        let out = svcbench(&["check", s.to_str().unwrap(), "--work-dir", tmp.path().to_str().unwrap()], &repo());
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
                "{}: {}",
                s.display(),
                stdout.lines().filter(|l| l.starts_with("FAIL")).collect::<Vec<_>>().join("; ")
            ));
        }
    }
    assert!(failed.is_empty(), "failing services:\n{}", failed.join("\n"));
    assert_no_leftovers(&format!("services/{scenario}/"));
}

#[test]
fn hello_services_pass_their_checks() {
    check_all("hello", 3);
}

#[test]
fn users_services_pass_their_checks() {
    check_all("users", 3);
}

#[test]
fn upstream_services_pass_their_checks() {
    check_all("upstream", 7);
}

#[test]
fn locations_services_pass_their_checks() {
    check_all("locations", 4);
}

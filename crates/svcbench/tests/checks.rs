//! `svcbench check` on the bundled upstream services: build, start with the mock upstream, run the
//! conformance checks. Every check must pass, and every service must listen only on the `{host}` it is
//! given (no warning about its listening addresses). The other scenarios' services are checked where the
//! suite runs them anyway: the hello services by tests/hello.rs, the users services by the users replay and
//! the Locations services by the Locations tests of tests/scenarios.rs (each run passes the checks first).
//! `bench/checks.sh` checks every bundled service, those the suite does not build included.
mod common;
use common::*;

fn services_of(scenario: &str) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(repo().join("services").join(scenario))
        .map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.join("svcbench.toml").exists()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn upstream_services_pass_their_checks() {
    let services = services_of("upstream");
    assert!(services.len() >= 7, "expected at least 7 upstream services, found {services:?}");
    let tmp = tempfile::tempdir().unwrap();
    let mut failed = Vec::new();
    for s in &services {
        let args = ["check", s.to_str().unwrap(), "--work-dir", tmp.path().to_str().unwrap()];
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
    assert_no_leftovers("services/upstream/");
}

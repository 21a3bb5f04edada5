//! `svcbench check` on the bundled upstream services: build, start with the mock upstream, run the
//! conformance checks. Every check must pass, `check`'s own among them: every service listens only on the
//! `{host}` it is given. The other scenarios' services are checked where the
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
        // `check` fails a service that listens elsewhere than on {host} (e.g. on every interface).
        if !out.status.success() || stdout.contains("FAIL") || !stdout.contains("PASS  listens only on") {
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

#[test]
fn check_and_up_give_up_on_a_silent_service_at_the_startup_timeout_asked() {
    // A service that starts and never listens: without --startup-timeout both would wait the default 2
    // minutes before saying so.
    let silent = fixture("silent");
    let tmp = tempfile::tempdir().unwrap();
    for cmd in ["check", "up"] {
        let started = std::time::Instant::now();
        let args =
            [cmd, silent.to_str().unwrap(), "--startup-timeout", "3s", "--work-dir", tmp.path().to_str().unwrap()];
        let out = svcbench(&args, &repo());
        let took = started.elapsed();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{cmd}: a service that never answers was started, so 1 (docs/exit-codes.md): {err}"
        );
        assert!(err.contains("test-silent did not answer on / within 3s"), "{cmd}: {err}");
        assert!(err.contains("testservice silent: never listens"), "{cmd}: the log's last lines: {err}");
        assert!(took < std::time::Duration::from_secs(60), "{cmd} took {took:?}");
        assert_no_leftovers("testservice.py silent");
    }
}

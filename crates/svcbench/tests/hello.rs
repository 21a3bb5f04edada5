//! `svcbench run` on the bundled `hello` services with the `quick` profile, 2 runs each, and the figures
//! it stores. The store is kept at results/test-hello.db for the report tests and for a person to read.
mod common;
use common::*;

pub fn hello_services() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(repo().join("services/hello"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("svcbench.toml").exists())
        .map(|p| p.display().to_string())
        .collect();
    v.sort();
    v
}

#[test]
fn quick_run_of_hello_services_stores_sane_figures() {
    let services = hello_services();
    assert!(services.len() >= 3, "expected rust-actix, go-nethttp and a Scala service, got {services:?}");
    let results = repo().join("results");
    std::fs::create_dir_all(&results).unwrap();
    let dbp = results.join("test-hello.db");
    let _ = std::fs::remove_file(&dbp);
    let mut args = vec!["run"];
    args.extend(services.iter().map(|s| s.as_str()));
    args.extend(["--profile", "quick", "--runs", "2", "--db", dbp.to_str().unwrap()]);
    let out = svcbench(&args, &repo());
    assert!(out.status.success(), "svcbench run failed");
    let s = stored(&dbp);
    let n = services.len();
    assert_eq!(s.runs().filter(|r| r.status == "completed").count(), 2 * n);
    // Interleaved: A1 B1 C1 A2 B2 C2.
    let mut runs: Vec<&Run> = s.runs().collect();
    runs.sort_by_key(|r| r.id);
    let order: Vec<i64> = runs.iter().map(|r| r.run_index).collect();
    assert_eq!(order, [vec![1; n], vec![2; n]].concat());
    for r in &runs {
        let svc = &r.service;
        let startup = r.startup_ms.expect("startup stored");
        let (passed, failed) = (r.checks_passed.expect("checks stored"), r.checks_failed.expect("checks stored"));
        let (idle, cpu) = (r.idle_mem_mib.expect("idle memory stored"), r.total_cpu_s.expect("total CPU stored"));
        assert!(startup > 0.0 && startup < 10_000.0, "{svc}: startup {startup} ms");
        assert_eq!(failed, 0, "{svc}: failed checks");
        // Only on the {host} it was given (tests/checks.rs leaves the hello services to this test).
        assert!(r.listen_addrs.is_some() && r.listen_warning.is_none(), "{svc}: {:?}", r.listen_warning);
        assert!(passed >= 3, "{svc}: {passed} checks passed");
        assert!(idle > 0.0, "{svc}: idle memory");
        assert!(cpu > 0.0, "{svc}: total CPU");
    }
    assert_eq!(s.steps().count(), 2 * n * 4, "quick has 4 steps");
    assert!(min_present(s.steps().map(|st| Some(st.success_rps))) > 0.0);
    assert!(min_present(s.steps().map(|st| st.cpu_s)) > 0.0);
    assert!(min_present(s.steps().map(|st| st.mem_peak_mib)) > 0.0);
    assert!(min_present(s.steps().map(|st| st.p50)) > 0.0);
    assert_eq!(s.steps().map(|st| st.requests_err).sum::<i64>(), 0, "hello services answer every request");
    assert!(s.services().filter_map(|sv| sv.artifact_bytes).min().unwrap_or(-1) > 0);
    assert_eq!(
        s.runs().filter(|r| r.stopped_gracefully == Some(true)).count(),
        2 * n,
        "every hello service stops on SIGTERM"
    );
    assert_no_leftovers("services/hello/");
}

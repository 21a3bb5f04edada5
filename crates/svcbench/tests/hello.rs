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
    let c = db(&dbp);
    let n = services.len() as i64;
    assert_eq!(i64_of(&c, "SELECT COUNT(*) FROM run WHERE status = 'completed'"), 2 * n);
    // Interleaved: A1 B1 C1 A2 B2 C2.
    let order: Vec<i64> = c
        .prepare("SELECT run_index FROM run ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(|x| x.unwrap())
        .collect();
    assert_eq!(order, [vec![1; services.len()], vec![2; services.len()]].concat());
    let mut stmt = c
        .prepare("SELECT service, startup_ms, checks_passed, checks_failed, idle_mem_mib, total_cpu_s FROM run")
        .unwrap();
    let rows: Vec<(String, f64, i64, i64, f64, f64)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)))
        .unwrap()
        .map(|x| x.unwrap())
        .collect();
    for (svc, startup, passed, failed, idle, cpu) in rows {
        assert!(startup > 0.0 && startup < 10_000.0, "{svc}: startup {startup} ms");
        assert_eq!(failed, 0, "{svc}: failed checks");
        assert!(passed >= 3, "{svc}: {passed} checks passed");
        assert!(idle > 0.0, "{svc}: idle memory");
        assert!(cpu > 0.0, "{svc}: total CPU");
    }
    assert_eq!(i64_of(&c, "SELECT COUNT(*) FROM step"), 2 * n * 4, "quick has 4 steps");
    assert!(f64_of(&c, "SELECT MIN(success_rps) FROM step") > 0.0);
    assert!(f64_of(&c, "SELECT MIN(cpu_s) FROM step") > 0.0);
    assert!(f64_of(&c, "SELECT MIN(mem_peak_mib) FROM step") > 0.0);
    assert!(f64_of(&c, "SELECT MIN(p50) FROM step") > 0.0);
    assert_eq!(i64_of(&c, "SELECT SUM(requests_err) FROM step"), 0, "hello services answer every request");
    assert!(i64_of(&c, "SELECT MIN(artifact_bytes) FROM service") > 0);
    assert_eq!(
        i64_of(&c, "SELECT COUNT(*) FROM run WHERE stopped_gracefully = 1"),
        2 * n,
        "every hello service stops on SIGTERM"
    );
    assert_no_leftovers("services/hello/");
}

//! Short real runs of the users, upstream and locations scenarios with their real dependencies
//! (SQLite file, the mock upstream, OpenSearch), checking the figures each scenario exists for.
mod common;
use common::*;

/// `svcbench run` from `cwd` of bundled services (`users/go-nethttp`) or service folders given by an
/// absolute path (joining an absolute path replaces the folder).
fn run_in(cwd: &std::path::Path, services: &[&str], extra: &[&str]) -> std::process::Output {
    let paths: Vec<String> = services.iter().map(|s| repo().join("services").join(s).display().to_string()).collect();
    let mut args = vec!["run"];
    args.extend(paths.iter().map(String::as_str));
    args.extend(extra);
    // One run each keeps the suite short; the scenarios' figures are checked per run.
    if !extra.contains(&"--runs") {
        args.extend(["--runs", "1"]);
    }
    svcbench(&args, cwd)
}

fn run(services: &[&str], extra: &[&str], dbp: &std::path::Path) -> std::process::Output {
    run_in(&repo(), services, &[extra, &["--db", dbp.to_str().unwrap()]].concat())
}

#[test]
fn users_replay_gives_seed_002_figures() {
    let tmp = tempfile::tempdir().unwrap();
    let dbp = tmp.path().join("u.db");
    // A relative --db, as users type it: the database path handed to the services must still be absolute.
    let out = run_in(
        tmp.path(),
        &["users/go-nethttp", "users/go-nethttp-upx", "users/kotlin-http4k"],
        &["--profile", "replay", "--step-duration", "3s", "--db", "u.db"],
    );
    assert!(out.status.success());
    let c = db(&dbp);
    // Three replays per run: the conflict path, the lookup, the realistic mix.
    assert_eq!(i64_of(&c, "SELECT COUNT(*) FROM step"), 9);
    assert_eq!(
        i64_of(&c, "SELECT COUNT(*) FROM step WHERE mix = 'add-conflict' AND requests_err = 0 AND requests_ok > 100"),
        3,
        "409s count as served in the conflict replay"
    );
    assert_eq!(
        i64_of(
            &c,
            "SELECT COUNT(*) FROM step WHERE mix = 'add-conflict' AND json_extract(status_counts, '$.\"409\"') > 0"
        ),
        3
    );
    assert!(f64_of(&c, "SELECT MIN(rss_peak_mib) FROM step") > 0.0);
    assert!(i64_of(&c, "SELECT MIN(artifact_bytes) FROM service") > 0);
    // The UPX variant is smaller than the plain binary it compresses.
    assert!(
        i64_of(&c, "SELECT artifact_bytes FROM service WHERE name LIKE '%upx%'")
            < i64_of(&c, "SELECT artifact_bytes FROM service WHERE name = 'users-go-nethttp'")
    );
    assert!(f64_of(&c, "SELECT MIN(value) FROM run_figure WHERE name = 'db_bytes'") > 0.0, "database size recorded");
    assert_eq!(i64_of(&c, "SELECT COUNT(*) FROM service WHERE refuses_bad_dependency = 1"), 3);
    assert_no_leftovers("services/users/");
}

#[test]
fn slow_upstream_breaks_the_blocking_service_but_not_the_async_one() {
    // Seed 004's finding: Spring MVC's 200 threads carry 100 req/s at a 2 s upstream delay but not at 4 s
    // (400 requests waiting for 200 threads); Vert.x keeps answering.
    let tmp = tempfile::tempdir().unwrap();
    let dbp = tmp.path().join("slow.db");
    let out = run(&["upstream/java-spring-mvc", "upstream/java-vertx"], &["--profile", "slow-upstream-short"], &dbp);
    assert!(out.status.success());
    let c = db(&dbp);
    let ratio = |svc: &str, delay: i64| {
        f64_of(
            &c,
            &format!(
                "SELECT 1.0 * s.requests_ok / s.open_intended FROM step s JOIN run r ON r.id = s.run_id
             WHERE r.service = 'upstream-{svc}' AND s.upstream_delay_ms = {delay}"
            ),
        )
    };
    assert!(ratio("java-spring-mvc", 2000) >= 0.95, "Spring MVC copes at 2 s: {}", ratio("java-spring-mvc", 2000));
    assert!(ratio("java-spring-mvc", 4000) < 0.9, "Spring MVC fails at 4 s: {}", ratio("java-spring-mvc", 4000));
    assert!(ratio("java-vertx", 2000) >= 0.95 && ratio("java-vertx", 4000) >= 0.95, "Vert.x keeps answering");
    assert_eq!(i64_of(&c, "SELECT COUNT(*) FROM run WHERE status = 'completed'"), 2);
    // Every answer needs an upstream call (no caching): the mock counted at least as many calls.
    assert_eq!(i64_of(&c, "SELECT COUNT(*) FROM step WHERE dependency_calls < requests_ok"), 0);
    assert!(f64_of(&c, "SELECT MIN(p50) FROM step") >= 2000.0, "every answer waits for the upstream's delay");
    // The open model waits for the answers of every request it sent: none is left unaccounted for.
    assert_eq!(i64_of(&c, "SELECT COALESCE(SUM(in_flight_at_end), -1) FROM step"), 0);
    assert!(f64_of(&c, "SELECT MIN(dep_cpu_s) FROM step") > 0.0, "the mock upstream's CPU is measured");
    // The report shows it: an X for Spring MVC at 4 s in the per-delay table, none for Vert.x.
    let md = svcbench(&["report", "--db", dbp.to_str().unwrap(), "-o", "-", "--format", "markdown"], &repo());
    let text = String::from_utf8_lossy(&md.stdout);
    let table = text.split("### Average response time (ms) per upstream delay").nth(1).expect("the per-delay table");
    let row =
        |svc: &str| table.lines().find(|l| l.starts_with(&format!("| upstream-{svc} |"))).unwrap_or("").to_string();
    let cells =
        |svc: &str| row(svc).split('|').map(|c| c.trim().to_string()).filter(|c| !c.is_empty()).collect::<Vec<_>>();
    assert_eq!(cells("java-spring-mvc").last().map(String::as_str), Some("**X**"), "{}", row("java-spring-mvc"));
    assert_eq!(cells("java-vertx").len(), 3, "{}", row("java-vertx"));
    assert!(!row("java-vertx").contains('X'), "{}", row("java-vertx"));
    assert_no_leftovers("services/upstream/");
}

#[test]
fn ktor_clients_default_pool_caps_the_service_and_the_pool1000_variant_lifts_it() {
    // Today's Ktor CIO client holds at most 100 connections per route. 75 req/s behind a 2 s upstream need
    // 150 calls at once: the base service queues the other 50 for a free connection (its median grows far
    // past the delay), the variant with a pool of 1,000 answers them all in about the delay, as seed 004's
    // Ktor did. The rate is kept low because on one CPU this JVM service spends most of it on 150 pending
    // calls (its Dispatchers.IO threads): at 300 calls in flight the CPU, not the pool, would decide.
    let tmp = tempfile::tempdir().unwrap();
    let prof = tmp.path().join("r75.toml");
    std::fs::write(
        &prof,
        "name = \"r75\"\nrequest_timeout = \"10s\"\n[[step]]\nrate = 75\nupstream_delay_ms = 2000\nduration = \"12s\"\n",
    )
    .unwrap();
    let dbp = tmp.path().join("ktor.db");
    let services = ["upstream/kotlin-ktor-cio", "upstream/kotlin-ktor-cio@pool1000"];
    let out = run(&services, &["--profile", prof.to_str().unwrap()], &dbp);
    assert!(out.status.success());
    let c = db(&dbp);
    let step = |svc: &str| {
        let q = |col: &str| {
            f64_of(&c, &format!("SELECT {col} FROM step s JOIN run r ON r.id = s.run_id WHERE r.service = '{svc}'"))
        };
        (q("1.0 * s.requests_ok / s.open_intended"), q("s.p50"))
    };
    let ((_, base_p50), (pool_ok, pool_p50)) =
        (step("upstream-kotlin-ktor-cio"), step("upstream-kotlin-ktor-cio@pool1000"));
    assert!(pool_ok >= 0.95, "a pool of 1,000 answers every call: {pool_ok}");
    assert!(pool_p50 < 3000.0, "a pool of 1,000 answers in about the 2 s delay: median {pool_p50} ms");
    assert!(
        base_p50 > 3500.0 && base_p50 > pool_p50 + 1000.0,
        "the default pool of 100 queues calls for a connection: median {base_p50} ms (pool of 1,000: {pool_p50} ms)"
    );
    assert_no_leftovers("services/upstream/");
}

/// docs/outside-implementation.md's worked example, made real: the manifest from the page, in a folder
/// outside the checkout, pointing at a copy of the bundled Actix binary.
fn outside_implementation(tmp: &std::path::Path) -> std::path::PathBuf {
    let actix = repo().join("services/locations/rust-actix");
    let built = std::process::Command::new("cargo")
        .args(["build", "--release", "--locked"])
        .current_dir(&actix)
        .status()
        .unwrap();
    assert!(built.success());
    let bin = tmp.join("opt/bin/locations-server");
    std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
    std::fs::copy(actix.join("target/release/locations-actix"), &bin).unwrap();
    let doc = std::fs::read_to_string(repo().join("docs/outside-implementation.md")).unwrap();
    let manifest = doc.split("```toml\n").nth(1).unwrap().split("```").next().unwrap();
    assert!(manifest.contains("/opt/fast-locations/bin/locations-server"));
    let dir = tmp.join("bench/fast-locations");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("svcbench.toml"),
        manifest.replace("/opt/fast-locations/bin/locations-server", bin.to_str().unwrap()),
    )
    .unwrap();
    dir
}

#[test]
fn locations_quick_run_with_opensearch() {
    let tmp = tempfile::tempdir().unwrap();
    let dbp = tmp.path().join("loc.db");
    let outside = outside_implementation(tmp.path());
    // Run from the outside folder: the bundled scenario and profile are found through SVCBENCH_HOME.
    let out = run_in(
        &outside,
        &["locations/rust-actix", "locations/kotlin-ktor", outside.to_str().unwrap()],
        &["--profile", "quick", "--db", dbp.to_str().unwrap()],
    );
    assert!(out.status.success());
    let c = db(&dbp);
    assert_eq!(i64_of(&c, "SELECT COUNT(*) FROM run WHERE status = 'completed' AND checks_failed = 0"), 3);
    assert_eq!(i64_of(&c, "SELECT COUNT(*) FROM run WHERE service = 'locations-fast' AND checks_passed >= 60"), 1);
    assert!(i64_of(&c, "SELECT artifact_bytes FROM service WHERE name = 'locations-fast'") > 1_000_000);
    assert!(f64_of(&c, "SELECT MIN(success_rps) FROM step") > 0.0);
    assert!(f64_of(&c, "SELECT MIN(dep_cpu_s) FROM step") > 0.0, "the store's CPU is measured beside the service's");
    // At 64 connections the store and the generator fill their shared CPU while Actix idles: the step is
    // marked, so nobody reads the store's ceiling as the service's.
    assert_eq!(
        i64_of(&c, "SELECT s.dep_saturated FROM step s JOIN run r ON r.id = s.run_id WHERE r.service = 'locations-rust-actix' AND s.connections = 64"),
        1
    );
    assert!(
        text_of(&c, "SELECT s.flags FROM step s JOIN run r ON r.id = s.run_id WHERE r.service = 'locations-rust-actix' AND s.connections = 64")
            .contains("dependency_saturated"),
        "the saturated step carries its reason"
    );
    // The store was warmed through the first service before any run, and that is on record.
    let warmup = text_of(&c, "SELECT warmup FROM session");
    assert!(warmup.contains("\"windows\":["), "{warmup}");
    assert_eq!(i64_of(&c, "SELECT COUNT(*) FROM service WHERE refuses_bad_dependency = 1"), 3);
    assert_no_leftovers("opensearch");
    assert_no_leftovers("services/locations/");
    assert_no_leftovers("locations-server");
}

/// Seed 001's finding that wrk could not show: a blocking server with a fixed pool of workers and keep-alive
/// on serves only as many keep-alive connections as it has workers; the rest get no answer at all. With
/// `Connection: close` every answer frees its worker and nothing starves. (Against a running store: see
/// `locations_against_a_running_store`.)
fn blocking_server_with_keepalive_starves_connections_beyond_its_workers(tmp: &std::path::Path, url: &str) {
    let dbp = tmp.join("ka.db");
    let prof = tmp.join("eight.toml");
    std::fs::write(&prof, "name = \"eight\"\n[[step]]\nconnections = 8\nduration = \"3s\"\n").unwrap();
    let out = run(
        &["locations/rust-hyper010-blocking@w4-keepalive", "locations/rust-hyper010-blocking@w4"],
        &["--profile", prof.to_str().unwrap(), "--dep", &format!("opensearch={url}")],
        &dbp,
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let c = db(&dbp);
    let of = |variant: &str, col: &str| {
        i64_of(&c, &format!(
            "SELECT s.{col} FROM step s JOIN run r ON r.id = s.run_id WHERE r.service = 'locations-rust-hyper010-blocking@{variant}'"
        ))
    };
    assert_eq!(of("w4-keepalive", "conn_starved"), 4, "8 keep-alive connections, 4 workers");
    assert_eq!(of("w4", "conn_starved"), 0, "Connection: close frees the workers");
    let flags = |variant: &str| {
        text_of(&c, &format!(
        "SELECT s.flags FROM step s JOIN run r ON r.id = s.run_id WHERE r.service = 'locations-rust-hyper010-blocking@{variant}'"
    ))
    };
    assert!(flags("w4-keepalive").contains("starved_connections"));
    assert!(!flags("w4").contains("starved_connections"), "{}", flags("w4"));
    // The stand-in is a real Locations service: every conformance check, and it refuses a wrong store address.
    assert_eq!(i64_of(&c, "SELECT COUNT(*) FROM run WHERE checks_passed >= 60 AND checks_failed = 0"), 2);
    assert_eq!(i64_of(&c, "SELECT COUNT(*) FROM service WHERE refuses_bad_dependency = 1"), 2);
    assert_no_leftovers("locations-hyper010");
}

/// Two tests against one store svcbench did not start for the run (`--dep opensearch=URL`), kept up by
/// `svcbench up` as a user's own node would be: starting and loading a store takes about a minute.
#[test]
fn locations_against_a_running_store() {
    use std::time::Duration;
    let tmp = tempfile::tempdir().unwrap();
    let (mut up, url) = opensearch_up(tmp.path());
    a_running_opensearch_given_by_url_is_checked_completed_and_measured(tmp.path(), &url);
    blocking_server_with_keepalive_starves_connections_beyond_its_workers(tmp.path(), &url);
    assert!(
        up.interrupt(Duration::from_secs(60)).is_some(),
        "svcbench up did not stop on Ctrl-C: {}",
        std::fs::read_to_string(tmp.path().join("up.err")).unwrap_or_default()
    );
    assert_no_leftovers("opensearch");
    assert_no_leftovers("services/locations/");
}

/// The run loads what is missing from the given store, measures the node's CPU through its statistics API,
/// refuses with `--dep-readonly` what it would have to load, and stops nothing of it.
fn a_running_opensearch_given_by_url_is_checked_completed_and_measured(tmp: &std::path::Path, url: &str) {
    // One index gone: the run must put it back.
    if let Err(e) = ureq::delete(&format!("{url}/region_v1")).call() {
        panic!("cannot delete region_v1 from the store of svcbench up: {e}");
    }
    let prof = tmp.join("c1.toml");
    std::fs::write(&prof, "name = \"c1\"\n[[step]]\nconnections = 1\nduration = \"2s\"\n").unwrap();
    let (p, dbp, ro) = (prof.to_str().unwrap(), tmp.join("given.db"), tmp.join("ro.db"));

    let refused = run_in(
        &repo(),
        &["locations/rust-actix"],
        &["--profile", p, "--db", ro.to_str().unwrap(), "--dep", &format!("opensearch={url}"), "--dep-readonly"],
    );
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success() && said.contains("--dep-readonly") && said.contains("region_v1"), "{said}");

    let out = run_in(
        &repo(),
        &["locations/rust-actix"],
        &["--profile", p, "--db", dbp.to_str().unwrap(), "--dep", &format!("opensearch={url}")],
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("using the running OpenSearch") && said.contains("created and loaded region_v1"), "{said}");
    assert!(!said.contains("starting dependency `opensearch`"), "no second store: {said}");
    let c = db(&dbp);
    let (passed, failed) = (i64_of(&c, "SELECT checks_passed FROM run"), i64_of(&c, "SELECT checks_failed FROM run"));
    assert!(passed >= 60 && failed == 0, "{passed} checks passed, {failed} failed: {said}");
    assert!(f64_of(&c, "SELECT dep_cpu_s FROM step") > 0.0, "the node's CPU, from its statistics: {said}");
    // The run stopped nothing of the given store: it still answers, with every index back.
    let count = |i: &str| -> u64 {
        let r = ureq::get(&format!("{url}/{i}/_count")).call().unwrap();
        let v: serde_json::Value = serde_json::from_reader(r.into_reader()).unwrap();
        v["count"].as_u64().unwrap()
    };
    assert!(count("region_v1") > 0 && count("city_v1") > 0);
    // A bad --dep is refused before anything is built.
    let bad = run_in(
        &repo(),
        &["locations/rust-actix"],
        &["--profile", p, "--db", ro.to_str().unwrap(), "--dep", "upstream=http://x:1"],
    );
    let said = String::from_utf8_lossy(&bad.stderr);
    assert!(said.contains("cannot be given by URL"), "{said}");
}

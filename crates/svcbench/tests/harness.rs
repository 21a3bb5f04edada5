//! The harness under real limits, with purpose-built services (tests/fixtures): CPU quota, OOM kill,
//! Ctrl-C mid-step, a machine without cgroup write access, and the lifecycle checks.
mod common;
use common::*;
use std::time::{Duration, Instant};

fn quick_profile(dir: &std::path::Path, steps: usize, secs: u32) -> std::path::PathBuf {
    let p = dir.join("p.toml");
    std::fs::write(&p, format!("name = \"t\"\n[[step]]\nconnections = 2\nduration = \"{secs}s\"\nrepeat = {steps}\n"))
        .unwrap();
    p
}

#[test]
fn cpu_quota_holds_a_burner_to_half_a_cpu() {
    let tmp = tempfile::tempdir().unwrap();
    let dbp = tmp.path().join("s.db");
    let prof = quick_profile(tmp.path(), 2, 2);
    let out = run_fixtures(tmp.path(), &["burner"], &prof, &dbp, &["--cpus", "0.5"]);
    assert!(out.status.success());
    let s = stored(&dbp);
    let cpu_per_wall = || s.steps().map(|st| st.cpu_s.map(|c| c / st.duration_s));
    let per_wall = max_present(cpu_per_wall()).unwrap_or(f64::NAN);
    let min_per_wall = min_present(cpu_per_wall());
    assert!(per_wall <= 0.55, "burner used {per_wall} CPU-s per wall second under --cpus 0.5");
    assert!(min_per_wall >= 0.35, "burner should burn close to its quota, used {min_per_wall}");
    assert!(min_present(s.steps().map(|st| st.throttled_s)) > 0.0, "a burner at its quota is throttled");
    assert_eq!(s.session().cgroup_version, "v1");
    assert_no_leftovers("fixtures/testservice.py");
}

#[test]
fn memory_cap_oom_kill_is_recorded_and_the_next_run_works() {
    let tmp = tempfile::tempdir().unwrap();
    let dbp = tmp.path().join("s.db");
    let prof = quick_profile(tmp.path(), 2, 3);
    let out = run_fixtures(tmp.path(), &["hog", "steady"], &prof, &dbp, &["--memory", "64M"]);
    assert_eq!(out.status.code(), Some(1), "a failed run makes the exit code 1");
    let s = stored(&dbp);
    let hog = s.runs_of("test-hog").next().expect("the hog's run");
    assert!(hog.oom_killed);
    assert_eq!(hog.steps.iter().filter(|st| st.oom_killed).count(), 1);
    assert!(hog.error.as_deref().unwrap_or_default().contains("OOM"), "{:?}", hog.error);
    let steady = s.runs_of("test-steady").next().expect("the steady service's run");
    assert_eq!(steady.status, "completed");
    assert_eq!(s.runs_of("test-steady").flat_map(|r| &r.steps).count(), 2);
    assert!(min_present(s.runs_of("test-steady").flat_map(|r| &r.steps).map(|st| Some(st.success_rps))) > 0.0);
    assert_no_leftovers("fixtures/testservice.py");
}

#[test]
fn sigint_mid_step_tears_down_and_keeps_finished_steps() {
    let tmp = tempfile::tempdir().unwrap();
    let dbp = tmp.path().join("s.db");
    let prof = quick_profile(tmp.path(), 10, 2);
    let child = std::process::Command::new(bin())
        .args([
            "run",
            fixture("steady").to_str().unwrap(),
            "--profile",
            prof.to_str().unwrap(),
            "--runs",
            "1",
            "--db",
            dbp.to_str().unwrap(),
        ])
        .env("SVCBENCH_HOME", repo())
        .current_dir(tmp.path())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until two steps are stored, then interrupt in the middle of the third.
    let t0 = Instant::now();
    loop {
        assert!(t0.elapsed() < Duration::from_secs(60), "steps never reached the store");
        if dbp.exists() && try_stored(&dbp).is_ok_and(|s| s.steps().count() >= 2) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(700));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t1 = Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(t1.elapsed() < Duration::from_secs(20), "teardown took {:?}", t1.elapsed());
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{said}");
    // svcbench killed the service itself, without a grace: not the service's ungraceful stop.
    assert!(!said.contains("not a graceful stop"), "{said}");
    let s = stored(&dbp);
    assert!(s.steps().count() >= 2);
    assert!(s.steps().count() < 10);
    assert_eq!(s.run().status, "interrupted");
    assert_eq!(s.session().status, "interrupted");
    assert_no_leftovers("fixtures/testservice.py");
}

#[test]
fn without_cgroup_write_access_the_run_completes_with_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    // The store in a folder of nobody's own: svcbench refuses one that other users can write (docs/security.md).
    let store = tmp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    std::os::unix::fs::lchown(&store, Some(65534), Some(65534)).unwrap();
    let dbp = store.join("s.db");
    let prof = quick_profile(tmp.path(), 1, 1);
    std::fs::set_permissions(&prof, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    // As an unprivileged user (nobody), svcbench cannot create cgroups. Binary and fixtures are copied into
    // the world-readable temporary folder: the checkout itself may sit where nobody cannot enter.
    copy_fixtures(&tmp.path().join("fixtures"));
    std::fs::copy(bin(), tmp.path().join("svcbench")).unwrap();
    let _ = std::process::Command::new("chmod").args(["-R", "a+rX"]).arg(tmp.path()).status();
    // As nobody: the same run refused, then allowed without limits.
    let steady = tmp.path().join("fixtures/services/steady");
    let as_nobody = |extra: &[&str]| {
        let out = std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(tmp.path().join("svcbench"))
            .args(["run", steady.to_str().unwrap(), "--profile", prof.to_str().unwrap(), "--runs", "1"])
            .args(["--db", dbp.to_str().unwrap()])
            .args(extra)
            .env("SVCBENCH_HOME", repo())
            .env("HOME", tmp.path())
            .current_dir(tmp.path())
            .output()
            .unwrap();
        eprintln!("{}", String::from_utf8_lossy(&out.stderr));
        out
    };
    let out = as_nobody(&[]);
    // Limits that cannot be applied stop the session before any work, saying how to go on anyway.
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("the limits cannot be applied") && err.contains("--allow-unlimited"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(!dbp.exists(), "nothing was stored");
    let out = as_nobody(&["--allow-unlimited"]);
    assert!(out.status.success());
    let s = stored(&dbp);
    assert_eq!(s.run().status, "completed");
    assert_eq!(s.run().cgroup_version.as_deref(), Some("none"));
    let warnings = &s.session().warnings;
    assert!(warnings.iter().any(|w| w.contains("WITHOUT CPU or memory limits")), "{warnings:?}");
    // The run is recorded as unlimited, and the report says so and quotes nothing from it.
    assert!(s.run().stored_flags().is_some_and(|v| v.has(FlagCode::Unlimited)), "{:?}", s.run().stored_flags());
    assert_eq!(s.run().valid, Some(false));
    let md = tmp.path().join("r.md");
    let out = svcbench(&["report", "--db", dbp.to_str().unwrap(), "-o", md.to_str().unwrap()], tmp.path());
    assert!(out.status.success());
    let text = std::fs::read_to_string(&md).unwrap();
    assert!(text.contains("limits not applied as asked"), "{text}");
    assert!(min_present(s.steps().map(|st| Some(st.success_rps))) > 0.0);
    assert!(min_present(s.steps().map(|st| st.cpu_s)) > 0.0, "CPU is still measured from /proc");
    assert_no_leftovers("fixtures/testservice.py");
}

#[test]
fn lifecycle_refusal_graceful_stop_and_check_command() {
    let tmp = tempfile::tempdir().unwrap();
    let dbp = tmp.path().join("s.db");
    let prof = quick_profile(tmp.path(), 1, 1);
    let out = run_fixtures(tmp.path(), &["steady", "dies-on-term"], &prof, &dbp, &[]);
    assert!(out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    // A stop that is not graceful is said as it happens, and only of that service.
    let ungraceful: Vec<&str> = said.lines().filter(|l| l.contains("not a graceful stop")).collect();
    assert_eq!(
        ungraceful,
        ["svcbench: WARNING: test-dies-on-term run 1: not a graceful stop: it ended by signal 15; stored as such"],
        "{said}"
    );
    let s = stored(&dbp);
    assert_eq!(s.run_of("test-dies-on-term").stopped_gracefully, Some(false));
    let service = s.services().find(|v| v.name == "test-steady").expect("the service's row");
    assert_eq!(service.refuses_bad_dependency, Some(true), "{:?}", service.refuse_detail);
    let r = s.run_of("test-steady");
    assert_eq!(r.stopped_gracefully, Some(true));
    assert_eq!(r.exit_code, Some(0));
    let startup = r.startup_ms.unwrap_or(f64::NAN);
    assert!(startup > 0.0 && startup < 10_000.0, "{startup}");
    assert_eq!(r.checks_failed, Some(0));
    assert_eq!(r.checks_passed, Some(2));
    assert!(s.sample_count() >= 10, "a 1 s step has at least 10 samples");

    let out = svcbench(
        &["check", fixture("steady").to_str().unwrap(), "--work-dir", tmp.path().join("w").to_str().unwrap()],
        tmp.path(),
    );
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("3 of 3 checks passed"));
    assert_no_leftovers("fixtures/testservice.py");
}

#[test]
fn fresh_start_steps_restart_the_service() {
    // Seed 004's third table: each rate after a fresh start of the service.
    let tmp = tempfile::tempdir().unwrap();
    let dbp = tmp.path().join("fresh.db");
    let prof = tmp.path().join("fresh.toml");
    std::fs::write(&prof, "name = \"fresh\"\n[[step]]\nrate = [20, 40, 60]\nduration = \"1s\"\nfresh_start = true\n")
        .unwrap();
    let out = run_fixtures(tmp.path(), &["steady"], &prof, &dbp, &[]);
    assert!(out.status.success());
    let s = stored(&dbp);
    let measured = |st: &&StepRow| st.model == "open" && st.requests_ok > 0 && st.cpu_s.is_some_and(|c| c > 0.0);
    assert_eq!(s.steps().filter(measured).count(), 3);
    // One start for the run and one for each later step, each a process of its own with its own log.
    let work = tmp.path().join("work/fresh-session-1");
    for log in ["test-steady-run1.log", "test-steady-run1-step2.log", "test-steady-run1-step3.log"] {
        let text = std::fs::read_to_string(work.join(log)).unwrap_or_default();
        assert!(text.contains("listening on"), "{log}: {text:?}");
    }
    assert!(!work.join("test-steady-run1-step1.log").exists(), "the first step runs on the run's own start");
    // The whole run's CPU time covers every instance, so it is at least the steps' sum.
    let steps_cpu: f64 = s.steps().filter_map(|st| st.cpu_s).sum();
    assert!(s.run().total_cpu_s.unwrap_or(f64::NAN) >= steps_cpu * 0.99);
    assert_no_leftovers("fixtures/testservice.py");
}

#[test]
fn bad_input_gives_one_line_errors_before_any_work() {
    let tmp = tempfile::tempdir().unwrap();
    let steady = fixture("steady");
    let steady = steady.to_str().unwrap();
    let write = |name: &str, text: &str| {
        let p = tmp.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    let step = "[[step]]\nconnections = 1\nduration = \"1s\"\n";
    let above_one = write("above-one.toml", &format!("name = \"x\"\nstop_below_success = 2.5\n{step}"));
    let zero = write("zero.toml", "name = \"x\"\n[[step]]\nconnections = 1\nduration = \"0s\"\n");
    let no_pool = write("no-pool.toml", "name = \"x\"\n[[step]]\nrate = 10\nmax_connections = 0\nduration = \"1s\"\n");
    let typo = write("typo.toml", "name = \"x\"\n\nstop_below = 0.5\n[[step]]\nconnections = 1\nduration = \"1s\"\n");
    let ok = write("ok.toml", &format!("name = \"x\"\n{step}"));
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["/nonexistent/service"], "svcbench.toml"),
        (vec![steady, "--profile", "no-such-profile"], "no-such-profile"),
        (vec![steady, "--memory", "lots"], "--memory"),
        (vec![steady, "--memory", "nan"], "--memory"),
        (vec![steady, "--memory", "1e20G"], "--memory"),
        (vec![steady, "--cpus", "NaN"], "--cpus"),
        (vec![steady, "--runs", "0"], "--runs"),
        (vec![steady, "--profile", &ok, "--cpuset", "7"], "CPU 7"),
        (vec![steady, "--profile", &ok, "--cpus", "999"], "--cpus 999 is more than"),
        (vec![steady, "--profile", &ok, "--cpuset", "1", "--loadgen-cpuset", "1"], "share CPU 1"),
        (vec![steady, "--profile", &ok, "--cpuset", "0-1"], "leaving none for the load generator"),
        (vec![steady, "--profile", &above_one], "stop_below_success = 2.5"),
        (vec![steady, "--profile", &zero], "must be above 0"),
        (vec![steady, "--profile", &ok, "--step-duration", "0s"], "step duration 0s: must be above 0"),
        (vec![steady, "--profile", &no_pool], "max_connections = 0"),
        (vec![steady, "--profile", &typo], "typo.toml:3: unknown field `stop_below`"),
    ];
    for (args, want) in cases {
        let db = tmp.path().join("never.db");
        let mut all = vec!["run"];
        all.extend(&args);
        all.extend(["--db", db.to_str().unwrap()]);
        let out = svcbench(&all, tmp.path());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: wanted {want:?} in {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: one line: {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(!db.exists() && !tmp.path().join("work").exists(), "{args:?}: work began before the error");
    }
}

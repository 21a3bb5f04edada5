//! Exit codes a CI can trust (docs/exit-codes.md): a session that did not measure a service as asked exits
//! 1 and names it and why in its last line; one whose steps were flagged exits 0 and says so; a hangup ends
//! svcbench as Ctrl-C does; no other user can hold the measurement lock; a resume refuses a changed scenario
//! or svcbench build.
mod common;
use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One step of `secs` seconds at one connection.
fn profile(dir: &Path, secs: u32) -> PathBuf {
    let p = dir.join("p.toml");
    std::fs::write(&p, format!("name = \"t\"\n[[step]]\nconnections = 1\nduration = \"{secs}s\"\n")).unwrap();
    p
}

/// `svcbench ARGS` with the test's own lock and sessions folder; its exit code and its last stderr line.
fn run(args: &[&str], cwd: &Path) -> (Option<i32>, String, String) {
    let out = svcbench_locked(args, cwd);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    let last = err.trim_end().lines().last().unwrap_or_default().to_string();
    (out.status.code(), last, err)
}

/// A hello-like service whose build fails.
fn failing_build(dir: &Path) -> PathBuf {
    let svc = dir.join("fails-to-build");
    std::fs::create_dir_all(&svc).unwrap();
    std::fs::write(
        svc.join("svcbench.toml"),
        "name = \"test-fails-to-build\"\nscenario = \"testing\"\nlanguage = \"sh\"\nframework = \"none\"\n\
         framework_version = \"1\"\nmodel = \"blocking\"\nbuild = \"echo no compiler here; exit 3\"\n\
         run = \"./never-built\"\nreadiness = \"/\"\n[env]\nPORT = \"{port}\"\nHOST = \"{host}\"\n",
    )
    .unwrap();
    svc
}

#[test]
fn a_service_not_measured_exits_1_naming_it_and_why() {
    let tmp = tempfile::tempdir().unwrap();
    let prof = profile(tmp.path(), 1);
    let (p, db) = (prof.to_str().unwrap(), tmp.path().join("s.db"));
    let d = db.to_str().unwrap();

    // Its build fails: beside a service that is measured, the session still exits 1.
    let svc = failing_build(tmp.path());
    let steady = fixture("steady");
    let scenario = fixture("../scenarios/testing");
    let (svc, steady_s, scenario_s) = (svc.to_str().unwrap(), steady.to_str().unwrap(), scenario.to_str().unwrap());
    let (code, last, err) =
        run(&["run", svc, steady_s, "--scenario", scenario_s, "--profile", p, "--runs", "1", "--db", d], tmp.path());
    assert_eq!(code, Some(1), "{err}");
    assert!(last.contains("1 run(s) completed, 0 interrupted, 1 failed (test-fails-to-build not measured: build of test-fails-to-build failed (exit status: 3)"), "{last}");

    // A service folder its user cannot enter.
    if unsafe { libc::geteuid() } == 0 {
        let closed = tmp.path().join("closed");
        std::fs::create_dir(&closed).unwrap();
        let copy = std::process::Command::new("cp").arg("-r").arg(&steady).arg(&closed).status().unwrap();
        assert!(copy.success());
        std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
        // The service's scenario is found beside the fixtures: give it by path.
        let inside = closed.join("steady");
        let args = ["run", inside.to_str().unwrap(), "--scenario", scenario_s, "--profile", p];
        let (code, last, err) = run(&[&args[..], &["--runs", "1", "--db", d]].concat(), tmp.path());
        assert_eq!(code, Some(1), "{err}");
        assert!(last.contains("0 run(s) completed, 0 interrupted, 1 failed (test-steady not measured: user svcbench (the service's) cannot enter"), "{last}");
    }

    // An image that exists nowhere (a registry on loopback that is not there: no traffic leaves the machine).
    if podman_answers() {
        let tag = "localhost:1/svcbench-test-no-such-image:never";
        let (code, last, err) =
            run(&["run", "--image", tag, "--scenario", "hello", "--profile", p, "--runs", "1", "--db", d], tmp.path());
        assert_eq!(code, Some(1), "{err}");
        assert!(
            last.contains("1 failed (") && last.contains(&format!("image {tag} is neither local nor pullable")),
            "{last}"
        );
    } else {
        eprintln!("skipped the image: no container engine answers");
    }
    assert_no_leftovers("fixtures/testservice.py");
}

fn podman_answers() -> bool {
    std::process::Command::new("podman").arg("version").output().is_ok_and(|o| o.status.success())
}

#[test]
fn a_session_that_measured_everything_with_invalid_steps_exits_0_and_says_so() {
    // Four workers, eight keep-alive connections: the step is flagged (starved connections).
    let tmp = tempfile::tempdir().unwrap();
    let prof = tmp.path().join("p.toml");
    std::fs::write(&prof, "name = \"t\"\n[[step]]\nconnections = 8\nduration = \"3s\"\n").unwrap();
    let db = tmp.path().join("s.db");
    let starver = fixture("starver");
    let args = ["run", starver.to_str().unwrap(), "--profile", prof.to_str().unwrap(), "--runs", "1"];
    let (code, last, err) = run(&[&args[..], &["--db", db.to_str().unwrap()]].concat(), tmp.path());
    assert_eq!(code, Some(0), "{err}");
    assert!(last.contains("done: 1 run(s) completed, 0 interrupted, 0 failed; 1 of 1 step(s) not valid"), "{last}");
    assert_eq!(stored(&db).step().valid, Some(false));
    assert_no_leftovers("fixtures/testservice.py");
}

#[test]
fn a_hangup_ends_svcbench_up_as_ctrl_c_does_and_leaves_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let mut up = locked(&["up", fixture("steady").to_str().unwrap(), "--work-dir", "results/work/up"], tmp.path());
    let err_file = tmp.path().join("up.err");
    let mut child = Background(
        up.stdout(std::process::Stdio::piped()).stderr(std::fs::File::create(&err_file).unwrap()).spawn().unwrap(),
    );
    use std::io::BufRead;
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().and_then(Result::ok).unwrap_or_default();
    assert!(first.starts_with("service http://"), "{first}: {}", std::fs::read_to_string(&err_file).unwrap());
    std::thread::spawn(move || lines.for_each(drop));
    let running = || processes_in(&fixture("steady"));
    assert!(!running().is_empty(), "the service runs while up does");
    unsafe { libc::kill(child.id() as i32, libc::SIGHUP) };
    let status = exit_within(&mut child, Duration::from_secs(30)).expect("svcbench up did not end on SIGHUP");
    let said = std::fs::read_to_string(&err_file).unwrap();
    // As after Ctrl-C: its services stopped in order, and its one end in order (docs/exit-codes.md).
    assert_eq!(status.code(), Some(0), "{said}");
    assert!(said.contains("stopping test-steady and its dependencies"), "{said}");
    assert!(lock_files(tmp.path()).is_empty(), "{:?}", lock_files(tmp.path()));
    assert!(running().is_empty(), "processes left behind: {:?}", running());
    assert_no_leftovers("fixtures/testservice.py");
}

/// The processes whose working folder is `dir` (a fixture service's, which no other test of this file runs).
fn processes_in(dir: &Path) -> Vec<u32> {
    let dir = dir.canonicalize().unwrap();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|c| c == dir))
        .collect()
}

#[test]
fn another_user_cannot_open_the_measurement_lock_nor_block_a_measurement() {
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: only root can act as user nobody");
        return;
    }
    // A folder every user can enter, as /run/svcbench was (mode 0755).
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (prof, db) = (profile(tmp.path(), 1), tmp.path().join("s.db"));
    let steady = fixture("steady");
    let args = ["run", steady.to_str().unwrap(), "--profile", prof.to_str().unwrap(), "--runs", "1"];
    let args = [&args[..], &["--db", db.to_str().unwrap()]].concat();
    let (code, _, err) = run(&args, tmp.path());
    assert_eq!(code, Some(0), "{err}");
    let lock = tmp.path().join("measure.lock");
    assert_eq!(std::fs::metadata(&lock).unwrap().permissions().mode() & 0o777, 0o600);
    // As nobody: open the lock file and hold it for 20 s.
    let mut holder = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--", "flock", "-n"])
        .arg(&lock)
        .args(["sleep", "20"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let refused = exit_within(&mut holder, Duration::from_secs(2));
    let _ = holder.kill();
    let _ = holder.wait();
    assert!(refused.is_some_and(|s| !s.success()), "user nobody opened and held the measurement lock");
    // And a measurement is not blocked.
    let (code, last, err) = run(&args, tmp.path());
    assert_eq!(code, Some(0), "{err}");
    assert!(last.contains("1 run(s) completed"), "{last}");
    assert_no_leftovers("fixtures/testservice.py");
}

#[test]
fn a_resume_refuses_a_changed_scenario_and_a_changed_svcbench_build() {
    // The fixtures copied, so that their scenario can change; one run of one 1 s step.
    let tmp = tempfile::tempdir().unwrap();
    copy_fixtures(&tmp.path().join("fixtures"));
    let prof = profile(tmp.path(), 1);
    let file = tmp.path().join("s.toml");
    std::fs::write(
        &file,
        format!(
            "title = \"t\"\nquestion = \"q\"\nservices = [\"{}\"]\nprofile = \"{}\"\nruns = 1\n[limits]\ncpus = [1]\n\
             memory = [\"128M\"]\n",
            tmp.path().join("fixtures/services/steady").display(),
            prof.display()
        ),
    )
    .unwrap();
    let db = tmp.path().join("s.db");
    let args = ["study", file.to_str().unwrap(), "--db", db.to_str().unwrap()];
    let (code, _, err) = run(&args, tmp.path());
    assert_eq!(code, Some(0), "{err}");
    let resume = [&args[..], &["--resume"]].concat();
    let (code, _, err) = run(&resume, tmp.path());
    assert_eq!(code, Some(0), "nothing changed: {err}");

    // A check of the scenario changed.
    let scenario = tmp.path().join("fixtures/scenarios/testing/scenario.toml");
    let text = std::fs::read_to_string(&scenario).unwrap();
    std::fs::write(&scenario, text.replacen("status = 200", "status = 299", 1)).unwrap();
    let (code, last, err) = run(&resume, tmp.path());
    assert_eq!(code, Some(2), "{err}");
    assert!(
        last.contains("changed since its earlier runs: the scenario's checks;") && last.contains("--new-cell"),
        "{last}"
    );
    std::fs::write(&scenario, &text).unwrap();

    // Another svcbench build (the same program with one byte more).
    let other = tmp.path().join("svcbench");
    let mut program = std::fs::read(bin()).unwrap();
    program.push(0);
    std::fs::write(&other, program).unwrap();
    std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = std::process::Command::new(&other)
        .args(&resume)
        .env("SVCBENCH_HOME", repo())
        .env("SVCBENCH_LOCK_FILE", tmp.path().join("measure.lock"))
        .env("SVCBENCH_SESSIONS_DIR", sessions_dir(tmp.path()))
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("changed since its earlier runs: svcbench's own build (program "), "{err}");
    assert_no_leftovers("fixtures/testservice.py");
}

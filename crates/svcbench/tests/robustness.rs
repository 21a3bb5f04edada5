//! svcbench under hostile endings: SIGKILL mid-step (the next run cleans up and marks the session aborted), a
//! lock file naming what is not the session's (left alone, the file called untrusted), a second Ctrl-C 50 ms after the first, two measurements at once, a refusal check that must not be fooled,
//! a service that runs out of memory while starting, during the checks, or sits at its cap, and an svcbench in
//! another pid namespace that must take none of this one's parts for leftovers; a service that forks without end
//! (its process limit), and one whose log is too large to read whole.
mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

fn profile(dir: &Path, secs: u32) -> PathBuf {
    let p = dir.join(format!("p{secs}.toml"));
    std::fs::write(&p, format!("name = \"t\"\n[[step]]\nconnections = 2\nduration = \"{secs}s\"\n")).unwrap();
    p
}

fn wait_exit(child: &mut Child, within: Duration) -> std::process::ExitStatus {
    exit_within(child, within).unwrap_or_else(|| panic!("svcbench did not end within {within:?}"))
}

fn run_args<'a>(service: &'a str, prof: &'a Path, dbp: &'a Path) -> Vec<&'a str> {
    vec!["run", service, "--profile", prof.to_str().unwrap(), "--runs", "1", "--db", dbp.to_str().unwrap()]
}

#[test]
fn sigkill_mid_step_is_cleaned_up_by_the_next_run() {
    let tmp = tempfile::tempdir().unwrap();
    let (dbp, long, short) = (tmp.path().join("s.db"), profile(tmp.path(), 20), profile(tmp.path(), 1));
    let steady = fixture("steady");
    let mut child = spawn_svcbench(tmp.path(), "killed", &run_args(steady.to_str().unwrap(), &long, &dbp));
    let pid = child.id();
    wait_for_load(&dbp);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(lock_files(tmp.path()).len(), 1, "the session keeps its lock file in the sessions folder");
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    child.wait().unwrap();
    // Killed before it could tear down: its groups are still there, its session still `running`.
    let groups = leftover_cgroups();
    assert!(groups.iter().any(|g| g.to_string_lossy().contains(&format!("/{pid}-"))), "{groups:?}");
    assert_eq!(stored(&dbp).session().status, "running");

    let mut next = spawn_svcbench(tmp.path(), "next", &run_args(steady.to_str().unwrap(), &short, &dbp));
    assert!(wait_exit(&mut next, Duration::from_secs(60)).success(), "{}", stderr_of(tmp.path(), "next"));
    let said = stderr_of(tmp.path(), "next");
    assert!(said.contains(&format!("cleaned up after svcbench pid {pid}")), "{said}");
    let s = stored(&dbp);
    let session = |id: i64| s.sessions.iter().find(|x| x.session.id == id).unwrap_or_else(|| panic!("no session {id}"));
    assert_eq!(session(1).session.status, "aborted");
    let killed = session(1).runs.first().expect("the killed session's run");
    assert_eq!(killed.status, "aborted");
    assert!(killed.stored_flags().is_some_and(|v| v.has(FlagCode::Incomplete)), "{:?}", killed.stored_flags());
    assert_eq!(session(2).session.status, "completed");
    assert!(!said.contains("untrusted"), "{said}");
    assert_eq!(lock_files(tmp.path()), Vec::<PathBuf>::new());
    assert_no_leftovers("fixtures/testservice.py");
}

/// `svcbench run … | head`: the reader of its output goes away at once. The run still goes to its end, its
/// session and run stored as completed, nothing left behind; an export to a reader that has gone ends as it
/// would have, not in a panic.
#[test]
fn a_reader_that_goes_away_ends_nothing_early() {
    use std::process::Stdio;
    let tmp = tempfile::tempdir().unwrap();
    let (dbp, prof) = (tmp.path().join("p.db"), profile(tmp.path(), 1));
    let steady = fixture("steady");
    let mut child = locked(&run_args(steady.to_str().unwrap(), &prof, &dbp), tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Both pipes closed on the reading side before svcbench writes a line.
    drop(child.stdout.take());
    drop(child.stderr.take());
    let status = wait_exit(&mut child, Duration::from_secs(60));
    assert!(status.success(), "a run whose reader went away ended {status}");
    let s = stored(&dbp);
    assert_eq!((s.session().status.as_str(), s.run().status.as_str()), ("completed", "completed"));
    assert_eq!(lock_files(tmp.path()), Vec::<PathBuf>::new());
    assert_no_leftovers("fixtures/testservice.py");
    let mut export = locked(&["export", "--json", "--db", dbp.to_str().unwrap()], tmp.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(export.stdout.take());
    let out = export.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && !said.contains("panicked"), "{}: {said}", out.status);
}

/// Field 22 of /proc/<pid>/stat: the start time a lock file records.
fn start_ticks(pid: u32) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    text[text.rfind(')').unwrap() + 2..].split_whitespace().nth(19).unwrap().parse().unwrap()
}

#[test]
fn a_lock_file_of_a_dead_owner_ends_and_removes_nothing_it_cannot_verify() {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let tmp = tempfile::tempdir().unwrap();
    std::fs::DirBuilder::new().mode(0o700).create(sessions_dir(tmp.path())).unwrap();
    // An unrelated process group (after a reboot, a daemon's may carry the recorded number), and a dead owner.
    let mut sleep = Background(std::process::Command::new("setsid").args(["sleep", "60"]).spawn().unwrap());
    let group = sleep.id();
    let t0 = Instant::now();
    while std::fs::read_to_string(format!("/proc/{group}/comm")).unwrap_or_default().trim() != "sleep" {
        assert!(t0.elapsed() < Duration::from_secs(5), "setsid sleep did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let owner = gone.id();
    gone.wait().unwrap();
    // Folders outside svcbench's cgroup parents, named as the owner's groups would be: one listing the sleep
    // as its processes, one empty.
    let listing = tmp.path().join(format!("{owner}-1-steady"));
    let empty = tmp.path().join(format!("{owner}-1-upstream"));
    std::fs::create_dir(&listing).unwrap();
    std::fs::create_dir(&empty).unwrap();
    std::fs::write(listing.join("cgroup.procs"), format!("{group}\n")).unwrap();
    let lock = sessions_dir(tmp.path()).join(format!("{owner}-1.lock"));
    let record = serde_json::json!({
        "owner": { "pid": owner, "start_ticks": 1, "exe": bin(), "pid_ns": std::fs::metadata("/proc/self/ns/pid").unwrap().ino() },
        "store": tmp.path().join("gone.db"),
        "session": 1,
        "parts": [{ "name": format!("{owner}-1-steady"), "pgid": group, "cgroups": [listing, empty],
                    "leader_start_ticks": start_ticks(group) + 1 }],
    });
    std::fs::write(&lock, record.to_string()).unwrap();

    let (dbp, short) = (tmp.path().join("s.db"), profile(tmp.path(), 1));
    let steady = fixture("steady");
    let mut next = spawn_svcbench(tmp.path(), "next", &run_args(steady.to_str().unwrap(), &short, &dbp));
    assert!(wait_exit(&mut next, Duration::from_secs(60)).success(), "{}", stderr_of(tmp.path(), "next"));
    let said = stderr_of(tmp.path(), "next");
    assert_eq!(sleep.try_wait().unwrap(), None, "the unrelated sleep was ended: {said}");
    assert!(listing.join("cgroup.procs").exists() && empty.is_dir(), "a folder it named was removed: {said}");
    let warning = said.lines().find(|l| l.contains(&lock.display().to_string())).unwrap_or_default();
    assert!(warning.contains("untrusted") && warning.contains(&format!("process group {group}")), "{said}");
    assert!(
        warning.contains(&listing.display().to_string()) && warning.contains(&empty.display().to_string()),
        "{said}"
    );
    assert_eq!(lock_files(tmp.path()), Vec::<PathBuf>::new(), "the file is dealt with once");
    assert_eq!(stored(&dbp).session().status, "completed");
    unsafe { libc::kill(group as i32, libc::SIGKILL) };
    sleep.wait().unwrap();
}

#[test]
fn a_second_sigint_50ms_after_the_first_still_tears_down() {
    let tmp = tempfile::tempdir().unwrap();
    let (dbp, long) = (tmp.path().join("s.db"), profile(tmp.path(), 20));
    let steady = fixture("steady");
    let mut child = spawn_svcbench(tmp.path(), "twice", &run_args(steady.to_str().unwrap(), &long, &dbp));
    wait_for_load(&dbp);
    std::thread::sleep(Duration::from_millis(300));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    std::thread::sleep(Duration::from_millis(50));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = wait_exit(&mut child, Duration::from_secs(10));
    let said = stderr_of(tmp.path(), "twice");
    assert_eq!(status.code(), Some(130), "{said}");
    assert_no_leftovers("fixtures/testservice.py");
    // Aborted by the second signal, or already interrupted if the first one's wind-down won the race:
    // never left running.
    let status = stored(&dbp).session().status.clone();
    assert!(status == "aborted" || status == "interrupted", "session {status}: {said}");
    assert_eq!(lock_files(tmp.path()), Vec::<PathBuf>::new(), "{said}");
}

#[test]
fn ctrl_c_ends_a_session_stuck_in_the_checks_and_in_the_stop_grace_within_seconds() {
    let tmp = tempfile::tempdir().unwrap();
    let (dbp, prof) = (tmp.path().join("s.db"), profile(tmp.path(), 1));
    let stuck = fixture("stuck-checks");
    let mut child = spawn_svcbench(tmp.path(), "stuck", &run_args(stuck.to_str().unwrap(), &prof, &dbp));
    // Started and idle memory read: the checks are under way, and GET /nope hangs for a minute.
    let t0 = Instant::now();
    while !(dbp.exists() && try_stored(&dbp).is_ok_and(|s| s.runs().any(|r| r.startup_ms.is_some()))) {
        assert!(t0.elapsed() < Duration::from_secs(60), "the service never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t1 = Instant::now();
    // Neither the 10 s check timeout nor the 15 s stop grace of a service that ignores SIGTERM is waited out.
    let status = wait_exit(&mut child, Duration::from_secs(5));
    assert_eq!(status.code(), Some(130), "{}", stderr_of(tmp.path(), "stuck"));
    assert!(t1.elapsed() < Duration::from_secs(3), "took {:?}", t1.elapsed());
    assert_eq!(stored(&dbp).run().status, "interrupted");
    assert_no_leftovers("fixtures/testservice.py");
}

#[test]
fn a_second_measurement_on_the_machine_refuses_or_waits() {
    let tmp = tempfile::tempdir().unwrap();
    let prof = profile(tmp.path(), 4);
    let (a_db, b_db) = (tmp.path().join("a.db"), tmp.path().join("b.db"));
    let steady = fixture("steady");
    let mut a = spawn_svcbench(tmp.path(), "a", &run_args(steady.to_str().unwrap(), &prof, &a_db));
    wait_for_load(&a_db);
    let mut b = spawn_svcbench(tmp.path(), "b", &run_args(steady.to_str().unwrap(), &prof, &b_db));
    let status = wait_exit(&mut b, Duration::from_secs(10));
    assert_eq!(status.code(), Some(2));
    let said = stderr_of(tmp.path(), "b");
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    assert!(said.contains("another svcbench is measuring on this machine") && said.contains("--wait-lock"), "{said}");
    assert!(!b_db.exists(), "the refused run wrote nothing");
    // Queued behind the first one, it starts when that one ends.
    let mut args = run_args(steady.to_str().unwrap(), &prof, &b_db);
    args.push("--wait-lock");
    let mut queued = spawn_svcbench(tmp.path(), "queued", &args);
    assert!(wait_exit(&mut a, Duration::from_secs(60)).success());
    let a_ended = Instant::now();
    assert!(wait_exit(&mut queued, Duration::from_secs(60)).success(), "{}", stderr_of(tmp.path(), "queued"));
    assert!(stderr_of(tmp.path(), "queued").contains("waiting for the other measurement to end"));
    assert_eq!(stored(&b_db).run().status, "completed");
    assert!(a_ended.elapsed() < Duration::from_secs(60));
    assert_no_leftovers("fixtures/testservice.py");
}

#[test]
fn the_refusal_check_is_not_fooled() {
    let tmp = tempfile::tempdir().unwrap();
    let (dbp, prof) = (tmp.path().join("s.db"), profile(tmp.path(), 1));
    let out = run_fixtures(tmp.path(), &["refuse-badcmd", "refuse-answers"], &prof, &dbp, &[]);
    assert!(out.status.success());
    let s = stored(&dbp);
    let verdict = |svc: &str| {
        let sv = s.service(&format!("test-{svc}"));
        (sv.refuses_bad_dependency, sv.refuse_detail.clone().unwrap_or_default())
    };
    let (refused, detail) = verdict("refuse-badcmd");
    assert_eq!(refused, Some(false), "a command that cannot be started is not a refusal: {detail}");
    // Started without a shell, its program is looked up on the wrong PATH before anything runs, and the
    // reason names it.
    assert!(detail.contains("finds no `python3` on PATH /nonexistent"), "{detail}");
    let (refused, detail) = verdict("refuse-answers");
    assert_eq!(refused, Some(false), "a service that answered before exiting did start: {detail}");
    assert!(detail.contains("answered its readiness path"), "{detail}");
    // The good environment starts both.
    assert_eq!(s.runs().filter(|r| r.status == "completed").count(), 2);
    assert_no_leftovers("fixtures/testservice.py");
}

#[test]
fn out_of_memory_is_told_apart_at_startup_and_in_the_checks() {
    let tmp = tempfile::tempdir().unwrap();
    let (dbp, prof) = (tmp.path().join("s.db"), profile(tmp.path(), 1));
    let out = run_fixtures(tmp.path(), &["oom-start", "oom-checks"], &prof, &dbp, &["--memory", "64M"]);
    assert_eq!(out.status.code(), Some(1));
    let s = stored(&dbp);
    for (svc, stage) in [("oom-start", "startup"), ("oom-checks", "checks")] {
        let name = format!("test-{svc}");
        let r = s.runs_of(&name).next().unwrap_or_else(|| panic!("no run of {name}"));
        assert!(r.oom_killed, "{svc}");
        assert!(!r.stuck_at_memory_cap, "{svc}");
        assert_eq!(r.failed_stage.as_deref(), Some(stage), "{svc}");
        let err = r.error.clone().unwrap_or_default();
        assert!(err.contains("OOM-killed"), "{svc}: {err}");
        assert_eq!(r.status, "failed");
    }
    assert_no_leftovers("fixtures/testservice.py");
}

#[test]
fn a_service_stuck_at_its_memory_cap_is_given_up_on_early() {
    let tmp = tempfile::tempdir().unwrap();
    let (dbp, prof) = (tmp.path().join("s.db"), profile(tmp.path(), 1));
    let t0 = Instant::now();
    let out = run_fixtures(tmp.path(), &["at-cap"], &prof, &dbp, &["--memory", "48M", "--startup-timeout", "120s"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(t0.elapsed() < Duration::from_secs(60), "gave up after {:?}, not well before the timeout", t0.elapsed());
    let s = stored(&dbp);
    let r = s.run();
    let err = r.error.clone().unwrap_or_default();
    assert!(err.contains("sat at its memory cap (48 MiB)") && err.contains("raise --memory"), "{err}");
    // Stored as the service's end under its cap (a study's sizing and resume count it), not as an OOM kill.
    assert!(r.stuck_at_memory_cap);
    assert!(!r.oom_killed);
    assert_eq!(r.failed_stage.as_deref(), Some("startup"));
    assert_no_leftovers("fixtures/testservice.py");
}

#[test]
fn a_service_that_forks_without_end_fills_its_process_limit_is_named_and_removed_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let (dbp, prof) = (tmp.path().join("s.db"), profile(tmp.path(), 1));
    let t0 = Instant::now();
    let out = run_fixtures(tmp.path(), &["forker"], &prof, &dbp, &["--pids", "64", "--startup-timeout", "5s"]);
    assert_eq!(out.status.code(), Some(1));
    let r = stored(&dbp).run().clone();
    let err = r.error.unwrap_or_default();
    assert!(err.contains("hit its limit of 64 processes and threads") && err.contains("raise --pids"), "{err}");
    assert!(!err.contains('\n'), "{err}");
    assert_eq!(r.failed_stage.as_deref(), Some("startup"));
    // Every `sleep` it started went with it, and its groups (the freezer's and the pids controller's too).
    assert_no_leftovers("sleep 6017");
    assert!(t0.elapsed() < Duration::from_secs(30), "took {:?}", t0.elapsed());
}

/// The peak resident memory of a running process (VmHWM), in KiB.
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("VmHWM:")?.trim().strip_suffix("kB")?.trim().parse().ok())
}

#[test]
fn a_service_with_a_huge_log_is_quoted_from_its_end_without_reading_it_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let (dbp, prof) = (tmp.path().join("s.db"), profile(tmp.path(), 1));
    let svc = fixture("loud").display().to_string();
    let mut bg = spawn_svcbench(tmp.path(), "loud", &run_args(&svc, &prof, &dbp));
    // Its peak as seen while it runs: read until it ends (the last reading before the exit counts).
    let mut peak = 0;
    let status = loop {
        if let Some(kib) = peak_rss_kib(bg.0.id()) {
            peak = peak.max(kib);
        }
        if let Some(s) = bg.0.try_wait().unwrap() {
            break s;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(status.code(), Some(1), "{}", stderr_of(tmp.path(), "loud"));
    let err = stored(&dbp).run().error.clone().unwrap_or_default();
    assert!(err.contains("exited during startup (exit code 3)") && err.contains("last-words-6029"), "{err}");
    // The 200 MB line is quoted cut, and svcbench never held it.
    assert!(err.len() < 4096, "{} bytes of error", err.len());
    assert!(peak < 100 * 1024, "svcbench peaked at {peak} KiB");
    eprintln!("svcbench's peak: {peak} KiB; the error: {} bytes", err.len());
}

#[test]
fn an_svcbench_in_another_pid_namespace_leaves_this_ones_groups_alone() {
    // Two containers sharing the machine's cgroups: from a pid namespace of its own, the other svcbench and its
    // service are invisible, so their pids look dead; their groups still hold running processes.
    let tmp = tempfile::tempdir().unwrap();
    let (outer_db, inner_db) = (tmp.path().join("outer.db"), tmp.path().join("inner.db"));
    let (long, short) = (profile(tmp.path(), 6), profile(tmp.path(), 1));
    let steady = fixture("steady");
    let mut outer = spawn_svcbench(tmp.path(), "outer", &run_args(steady.to_str().unwrap(), &long, &outer_db));
    wait_for_load(&outer_db);
    let inner = std::process::Command::new("unshare")
        .args(["--pid", "--fork", "--mount-proc", "sh", "-c", "\"$0\" \"$@\"; exit $?"])
        .arg(bin())
        .args(run_args(steady.to_str().unwrap(), &short, &inner_db))
        .env("SVCBENCH_HOME", repo())
        .env("SVCBENCH_LOCK_FILE", tmp.path().join("inner.lock"))
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&inner.stderr);
    assert!(inner.status.success(), "{said}");
    assert!(!said.contains("no longer run"), "the other container's groups were taken for leftovers: {said}");
    assert!(
        !said.contains("cleaned up after svcbench pid"),
        "the other container's session was taken for dead: {said}"
    );
    assert!(!said.contains(&format!("{}-", outer.id())), "{said}");
    assert!(wait_exit(&mut outer, Duration::from_secs(60)).success(), "{}", stderr_of(tmp.path(), "outer"));
    let outer_store = stored(&outer_db);
    assert_eq!(outer_store.session().status, "completed");
    assert_eq!(outer_store.run().status, "completed");
    assert_eq!(stored(&inner_db).run().status, "completed");
    assert_no_leftovers("fixtures/testservice.py");
}

//! What a service under test is given when svcbench runs as root: the unprivileged user `svcbench`, no
//! new privileges, only the environment's allow-list and its manifest's env (docs/security.md); root only
//! with `run_as = "root"`, stored and shown in the report. Builds end at their time limit, group and all,
//! and `{java}` under a JAVA_HOME with a space starts.
mod common;
use common::*;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What the service's environment may hold: svcbench's allow-list, its own HOME, its manifest's env.
const ALLOWED: &[&str] = &["PATH", "LANG", "LC_ALL", "TZ", "HOME", "HOST", "PORT", "GIVEN"];

fn is_root() -> bool {
    unsafe { libc::geteuid() == 0 }
}

/// A temporary folder the unprivileged user can enter (tempfile makes them 0700).
fn open_tempdir() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    tmp
}

fn get(url_line: &str, path: &str) -> String {
    let addr = url_line.split_whitespace().nth(1).unwrap().trim_start_matches("http://").to_string();
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes()).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    answer.split_once("\r\n\r\n").map(|(_, body)| body.to_string()).unwrap_or(answer)
}

/// `svcbench up SERVICE` with a canary in svcbench's own environment, and what the service says of itself.
fn whoami_under_up(service: &str) -> serde_json::Value {
    let tmp = tempfile::tempdir().unwrap();
    std::env::set_var("SVCBENCH_TEST_CANARY", "must not reach the service");
    let (mut up, lines) = spawn_up(tmp.path(), Path::new(service), &[], 1);
    let me: serde_json::Value = serde_json::from_str(&get(&lines[0], "/whoami")).unwrap();
    up.interrupt(Duration::from_secs(30)).expect("svcbench up did not stop on Ctrl-C");
    me
}

#[test]
fn the_service_runs_as_svcbench_with_no_new_privileges_and_a_clean_environment() {
    if !is_root() {
        eprintln!("skipped: only root changes the service's user");
        return;
    }
    let me = whoami_under_up(fixture("whoami").to_str().unwrap());
    let svcbench_uid = nix::unistd::User::from_name("svcbench").unwrap().expect("user svcbench").uid.as_raw();
    assert_eq!(me["uid"], svcbench_uid, "{me}");
    assert_ne!(me["uid"], 0, "{me}");
    assert_eq!(me["groups"].as_array().unwrap().iter().filter(|g| **g == 0).count(), 0, "no root group: {me}");
    assert_eq!(me["no_new_privs"], 1, "{me}");
    let env = me["env"].as_object().unwrap();
    let outside: Vec<&String> = env.keys().filter(|k| !ALLOWED.contains(&k.as_str())).collect();
    assert!(outside.is_empty(), "variables outside the allow-list and the manifest's env: {outside:?}");
    assert!(!env.contains_key("SVCBENCH_TEST_CANARY"), "{me}");
    assert_eq!(env["GIVEN"], "by the manifest");
    let home = env["HOME"].as_str().unwrap();
    assert!(!Path::new(home).exists(), "the private HOME {home} is removed with the service");
}

#[test]
fn run_as_root_gives_root_and_is_stored_and_reported() {
    if !is_root() {
        eprintln!("skipped: only root changes the service's user");
        return;
    }
    let me = whoami_under_up(&format!("{}@root", fixture("whoami").display()));
    assert_eq!(me["uid"], 0, "{me}");
    assert!(!me["env"].as_object().unwrap().contains_key("SVCBENCH_TEST_CANARY"), "a clean environment as root too");

    let tmp = tempfile::tempdir().unwrap();
    let (prof, dbp) = (tmp.path().join("p.toml"), tmp.path().join("s.db"));
    std::fs::write(&prof, "name = \"t\"\n[[step]]\nconnections = 1\nduration = \"1s\"\n").unwrap();
    let both = format!("{}@*", fixture("whoami").display());
    let out = svcbench(
        &["run", &both, "--profile", prof.to_str().unwrap(), "--runs", "1", "--db", dbp.to_str().unwrap()],
        tmp.path(),
    );
    assert!(out.status.success());
    let s = stored(&dbp);
    let user_of = |svc: &str| s.runs_of(svc).next().and_then(|r| r.service_user.clone()).unwrap_or_default();
    assert_eq!(user_of("test-whoami"), "svcbench");
    assert_eq!(user_of("test-whoami@root"), "root");
    let md = tmp.path().join("r.md");
    let out = svcbench(&["report", "--db", dbp.to_str().unwrap(), "-o", md.to_str().unwrap()], tmp.path());
    assert!(out.status.success());
    let text = std::fs::read_to_string(&md).unwrap();
    assert_eq!(text.matches("ran as root (run_as in its manifest)").count(), 1, "only the root run says so:\n{text}");
}

/// A service folder of the test's own, on the `testing` scenario.
fn service(dir: &Path, name: &str, extra: &str) -> PathBuf {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    let scenario = repo().join("crates/svcbench/tests/fixtures/scenarios/testing");
    std::fs::write(
        d.join("svcbench.toml"),
        format!(
            "name = \"{name}\"\nscenario = \"{}\"\nlanguage = \"sh\"\nframework = \"none\"\nframework_version = \
             \"0\"\nmodel = \"blocking\"\nreadiness = \"/\"\n{extra}\n[env]\nHOST = \"{{host}}\"\nPORT = \"{{port}}\"\n",
            scenario.display()
        ),
    )
    .unwrap();
    d
}

#[test]
fn a_build_past_its_time_limit_is_ended_with_its_whole_group() {
    let tmp = open_tempdir();
    // The build's shell records its process group, then waits on two sleepers of that group.
    let svc = service(
        tmp.path(),
        "slow-build",
        "build = \"echo $$ > build.pgid; sleep 120 & sleep 120; wait\"\nbuild_timeout = \"1s\"\nrun = \"./x\"",
    );
    let t0 = Instant::now();
    let out = svcbench(&["build", svc.to_str().unwrap()], tmp.path());
    assert_eq!(out.status.code(), Some(1));
    assert!(t0.elapsed() < Duration::from_secs(20), "ended at its limit, not at the sleep's end: {:?}", t0.elapsed());
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err.lines().find(|l| l.contains("build_timeout")).unwrap_or_else(|| panic!("{err}"));
    assert!(line.contains("slow-build") && line.contains("ran past its build_timeout of 1s"), "{line}");
    let pgid: i32 = std::fs::read_to_string(svc.join("build.pgid")).unwrap().trim().parse().unwrap();
    // Killed members may linger a moment as zombies until their new parent reaps them: only live ones count.
    let t0 = Instant::now();
    while !live_members(pgid).is_empty() && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(live_members(pgid), Vec::<i32>::new(), "the build's process group {pgid} is still running");
}

#[test]
fn ctrl_c_during_a_runs_build_ends_the_whole_build_and_the_run() {
    let tmp = open_tempdir();
    let svc = service(
        tmp.path(),
        "endless-build",
        "build = \"echo $$ > build.pgid; sleep 120 & sleep 120; wait\"\nrun = \"./x\"",
    );
    let prof = tmp.path().join("p.toml");
    std::fs::write(&prof, "name = \"t\"\n[[step]]\nconnections = 1\nduration = \"1s\"\n").unwrap();
    let dbp = tmp.path().join("r.db");
    let args = [
        "run",
        svc.to_str().unwrap(),
        "--profile",
        prof.to_str().unwrap(),
        "--runs",
        "1",
        "--db",
        dbp.to_str().unwrap(),
    ];
    let mut bg = spawn_svcbench(tmp.path(), "interrupted", &args);
    let pgid_file = svc.join("build.pgid");
    let t0 = Instant::now();
    while std::fs::read_to_string(&pgid_file).map_or(true, |s| !s.ends_with('\n')) {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the build never started: {}",
            stderr_of(tmp.path(), "interrupted")
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let pgid: i32 = std::fs::read_to_string(&pgid_file).unwrap().trim().parse().unwrap();
    assert!(!live_members(pgid).is_empty(), "the build should be running");
    let status = bg.interrupt(Duration::from_secs(15));
    let err = stderr_of(tmp.path(), "interrupted");
    let status = status.unwrap_or_else(|| panic!("svcbench still runs 15 s after Ctrl-C during a build:\n{err}"));
    assert!(!status.success(), "an interrupted build is not a success: {err}");
    assert!(err.contains("asked to stop"), "the build's end is said: {err}");
    let t0 = Instant::now();
    while !live_members(pgid).is_empty() && t0.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(live_members(pgid), Vec::<i32>::new(), "the build's process group {pgid} is still running");
    assert_no_leftovers("endless-build");
}

/// The processes of process group `pgid` that are not zombies (/proc/PID/stat: state, ppid, pgrp).
fn live_members(pgid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
        let fields: Vec<&str> = stat.rsplit_once(')').map_or(vec![], |(_, rest)| rest.split_whitespace().collect());
        if fields.len() > 2 && fields[2] == pgid.to_string() && fields[0] != "Z" {
            out.push(pid);
        }
    }
    out
}

#[test]
fn java_under_a_java_home_with_a_space_starts() {
    let tmp = open_tempdir();
    // A stand-in for java: it starts the steady test service, wherever its folder's name has a space.
    let jdk_bin = tmp.path().join("my jdk/bin");
    std::fs::create_dir_all(&jdk_bin).unwrap();
    let script = repo().join("crates/svcbench/tests/fixtures/testservice.py");
    std::fs::write(jdk_bin.join("java"), format!("#!/bin/sh\nexec python3 {} steady\n", script.display())).unwrap();
    std::fs::set_permissions(jdk_bin.join("java"), std::fs::Permissions::from_mode(0o755)).unwrap();
    for (name, run) in [("java-shell", "{java} $JAVA_OPTS -jar app.jar"), ("java-direct", "{java} -jar app.jar")] {
        let svc = service(tmp.path(), name, &format!("run = \"{run}\""));
        let out = std::process::Command::new(bin())
            .args(["check", svc.to_str().unwrap()])
            .env("SVCBENCH_HOME", repo())
            .env("JAVA_HOME", tmp.path().join("my jdk"))
            .current_dir(tmp.path())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{name} ({run}) did not start and answer: {err}");
    }
}

/// scripts/unreachable-folder.sh, which scripts/setup.sh refuses a checkout by and .ci/run copies one by:
/// the first folder the services' user cannot enter, from / down.
#[test]
fn the_first_folder_the_service_user_cannot_enter_is_named() {
    if !is_root() {
        eprintln!("skipped: only root can test as another user");
        return;
    }
    let tmp = open_tempdir();
    let closed = tmp.path().join("home");
    let checkout = closed.join("me/svcbench");
    std::fs::create_dir_all(&checkout).unwrap();
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o700)).unwrap();
    let script = repo().join("scripts/unreachable-folder.sh");
    let out = std::process::Command::new(&script).arg(&checkout).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), closed.display().to_string());
    std::fs::set_permissions(&closed, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = std::process::Command::new(&script).arg(&checkout).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(out.stdout.is_empty());
}

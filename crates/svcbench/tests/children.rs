//! What svcbench's children are kept from (docs/security.md, "What runs as whom"): the terminal svcbench
//! was started from (a service and a build that type into it with TIOCSTI, under `svcbench check` in an
//! interactive root shell, type nothing), svcbench's own environment (a secret in it reaches neither a
//! build nor a dependency), and each other (a duet's two sides run as two users that cannot signal each
//! other).
mod common;
use common::*;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn is_root() -> bool {
    unsafe { libc::geteuid() == 0 }
}

/// A temporary folder the unprivileged users can enter and write (their marks go there).
fn open_tempdir() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    tmp
}

/// A service folder on the `testing` scenario, started by `start.sh` (written here) in front of the tests'
/// Python service.
fn service(dir: &Path, name: &str, build: &str, start: &str, env: &str) -> PathBuf {
    let d = dir.join(name);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).unwrap();
    let scenario = repo().join("crates/svcbench/tests/fixtures/scenarios/testing");
    std::fs::write(
        d.join("svcbench.toml"),
        format!(
            "name = \"{name}\"\nscenario = \"{}\"\nlanguage = \"sh\"\nframework = \"none\"\nframework_version = \
             \"0\"\nmodel = \"blocking\"\nreadiness = \"/\"\n{build}run = \"sh start.sh\"\n[env]\nHOST = \
             \"{{host}}\"\nPORT = \"{{port}}\"\n{env}",
            scenario.display()
        ),
    )
    .unwrap();
    let server = repo().join("crates/svcbench/tests/fixtures/testservice.py");
    std::fs::write(d.join("start.sh"), format!("{start}\nexec python3 {} steady\n", server.display())).unwrap();
    d
}

/// Types `line` into the controlling terminal, as the reproduction of the attack did; says on stderr why
/// it could not.
const INJECT: &str = r#"import fcntl, sys, termios
try:
    with open("/dev/tty", "wb", 0) as f:
        for c in (sys.argv[1] + "\n").encode():
            fcntl.ioctl(f, termios.TIOCSTI, bytes([c]))
except OSError as e:
    print("no terminal to type into:", e, file=sys.stderr)
"#;

/// Runs `script` (svcbench's program as $0) in a shell whose controlling terminal is a new pseudo-terminal,
/// then an interactive shell reading that terminal, as a root shell at a terminal would be: whatever was
/// typed into the terminal meanwhile is run by it. Returns what the terminal showed.
fn in_a_terminal(script: &str, cwd: &Path, env: &[(&str, &str)]) -> String {
    let (mut master, mut slave) = (0, 0);
    let r = unsafe { libc::openpty(&mut master, &mut slave, std::ptr::null_mut(), std::ptr::null(), std::ptr::null()) };
    assert_eq!(r, 0, "openpty: {}", std::io::Error::last_os_error());
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    let tty = |fd: &OwnedFd| std::process::Stdio::from(fd.try_clone().unwrap());
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(format!("{script}; echo SVCBENCH-ENDED; exec sh -i"))
        .arg(bin())
        .current_dir(cwd)
        .env("SVCBENCH_HOME", repo())
        .env("SVCBENCH_LOCK_FILE", cwd.join("measure.lock"))
        .env("SVCBENCH_SESSIONS_DIR", sessions_dir(cwd))
        .envs(env.iter().copied())
        .stdin(tty(&slave))
        .stdout(tty(&slave))
        .stderr(tty(&slave));
    unsafe {
        cmd.pre_exec(|| {
            // A session whose controlling terminal is the pseudo-terminal (on its standard input).
            if libc::setsid() == -1 || libc::ioctl(0, libc::TIOCSCTTY, 0) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    drop(slave);
    let mut reader = std::fs::File::from(master.try_clone().unwrap());
    let shown = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let seen = shown.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    let t0 = Instant::now();
    while !shown.lock().unwrap().contains("SVCBENCH-ENDED") {
        assert!(t0.elapsed() < Duration::from_secs(120), "svcbench did not end: {}", shown.lock().unwrap());
        std::thread::sleep(Duration::from_millis(50));
    }
    // What was typed into the terminal is read by the shell before this.
    let mut writer = std::fs::File::from(master);
    writer.write_all(b"exit\n").unwrap();
    let ended = exit_within(&mut child, Duration::from_secs(20));
    if ended.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let text = shown.lock().unwrap().clone();
    eprintln!("--- terminal\n{text}");
    text
}

#[test]
fn neither_a_service_nor_its_build_types_into_the_terminal_svcbench_runs_in() {
    if !is_root() || std::fs::read_to_string("/proc/sys/dev/tty/legacy_tiocsti").is_ok_and(|s| s.trim() == "0") {
        eprintln!("skipped: needs root, and TIOCSTI allowed by the kernel (dev.tty.legacy_tiocsti = 1)");
        return;
    }
    let tmp = open_tempdir();
    let marks = tmp.path().join("marks");
    std::fs::create_dir(&marks).unwrap();
    std::fs::set_permissions(&marks, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let typed = |who: &str| format!("id > {}/typed-by-{who}", marks.display());
    let svc = service(
        tmp.path(),
        "types-into-tty",
        &format!("build = \"python3 inject.py '{}'\"\n", typed("build")),
        &format!("python3 inject.py '{}'", typed("service")),
        "",
    );
    std::fs::write(svc.join("inject.py"), INJECT).unwrap();
    in_a_terminal(r#""$0" check "$1""#.replace("$1", svc.to_str().unwrap()).as_str(), tmp.path(), &[]);
    for who in ["build", "service"] {
        let mark = marks.join(format!("typed-by-{who}"));
        assert!(
            !mark.exists(),
            "the {who} typed a command into svcbench's terminal, and the shell there ran it: {}",
            std::fs::read_to_string(&mark).unwrap_or_default().trim()
        );
    }
}

/// The secret put in svcbench's environment, as `sudo -E` or a CI's settings would.
const SECRET: (&str, &str) = ("AWS_SECRET_ACCESS_KEY", "svcbench-test-secret");

#[test]
fn a_secret_in_svcbenchs_environment_reaches_no_build() {
    let tmp = open_tempdir();
    let svc = service(
        tmp.path(),
        "env-build",
        "build = \"env > build.env\"\nbuild_env = { GIVEN = \"by the manifest\" }\n",
        "",
        "",
    );
    let out = locked(&["build", svc.to_str().unwrap()], tmp.path())
        .env(SECRET.0, SECRET.1)
        .env("CARGO_HOME", "/opt/cargo-of-svcbenchs-user")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let env = std::fs::read_to_string(svc.join("build.env")).unwrap();
    assert!(!env.contains(SECRET.1), "the secret reached the build:\n{env}");
    assert!(!env.lines().any(|l| l.starts_with("SVCBENCH_HOME=")), "svcbench's own settings reached it:\n{env}");
    assert!(
        env.lines().any(|l| l == "CARGO_HOME=/opt/cargo-of-svcbenchs-user"),
        "a toolchain's variable is kept:\n{env}"
    );
    assert!(env.lines().any(|l| l == "GIVEN=by the manifest"), "the manifest's build_env is given:\n{env}");
    assert!(env.lines().any(|l| l.starts_with("PATH=")), "{env}");
}

/// The environment of each process whose parent is `parent` and whose command line holds `needle`.
fn environ_of_children(parent: u32, needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let ppid = stat.rsplit_once(") ").and_then(|(_, rest)| rest.split(' ').nth(1)?.parse::<u32>().ok());
        let cmd =
            String::from_utf8_lossy(&std::fs::read(e.path().join("cmdline")).unwrap_or_default()).replace('\0', " ");
        if ppid == Some(parent) && cmd.contains(needle) {
            found.push(
                String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/environ")).unwrap()).replace('\0', "\n"),
            );
        }
    }
    found
}

#[test]
fn a_secret_in_svcbenchs_environment_reaches_no_dependency() {
    let tmp = tempfile::tempdir().unwrap();
    std::env::set_var(SECRET.0, SECRET.1);
    let (mut up, _) = spawn_up(tmp.path(), &fixture("forwarder"), &[], 1);
    let envs = environ_of_children(up.0.id(), " upstream --listen ");
    up.interrupt(Duration::from_secs(30)).expect("svcbench up did not stop on Ctrl-C");
    std::env::remove_var(SECRET.0);
    assert_eq!(envs.len(), 1, "one mock upstream, started by svcbench up");
    let keys: Vec<&str> = envs[0].lines().filter_map(|l| l.split_once('=').map(|(k, _)| k)).collect();
    assert!(!envs[0].contains(SECRET.1), "the secret reached the mock upstream:\n{}", envs[0]);
    // Beside the allow-list: the shell's PWD, and the upstream's own control token (not svcbench's secret).
    let allowed = ["PATH", "LANG", "LC_ALL", "TZ", "PWD", svcbench::mock_upstream::TOKEN_ENV];
    let outside: Vec<&&str> = keys.iter().filter(|k| !allowed.contains(k)).collect();
    assert!(outside.is_empty(), "variables beyond the allow-list reached the dependency: {outside:?}");
}

#[test]
fn a_duets_two_sides_run_as_two_users_neither_of_which_can_signal_the_other() {
    if !is_root() {
        eprintln!("skipped: only root changes the services' users");
        return;
    }
    let tmp = open_tempdir();
    let marks = tmp.path().join("marks");
    std::fs::create_dir(&marks).unwrap();
    std::fs::set_permissions(&marks, std::fs::Permissions::from_mode(0o1777)).unwrap();
    // Each side says its pid, then, in the background, waits for the other's and tries to signal it.
    let side = |me: &str, other: &str| {
        format!(
            "m={marks}; echo $$ > $m/{me}.pid\n\
             ( i=0; while [ ! -s $m/{other}.pid ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done\n\
               p=$(cat $m/{other}.pid); grep '^Uid:' /proc/$p/status | cut -f2 > $m/{me}-sees-{other}.uid\n\
               if kill -0 $p 2>/dev/null; then echo signalled; else echo refused; fi > $m/{me}-signals-{other} ) &",
            marks = marks.display()
        )
    };
    let a = service(tmp.path(), "side-a", "", &side("a", "b"), "");
    let b = service(tmp.path(), "side-b", "", &side("b", "a"), "");
    let prof = tmp.path().join("p.toml");
    std::fs::write(&prof, "name = \"t\"\n[[step]]\nrate = [20]\nduration = \"2s\"\n").unwrap();
    // The store in a folder of its own: one others can write is refused (they could plant its journal).
    let store = tmp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o755)).unwrap();
    let dbp = store.join("d.db");
    let args = [
        "duet",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--profile",
        prof.to_str().unwrap(),
        "--pairs",
        "1",
        "--db",
        dbp.to_str().unwrap(),
    ];
    let out = svcbench_locked(&args, tmp.path());
    let read = |f: &str| std::fs::read_to_string(marks.join(f)).map(|s| s.trim().to_string()).unwrap_or_default();
    let uid_of =
        |name: &str| nix::unistd::User::from_name(name).unwrap().unwrap_or_else(|| panic!("user {name}")).uid.as_raw();
    // The Uid line's first field: the real uid, as /proc of the other side's pid says it.
    let (a_uid, b_uid) = (read("b-sees-a.uid"), read("a-sees-b.uid"));
    let first = |s: &str| s.split_whitespace().next().unwrap_or_default().to_string();
    assert_eq!(
        first(&a_uid),
        uid_of("svcbench").to_string(),
        "side A's uid ({})",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(first(&b_uid), uid_of("svcbench-peer").to_string(), "side B's uid");
    assert_eq!(read("a-signals-b"), "refused", "side A could signal side B");
    assert_eq!(read("b-signals-a"), "refused", "side B could signal side A");
}

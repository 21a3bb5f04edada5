//! Every input svcbench takes is bounded: a value out of its bounds is refused before anything is built or
//! started, with exit 2 and one line naming what is wrong, within a second (never a panic, a hang or an
//! allocation that eats the machine).
mod common;

use common::{bin, fixture, repo};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Runs svcbench with `args` in `cwd`, ends it if it outlives a few seconds, and checks the refusal:
/// exit 2, one line of output (stderr) holding every one of `want`, within a second.
fn refused(cwd: &Path, args: &[&str], want: &[&str]) {
    let started = Instant::now();
    let mut child = Command::new(bin())
        .args(args)
        .current_dir(cwd)
        .env("SVCBENCH_HOME", repo())
        .env("SVCBENCH_LOCK_FILE", cwd.join("measure.lock"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(10) {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("svcbench {args:?} still ran after 10 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let took = started.elapsed();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!("--- svcbench {args:?} ({took:?}): {err}");
    assert_eq!(out.status.code(), Some(2), "svcbench {args:?}: {err}");
    assert!(out.stdout.is_empty(), "svcbench {args:?} printed {:?}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    for w in want {
        assert!(err.contains(w), "svcbench {args:?}: {err:?} does not say {w:?}");
    }
    assert!(took < Duration::from_secs(1), "svcbench {args:?} took {took:?}");
}

#[test]
fn load_refuses_durations_timeouts_and_start_times_beyond_their_maximum() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    refused(t, &["load", "http://127.0.0.1:9/", "-d", "1e20"], &["--duration", "a day"]);
    refused(t, &["load", "http://127.0.0.1:9/", "--timeout", "1e20"], &["--timeout", "an hour"]);
    refused(t, &["load", "http://127.0.0.1:9/", "--connect-timeout", "9999999999h"], &["an hour"]);
    refused(t, &["load", "http://127.0.0.1:9/", "--start-at", "1e20"], &["--start-at", "from now"]);
}

#[test]
fn load_refuses_a_host_that_does_not_resolve_and_a_port_nobody_listens_on_before_it_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    refused(t, &["load", "http://nosuchhost.invalid/", "-d", "1s"], &["cannot resolve host 'nosuchhost.invalid'"]);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let url = format!("http://{closed}/");
    refused(t, &["load", &url, "-d", "1s"], &["nothing listens on", "start the service"]);
    refused(t, &["load", &url, "--rate", "10", "-d", "1s"], &["nothing listens on"]);
}

fn write_profile(dir: &Path, step: &str) -> String {
    let p = dir.join("bad-profile.toml");
    std::fs::write(&p, format!("name = 'bad'\n[[step]]\nduration = '1s'\n{step}\n")).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn run_refuses_unbounded_profiles_and_flags_before_any_build() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let steady = fixture("steady");
    let svc = steady.to_str().unwrap();
    for (step, want) in [
        ("rate_range = [1.0, inf, 1.0]", "finite"),
        ("rate_range = [1e16, 2e16, 1]", "at most 10000000"),
        ("rate_range = [1, 1e7, 0.5]", "at most 1000"),
        ("connections = 1\nrepeat = 100000000000", "repeat = 100000000000"),
    ] {
        let prof = write_profile(t, step);
        refused(t, &["run", svc, "--profile", &prof, "--db", "x.db"], &["bad-profile.toml", "step 1", want]);
        assert!(!t.join("x.db").exists(), "nothing was stored");
    }
    for tol in ["nan", "-5", "0", "inf"] {
        refused(t, &["run", svc, &format!("--probe-tolerance={tol}")], &["--probe-tolerance", "percent"]);
    }
    refused(t, &["run", svc, "--dep", "opensearch=https://10.0.0.5:9200"], &["--dep", "no TLS", "http://"]);
    refused(t, &["run", svc, "--runs", "1000000"], &["--runs", "1000000"]);
    refused(t, &["run", svc, "--startup-timeout", "1e20"], &["--startup-timeout", "an hour"]);
    refused(t, &["run", svc, "--step-duration", "1e20"], &["--step-duration", "a day"]);
    refused(t, &["run", svc, "--cpus", "inf"], &["--cpus"]);
    // A negative quota is read as one and refused as such, not taken for an unknown option.
    refused(t, &["run", svc, "--cpus", "-1"], &["--cpus -1: must be a number of CPUs above 0"]);
}

/// The steady fixture's manifest with `from` replaced by `to`, in a service folder of its own under `dir`.
fn steady_with(dir: &Path, from: &str, to: &str) -> std::path::PathBuf {
    let svc = dir.join("svc");
    std::fs::create_dir_all(&svc).unwrap();
    let manifest = std::fs::read_to_string(fixture("steady").join("svcbench.toml")).unwrap();
    assert!(manifest.contains(from), "{from}");
    std::fs::write(svc.join("svcbench.toml"), manifest.replace(from, to)).unwrap();
    svc
}

#[test]
fn a_service_name_that_would_escape_file_and_cgroup_names_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = steady_with(tmp.path(), "\"test-steady\"", "\"../../escape\"");
    refused(tmp.path(), &["run", dir.to_str().unwrap()], &["key `name`", "letters, digits"]);
}

#[test]
fn a_misspelt_placeholder_is_refused_before_the_build() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = steady_with(tmp.path(), "\"{port}\"", "\"{prot}\"");
    let want = ["env.PORT: unknown placeholder {prot}", "known here: port, host, dir, java"];
    refused(tmp.path(), &["run", dir.to_str().unwrap(), "--scenario", "hello"], &want);
    assert!(!tmp.path().join("results").exists(), "nothing was built or stored");
}

#[test]
fn a_misspelt_scenario_is_named_with_the_bundled_ones_even_beside_a_service_of_another() {
    // Beside a bundled service too, a misspelt scenario is named as such, not taken for a second scenario.
    let tmp = tempfile::tempdir().unwrap();
    let dir = steady_with(tmp.path(), "scenario = \"testing\"", "scenario = \"helo\"");
    let hello = repo().join("services/hello/go-nethttp");
    let want = ["test-steady", "scenario `helo` not found", "the bundled ones are hello, locations, upstream, users"];
    refused(tmp.path(), &["run", dir.to_str().unwrap(), hello.to_str().unwrap()], &want);
    refused(tmp.path(), &["check", dir.to_str().unwrap()], &want[1..]);
    assert!(!tmp.path().join("results").exists(), "nothing was built or stored");
}

#[test]
fn study_plan_refuses_unbounded_profiles_and_runs_instead_of_hanging() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let steady = fixture("steady");
    let study = |profile: &str, extra: &str| {
        let f = t.join("s.toml");
        std::fs::write(
            &f,
            format!(
                "title = 't'\nquestion = 'q'\nservices = [{:?}]\nprofile = {profile:?}\n{extra}",
                steady.to_str().unwrap()
            ),
        )
        .unwrap();
        f.to_str().unwrap().to_string()
    };
    let prof = write_profile(t, "rate_range = [1.0, inf, 1.0]");
    refused(t, &["study", &study(&prof, ""), "--plan"], &["rate_range", "finite"]);
    let prof = write_profile(t, "connections = 1");
    refused(t, &["study", &study(&prof, "runs = 4000000000\n"), "--plan"], &["runs", "between 1 and 100"]);
    // 40 quotas × 40 memory caps: 1,600 cells from a file of a few hundred bytes.
    let cpus: Vec<String> = (1..=40).map(|i| format!("{}", f64::from(i) / 10.0)).collect();
    let memory: Vec<String> = (1..=40).map(|i| format!("'{i}M'")).collect();
    let axis = format!("[limits]\ncpus = [{}]\nmemory = [{}]\n", cpus.join(","), memory.join(","));
    refused(t, &["study", &study(&prof, &axis), "--plan"], &["1600 cells", "at most 1000"]);
    refused(t, &["study", &study(&prof, ""), "--plan", "--probe-tolerance", "nan"], &["--probe-tolerance"]);
    // A quota its run would refuse is refused by the plan too, in the study's own words.
    let want = ["[limits] cpus 4096 is more than the", "lower [limits] cpus or widen [limits] cpuset"];
    refused(t, &["study", &study(&prof, "[limits]\ncpus = [0.5, 4096]\n"), "--plan"], &want);
    // So are a store link its scenario has no store for and a generators' split its profile cannot take.
    let axis = "[network]\nlinks = ['', 'service-store=delay:2ms']\n";
    let want = ["--link service-store=delay:2ms", "has no dependency to place on the store's host"];
    refused(t, &["study", &study(&prof, axis), "--plan"], &want);
    refused(t, &["study", &study(&prof, ""), "--plan", "--link", "service-store=delay:2ms"], &want);
    let want = ["1 connection(s) cannot be shared among 2 generator agents", "or fewer agents"];
    refused(t, &["study", &study(&prof, ""), "--plan", "--generators", "2"], &want);
    // A quick form's step duration out of bounds names its key.
    let quick = "[quick]\nstep_duration = '0s'\n";
    refused(t, &["study", &study(&prof, quick), "--plan", "--quick"], &["quick.step_duration", "must be above 0"]);
    // A service folder in neither place a relative one is looked up: both named.
    let f = t.join("missing.toml");
    std::fs::write(&f, format!("title = 't'\nquestion = 'q'\nservices = ['mine']\nprofile = {prof:?}\n")).unwrap();
    let want = [
        &format!("`mine` is in neither the current folder ({})", t.join("mine").display()),
        &format!("nor the checkout ({})", repo().join("mine").display()),
    ];
    refused(t, &["study", f.to_str().unwrap(), "--plan"], &want.map(String::as_str));
}

#[test]
fn a_profiles_folder_of_ones_own_adds_profiles_without_hiding_the_bundled_ones() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    std::fs::create_dir(t.join("profiles")).unwrap();
    std::fs::write(t.join("profiles/tiny.toml"), "name = \"tiny\"\n[[step]]\nconnections = 1\nduration = \"1s\"\n")
        .unwrap();
    let steady = fixture("steady");
    let study = |profile: &str| {
        let f = t.join(format!("{profile}.study.toml"));
        let text = format!(
            "title = 't'\nquestion = 'q'\nservices = [{:?}]\nprofile = {profile:?}\n",
            steady.to_str().unwrap()
        );
        std::fs::write(&f, text).unwrap();
        f.to_str().unwrap().to_string()
    };
    for profile in ["tiny", "quick"] {
        let out = common::svcbench(&["study", &study(profile), "--plan"], t);
        assert!(out.status.success(), "profile {profile}: {}", String::from_utf8_lossy(&out.stderr));
    }
    refused(t, &["study", &study("tinny"), "--plan"], &["profile `tinny` not found", "quick", "tiny"]);
}

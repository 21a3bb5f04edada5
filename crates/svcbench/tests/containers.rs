//! Services as containers, with the real engine (Podman here; scripts/setup.sh installs it and its
//! settings): the bundled FROM scratch Go hello image under limits read back from its cgroup, its steps'
//! CPU time and memory high-water mark from that cgroup, its image size as the artifact, an image run
//! without a manifest, a memory hog image killed at its cap, an emulated link in front of a container, and
//! the container a SIGKILLed svcbench leaves, removed by the next run, the Docker CLI's path (against
//! Podman's Docker-compatible API), the Pod, and the users image writing its run's SQLite database
//! mounted into it; an image trying what untrusted code would (a setuid-root file, writes to /, a fork
//! loop) held to its confinement, run and played; and a container labelled as svcbench's by someone else,
//! left alone. After each, no container, cgroup or process of svcbench is left.
mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Podman must answer: these tests never pass by skipping.
fn engine() {
    let ok = Command::new("podman").args(["info", "--format", "{{.Host.OCIRuntime.Name}}"]).output();
    match ok {
        Ok(o) if o.status.success() => {}
        Ok(o) => panic!("podman does not answer ({}): run scripts/setup.sh", String::from_utf8_lossy(&o.stderr).trim()),
        Err(e) => panic!("podman is missing ({e}): run scripts/setup.sh"),
    }
}

/// svcbench's containers present now (any session).
fn svcbench_containers() -> Vec<String> {
    let out = Command::new("podman")
        .args(["ps", "-a", "--filter", "label=svcbench.session", "--format", "{{.Names}}"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).lines().map(String::from).collect()
}

/// Processes of the images these tests run (their programs sit at the image's root) and the engine's
/// monitors of svcbench's containers.
fn container_processes() -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(raw) = std::fs::read(e.path().join("cmdline")) else { continue };
        let cmd = String::from_utf8_lossy(&raw).replace('\0', " ").trim().to_string();
        if ["/hello-nethttp", "/hello", "/hog", "/users-go-nethttp", "/probe", "/probe sleep"].contains(&cmd.as_str())
            || cmd.contains("-n svcbench-")
        {
            out.push(format!("{}: {cmd}", e.file_name().to_string_lossy()));
        }
    }
    out
}

fn assert_nothing_left() {
    assert_eq!(svcbench_containers(), Vec::<String>::new(), "containers left behind");
    assert_eq!(container_processes(), Vec::<String>::new(), "container processes left behind");
    // Other suites' hello services may run beside these tests: their processes are not looked at.
    assert_eq!(leftover_cgroups(), Vec::<PathBuf>::new(), "cgroups left behind");
    assert_eq!(leftover_network(), Vec::<String>::new(), "network namespaces left behind");
}

fn profile(dir: &Path, secs: u32) -> PathBuf {
    let p = dir.join(format!("p{secs}.toml"));
    std::fs::write(&p, format!("name = \"t\"\n[[step]]\nconnections = [1, 8]\nduration = \"{secs}s\"\n")).unwrap();
    p
}

fn hello_container() -> String {
    format!("{}@container", repo().join("services/hello/go-nethttp").display())
}

/// The hello image run once under `--cpus 0.5 --memory 64M` (plus `extra`, with `env` for svcbench): it
/// completes, passes every check, its limits are read back from its cgroup (CPU set 1: the one asked, or
/// the service's half of the CPUs by default), every step has CPU time and a memory peak from that cgroup,
/// and startup from the engine's "started" is shorter than from the command. Its store and what it said.
fn hello_under_limits(tmp: &Path, extra: &[&str], env: &[(&str, String)]) -> (Stored, String) {
    let (dbp, prof) = (tmp.join("c.db"), profile(tmp, 1));
    let svc = hello_container();
    let args = ["run", &svc, "--profile", prof.to_str().unwrap(), "--runs", "1", "--cpus", "0.5", "--memory", "64M"];
    let mut cmd = locked(&[&args[..], extra, &["--db", dbp.to_str().unwrap()]].concat(), tmp);
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    let out = cmd.output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "svcbench run of the hello image failed: {said}");
    let st = stored(&dbp);
    let run = st.run();
    assert_eq!(run.status, "completed");
    let (passed, failed) = (run.checks_passed.unwrap_or(0), run.checks_failed.unwrap_or(-1));
    assert!(passed > 0 && failed == 0, "checks {passed} passed, {failed} failed");
    // The limits the engine set, read back from the container's own cgroup.
    let held = format!(
        "{:?} CPUs, {:?} MiB, CPU set {:?}, warnings {:?}",
        run.applied_cpus, run.applied_memory_mib, run.applied_cpuset, run.warnings
    );
    assert!(run.applied_cpus.is_some_and(|c| (c - 0.5).abs() < 0.005), "held: {held}");
    assert!(run.applied_memory_mib.is_some_and(|m| (m - 64.0).abs() < 0.1), "held: {held}");
    assert_eq!(run.applied_cpuset.as_deref(), Some("1"), "held: {held}");
    assert!(run.validity().valid(), "a run under the limits asked is not flagged: {:?}", run.validity());
    // Every step: CPU time and a memory high-water mark from the container's cgroup.
    assert_eq!(run.steps.len(), 2);
    for step in &run.steps {
        let mem = step.mem_peak_mib.unwrap_or(0.0);
        assert!(step.cpu_s.unwrap_or(0.0) > 0.0 && mem > 0.5 && mem < 64.0, "step {}: {step:?}", step.seq);
        // Its open files and its accept queue's drops, read from the container's processes.
        let read = step.open_files_peak.is_some() && step.open_files_limit.is_some() && step.listen_drops.is_some();
        assert!(read, "step {}: {step:?}", step.seq);
    }
    // Startup both ways: from the engine's "started" is shorter than from the command.
    let (cmd, eng) = (run.startup_ms.unwrap_or(0.0), run.startup_engine_ms.unwrap_or(0.0));
    assert!(eng > 0.0 && eng < cmd, "startup from the engine {eng} ms, from the command {cmd} ms");
    (st, said)
}

/// A run SIGKILLed during its load leaves its container (or pod) running; the next run removes it and says
/// so. What was left, and what the next run said.
fn killed_then_next(
    tmp: &Path,
    dbp: &Path,
    extra: &[&str],
    left_now: &dyn Fn() -> Vec<String>,
    what: &str,
) -> (Vec<String>, String) {
    let (long, short) = (profile(tmp, 30), profile(tmp, 1));
    let svc = hello_container();
    let run = |p: &Path| -> Vec<String> {
        let args = ["run", &svc, "--profile", p.to_str().unwrap(), "--runs", "1", "--db", dbp.to_str().unwrap()];
        args.iter().chain(extra).map(|s| s.to_string()).collect()
    };
    let long_args = run(&long);
    let mut child = spawn_svcbench(tmp, "killed", &long_args.iter().map(String::as_str).collect::<Vec<_>>());
    let pid = child.id();
    wait_for_load(dbp);
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let left = left_now();
    assert_eq!(left.len(), 1, "the killed svcbench's {what} runs on: {left:?}");
    let short_args = run(&short);
    let mut next = spawn_svcbench(tmp, "next", &short_args.iter().map(String::as_str).collect::<Vec<_>>());
    let status = exit_within(&mut next, Duration::from_secs(120)).expect("the next run did not end");
    let said = stderr_of(tmp, "next");
    assert!(status.success(), "{said}");
    assert!(said.contains(&format!("removed 1 {what}(s) left by svcbench processes that no longer run")), "{said}");
    (left, said)
}

#[test]
fn the_hello_image_under_limits_passes_its_checks_and_its_cgroup_gives_the_figures() {
    engine();
    let tmp = tempfile::tempdir().unwrap();
    let (st, _) = hello_under_limits(tmp.path(), &["--cpuset", "1"], &[]);
    assert_eq!(st.run().cgroup_version.as_deref(), Some("v1"));
    assert!(st.steps().any(|s| s.success_rps > 100.0));
    // The image's size is the artifact's: a static Go binary on nothing, a few MB.
    let bytes = st.services().next().and_then(|s| s.artifact_bytes).unwrap_or(0);
    assert!((1 << 20..40 << 20).contains(&bytes), "image size {bytes}");
    assert_eq!(st.services().next().and_then(|s| s.runtime.clone()).as_deref(), Some("container (podman)"));
    assert_nothing_left();
}

#[test]
fn a_container_left_by_a_killed_svcbench_is_removed_by_the_next_run() {
    engine();
    let tmp = tempfile::tempdir().unwrap();
    let dbp = tmp.path().join("k.db");
    let (left, said) = killed_then_next(tmp.path(), &dbp, &[], &svcbench_containers, "container");
    assert!(said.contains(&left[0]), "{said}");
    // The killed svcbench's session, the store's first.
    assert_eq!(stored(&dbp).session().status, "aborted");
    assert_nothing_left();
}

#[test]
fn an_image_runs_without_a_manifest() {
    engine();
    let tmp = tempfile::tempdir().unwrap();
    // A FROM scratch image of the hello service listening on a fixed port and, unless told otherwise, on
    // every interface, as an image from elsewhere would.
    let ctx = tmp.path().join("ctx");
    std::fs::create_dir(&ctx).unwrap();
    let built = Command::new("go")
        .args(["build", "-trimpath", "-o"])
        .arg(ctx.join("hello"))
        .arg(".")
        .env("CGO_ENABLED", "0")
        .current_dir(repo().join("services/hello/go-nethttp"))
        .status()
        .unwrap();
    assert!(built.success(), "go build of the hello service failed");
    let port = 18000 + (std::process::id() % 1000) as u16;
    std::fs::write(
        ctx.join("Containerfile"),
        format!("FROM scratch\nCOPY hello /hello\nENV PORT={port} HOST=0.0.0.0\nENTRYPOINT [\"/hello\"]\n"),
    )
    .unwrap();
    let tag = format!("localhost/svcbench-test-image:{}", std::process::id());
    let b = Command::new("podman").args(["build", "-q", "-t", &tag]).arg(&ctx).output().unwrap();
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    let (dbp, prof) = (tmp.path().join("i.db"), profile(tmp.path(), 1));
    let p = port.to_string();
    let args = [
        "run",
        "--image",
        &tag,
        "--port",
        &p,
        "--scenario",
        "hello",
        "--profile",
        prof.to_str().unwrap(),
        "--runs",
        "1",
    ];
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--db", dbp.to_str().unwrap()]);
    let out = svcbench_locked(&all, tmp.path());
    let _ = Command::new("podman").args(["rmi", "-f", &tag]).output();
    assert!(out.status.success(), "svcbench run --image failed");
    let s = stored(&dbp);
    let run = s.run();
    assert_eq!(run.status, "completed");
    assert!(run.service.starts_with("image-"), "{}", run.service);
    // svcbench gave it HOST (the container shares the host's network): it listened on loopback only.
    assert!(run.listen_warning.is_none(), "{:?}", run.listen_warning);
    assert!(
        run.listen_addrs.as_deref().unwrap_or("").starts_with(&format!("127.0.0.1:{port}")),
        "{:?}",
        run.listen_addrs
    );
    let passed = run.checks_passed.unwrap_or(-1);
    let total = run.checks_passed.zip(run.checks_failed).map_or(-1, |(p, f)| p + f);
    assert!(total > 0 && passed == total, "checks {passed}/{total}");
    let steps: Vec<String> = s
        .steps()
        .map(|st| {
            let flags = st.flags.as_deref().unwrap_or_default();
            format!("{} req/s, connect errors {}, flags {flags}", st.success_rps, st.err_connect)
        })
        .collect();
    let steps = steps.join("; ");
    assert_eq!(s.steps().filter(|st| st.success_rps > 0.0).count(), 2, "steps: {steps}");
    assert_nothing_left();
}

#[test]
fn a_hog_image_killed_at_its_memory_cap_is_stored_as_oom_killed_not_crashed() {
    engine();
    let tmp = tempfile::tempdir().unwrap();
    let (dbp, prof) = (tmp.path().join("h.db"), profile(tmp.path(), 2));
    let hog = fixture("hog-image");
    let (hog, prof, db_arg) = (hog.to_str().unwrap(), prof.to_str().unwrap(), dbp.to_str().unwrap());
    let args = ["run", hog, "--profile", prof, "--runs", "1", "--memory", "64M", "--db", db_arg];
    let out = svcbench_locked(&args, tmp.path());
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "a failed run makes the exit code 1: {said}");
    let s = stored(&dbp);
    let run = s.runs_of("test-hog-image").next().expect("the hog's run");
    let end =
        format!("status {}, error {:?}, exit {:?}, signal {:?}", run.status, run.error, run.exit_code, run.exit_signal);
    assert!(run.oom_killed && !run.crashed, "OOM-killed, not crashed: {end}; {said}");
    assert!(run.error.as_deref().unwrap_or_default().contains("OOM"), "{:?}", run.error);
    assert_eq!(run.steps.iter().filter(|st| st.oom_killed).count(), 1, "{said}");
    assert_nothing_left();
}

#[test]
fn a_client_service_link_delays_a_container_as_it_does_a_process() {
    engine();
    let tmp = tempfile::tempdir().unwrap();
    let prof = tmp.path().join("c1.toml");
    std::fs::write(&prof, "name = \"t\"\n[[step]]\nconnections = 1\nduration = \"1s\"\nrepeat = 3\n").unwrap();
    let svc = hello_container();
    let p50 = |extra: &[&str], name: &str| {
        let dbp = tmp.path().join(name);
        let mut all =
            vec!["run", &svc, "--profile", prof.to_str().unwrap(), "--runs", "1", "--db", dbp.to_str().unwrap()];
        all.extend(extra);
        let out = svcbench_locked(&all, tmp.path());
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        min_present(stored(&dbp).steps().map(|st| st.p50))
    };
    // The container joins the run's namespace (--network ns:…): the link's delay line sits in front of it.
    let plain = p50(&["--net"], "plain.db");
    let linked = p50(&["--link", "client-service=delay:3ms"], "linked.db");
    let rise = linked - plain;
    assert!(
        (2.7..=4.5).contains(&rise),
        "p50 rose by {rise:.2} ms ({plain:.2} → {linked:.2}); one round trip × 3 ms expected"
    );
    assert_nothing_left();
}

/// svcbench's pods present now (Podman 4.3's `pod ps` lists stopped pods too; it has no `-a`).
fn svcbench_pods() -> Vec<String> {
    let out = Command::new("podman")
        .args(["pod", "ps", "--filter", "label=svcbench.service", "--format", "{{.Name}}"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).lines().map(String::from).collect()
}

/// The first container of a Pod spec, read as YAML.
fn pod_container(yaml: &str) -> serde_norway::Value {
    let pod: serde_norway::Value = serde_norway::from_str(yaml).unwrap_or_else(|e| panic!("{e}: {yaml}"));
    assert_eq!(pod["kind"], "Pod", "{yaml}");
    pod["spec"]["containers"][0].clone()
}

#[test]
fn the_pod_spec_of_the_hello_image_asks_its_limits_as_requests_and_probes_its_readiness_path() {
    engine();
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("hello.pod.yaml");
    let svc = hello_container();
    let out = svcbench(&["pod", &svc, "--cpus", "0.5", "--memory", "64M", "-o", file.to_str().unwrap()], tmp.path());
    assert!(out.status.success(), "svcbench pod failed");
    let yaml = std::fs::read_to_string(&file).unwrap();
    let c = pod_container(&yaml);
    assert_eq!(c["resources"]["requests"], c["resources"]["limits"], "Guaranteed QoS: {yaml}");
    assert_eq!(c["resources"]["limits"]["cpu"], "500m", "{yaml}");
    assert_eq!(c["resources"]["limits"]["memory"], "64Mi", "{yaml}");
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/", "{yaml}");
    assert_eq!(c["securityContext"]["runAsUser"], 65534, "{yaml}");
    assert!(c["image"].as_str().unwrap().starts_with("svcbench-hello-go-nethttp-container:"), "{yaml}");
    // Printed without -o, the same spec.
    let printed = svcbench(&["pod", &svc, "--cpus", "0.5", "--memory", "64M", "--no-build"], tmp.path());
    assert_eq!(String::from_utf8_lossy(&printed.stdout), yaml);
    // Bad input: one line, exit 2, before anything is built.
    for (args, says) in [
        (vec!["--cpus", "0.0001"], "below one millicore"),
        (vec!["--memory", "lots"], "--memory"),
        (vec!["--cpuset", "x"], "--cpuset"),
    ] {
        let mut all = vec!["pod", svc.as_str()];
        all.extend(args);
        let out = svcbench(&all, tmp.path());
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{said}");
        assert!(said.contains(says) && said.trim().lines().count() == 1, "{said}");
    }
    let process = repo().join("services/hello/go-nethttp");
    let out = svcbench(&["pod", process.to_str().unwrap()], tmp.path());
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("no [container]") && said.contains("@container"), "{said}");
}

#[test]
fn the_hello_pod_played_by_podman_passes_its_checks_under_the_limits_it_asks_and_leaves_nothing() {
    engine();
    let tmp = tempfile::tempdir().unwrap();
    // The limits read back from the pod container's own cgroup (under Podman's /libpod_parent/<pod>); the
    // service's half of the CPUs, which a Pod cannot ask for, set on the played container.
    let (st, _) = hello_under_limits(tmp.path(), &["--runtime", "kube"], &[]);
    // Stored as a Pod, not as the engine's container of the same service.
    assert_eq!(st.services().next().and_then(|s| s.runtime.clone()).as_deref(), Some("pod (podman kube play)"));
    // The spec played is the one `svcbench pod` writes: kept beside the run's log.
    let played: Vec<PathBuf> = std::fs::read_dir(tmp.path().join("work"))
        .unwrap()
        .flatten()
        .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten().map(|f| f.path()))
        .filter(|p| p.to_string_lossy().ends_with(".pod.yaml"))
        .collect();
    assert_eq!(played.len(), 1, "{played:?}");
    let yaml = std::fs::read_to_string(&played[0]).unwrap();
    let pc = pod_container(&yaml);
    assert_eq!(pc["resources"]["requests"]["cpu"], "500m", "{yaml}");
    assert_eq!(pc["resources"]["limits"]["memory"], "64Mi", "{yaml}");
    assert!(yaml.contains("svcbench.owner"), "labelled for the leftover cleanup: {yaml}");
    assert_eq!(svcbench_pods(), Vec::<String>::new(), "pods left behind");
    assert_nothing_left();
}

#[test]
fn a_pod_left_by_a_killed_svcbench_is_removed_whole_by_the_next_run() {
    engine();
    let tmp = tempfile::tempdir().unwrap();
    let dbp = tmp.path().join("kp.db");
    let (left, said) = killed_then_next(tmp.path(), &dbp, &["--runtime", "kube"], &svcbench_pods, "pod");
    assert!(said.contains(&left[0]), "{said}");
    // The pod went whole: its infra container with it.
    let infra = Command::new("podman").args(["ps", "-a", "--format", "{{.Names}}"]).output().unwrap();
    let infra = String::from_utf8_lossy(&infra.stdout).to_string();
    assert!(!infra.lines().any(|n| n.ends_with("-infra")), "infra containers left: {infra}");
    assert_eq!(svcbench_pods(), Vec::<String>::new(), "pods left behind");
    assert_nothing_left();
}

/// The Docker path, driven by the real `docker` CLI: against Podman's Docker-compatible API (`podman system
/// service`), the only engine this kind of machine has. svcbench takes it for Docker (its version says so),
/// builds the image, runs it under the limits and reads them back from its cgroup as with Podman's CLI.
#[test]
fn the_docker_cli_runs_the_hello_image_under_its_limits() {
    engine();
    let version = Command::new("docker").arg("--version").output();
    let version = version.map(|o| String::from_utf8_lossy(&o.stdout).to_string()).unwrap_or_default();
    assert!(version.starts_with("Docker version"), "no Docker CLI ({version:?}): run scripts/setup.sh");
    let tmp = tempfile::tempdir().unwrap();
    let sock = tmp.path().join("podman.sock");
    let _api = Background(
        Command::new("podman")
            .args(["system", "service", "--time=0", &format!("unix://{}", sock.display())])
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(tmp.path().join("api.log")).unwrap())
            .spawn()
            .unwrap(),
    );
    let t0 = std::time::Instant::now();
    while !sock.exists() {
        assert!(t0.elapsed() < Duration::from_secs(20), "Podman's API socket never appeared");
        std::thread::sleep(Duration::from_millis(50));
    }
    let docker_host = format!("unix://{}", sock.display());
    let (st, said) = hello_under_limits(tmp.path(), &["--cpuset", "1"], &[("DOCKER_HOST", docker_host)]);
    assert!(said.contains("by `docker` (Docker)"), "the Docker CLI was not the engine: {said}");
    assert_eq!(st.services().next().and_then(|s| s.runtime.clone()).as_deref(), Some("container (docker)"));
    assert_nothing_left();
}

/// The users service's image on a real SQLite file: the run's fresh database folder is mounted into the
/// container, which writes it as the unprivileged user owning it. Its checks pass (lookups of the prefilled
/// rows, inserts), the conflict replay meets the rows it inserted (409s), the database's size is recorded,
/// and with a database path that cannot exist it refuses to start, as the process does.
#[test]
fn the_users_image_writes_the_runs_sqlite_database_mounted_into_it() {
    engine();
    let tmp = tempfile::tempdir().unwrap();
    let dbp = tmp.path().join("u.db");
    let svc = format!("{}@container", repo().join("services/users/go-nethttp").display());
    let args = ["run", &svc, "--profile", "replay", "--step-duration", "1s", "--runs", "1", "--memory", "128M"];
    let out = svcbench(&[&args[..], &["--db", dbp.to_str().unwrap()]].concat(), tmp.path());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "svcbench run of the users image failed: {said}");
    let st = stored(&dbp);
    let run = st.run();
    assert_eq!(run.status, "completed", "{said}");
    assert!(run.checks_passed.unwrap_or(0) >= 3 && run.checks_failed == Some(0), "checks: {said}");
    let conflicts = st
        .steps()
        .filter(|s| s.mix == "add-conflict")
        .map(|s| serde_json::from_str::<serde_json::Value>(&s.status_counts).unwrap()["409"].as_i64().unwrap_or(0))
        .sum::<i64>();
    assert!(conflicts > 0, "the conflict replay met no row it had inserted: {said}");
    let db_bytes = run.figures.iter().find(|(n, _)| n == "db_bytes").map(|(_, v)| *v).unwrap_or(0.0);
    assert!(db_bytes > 0.0, "the database's size is recorded: {:?}", run.figures);
    assert_eq!(st.service("users-go-nethttp@container").refuses_bad_dependency, Some(true), "{said}");
    assert_nothing_left();
}

/// A Containerfile on a local base the engine lacks (as the bundled services' Debian bases are until
/// scripts/base-images.sh makes them) is refused in one line naming how to make it, before any build.
#[test]
fn a_containerfile_on_a_missing_local_base_is_refused_before_any_build() {
    engine();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("svc");
    std::fs::create_dir_all(dir.join("container")).unwrap();
    std::fs::write(dir.join("container/Containerfile"), "FROM localhost/svcbench-missing-base\nCOPY x /x\n").unwrap();
    std::fs::write(
        dir.join("svcbench.toml"),
        "name = \"on-a-missing-base\"\nscenario = \"hello\"\nlanguage = \"go\"\nframework = \"x\"\n\
         framework_version = \"1\"\nmodel = \"blocking\"\nbuild = \"touch built-it\"\nreadiness = \"/\"\n\
         [container]\ncontainerfile = \"container/Containerfile\"\n",
    )
    .unwrap();
    let (dbp, prof) = (tmp.path().join("m.db"), profile(tmp.path(), 1));
    let args = ["run", dir.to_str().unwrap(), "--profile", prof.to_str().unwrap(), "--db", dbp.to_str().unwrap()];
    let out = svcbench(&args, tmp.path());
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    let line = said.lines().find(|l| l.contains("localhost/svcbench-missing-base")).unwrap_or_default();
    assert!(line.contains("scripts/base-images.sh"), "{said}");
    assert!(!dir.join("built-it").exists() && !said.contains("building"), "built before refusing: {said}");
}

/// What the confinement probe's log says, key by key (`uid: …`, `setuid: …`), from every service log of a
/// run in `tmp`'s work folder; one map per log that has its findings.
fn probe_findings(tmp: &Path) -> Vec<std::collections::BTreeMap<String, String>> {
    let mut out = Vec::new();
    for d in std::fs::read_dir(tmp.join("work")).unwrap().flatten() {
        for f in std::fs::read_dir(d.path()).unwrap().flatten() {
            let text = std::fs::read_to_string(f.path()).unwrap_or_default();
            if !text.contains("setuid: ") {
                continue;
            }
            let found = text.lines().filter_map(|l| l.split_once(": ")).map(|(k, v)| (k.to_string(), v.to_string()));
            out.push(found.collect());
        }
    }
    out
}

/// The probe under its confinement: uid 65534 however its setuid-root copy is run, no capability but
/// `capeff` (the one asked for, or none), a read-only root and a writable /tmp, its pids limit (64, the
/// manifest's) held by its cgroup and hit by its fork loop.
fn assert_confined(f: &std::collections::BTreeMap<String, String>, capeff: &str) {
    let all = format!("{f:?}");
    assert_eq!(f.get("uid").map(String::as_str), Some("65534 65534 65534 65534"), "{all}");
    assert_eq!(f.get("capeff").map(String::as_str), Some(capeff), "{all}");
    assert_eq!(f.get("nonewprivs").map(String::as_str), Some("1"), "{all}");
    // The setuid-root file ran (no error) and stayed the container's user, without capabilities.
    assert_eq!(
        f.get("setuid").map(String::as_str),
        Some(format!("euid=65534 capeff={capeff} <nil>").as_str()),
        "{all}"
    );
    assert!(f.get("write-root").is_some_and(|w| w.contains("read-only file system")), "{all}");
    assert_eq!(f.get("write-tmp").map(String::as_str), Some("written"), "{all}");
    assert_eq!(f.get("pids-max").map(String::as_str), Some("64"), "{all}");
    let forks = f.get("forks").cloned().unwrap_or_default();
    let started: u32 = forks.split(',').next().and_then(|n| n.parse().ok()).unwrap_or(999);
    assert!(forks.contains("then refused") && started < 64, "the fork loop did not meet the limit: {all}");
}

#[test]
fn an_image_s_setuid_root_file_stays_unprivileged_on_a_read_only_root_under_its_pids_limit() {
    engine();
    let tmp = tempfile::tempdir().unwrap();
    let (dbp, prof) = (tmp.path().join("s.db"), profile(tmp.path(), 2));
    let probe = fixture("confined-image");
    let bind = format!("{}@bind", probe.display());
    let (prof, db) = (prof.to_str().unwrap(), dbp.to_str().unwrap());
    let args = ["run", probe.to_str().unwrap(), &bind, "--profile", prof, "--runs", "1", "--db", db];
    let out = svcbench_locked(&args, tmp.path());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let st = stored(&dbp);
    assert_eq!(st.runs_of("test-confined-image").next().map(|r| r.status.clone()).as_deref(), Some("completed"));
    let found = probe_findings(tmp.path());
    assert_eq!(found.len(), 2, "{found:?}");
    // NET_BIND_SERVICE is bit 10: the variant that asks for it keeps it, and only it.
    let mut capeffs: Vec<&str> = found.iter().map(|f| f.get("capeff").map_or("", String::as_str)).collect();
    capeffs.sort();
    assert_eq!(capeffs, ["0000000000000000", "0000000000000400"], "{found:?}");
    for f in &found {
        assert_confined(f, &f["capeff"]);
    }
    assert_nothing_left();
}

#[test]
fn a_played_pod_of_the_setuid_image_is_confined_and_its_pids_limit_is_held_by_its_cgroup() {
    engine();
    let tmp = tempfile::tempdir().unwrap();
    let (dbp, prof) = (tmp.path().join("sp.db"), profile(tmp.path(), 2));
    let probe = fixture("confined-image");
    let (prof, db) = (prof.to_str().unwrap(), dbp.to_str().unwrap());
    let args = ["run", probe.to_str().unwrap(), "--runtime", "kube", "--profile", prof, "--runs", "1", "--db", db];
    let out = svcbench_locked(&args, tmp.path());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let found = probe_findings(tmp.path());
    assert_eq!(found.len(), 1, "{found:?}");
    assert_confined(&found[0], "0000000000000000");
    assert_eq!(svcbench_pods(), Vec::<String>::new(), "pods left behind");
    let volumes = Command::new("podman").args(["volume", "ls", "-q"]).output().unwrap();
    let volumes = String::from_utf8_lossy(&volumes.stdout).to_string();
    assert!(!volumes.lines().any(|v| v.starts_with("tmp-svcbench-")), "the pod's /tmp left behind: {volumes}");
    assert_nothing_left();
}

/// Anyone can label a container `svcbench.owner`: one labelled so by someone else, with an owner that no
/// longer runs, is not svcbench's to remove, and survives the leftover cleanup of the next svcbench.
#[test]
fn a_container_labelled_as_svcbench_s_by_someone_else_survives_the_next_run_s_cleanup() {
    engine();
    let tmp = tempfile::tempdir().unwrap();
    let ctx = tmp.path().join("ctx");
    std::fs::create_dir(&ctx).unwrap();
    let probe = fixture("confined-image");
    let built = Command::new("go")
        .args(["build", "-trimpath", "-o"])
        .arg(ctx.join("probe"))
        .arg(".")
        .env("CGO_ENABLED", "0")
        .current_dir(&probe)
        .status()
        .unwrap();
    assert!(built.success(), "go build of the probe failed");
    std::fs::write(ctx.join("Containerfile"), "FROM scratch\nCOPY probe /probe\nENTRYPOINT [\"/probe\"]\n").unwrap();
    let tag = format!("localhost/svcbench-test-foreign:{}", std::process::id());
    let b = Command::new("podman").args(["build", "-q", "-t", &tag]).arg(&ctx).output().unwrap();
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    // An owner that is gone: a process that has ended.
    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let name = format!("svcbench-foreign-{}", std::process::id());
    let labels = [
        format!("--label=svcbench.owner={dead}"),
        "--label=svcbench.owner_start=1".into(),
        format!("--label=svcbench.group={dead}-1-x"),
        "--label=svcbench.session=1".into(),
    ];
    let run = Command::new("podman")
        .args(["run", "-d", "--name", &name, "--network=none"])
        .args(&labels)
        .args([&tag, "sleep"])
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let steady = fixture("steady");
    let out = svcbench_locked(&["check", steady.to_str().unwrap()], tmp.path());
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    let state = Command::new("podman").args(["inspect", "--format", "{{.State.Running}}", &name]).output().unwrap();
    let state = String::from_utf8_lossy(&state.stdout).trim().to_string();
    let _ = Command::new("podman").args(["rm", "-f", "-t", "0", &name]).output();
    let _ = Command::new("podman").args(["rmi", "-f", &tag]).output();
    assert!(out.status.success(), "{said}");
    assert_eq!(state, "true", "the other's container was removed: {said}");
    assert!(!said.contains(&name), "{said}");
    assert_nothing_left();
}

//! The hosts file's other machines: a generator agent reached with OpenSSH. The "other machine" is a
//! network namespace made by the test, with a real OpenSSH server (Debian's openssh-server) in it, a
//! throw-away host key and a throw-away user key; svcbench on the far side is this same binary.
mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// A namespace with an sshd, joined to this one by a veth pair; removed on drop.
struct SshHost {
    ns: String,
    veth: String,
    sshd: Child,
    here: String,
    there: String,
    /// The throw-away user key that logs in.
    key: std::path::PathBuf,
}

impl SshHost {
    /// A hosts-file entry that reaches this host as root with the test's key, svcbench there at `svcbench`.
    fn entry(&self, svcbench: &str) -> String {
        format!(
            "at = \"ssh://root@{}\"\nsvcbench = \"{svcbench}\"\nssh_options = [\"-i\", \"{}\", \"-o\", \"UserKnownHostsFile=/dev/null\", \"-o\", \"StrictHostKeyChecking=no\", \"-o\", \"LogLevel=ERROR\"]\n",
            self.there,
            self.key.display()
        )
    }
}

impl Drop for SshHost {
    fn drop(&mut self) {
        let _ = self.sshd.kill();
        let _ = self.sshd.wait();
        let _ = Command::new(ip_program()).args(["netns", "delete", &self.ns]).status();
        // Usually gone with its namespace already; then `ip` only says so.
        let _ = Command::new(ip_program()).args(["link", "delete", &self.veth]).output();
    }
}

fn ip(args: &[&str]) {
    let out = Command::new(ip_program()).args(args).output().expect("ip (iproute2) is needed");
    assert!(out.status.success(), "ip {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn keygen(path: &Path) {
    let out = Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(path).output().unwrap();
    assert!(out.status.success(), "ssh-keygen: {}", String::from_utf8_lossy(&out.stderr));
}

fn ssh_host(dir: &Path) -> SshHost {
    let sshd = Path::new("/usr/sbin/sshd");
    assert!(sshd.is_file(), "this test needs OpenSSH's server: apt install openssh-server (scripts/setup.sh does)");
    common::remove_stale_test_hosts();
    let id = std::process::id();
    let (ns, veth, peer) = (format!("svbt-ssh-{id}"), format!("svbt{id}a"), format!("svbt{id}b"));
    // A /24 of 10.215.0.0/16 for this test alone.
    let net = id % 250 + 1;
    let (here, there) = (format!("10.215.{net}.1"), format!("10.215.{net}.2"));
    ip(&["netns", "add", &ns]);
    ip(&["link", "add", &veth, "type", "veth", "peer", "name", &peer]);
    ip(&["link", "set", &peer, "netns", &ns]);
    ip(&["addr", "add", &format!("{here}/24"), "dev", &veth]);
    ip(&["link", "set", &veth, "up"]);
    ip(&["-n", &ns, "addr", "add", &format!("{there}/24"), "dev", &peer]);
    ip(&["-n", &ns, "link", "set", &peer, "up"]);
    ip(&["-n", &ns, "link", "set", "lo", "up"]);
    keygen(&dir.join("host_key"));
    keygen(&dir.join("user_key"));
    std::fs::copy(dir.join("user_key.pub"), dir.join("authorized_keys")).unwrap();
    let config = format!(
        "ListenAddress {there}\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\nPidFile {d}/sshd.pid\n\
         PermitRootLogin prohibit-password\nPasswordAuthentication no\nStrictModes no\nUsePAM no\n",
        d = dir.display()
    );
    std::fs::write(dir.join("sshd_config"), config).unwrap();
    // Privilege separation needs its empty folder.
    std::fs::create_dir_all("/run/sshd").unwrap();
    let log = std::fs::File::create(dir.join("sshd.log")).unwrap();
    // nsenter, not `ip netns exec`: only the network is the namespace's; the other machine keeps its
    // cgroup mounts (`ip netns exec` remounts /sys, where they are), as a real machine would.
    let sshd = Command::new("nsenter")
        .arg(format!("--net=/run/netns/{ns}"))
        .args(["/usr/sbin/sshd", "-D", "-e", "-f"])
        .arg(dir.join("sshd_config"))
        .stderr(log)
        .spawn()
        .unwrap();
    let host = SshHost { ns, veth, sshd, here, there, key: dir.join("user_key") };
    let t0 = Instant::now();
    while std::net::TcpStream::connect_timeout(
        &format!("{}:22", host.there).parse().unwrap(),
        Duration::from_millis(200),
    )
    .is_err()
    {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "sshd did not listen: {}",
            std::fs::read_to_string(dir.join("sshd.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    host
}

#[test]
fn a_generator_on_another_host_is_driven_over_ssh_and_its_figures_come_home() {
    let tmp = tempfile::tempdir().unwrap();
    let host = ssh_host(tmp.path());
    let hosts = tmp.path().join("hosts.toml");
    // svcbench on the far side, its arguments written down: where the step's mix was put there.
    let (wrapper, calls) = (tmp.path().join("svcbench-there"), tmp.path().join("calls"));
    let script = format!("#!/bin/sh\necho \"$@\" >> {}\nexec {} \"$@\"\n", calls.display(), bin().display());
    std::fs::write(&wrapper, script).unwrap();
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::write(
        &hosts,
        format!("[service]\naddress = \"{}\"\n\n[[generator]]\n{}", host.here, host.entry(wrapper.to_str().unwrap())),
    )
    .unwrap();
    let prof = tmp.path().join("c2.toml");
    std::fs::write(&prof, "name = \"c2\"\n[[step]]\nconnections = 2\nduration = \"2s\"\n").unwrap();
    let dbp = tmp.path().join("ssh.db");
    let out = run_fixtures(tmp.path(), &["steady"], &prof, &dbp, &["--hosts", hosts.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    // The mix was read from a folder of its own made by mktemp there (the far side shares this /tmp), gone now.
    let calls = std::fs::read_to_string(&calls).unwrap();
    let mixes: Vec<PathBuf> =
        calls.lines().filter_map(|l| l.split(' ').skip_while(|a| *a != "--mix").nth(1)).map(PathBuf::from).collect();
    assert!(!mixes.is_empty(), "no agent ran there: {calls}");
    for mix in &mixes {
        let folder = mix.parent().unwrap();
        assert!(folder.file_name().unwrap().to_string_lossy().starts_with("svcbench-mix."), "{calls}");
        assert!(!folder.exists(), "the agent's mix folder {} was left behind", folder.display());
    }
    // The agent logged in over ssh with the test's key, from this machine's end of the link.
    let sshd_log = std::fs::read_to_string(tmp.path().join("sshd.log")).unwrap();
    assert!(sshd_log.contains(&format!("Accepted publickey for root from {}", host.here)), "{sshd_log}");
    // Its figures came home into the one store, and the session says where the generator was.
    let st = stored(&dbp);
    let (step, session) = (st.step(), st.session());
    assert!(step.requests_ok > 0, "{step:?}");
    assert_eq!(step.success_ratio, Some(1.0));
    let net = session.network.clone().unwrap_or_default();
    assert!(
        net.contains(&format!("generators ssh://root@{}", host.there))
            && net.contains(&format!("service {}", host.here)),
        "{net}"
    );
    // The other machine's facts, as svcbench there read them, are stored with the session and reported
    // (the "other machine" is this one's namespace: its kernel and CPU count are this machine's).
    let other = &session.other_hosts;
    let far = other.first().unwrap_or_else(|| panic!("no other host stored with the session"));
    assert_eq!(far.place, format!("ssh://root@{}", host.there), "{other:?}");
    assert_eq!(far.role, "generator 1");
    assert_eq!(far.facts.cpu_cores as i64, session.cpu_cores.unwrap_or(-1), "{other:?}");
    assert_eq!(far.facts.kernel, session.kernel.clone().unwrap_or_default(), "{other:?}");
    let md = tmp.path().join("r.md");
    assert!(svcbench(&["report", "--db", dbp.to_str().unwrap(), "-o", md.to_str().unwrap()], tmp.path())
        .status
        .success());
    let report = std::fs::read_to_string(&md).unwrap();
    assert!(report.contains(&format!("generator 1 ssh://root@{} (", host.there)), "{report}");
    // Nothing of the agent is left on the far side: no process, no copied mix.
    let leftover: Vec<_> = std::fs::read_dir("/tmp")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("svcbench-agent-"))
        .map(|e| e.path())
        .collect();
    assert!(leftover.is_empty(), "{leftover:?}");
    drop(host);
    assert_no_leftovers("fixtures/testservice.py");
    assert!(processes_matching("--exit-with-stdin").is_empty());

    // A service address this machine does not have is refused before anything starts.
    std::fs::write(&hosts, "[service]\naddress = \"192.0.2.77\"\n[[generator]]\nat = \"ssh://root@192.0.2.78\"\n")
        .unwrap();
    let out =
        run_fixtures(tmp.path(), &["steady"], &prof, &tmp.path().join("bad.db"), &["--hosts", hosts.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && said.contains("not an address of this machine"), "{said}");

    // A generator host whose svcbench path is wrong is named before anything is built.
    let second = tmp.path().join("second");
    std::fs::create_dir(&second).unwrap();
    let host = ssh_host(&second);
    std::fs::write(
        &hosts,
        format!("[service]\naddress = \"{}\"\n\n[[generator]]\n{}", host.here, host.entry("/nonexistent/svcbench")),
    )
    .unwrap();
    let out = run_fixtures(
        tmp.path(),
        &["steady"],
        &prof,
        &tmp.path().join("nosv.db"),
        &["--hosts", hosts.to_str().unwrap()],
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && said.contains("/nonexistent/svcbench host-facts"), "{said}");
    assert!(!said.contains("building"), "refused before any build: {said}");
    drop(host);
}

#[test]
fn a_generator_host_that_never_answers_fails_within_the_stated_time_limits() {
    let tmp = tempfile::tempdir().unwrap();
    let host = ssh_host(tmp.path());
    let prof = tmp.path().join("c1.toml");
    std::fs::write(&prof, "name = \"c1\"\n[[step]]\nconnections = 1\nduration = \"2s\"\n").unwrap();
    // Each case in a folder of its own (its own lock: another svcbench measuring on this machine, or the
    // other case, must not refuse it first), both at once: each only waits out a time limit.
    let run = |entry: &str, name: &str| {
        let dir = tmp.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let hosts = dir.join("hosts.toml");
        std::fs::write(&hosts, format!("[service]\naddress = \"{}\"\n\n[[generator]]\n{entry}", host.here)).unwrap();
        let t0 = Instant::now();
        let (steady, db) = (fixture("steady"), dir.join("s.db"));
        let args = ["run", steady.to_str().unwrap(), "--profile", prof.to_str().unwrap(), "--runs", "1"];
        let out = svcbench_locked(
            &[&args[..], &["--db", db.to_str().unwrap(), "--hosts", hosts.to_str().unwrap()]].concat(),
            &dir,
        );
        (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned(), t0.elapsed())
    };

    // An address that accepts the connection and never speaks: ssh's ConnectTimeout (15 s) covers the
    // banner exchange.
    let silent = std::net::TcpListener::bind((host.here.as_str(), 0)).unwrap();
    let port = silent.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in silent.incoming().flatten() {
            held.push(conn);
        }
    });
    // A real ssh server whose svcbench never answers: host-facts' own limit (30 s) ends it.
    let pid_file = tmp.path().join("hung.pid");
    let hung = tmp.path().join("hung-svcbench");
    std::fs::write(&hung, format!("#!/bin/sh\necho $$ > {}\nexec sleep 600\n", pid_file.display())).unwrap();
    std::fs::set_permissions(&hung, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let ((code, said, took), (hung_code, hung_said, hung_took)) = std::thread::scope(|scope| {
        let silent_case = scope.spawn(|| run(&format!("at = \"ssh://root@{}:{port}\"\n", host.here), "silent"));
        let hung_case = run(&host.entry(hung.to_str().unwrap()), "hung");
        (silent_case.join().unwrap(), hung_case)
    });
    if let Ok(pid) = std::fs::read_to_string(&pid_file) {
        let _ = Command::new("kill").arg(pid.trim()).status();
    }
    assert!(took < Duration::from_secs(15 + 15), "a silent ssh peer held the run for {took:?}: {said}");
    assert!(code == Some(2) && said.contains(&format!("generator host ssh://root@{}:{port}", host.here)), "{said}");
    assert!(said.to_lowercase().contains("timed out"), "{said}");
    let (code, said, took) = (hung_code, hung_said, hung_took);
    assert!(took < Duration::from_secs(30 + 15), "a hung host-facts held the run for {took:?}: {said}");
    assert!(code == Some(2) && said.contains("host-facts` did not answer within 30 s"), "{said}");
    assert!(!said.contains("building"), "refused before any build: {said}");
    drop(host);
}

/// Starts a 60 s run of `service` with the hosts file, SIGKILLs svcbench mid-step, and waits until what
/// the far side ran (`far_parts`) is gone: the closed connection alone must stop it there.
fn kill_mid_step_and_wait_for_the_far_side(
    tmp: &Path,
    name: &str,
    service: &str,
    hosts: &str,
    load_within: Duration,
    far_parts: &dyn Fn() -> Vec<String>,
) {
    let long = tmp.join("long.toml");
    std::fs::write(&long, "name = \"long\"\n[[step]]\nconnections = 1\nduration = \"60s\"\n").unwrap();
    let killed = tmp.join(format!("{name}.db"));
    let (l, k) = (long.to_str().unwrap(), killed.to_str().unwrap());
    let mut bg =
        spawn_svcbench(tmp, name, &["run", service, "--profile", l, "--runs", "1", "--db", k, "--hosts", hosts]);
    wait_for_load_within(&killed, load_within);
    assert!(!far_parts().is_empty(), "the far side should run its part during the step");
    bg.kill().unwrap();
    bg.wait().unwrap();
    let t0 = Instant::now();
    while !far_parts().is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(90),
            "the far side did not stop after svcbench was killed: {:?}\n{}",
            far_parts(),
            stderr_of(tmp, name)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The far side of these tests is a namespace with no route to the package registries, where svcbench
/// could not build the locations load dataset on a fresh machine; so it is built here first, as
/// scenarios/locations/dataset/README.md says, when it is missing.
fn ensure_locations_dataset() {
    let d = repo().join("scenarios/locations/dataset");
    if ["region.ndjson", "city.ndjson", "city-ids.txt"].iter().all(|f| d.join("out").join(f).is_file()) {
        return;
    }
    let python = d.join(".venv/bin/python");
    let run = |c: &mut Command| assert!(c.current_dir(&d).status().unwrap().success(), "building the dataset: {c:?}");
    if !python.is_file() {
        run(Command::new("python3").args(["-m", "venv", ".venv"]));
    }
    run(Command::new(&python).args(["-m", "pip", "install", "-q", "-r", "requirements.txt"]));
    run(Command::new(&python).args(["build.py", "--out", "out"]));
}

/// The hosts file's `[store]`: svcbench on the store's machine (reached over ssh, from a checkout there)
/// starts the scenario's OpenSearch listening on that machine's address; the run here uses it as a given
/// store, reads its CPU from its node statistics, and at the end the far side stops and removes it. Killing
/// svcbench here (SIGKILL) closes the connection, which stops the far side too.
#[test]
fn a_store_on_another_host_is_started_there_used_here_and_stopped() {
    ensure_locations_dataset();
    // The far side shares this machine's cache but has no way out to Maven's repository: fetched here.
    let cache = svcbench::deps::opensearch::cache_dir();
    svcbench::deps::opensearch::distribution::prepare(svcbench::deps::opensearch::DEFAULT_VERSION, &cache).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let host = ssh_host(tmp.path());
    let hosts = tmp.path().join("hosts.toml");
    let bin = bin();
    std::fs::write(&hosts, format!("[store]\ndir = \"{}\"\n{}", repo().display(), host.entry(bin.to_str().unwrap())))
        .unwrap();
    let store_procs = || {
        let mut p = processes_matching("org.opensearch.bootstrap");
        p.extend(processes_matching("serve-deps"));
        p
    };
    assert!(store_procs().is_empty(), "a store already runs: {:?}", store_procs());
    // One run, killed during its second step: the first step's figures are kept, and with the controller
    // gone the far side stops its store by itself. (Each store started there costs a minute: a completed
    // run's orderly stop of it is checked through `up`'s Ctrl-C below.)
    let prof = tmp.path().join("two.toml");
    std::fs::write(
        &prof,
        "name = \"two\"\n[[step]]\nconnections = 1\nduration = \"2s\"\n[[step]]\nconnections = 1\nduration = \"60s\"\n",
    )
    .unwrap();
    let dbp = tmp.path().join("store.db");
    let (p, h) = (prof.to_str().unwrap(), hosts.to_str().unwrap());
    let ktor = repo().join("services/locations/kotlin-ktor");
    let ktor = ktor.to_str().unwrap();
    let mut bg = spawn_svcbench(
        tmp.path(),
        "store-killed",
        &["run", ktor, "--profile", p, "--runs", "1", "--db", dbp.to_str().unwrap(), "--hosts", h],
    );
    let t0 = Instant::now();
    while !try_stored(&dbp).is_ok_and(|s| s.steps().any(|st| st.requests_ok > 0)) {
        assert!(t0.elapsed() < Duration::from_secs(300), "no first step: {}", stderr_of(tmp.path(), "store-killed"));
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!store_procs().is_empty(), "the far side should run its store during the step");
    bg.kill().unwrap();
    bg.wait().unwrap();
    let said = stderr_of(tmp.path(), "store-killed");
    // The store ran over there, listening on that machine's address, and was used here as a given one.
    assert!(said.contains(&format!("the store's machine runs opensearch at http://{}:", host.there)), "{said}");
    assert!(said.contains("using the running OpenSearch"), "{said}");
    assert!(!said.lines().any(|l| l.starts_with("svcbench: starting dependency")), "no store here: {said}");
    let sshd_log = std::fs::read_to_string(tmp.path().join("sshd.log")).unwrap();
    assert!(sshd_log.contains(&format!("Accepted publickey for root from {}", host.here)), "{sshd_log}");
    let st = stored(&dbp);
    let (run, first) = (st.run(), st.step());
    let (passed, failed) = (run.checks_passed.unwrap_or(0), run.checks_failed.unwrap_or(-1));
    assert!(passed >= 60 && failed == 0, "{passed} checks passed, {failed} failed: {said}");
    assert!(first.seq == 1 && first.requests_ok > 0, "{first:?}");
    assert!(first.dep_cpu_s.unwrap_or(0.0) > 0.0, "the far node's CPU, from its statistics: {said}");
    let net = st.session().network.clone().unwrap_or_default();
    assert!(net.contains(&format!("store ssh://root@{} ({})", host.there, host.there)), "{net}");
    let other = &st.session().other_hosts;
    assert_eq!(other.first().map(|o| o.role.as_str()), Some("store"), "{other:?}");
    assert_eq!(other[0].facts.cpu_cores as i64, st.session().cpu_cores.unwrap_or(-1), "{other:?}");
    let t0 = Instant::now();
    while !store_procs().is_empty() {
        assert!(
            t0.elapsed() < Duration::from_secs(90),
            "the far side did not stop its store: {:?}\n{said}",
            store_procs()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // `svcbench up` with the same [store]: the service here, its store there, both until Ctrl-C.
    let (mut up, lines) = spawn_up(tmp.path(), &repo().join("services/locations/kotlin-ktor"), &["--hosts", h], 2);
    let service = lines.iter().find_map(|l| l.strip_prefix("service ")).expect("service URL").to_string();
    let store = lines.iter().find_map(|l| l.strip_prefix("dep.opensearch.url ")).expect("store URL").to_string();
    assert!(store.starts_with(&format!("http://{}:", host.there)), "{lines:?}");
    let answer = ureq::get(&format!("{service}/city/v1/get?id=101748111&language=cs")).call().unwrap();
    let city: serde_json::Value = serde_json::from_reader(answer.into_reader()).unwrap();
    assert_eq!(city["name"], "Plzeň", "served from the store over there: {city}");
    assert!(
        up.interrupt(Duration::from_secs(90)).is_some(),
        "{}",
        std::fs::read_to_string(tmp.path().join("up.err")).unwrap()
    );
    assert!(store_procs().is_empty(), "left running after up: {:?}", store_procs());
    // The next svcbench here removes what the killed one left of its own (its service).
    let short = tmp.path().join("c1.toml");
    std::fs::write(&short, "name = \"c1\"\n[[step]]\nconnections = 1\nduration = \"2s\"\n").unwrap();
    let next = svcbench_locked(
        &[
            "run",
            fixture("steady").to_str().unwrap(),
            "--profile",
            short.to_str().unwrap(),
            "--runs",
            "1",
            "--db",
            tmp.path().join("next.db").to_str().unwrap(),
        ],
        tmp.path(),
    );
    assert!(next.status.success());
    drop(host);
    assert_no_leftovers("locations-ktor");
}

/// The hosts file's `[service] at`: svcbench on the service's machine (reached over ssh, from a checkout
/// there) builds and starts the service in its sandbox under the run's limits, listening on that machine's
/// address; the generator here drives it and every figure (its CPU and memory, sampled there) comes home.
/// At the end, and when svcbench here is killed, the far side stops the service and removes its cgroup.
#[test]
fn a_service_on_another_host_is_built_run_and_sampled_there() {
    let tmp = tempfile::tempdir().unwrap();
    let host = ssh_host(tmp.path());
    let hosts = tmp.path().join("hosts.toml");
    let bin = bin();
    std::fs::write(&hosts, format!("[service]\ndir = \"{}\"\n{}", repo().display(), host.entry(bin.to_str().unwrap())))
        .unwrap();
    let prof = tmp.path().join("c2.toml");
    std::fs::write(&prof, "name = \"c2\"\n[[step]]\nconnections = 2\nduration = \"2s\"\n").unwrap();
    let dbp = tmp.path().join("far.db");
    let h = hosts.to_str().unwrap();
    let out = run_fixtures(tmp.path(), &["steady"], &prof, &dbp, &["--hosts", h, "--cpus", "0.5", "--memory", "256M"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains(&format!("the service runs on ssh://root@{}", host.there)), "{said}");
    let sshd_log = std::fs::read_to_string(tmp.path().join("sshd.log")).unwrap();
    assert!(sshd_log.contains(&format!("Accepted publickey for root from {}", host.here)), "{sshd_log}");
    let st = stored(&dbp);
    let (run, step, session) = (st.run(), st.step(), st.session());
    // Answered on the far machine's address (only its namespace has it), through the checks and the load.
    let (passed, failed) = (run.checks_passed.unwrap_or(-1), run.checks_failed.unwrap_or(-1));
    assert!(passed > 0 && failed == 0, "{passed} checks passed, {failed} failed");
    assert!(step.requests_ok > 0, "{step:?}");
    assert_eq!(step.success_ratio, Some(1.0));
    let net = session.network.clone().unwrap_or_default();
    assert!(net.contains(&format!("service {} on ssh://root@{}", host.there, host.there)), "{net}");
    // Sampled there: its CPU, memory and the limits its cgroup there held.
    assert!(step.cpu_s.unwrap_or(f64::NAN) > 0.0, "{said}");
    assert!(step.mem_peak_mib.unwrap_or(f64::NAN) > 1.0, "{said}");
    let held = format!("{} {:?}", run.cgroup_version.as_deref().unwrap_or_default(), run.warnings);
    assert_eq!(run.applied_cpus, Some(0.5), "{held} {said}");
    assert_eq!(run.applied_memory_mib, Some(256.0));
    assert_eq!(run.status, "completed");
    assert!(run.startup_ms.unwrap_or(f64::NAN) > 0.0);
    let other = &session.other_hosts;
    assert_eq!(other.first().map(|o| o.role.as_str()), Some("service"), "{other:?}");
    // Stopped and removed there before the run ended.
    assert!(processes_matching("testservice.py steady").is_empty());
    assert!(leftover_cgroups().is_empty(), "cgroups left behind: {:?}", leftover_cgroups());

    // Its open files are counted there: a service holding all but 4 of its 128 files, filled by eight
    // keep-alive connections, is flagged at its limit.
    let prof8 = tmp.path().join("c8.toml");
    std::fs::write(&prof8, "name = \"c8\"\n[[step]]\nconnections = 8\nduration = \"3s\"\n").unwrap();
    let dbf = tmp.path().join("files.db");
    let out = run_fixtures(tmp.path(), &["files"], &prof8, &dbf, &["--hosts", h]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let st = stored(&dbf);
    let step = st.step();
    let flags = step.validity();
    let flag = flags.flags.iter().find(|f| f.code == FlagCode::OpenFileLimit);
    assert!(flag.is_some_and(|f| f.detail.contains("its limit of 128")), "{:?}", step.flags);
    assert!(step.listen_drops.is_some(), "its accept queue's drops were read there");

    // Killed here: the connection closes and the far side stops the service by itself.
    let steady = fixture("steady");
    kill_mid_step_and_wait_for_the_far_side(
        tmp.path(),
        "service-killed",
        steady.to_str().unwrap(),
        h,
        Duration::from_secs(60),
        &|| {
            let mut left = processes_matching("testservice.py steady");
            left.extend(leftover_cgroups().iter().map(|g| g.display().to_string()));
            left
        },
    );
    assert!(processes_matching("serve-service").is_empty());

    // `svcbench up` with the same [service]: the service over there, under its limits, until Ctrl-C.
    let (mut up, lines) = spawn_up(tmp.path(), &steady, &["--hosts", h, "--cpus", "0.5"], 1);
    let url = lines[0].strip_prefix("service ").expect(&lines[0]).to_string();
    assert!(url.starts_with(&format!("http://{}:", host.there)), "{lines:?}");
    assert_eq!(ureq::get(&format!("{url}/")).call().unwrap().status(), 200);
    assert!(!processes_matching("testservice.py steady").is_empty());
    assert!(up.interrupt(Duration::from_secs(30)).is_some(), "{}", stderr_of(tmp.path(), "up"));
    let said = std::fs::read_to_string(tmp.path().join("up.err")).unwrap();
    assert!(said.contains("CPU quota 0.5"), "the quota held there: {said}");
    assert!(processes_matching("testservice.py steady").is_empty(), "left running after up: {said}");

    // A service outside the checkout cannot be found there: said before any build or start.
    let outside = tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::copy(fixture("steady").join("svcbench.toml"), outside.join("svcbench.toml")).unwrap();
    let testing = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scenarios/testing");
    let refused = |service: &Path, extra: &[&str], says: &str| {
        let db = tmp.path().join("refused.db");
        let mut args = vec!["run", service.to_str().unwrap(), "--profile", prof.to_str().unwrap(), "--runs", "1"];
        args.extend(["--db", db.to_str().unwrap(), "--hosts", h]);
        args.extend(extra);
        let out = svcbench(&args, tmp.path());
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && said.contains(says) && !said.contains("building"), "{said}");
    };
    refused(&outside, &["--scenario", testing.to_str().unwrap()], "outside this checkout");
    // A scenario whose store would stay here, out of the far service's reach, is refused up front.
    refused(&repo().join("services/locations/kotlin-ktor"), &[], "place them with [store]");
    drop(host);
    assert_no_leftovers("testservice.py steady");
}

/// A remote agent ends when its ssh connection does: `svcbench load --exit-with-stdin` stops its load and
/// still reports when its standard input closes, long before its duration.
#[test]
fn an_agent_ends_and_reports_when_its_input_closes() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut conn = conn;
                let mut buf = [0u8; 4096];
                let mut pending = Vec::new();
                while let Ok(n) = conn.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    pending.extend_from_slice(&buf[..n]);
                    while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                        pending.drain(..end + 4);
                        if conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    let mut agent = Command::new(bin())
        .args(["load", &format!("http://{addr}/"), "-c", "1", "-d", "60s", "--json", "--exit-with-stdin"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let t0 = Instant::now();
    drop(agent.stdin.take());
    let out = agent.wait_with_output().unwrap();
    assert!(t0.elapsed() < Duration::from_secs(10), "the agent ran on for {:?}", t0.elapsed());
    assert!(out.status.success());
    let report: loadgen::LoadReport = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report.requests_ok > 0 && report.duration_s < 10.0, "{} ok in {} s", report.requests_ok, report.duration_s);
}

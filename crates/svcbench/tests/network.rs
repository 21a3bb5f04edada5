//! The emulated network (`--net`, `--link`): the generator, the service and its dependency each in a
//! namespace of their own, a link's delay added to every round trip that crosses it, and nothing left
//! behind — also when svcbench is killed.
mod common;
use common::*;
use std::path::Path;
use std::time::Duration;

fn profile(dir: &Path, secs: u32) -> std::path::PathBuf {
    let p = dir.join(format!("c1-{secs}.toml"));
    std::fs::write(&p, format!("name = \"t\"\n[[step]]\nconnections = 1\nduration = \"{secs}s\"\n")).unwrap();
    p
}

/// Three 1 s steps at one connection: the quietest of them measures the link (this shared host sometimes
/// wakes the link's relay late for a second or so, which would read as a longer link).
fn three_short_steps(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("c1-3x1.toml");
    std::fs::write(&p, "name = \"t\"\n[[step]]\nconnections = 1\nduration = \"1s\"\nrepeat = 3\n").unwrap();
    p
}

/// The lowest step median of a run.
fn p50(dbp: &Path) -> f64 {
    min_present(stored(dbp).steps().map(|st| st.p50))
}

#[test]
fn a_service_store_link_adds_its_delay_to_every_round_trip_and_is_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let prof = three_short_steps(tmp.path());
    let (plain, linked) = (tmp.path().join("plain.db"), tmp.path().join("linked.db"));
    // The forwarder opens a fresh connection to the upstream for every request: two round trips to the
    // store (connect, then the request) per request at one connection.
    let out = run_fixtures(tmp.path(), &["forwarder"], &prof, &plain, &["--net"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = run_fixtures(tmp.path(), &["forwarder"], &prof, &linked, &["--link", "service-store=delay:2ms"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("link service-store=delay:2ms:") && said.contains(" 0 dropped"), "{said}");
    let rise = p50(&linked) - p50(&plain);
    assert!((3.5..=7.5).contains(&rise), "p50 rose by {rise:.2} ms; 2 round trips × 2 ms expected");
    // Every request still succeeded, and the network is stored with the session and shown in the report.
    let s = stored(&linked);
    assert_eq!(min_present(s.steps().map(|st| st.success_ratio)), 1.0);
    let net = s.session().network.clone().unwrap_or_default();
    assert!(net.contains("service 10.213.") && net.contains("links: service-store=delay:2ms"), "{net}");
    let md = tmp.path().join("r.md");
    let out = svcbench(&["report", "--db", linked.to_str().unwrap(), "-o", md.to_str().unwrap()], tmp.path());
    assert!(out.status.success());
    assert!(std::fs::read_to_string(&md).unwrap().contains("links: service-store=delay:2ms"));
    assert_no_leftovers("fixtures/testservice.py");
}

#[test]
fn a_client_service_link_delays_the_generator_and_a_bad_link_is_refused_before_any_work() {
    let tmp = tempfile::tempdir().unwrap();
    let prof = three_short_steps(tmp.path());
    let (plain, linked) = (tmp.path().join("plain.db"), tmp.path().join("linked.db"));
    assert!(run_fixtures(tmp.path(), &["steady"], &prof, &plain, &["--net"]).status.success());
    let out = run_fixtures(tmp.path(), &["steady"], &prof, &linked, &["--link", "client-service=delay:3ms"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Keep-alive: one round trip per request.
    let rise = p50(&linked) - p50(&plain);
    assert!((2.7..=4.5).contains(&rise), "p50 rose by {rise:.2} ms; one round trip × 3 ms expected");

    for (bad, says) in [("service-db=delay:1ms", "unknown part `db`"), ("client-service=delay:2", "not a valid delay")]
    {
        let out = run_fixtures(tmp.path(), &["steady"], &prof, &tmp.path().join("bad.db"), &["--link", bad]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(says), "{bad}: {err}");
        assert!(!tmp.path().join("bad.db").exists(), "nothing may start on bad input");
    }
    let out = run_fixtures(
        tmp.path(),
        &["steady"],
        &prof,
        &tmp.path().join("bad.db"),
        &["--link", "client-service=delay:1ms", "--link", "service-client=delay:2ms"],
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("given twice"));
    assert_no_leftovers("fixtures/testservice.py");
}

#[test]
fn namespaces_left_by_a_killed_svcbench_are_removed_by_the_next_run() {
    let tmp = tempfile::tempdir().unwrap();
    let (long, short) = (profile(tmp.path(), 30), profile(tmp.path(), 1));
    let dbp = tmp.path().join("s.db");
    let forwarder = fixture("forwarder");
    let (f, l, d) = (forwarder.to_str().unwrap(), long.to_str().unwrap(), dbp.to_str().unwrap());
    let mut child = spawn_svcbench(
        tmp.path(),
        "killed",
        &["run", f, "--profile", l, "--runs", "1", "--db", d, "--link", "service-store=delay:1ms"],
    );
    let pid = child.id();
    wait_for_load(&dbp);
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    child.wait().unwrap();
    let left = leftover_network();
    assert!(left.iter().any(|l| l.starts_with(&format!("svcbench-{pid}-service"))), "{left:?}");

    let steady = fixture("steady");
    let out = svcbench_locked(
        &["run", steady.to_str().unwrap(), "--profile", short.to_str().unwrap(), "--runs", "1", "--db", d],
        tmp.path(),
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains(&format!("removed the --net namespaces and interfaces of svcbench pid(s) {pid}")), "{said}");
    assert_no_leftovers("fixtures/testservice.py");
}

#[test]
fn check_removes_the_namespaces_a_killed_svcbench_left_as_run_does() {
    let tmp = tempfile::tempdir().unwrap();
    // A namespace named after a pid that no longer runs, as a SIGKILLed svcbench leaves its own.
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    gone.wait().unwrap();
    let ns = format!("svcbench-{}-service", gone.id());
    assert!(std::process::Command::new(ip_program()).args(["netns", "add", &ns]).status().unwrap().success());
    let steady = fixture("steady");
    let w = tmp.path().join("results/work/check");
    let out = svcbench(&["check", steady.to_str().unwrap(), "--work-dir", w.to_str().unwrap()], tmp.path());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    let removed =
        said.lines().any(|l| l.contains("removed the --net namespaces") && l.contains(&gone.id().to_string()));
    assert!(removed && !svcbench_network().contains(&ns), "{said}");
    assert_no_leftovers("fixtures/testservice.py");
}

#[test]
fn up_keeps_a_service_and_its_dependency_running_until_ctrl_c_then_cleans_up() {
    use std::io::{Read, Write};
    let tmp = tempfile::tempdir().unwrap();
    let (mut child, lines) = spawn_up(tmp.path(), &fixture("forwarder"), &["--link", "service-store=delay:1ms"], 2);
    let (service, upstream) = (lines[0].clone(), lines[1].clone());
    assert!(upstream.starts_with("dep.upstream.url http://10.213."), "{upstream}");
    let addr = service.strip_prefix("service http://").expect(&service).to_string();
    // A user's own client, from this machine: the service answers, through its real dependency.
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(format!("GET / HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes()).unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200") && answer.ends_with("ok"), "{answer}");
    assert!(!svcbench_network().is_empty(), "the network stays up while svcbench up runs");
    let status = child.interrupt(Duration::from_secs(30)).expect("svcbench up did not stop on Ctrl-C");
    assert!(status.success(), "{status:?}");
    assert_no_leftovers("fixtures/testservice.py");
}

/// Every `step-<seq>-agent-<i>.json` under `dir`, by (seq, agent).
fn agent_reports(dir: &Path) -> std::collections::BTreeMap<(u32, u32), loadgen::LoadReport> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if p.is_dir() {
                stack.push(p);
            } else if let Some(rest) = name.strip_prefix("step-").and_then(|n| n.strip_suffix(".json")) {
                let (seq, agent) = rest.split_once("-agent-").unwrap();
                let report = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
                out.insert((seq.parse().unwrap(), agent.parse().unwrap()), report);
            }
        }
    }
    out
}

#[test]
fn two_generator_namespaces_drive_one_step_and_their_histograms_merge_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let prof = tmp.path().join("agents.toml");
    std::fs::write(
        &prof,
        "name = \"agents\"\n[[step]]\nconnections = 4\nduration = \"2s\"\n[[step]]\nrate = 200\nduration = \"2s\"\n",
    )
    .unwrap();
    let dbp = tmp.path().join("agents.db");
    let out = run_fixtures(
        tmp.path(),
        &["steady"],
        &prof,
        &dbp,
        &["--generators", "2", "--link", "client-service=delay:1ms"],
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    // Two client namespaces, each behind its own link to the service.
    let s = stored(&dbp);
    let net = s.session().network.clone().unwrap_or_default();
    assert!(net.contains("client 10.213.") && net.contains("client2 10.213."), "{net}");
    assert!(
        said.contains("link client-service=delay:1ms:") && said.contains("link client2-service=delay:1ms:"),
        "{said}"
    );

    let reports = agent_reports(tmp.path());
    assert_eq!(reports.len(), 4, "two steps × two agents: {:?}", reports.keys());
    for seq in [1, 2] {
        let step = s.steps().find(|st| st.seq == i64::from(seq)).unwrap_or_else(|| panic!("no step {seq} stored"));
        let (a, b) = (&reports[&(seq, 1)], &reports[&(seq, 2)]);
        assert!(a.requests_ok > 0 && b.requests_ok > 0, "step {seq}: both agents sent");
        assert_eq!(step.requests_ok as u64, a.requests_ok + b.requests_ok, "step {seq}: the sum of the agents' counts");
        let mut h = a.histogram().unwrap();
        h.add(b.histogram().unwrap()).unwrap();
        for (col, stored, q) in [("p50", step.p50, 0.5), ("p99", step.p99, 0.99)] {
            let stored = stored.unwrap_or(f64::NAN);
            let merged = h.value_at_quantile(q) as f64 / 1000.0;
            assert!((stored - merged).abs() < 1e-9, "step {seq} {col}: stored {stored}, merged histograms {merged}");
        }
    }
    // The open step: the agents split one schedule of 200 req/s × 2 s between them.
    let intended: u64 = [1, 2].iter().map(|&i| reports[&(2, i)].open.unwrap().intended).sum();
    assert!((399..=401).contains(&intended), "{intended} due requests in all");
    // Both agents sat behind the 1 ms link.
    assert!(reports[&(1, 2)].latency.p50 >= 1.0, "{}", reports[&(1, 2)].latency.p50);
    assert_no_leftovers("fixtures/testservice.py");
}

/// A study's link axis: each cell runs with its own links on one network made once, and stores them in its
/// cell; a bad entry, or `--link` beside the axis, is refused before anything starts.
#[test]
fn a_study_link_axis_gives_each_cell_its_own_delay() {
    let tmp = tempfile::tempdir().unwrap();
    let prof = three_short_steps(tmp.path());
    let write_study = |name: &str, links: &str| {
        let f = tmp.path().join(format!("{name}.toml"));
        std::fs::write(
            &f,
            format!(
                "title = \"Store delay\"\nquestion = \"What does a store 2 ms away cost?\"\nservices = [\"{}\"]\n\
                 profile = \"{}\"\nruns = 1\n[network]\nlinks = {links}\n",
                fixture("forwarder").display(),
                prof.display()
            ),
        )
        .unwrap();
        f
    };
    let f = write_study("links", r#"["", "service-store=delay:2ms"]"#);
    let dbp = tmp.path().join("links.db");
    let (fs, ds) = (f.to_str().unwrap(), dbp.to_str().unwrap());
    let out = svcbench(&["study", fs, "--db", ds, "--probe-tolerance", "1000"], tmp.path());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    let s = stored(&dbp);
    let p50_of = |links: &str| {
        let cell = format!("cpus=none memory=512M links={links}");
        min_present(
            s.runs().filter(|r| r.cell.as_deref() == Some(cell.as_str())).flat_map(|r| &r.steps).map(|st| st.p50),
        )
    };
    let rise = p50_of("service-store=delay:2ms") - p50_of("none");
    assert!((3.5..=7.5).contains(&rise), "p50 rose by {rise:.2} ms between the cells; 2 round trips × 2 ms expected");
    let net = s.session().network.clone().unwrap_or_default();
    assert!(net.contains("the links of each run are its cell's"), "{net}");
    let md = std::fs::read_to_string(tmp.path().join("links.md")).unwrap();
    assert!(md.contains("Round under cpus=none memory=512M links=service-store=delay:2ms"), "{md}");
    assert_no_leftovers("fixtures/testservice.py");
    assert!(leftover_network().is_empty(), "{:?}", leftover_network());

    let bad = write_study("bad", r#"["service-db=delay:1ms"]"#);
    let bad_db = tmp.path().join("bad.db");
    let out = svcbench(&["study", bad.to_str().unwrap(), "--db", bad_db.to_str().unwrap()], tmp.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("network.links") && err.contains("unknown part `db`"), "{err}");
    let out =
        svcbench(&["study", fs, "--db", bad_db.to_str().unwrap(), "--link", "client-service=delay:1ms"], tmp.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("leave out --link"), "{err}");
    assert!(!bad_db.exists(), "nothing may start on bad input");
}

#[test]
fn the_generators_namespaces_reuse_time_wait_ports_as_loopback_does() {
    // `Connection: close` leaves a TIME_WAIT socket per request on the generator's side. Without reuse,
    // connect() in a namespace searched a nearly full ephemeral range: the hello services at 16 connections
    // cost 1.8 ms of the generator's CPU per request (11 µs with reuse), and the generator set the pace.
    let net = svcbench::network::Network::create(&[], &[0], 2).expect("the network is made");
    let reuse = |h: &svcbench::network::Host| {
        h.within(|| std::fs::read_to_string("/proc/sys/net/ipv4/tcp_tw_reuse").unwrap()).unwrap().trim().to_string()
    };
    let hosts = net.hosts();
    assert_eq!(hosts.generators.len(), 2);
    for g in &hosts.generators {
        assert_eq!(reuse(g), "1", "a generator's namespace reuses TIME_WAIT ports");
    }
    // The setting is the generators' own: the service's namespace keeps the kernel's default (loopback only).
    assert_eq!(reuse(&hosts.service), "2");
    drop(net);
    let net = leftover_network();
    assert!(net.is_empty(), "network namespaces or interfaces left behind: {net:?}");
}

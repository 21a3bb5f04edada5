//! Where services listen: svcbench reads the service's listening sockets after startup and warns (output,
//! store, report) when one is on every interface, where `check` fails it; a bundled service listens only on
//! its `{host}`, and
//! `svcbench up` leaves it unreachable on the machine's other addresses.
mod common;
use common::*;
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Nothing of these tests is left: no cgroup, no process. (They make no network namespace: another test's
/// on this shared machine must not fail them.)
fn nothing_left(needle: &str) {
    assert!(leftover_cgroups().is_empty(), "cgroups left behind: {:?}", leftover_cgroups());
    assert!(processes_matching(needle).is_empty(), "processes left behind: {:?}", processes_matching(needle));
}

fn profile(dir: &Path) -> PathBuf {
    let p = dir.join("p1.toml");
    std::fs::write(&p, "name = \"t\"\n[[step]]\nconnections = 2\nduration = \"1s\"\n").unwrap();
    p
}

#[test]
fn check_fails_a_service_on_every_interface_and_passes_one_on_its_host() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("w");
    for (svc, code, line) in [
        (
            "wildcard",
            Some(1),
            "FAIL  listens only on the address it is given (127.0.0.1): the service listens on every interface (0.0.0.0:",
        ),
        ("steady", Some(0), "PASS  listens only on the address it is given (127.0.0.1)"),
    ] {
        let out = svcbench(&["check", fixture(svc).to_str().unwrap(), "--work-dir", work.to_str().unwrap()], &repo());
        let said = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), code, "{svc}: {said}");
        assert!(said.lines().any(|l| l.starts_with(line)), "{svc}: no line starting {line:?} in {said}");
        // The scenario's own checks still ran and passed.
        assert!(said.contains("PASS  GET / answers ok"), "{svc}: {said}");
    }
    nothing_left("testservice.py steady");
}

#[test]
fn a_service_on_every_interface_is_warned_about_stored_and_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let dbp = tmp.path().join("w.db");
    let (wildcard, steady, prof) = (fixture("wildcard"), fixture("steady"), profile(tmp.path()));
    let mut args = vec!["run", wildcard.to_str().unwrap(), steady.to_str().unwrap(), "--runs", "1"];
    args.extend(["--profile", prof.to_str().unwrap(), "--db", dbp.to_str().unwrap()]);
    // A lock of the test's own: another svcbench measuring on this machine must not refuse it.
    let out = svcbench_locked(&args, tmp.path());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    let warned: Vec<&str> = said.lines().filter(|l| l.contains("listens on every interface")).collect();
    assert_eq!(warned.len(), 1, "one warning, for the wildcard service only: {said}");
    assert!(warned[0].contains("test-wildcard run 1") && warned[0].contains("(0.0.0.0:"), "{}", warned[0]);

    let s = stored(&dbp);
    let addrs_of = |svc: &str| s.run_of(svc).listen_addrs.clone().unwrap_or_default();
    // Read back: the wildcard service's address and its warning; the steady one on 127.0.0.1 only, no warning.
    assert!(addrs_of("test-wildcard").starts_with("0.0.0.0:"), "{}", addrs_of("test-wildcard"));
    let warning = s.run_of("test-wildcard").listen_warning.clone().unwrap_or_default();
    assert!(warning.contains("every interface (0.0.0.0:") && warning.contains("127.0.0.1"), "{warning}");
    assert!(addrs_of("test-steady").starts_with("127.0.0.1:"), "{}", addrs_of("test-steady"));
    assert_eq!(s.runs_of("test-steady").filter(|r| r.listen_warning.is_none()).count(), 1);

    // The report's runs table carries it on the wildcard run's row.
    let md = tmp.path().join("r.md");
    let out = svcbench(&["report", "--db", dbp.to_str().unwrap(), "-o", md.to_str().unwrap()], tmp.path());
    assert!(out.status.success());
    let text = std::fs::read_to_string(&md).unwrap();
    let rows: Vec<&str> = text.lines().filter(|l| l.contains("listens on every interface")).collect();
    assert_eq!(rows.len(), 1, "{text}");
    assert!(rows[0].contains("test-wildcard"), "{}", rows[0]);
    nothing_left("testservice.py steady");
}

#[test]
fn a_bundled_service_on_its_host_is_stored_without_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let dbp = tmp.path().join("h.db");
    let svc = repo().join("services/hello/go-nethttp");
    let prof = profile(tmp.path());
    let args = ["run", svc.to_str().unwrap(), "--profile", prof.to_str().unwrap(), "--runs", "1"];
    let out = svcbench_locked(&[&args[..], &["--db", dbp.to_str().unwrap()]].concat(), tmp.path());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(!said.contains("listens on"), "{said}");
    let s = stored(&dbp);
    let addrs = s.run().listen_addrs.clone().unwrap_or_default();
    let port = addrs.strip_prefix("127.0.0.1:").unwrap_or_else(|| panic!("{addrs}"));
    assert!(port.parse::<u16>().is_ok(), "one address on loopback: {addrs}");
    assert_eq!(s.runs().filter(|r| r.listen_warning.is_none()).count(), 1);
    nothing_left("hello-nethttp");
}

/// An IPv4 address of this machine other than loopback: a global one if there is one, else one on a dummy
/// interface made for the test (removed when dropped).
struct OtherAddress {
    addr: Ipv4Addr,
    dummy: Option<String>,
}

impl OtherAddress {
    fn find_or_make() -> OtherAddress {
        let out = Command::new(ip_program()).args(["-4", "-o", "addr", "show", "scope", "global"]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        // `4: eth0    inet 192.0.2.2/24 brd … scope global eth0`
        let found = text
            .lines()
            .find_map(|l| l.split_whitespace().skip_while(|w| *w != "inet").nth(1)?.split('/').next()?.parse().ok());
        if let Some(addr) = found {
            return OtherAddress { addr, dummy: None };
        }
        // Only loopback here: a dummy interface with an address of its own.
        let name = format!("lsn{}", std::process::id());
        let ip =
            |args: &[&str]| assert!(Command::new(ip_program()).args(args).status().unwrap().success(), "ip {args:?}");
        ip(&["link", "add", &name, "type", "dummy"]);
        let made = OtherAddress { addr: Ipv4Addr::new(10, 254, 77, 1), dummy: Some(name.clone()) };
        ip(&["addr", "add", "10.254.77.1/32", "dev", &name]);
        ip(&["link", "set", &name, "up"]);
        made
    }
}

impl Drop for OtherAddress {
    fn drop(&mut self) {
        if let Some(name) = &self.dummy {
            let _ = Command::new(ip_program()).args(["link", "del", name]).status();
        }
    }
}

#[test]
fn up_users_go_nethttp_answers_on_loopback_only() {
    let tmp = tempfile::tempdir().unwrap();
    let other = OtherAddress::find_or_make();
    let svc = repo().join("services/users/go-nethttp");
    let (mut up, lines) = spawn_up(tmp.path(), &svc, &[], 1);
    let url = lines[0].strip_prefix("service ").unwrap_or_else(|| panic!("{lines:?}")).to_string();
    let port: u16 = url.rsplit(':').next().unwrap().parse().unwrap();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    assert_eq!(ureq::get(&format!("{url}/ping")).call().unwrap().into_string().unwrap(), "pong");
    // The same port on the machine's other address: refused (a service on 0.0.0.0 would answer there).
    let there = SocketAddr::from((other.addr, port));
    let refused = TcpStream::connect_timeout(&there, Duration::from_secs(2));
    assert!(refused.is_err(), "users-go-nethttp answers on {there}, not only on loopback");
    let said = std::fs::read_to_string(tmp.path().join("up.err")).unwrap();
    assert!(said.contains(&format!("listens on 127.0.0.1:{port}\n")), "{said}");
    assert!(said.contains("sqlite is a file"), "{said}");
    assert!(!said.contains("WARNING"), "{said}");
    assert!(up.interrupt(Duration::from_secs(30)).is_some_and(|s| s.success()), "{}", stderr_of(tmp.path(), "up"));
    assert!(TcpStream::connect_timeout(&SocketAddr::from(([127, 0, 0, 1], port)), Duration::from_secs(1)).is_err());
    drop(other);
    nothing_left("users-go-nethttp");
}

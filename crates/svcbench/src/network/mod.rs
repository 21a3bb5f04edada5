//! The emulated network of a run (`--net`, `--link`): the load generator, the service and the scenario's
//! dependencies each in a network namespace of their own ("hosts"), joined by veth pairs to a bridge, with
//! a delay line on the links the run asks for (relay.rs). The bridge sits in svcbench's own namespace with
//! the first address of the subnet, so svcbench reaches every part directly (readiness, checks, data
//! loading) and only the parts' traffic to each other crosses the emulated links.
//!
//! Names start with svcbench's pid (namespaces `svcbench-<pid>-<role>`, interfaces `svb<pid>…`), so a later
//! svcbench removes what a killed one left, as it does with cgroups (guard/leftovers).
pub mod link;
pub mod netns;
pub mod relay;

use anyhow::{bail, Context, Result};
pub use link::{Link, Role};
pub use netns::NsHandle;
use std::net::Ipv4Addr;
use std::sync::Arc;

/// Where one part of a run sits: its address, and its namespace (none: svcbench's own, on loopback).
#[derive(Debug, Clone)]
pub struct Host {
    pub addr: Ipv4Addr,
    pub netns: Option<Arc<NsHandle>>,
}

impl Host {
    /// Everything on this machine's loopback, as without `--net`.
    pub fn local() -> Host {
        Host { addr: Ipv4Addr::LOCALHOST, netns: None }
    }

    /// Runs `f` on a thread inside this host's namespace (the load generator, a warm-up).
    pub fn within<T: Send>(&self, f: impl FnOnce() -> T + Send) -> Result<T> {
        netns::within(self.netns.as_deref(), f)
    }
}

/// Where each part of a run sits.
#[derive(Debug, Clone)]
pub struct Hosts {
    pub service: Host,
    pub store: Host,
    /// Every generator host, the client first (`--generators N`: one agent on each).
    pub generators: Vec<Host>,
}

impl Hosts {
    pub fn local() -> Hosts {
        Hosts { service: Host::local(), store: Host::local(), generators: vec![Host::local()] }
    }

    /// The first generator host: the checks' client, the warm-up's and a single generator's.
    pub fn client(&self) -> &Host {
        &self.generators[0]
    }

    /// Where generator agent `i` runs (without --net every agent is on this machine's loopback).
    pub fn generator(&self, i: usize) -> &Host {
        &self.generators[i % self.generators.len()]
    }
}

/// One namespace of the network: a role, and its own name (`client2` for a second generator).
struct Member {
    role: Role,
    name: String,
    /// Its letter in interface names: the role's, or one of its own from the second generator on.
    letter: char,
    host: Host,
}

pub struct Network {
    pid: u32,
    bridge: String,
    parts: Vec<Member>,
    /// What the links do now (a study's link axis changes it between runs).
    links: Vec<Link>,
    /// Per pair of parts joined by a link: its relay, dropped before the namespaces are removed (Network's
    /// Drop).
    relays: Vec<PairRelay>,
}

/// The relay between two parts (`client2` and `service`), and the roles whose link it carries.
struct PairRelay {
    pair: String,
    roles: (Role, Role),
    relay: relay::Relay,
}

/// Most generator hosts on one machine (their number is one character of an interface name).
pub const MAX_GENERATORS: usize = 9;

/// Fails, before anything is built or started, when namespaces cannot be made here.
pub fn check_available(with_links: bool) -> Result<()> {
    if unsafe { libc::geteuid() } != 0 {
        bail!("--net needs root (network namespaces, veth pairs, TUN devices); run svcbench as root or leave out --net and --link");
    }
    if crate::child::helper(netns::program("ip"), crate::child::Needs::Nothing).arg("-V").output().is_err() {
        bail!("--net needs `ip` from iproute2, which is not installed: apt install iproute2");
    }
    if with_links && !std::path::Path::new("/dev/net/tun").exists() {
        bail!("--link needs /dev/net/tun (the kernel's tun driver: modprobe tun) to carry the link's packets");
    }
    Ok(())
}

fn ns_name(pid: u32, part: &str) -> String {
    format!("svcbench-{pid}-{part}")
}

/// Interface names are at most 15 bytes: `svb` + pid (≤ 7 digits) + a part's letter + one more letter (a
/// veth end, or the other part of a link).
fn interface_name(pid: u32, letter: char, end: char) -> String {
    format!("svb{pid}{letter}{end}")
}

/// The parts of a network with `generators` generator hosts: client, service, store, client2, ….
fn part_names(generators: usize) -> Vec<(Role, String, char)> {
    let mut parts: Vec<(Role, String, char)> =
        Role::ALL.into_iter().map(|r| (r, r.name().to_string(), r.letter())).collect();
    // Not digits: the pid before them is read back from interface names (leftovers).
    const LETTERS: [char; MAX_GENERATORS - 1] = ['e', 'f', 'g', 'h', 'j', 'k', 'm', 'n'];
    for g in 2..=generators.clamp(1, MAX_GENERATORS) {
        parts.push((Role::Client, format!("client{g}"), LETTERS[g - 2]));
    }
    parts
}

/// With `Connection: close` the generator closes first, so every request leaves a TIME_WAIT socket on its
/// side for a minute. On loopback the kernel reuses those for new connects (`tcp_tw_reuse` = 2, its
/// default, means loopback only); across a namespace's veth it does not, and once they fill much of the
/// ephemeral range each connect() spends milliseconds of the generator's CPU searching for a free port,
/// which then sets the pace instead of the service. The setting is the generator namespace's own.
fn reuse_time_wait(host: &Host) -> Result<()> {
    // /proc/sys/net is the namespace of the thread that opens it.
    host.within(|| std::fs::write("/proc/sys/net/ipv4/tcp_tw_reuse", "1"))?
        .context("cannot write /proc/sys/net/ipv4/tcp_tw_reuse")
}

/// A /24 in 10.213.0.0/16 that no interface here uses yet.
fn free_subnet() -> Result<u8> {
    let used = netns::output("ip", &["-4", "-o", "addr"]);
    (0..=255u8)
        .find(|n| !used.contains(&format!("10.213.{n}.")))
        .context("no free /24 in 10.213.0.0/16 for --net; remove unused svb* interfaces")
}

impl Network {
    /// Makes the namespaces, veths and bridge, and starts the links. On error, removes what it made (the
    /// Drop of the half-built network). Callers check first that this can work here ([`check_available`]).
    /// `cpus`: where the links' relays run (the generator's and dependencies' CPUs). `generators`: how many
    /// generator hosts (`client`, `client2`, …); a link to `client` joins each of them.
    pub fn create(links: &[Link], cpus: &[usize], generators: usize) -> Result<Network> {
        let pid = std::process::id();
        let subnet = free_subnet()?;
        let mut net = Network {
            pid,
            bridge: format!("svb{pid}br"),
            parts: Vec::new(),
            links: links.to_vec(),
            relays: Vec::new(),
        };
        net.build(subnet, cpus, generators).context("cannot set up the --net network")?;
        Ok(net)
    }

    fn build(&mut self, subnet: u8, cpus: &[usize], generators: usize) -> Result<()> {
        let br = self.bridge.clone();
        netns::run("ip", &["link", "add", &br, "type", "bridge"])?;
        netns::run("ip", &["addr", "add", &format!("10.213.{subnet}.1/24"), "dev", &br])?;
        netns::run("ip", &["link", "set", &br, "up"])?;
        for (i, (role, name, letter)) in part_names(generators).into_iter().enumerate() {
            let ns = ns_name(self.pid, &name);
            let (outer, inner) = (interface_name(self.pid, letter, 'o'), interface_name(self.pid, letter, 'i'));
            netns::run("ip", &["netns", "add", &ns])?;
            let addr = Ipv4Addr::new(10, 213, subnet, 2 + i as u8);
            netns::run("ip", &["link", "add", &outer, "type", "veth", "peer", "name", &inner])?;
            netns::run("ip", &["link", "set", &outer, "master", &br, "up"])?;
            netns::run("ip", &["link", "set", &inner, "netns", &ns])?;
            netns::ip_in(&ns, &["link", "set", &inner, "name", "eth0"])?;
            netns::ip_in(&ns, &["addr", "add", &format!("{addr}/24"), "dev", "eth0"])?;
            netns::ip_in(&ns, &["link", "set", "eth0", "up"])?;
            netns::ip_in(&ns, &["link", "set", "lo", "up"])?;
            let host = Host { addr, netns: Some(Arc::new(NsHandle::open(&ns)?)) };
            if role == Role::Client {
                reuse_time_wait(&host).with_context(|| format!("cannot set up the generator's namespace {ns}"))?;
            }
            self.parts.push(Member { role, name, letter, host });
        }
        let pid = self.pid;
        fn end<'a>(p: &'a Member, pid: u32, other: &Member) -> relay::End<'a> {
            relay::End {
                ns: p.host.netns.as_ref().expect("namespaces are made above"),
                own_addr: p.host.addr,
                tun: interface_name(pid, p.letter, other.letter),
            }
        }
        for l in &self.links {
            for a in self.parts.iter().filter(|p| p.role == l.from) {
                for b in self.parts.iter().filter(|p| p.role == l.to) {
                    let relay = relay::Relay::start(l, end(a, pid, b), end(b, pid, a), cpus)?;
                    self.relays.push(PairRelay {
                        pair: format!("{}-{}", a.name, b.name),
                        roles: (l.from, l.to),
                        relay,
                    });
                }
            }
        }
        Ok(())
    }

    /// From the next packet on, the links do what `links` says; a link made at the start but not named here
    /// carries its packets without delay or loss. A study's link axis sets each run's links so.
    pub fn set_links(&mut self, links: &[Link]) {
        for r in &self.relays {
            let named = links.iter().find(|l| l.joins(r.roles));
            let idle = Link { from: r.roles.0, to: r.roles.1, delay_ms: 0.0, jitter_ms: 0.0, loss_pct: 0.0 };
            r.relay.set(named.unwrap_or(&idle));
        }
        self.links = links.to_vec();
    }

    pub fn host(&self, role: Role) -> Host {
        self.parts.iter().find(|p| p.role == role).map(|p| p.host.clone()).expect("every role has a host")
    }

    pub fn hosts(&self) -> Hosts {
        Hosts {
            service: self.host(Role::Service),
            store: self.host(Role::Store),
            generators: self.parts.iter().filter(|p| p.role == Role::Client).map(|p| p.host.clone()).collect(),
        }
    }

    /// Per link between two parts: packets carried and dropped so far.
    pub fn link_counts(&self) -> Vec<(String, u64, u64)> {
        use std::sync::atomic::Ordering::Relaxed;
        self.relays
            .iter()
            .map(|r| {
                // `client2-service=delay:1ms`: the pair's names with what its link does now.
                let now = self.links.iter().find(|l| l.joins(r.roles));
                let label = match now {
                    Some(l) => l.to_string().replacen(&format!("{}-{}", l.from.name(), l.to.name()), &r.pair, 1),
                    None => format!("{}=idle", r.pair),
                };
                (label, r.relay.counters.carried.load(Relaxed), r.relay.counters.dropped.load(Relaxed))
            })
            .collect()
    }

    /// As stored with the session and shown in the report's setup table.
    pub fn describe(&self) -> String {
        format!(
            "namespaces ({}); links: {}",
            self.parts.iter().map(|p| format!("{} {}", p.name, p.host.addr)).collect::<Vec<_>>().join(", "),
            link::describe(&self.links)
        )
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        self.relays.clear();
        remove(self.pid);
    }
}

/// Removes the namespaces and interfaces of svcbench `pid`, by their names (so also what a failed set-up
/// made); the TUN devices and routes inside a namespace go with it.
fn remove(pid: u32) {
    let prefix = format!("svcbench-{pid}-");
    for ns in namespaces().into_iter().filter(|n| n.starts_with(&prefix)) {
        let _ = netns::run("ip", &["netns", "delete", &ns]);
    }
    for dev in interfaces().into_iter().filter(|d| owner_of_interface(d) == Some(pid)) {
        let _ = netns::run("ip", &["link", "delete", &dev]);
    }
}

fn namespaces() -> Vec<String> {
    netns::output("ip", &["netns", "list"])
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(String::from)
        .collect()
}

fn interfaces() -> Vec<String> {
    netns::output("ip", &["-o", "link", "show"])
        .lines()
        .filter_map(|l| l.split(": ").nth(1))
        .map(|n| n.split('@').next().unwrap_or(n).to_string())
        .collect()
}

/// The pid in an `svb<pid>…` interface name.
fn owner_of_interface(dev: &str) -> Option<u32> {
    let rest = dev.strip_prefix("svb")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Namespaces and interfaces left by svcbench processes that no longer run; removed. Returns what was
/// removed, by owner pid.
pub fn remove_orphans(alive: impl Fn(i32) -> bool) -> Vec<u32> {
    let mut owners: Vec<u32> = namespaces()
        .iter()
        .filter_map(|n| n.strip_prefix("svcbench-")?.split('-').next()?.parse().ok())
        .chain(interfaces().iter().filter_map(|d| owner_of_interface(d)))
        .collect();
    owners.sort_unstable();
    owners.dedup();
    owners.retain(|&p| p != std::process::id() && !alive(p as i32));
    for &p in &owners {
        remove(p);
    }
    owners
}

/// Removes this svcbench's own network, wherever it is (a second Ctrl-C tears down without unwinding).
pub fn remove_mine() {
    remove(std::process::id());
}

//! Where a sandbox's processes listen: their TCP sockets in state LISTEN, read from /proc, and whether each
//! is on the address the service was given. /proc/<pid>/net/tcp{,6} is the view of that process's own
//! network namespace, so this holds under `--net` as well as on loopback.
use procfs::net::TcpState;
use procfs::process::{FDTarget, Process};
use std::collections::{BTreeSet, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

/// The listening addresses of a service, and the one-line warning when any is not where it was asked to be.
#[derive(Debug, Clone, PartialEq)]
pub struct Listening {
    pub addrs: Vec<SocketAddr>,
    pub warning: Option<String>,
}

impl Listening {
    /// Reads the listening sockets of `pids` and judges them against `host`, the address the service was given.
    pub fn read(pids: &[i32], host: IpAddr) -> Listening {
        let addrs = listening_addrs(pids);
        let warning = judge(&addrs, host);
        Listening { addrs, warning }
    }

    /// The addresses as stored and printed: `127.0.0.1:8080, [::]:9090`.
    pub fn addrs_text(&self) -> String {
        self.addrs.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(", ")
    }
}

/// The TCP addresses the processes `pids` listen on, each once, sorted.
pub fn listening_addrs(pids: &[i32]) -> Vec<SocketAddr> {
    let out: BTreeSet<SocketAddr> = listening_sockets(pids).into_iter().map(|s| s.addr).collect();
    out.into_iter().collect()
}

/// A listening socket of a process: where it listens, and the descriptor that holds it there.
#[derive(Debug, Clone)]
pub struct ListeningSocket {
    pub pid: i32,
    pub fd: i32,
    pub inode: u64,
    pub addr: SocketAddr,
    /// The network namespace its process is in (`net:[N]`); None where that cannot be read.
    pub netns: Option<PathBuf>,
}

/// The network namespace of `/proc/<who>` (`net:[N]`; `self` for svcbench's own).
pub fn netns_of(who: &str) -> Option<PathBuf> {
    std::fs::read_link(format!("/proc/{who}/ns/net")).ok()
}

/// The listening TCP sockets of the processes `pids`, matched by inode: a process's fd links `socket:[N]`
/// against the LISTEN rows of its namespace's tables (which list every socket of the namespace, not only
/// this process's, so each namespace's are read once). A socket shared by several processes (forked
/// workers) is listed for each. A process that ended meanwhile is skipped.
pub fn listening_sockets(pids: &[i32]) -> Vec<ListeningSocket> {
    let mut out = Vec::new();
    let mut tables: HashMap<PathBuf, Vec<(u64, SocketAddr)>> = HashMap::new();
    for &pid in pids {
        let Ok(p) = Process::new(pid) else { continue };
        let Ok(fds) = p.fd() else { continue };
        // The process's descriptors of each socket (a socket may be held by more than one).
        let mut fds_of: HashMap<u64, Vec<i32>> = HashMap::new();
        for f in fds.flatten() {
            if let FDTarget::Socket(inode) = f.target {
                fds_of.entry(inode).or_default().push(f.fd);
            }
        }
        if fds_of.is_empty() {
            continue;
        }
        // Its namespace (`net:[N]`); where that cannot be read, the process stands for one of its own.
        let netns = netns_of(&pid.to_string());
        let table = netns.clone().unwrap_or_else(|| PathBuf::from(pid.to_string()));
        for &(inode, addr) in tables.entry(table).or_insert_with(|| listen_rows(&p)).iter() {
            for &fd in fds_of.get(&inode).into_iter().flatten() {
                out.push(ListeningSocket { pid, fd, inode, addr, netns: netns.clone() });
            }
        }
    }
    out
}

/// The LISTEN rows (socket inode, address) of the namespace `p` is in. tcp6 is absent where IPv6 is
/// disabled: a missing table is an empty one.
fn listen_rows(p: &Process) -> Vec<(u64, SocketAddr)> {
    [p.tcp(), p.tcp6()]
        .into_iter()
        .flatten()
        .flatten()
        .filter(|row| row.state == TcpState::Listen)
        .map(|row| (row.inode, row.local_address))
        .collect()
}

/// A dual-stack socket bound to an IPv4 address shows in tcp6 as `::ffff:a.b.c.d`: that is `a.b.c.d`.
fn plain(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// One line when a listening address is a wildcard (every interface: `0.0.0.0`, `::`) or another address
/// than `host`; None when all are on `host` (or none was found: nothing to judge).
pub fn judge(addrs: &[SocketAddr], host: IpAddr) -> Option<String> {
    let list = |f: &dyn Fn(IpAddr) -> bool| {
        addrs.iter().filter(|a| f(plain(a.ip()))).map(|a| a.to_string()).collect::<Vec<_>>().join(", ")
    };
    let wild = list(&|ip| ip.is_unspecified());
    let other = list(&|ip| !ip.is_unspecified() && ip != host);
    let fix = format!(
        "make it bind to the address it is given, {host} here (`{{host}}` in a manifest, HOST in the environment of \
         an image run without one; docs/manifest.md)"
    );
    match (wild.is_empty(), other.is_empty()) {
        (true, true) => None,
        (false, true) => Some(format!(
            "the service listens on every interface ({wild}), not only on {host} as asked: whoever reaches this machine reaches it; {fix}"
        )),
        (true, false) => Some(format!("the service listens on {other}, not only on {host} as asked; {fix}")),
        (false, false) => Some(format!(
            "the service listens on every interface ({wild}) and on {other}, not only on {host} as asked: whoever reaches this machine reaches it; {fix}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn a(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn addresses_on_the_host_given_pass() {
        let host: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(judge(&[a("127.0.0.1:8080")], host), None);
        // Java's dual-stack sockets bound to an IPv4 address.
        assert_eq!(judge(&[a("[::ffff:127.0.0.1]:8080"), a("127.0.0.1:9090")], host), None);
        assert_eq!(judge(&[], host), None);
        let ns: IpAddr = "10.77.0.2".parse().unwrap();
        assert_eq!(judge(&[a("10.77.0.2:8080")], ns), None);
    }

    #[test]
    fn wildcards_and_other_addresses_are_named() {
        let host: IpAddr = "127.0.0.1".parse().unwrap();
        let w = judge(&[a("0.0.0.0:8080")], host).unwrap();
        assert!(w.contains("every interface (0.0.0.0:8080)") && w.contains("127.0.0.1"), "{w}");
        let w = judge(&[a("127.0.0.1:8080"), a("[::]:9090")], host).unwrap();
        assert!(w.contains("every interface ([::]:9090)") && !w.contains("127.0.0.1:8080"), "{w}");
        let w = judge(&[a("192.0.2.2:8080")], host).unwrap();
        assert!(w.contains("listens on 192.0.2.2:8080") && !w.contains("every interface"), "{w}");
        let w = judge(&[a("0.0.0.0:1"), a("[::1]:2")], host).unwrap();
        assert!(w.contains("(0.0.0.0:1) and on [::1]:2"), "{w}");
    }

    #[test]
    fn reads_this_process_listening_sockets_and_not_its_connections() {
        let wild = TcpListener::bind("0.0.0.0:0").unwrap();
        let local = TcpListener::bind("127.0.0.1:0").unwrap();
        // A connected socket (not listening) on the same table must not count.
        let _client = std::net::TcpStream::connect(local.local_addr().unwrap()).unwrap();
        let me = std::process::id() as i32;
        let seen = listening_addrs(&[me]);
        assert!(seen.contains(&wild.local_addr().unwrap()), "{seen:?}");
        assert!(seen.contains(&local.local_addr().unwrap()), "{seen:?}");
        assert!(seen.iter().all(|s| s.port() != _client.local_addr().unwrap().port()), "{seen:?}");
        let wild_addr = wild.local_addr().unwrap();
        let l = Listening::read(&[me], "127.0.0.1".parse().unwrap());
        assert!(l.warning.unwrap().contains(&wild_addr.to_string()));
        drop(wild);
        assert!(!listening_addrs(&[me]).contains(&wild_addr));
        // Two processes in one namespace (here the same one twice) share its table's reading: each of them
        // still gets its listener, with its descriptor.
        let local_addr = local.local_addr().unwrap();
        let both: Vec<_> = listening_sockets(&[me, me]).into_iter().filter(|s| s.addr == local_addr).collect();
        assert_eq!(both.len(), 2, "{both:?}");
        assert!(both.iter().all(|s| s.pid == me && s.fd == std::os::fd::AsRawFd::as_raw_fd(&local)), "{both:?}");
        // A pid that does not exist is skipped.
        assert!(listening_addrs(&[i32::MAX]).is_empty());
    }
}

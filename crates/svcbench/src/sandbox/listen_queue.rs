//! Connection attempts the kernel dropped because a listening socket's accept queue was full. Each one's
//! client sends its SYN again after 1 s (then 3 s, 7 s…), so a step's latencies hold those waits: seed
//! 004's Node, at its open-file limit, left its queue of 511 full and dropped thousands.
//!
//! Where the listener is in a network namespace of its own (`--net`, `--link`), the count is
//! that namespace's `TcpExtListenOverflows` (/proc/PID/net/netstat of a process in it): the kernel raises it
//! only when an accept queue is full, and only the service (or the store) listens there. In svcbench's own
//! namespace, which other programs share, it is read from the socket itself: a copy of the listener's
//! descriptor (pidfd_getfd, Linux 5.6, which needs the right to trace the process: root's) and the drop
//! counter of its SO_MEMINFO. That counter also rises for packets the socket discards for other reasons:
//! behind an emulated link, the late packets of connections the generator closed mid-request reach the
//! listener after their connection has gone, 10–16 in a second of 16 connections behind a 2 ms delay with
//! no queue ever full; on loopback nothing arrives that late.
use super::listening::{listening_sockets, netns_of, ListeningSocket};
use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::PathBuf;

/// <asm-generic/socket.h>; the libc crate names the offsets into it but not the option itself.
const SO_MEMINFO: libc::c_int = 55;
/// SK_MEMINFO_VARS: the length of the array SO_MEMINFO fills.
const SK_MEMINFO_VARS: usize = 9;

/// Drops so far, summed over the distinct listening sockets of `pids` (over the distinct namespaces of
/// their own, where they are in one); None where none could be read (no listener, no right to copy its
/// descriptor, an older kernel).
pub fn drops(pids: &[i32]) -> Option<u64> {
    let own = netns_of("self");
    let mut seen = BTreeSet::new();
    // A namespace of their own: one process in it whose counters are read.
    let mut namespaces: BTreeMap<PathBuf, i32> = BTreeMap::new();
    let mut here: Vec<ListeningSocket> = Vec::new();
    for s in listening_sockets(pids) {
        if !seen.insert(s.inode) {
            continue;
        }
        match &s.netns {
            Some(ns) if own.as_ref().is_some_and(|o| o != ns) => {
                namespaces.entry(ns.clone()).or_insert(s.pid);
            }
            _ => here.push(s),
        }
    }
    let in_own = namespaces.values().filter_map(|&pid| listen_overflows(pid));
    let shared = here.iter().filter_map(|s| socket_drops(s.pid, s.fd));
    in_own.chain(shared).reduce(|a, b| a + b)
}

/// `TcpExtListenOverflows` of the namespace `pid` is in.
fn listen_overflows(pid: i32) -> Option<u64> {
    netstat_field(&std::fs::read_to_string(format!("/proc/{pid}/net/netstat")).ok()?, "TcpExt", "ListenOverflows")
}

/// One counter of /proc/net/netstat's text: a header line `Group: names…` followed by `Group: values…`.
fn netstat_field(text: &str, group: &str, name: &str) -> Option<u64> {
    let prefix = format!("{group}:");
    let mut lines = text.lines().filter(|l| l.starts_with(&prefix));
    let names = lines.next()?;
    let values = lines.next()?;
    let at = names.split_whitespace().position(|n| n == name)?;
    values.split_whitespace().nth(at)?.parse().ok()
}

fn socket_drops(pid: i32, fd: i32) -> Option<u64> {
    // SAFETY: plain syscalls; each descriptor they return is owned here and closed on drop.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if pidfd < 0 {
        return None;
    }
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as i32) };
    let copy = unsafe { libc::syscall(libc::SYS_pidfd_getfd, std::os::fd::AsRawFd::as_raw_fd(&pidfd), fd, 0) };
    if copy < 0 {
        return None;
    }
    let copy = unsafe { OwnedFd::from_raw_fd(copy as i32) };
    let mut info = [0u32; SK_MEMINFO_VARS];
    let mut len = std::mem::size_of_val(&info) as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `info`.
    let r = unsafe {
        libc::getsockopt(
            std::os::fd::AsRawFd::as_raw_fd(&copy),
            libc::SOL_SOCKET,
            SO_MEMINFO,
            info.as_mut_ptr().cast(),
            &mut len,
        )
    };
    let at = libc::SK_MEMINFO_DROPS as usize;
    (r == 0 && len as usize > at * 4).then(|| u64::from(info[at]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_beyond_a_full_accept_queue_are_counted_as_drops() {
        let me = std::process::id() as i32;
        // A listener with a queue of one that never accepts: the second or third attempt finds it full.
        let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        sock.bind(&"127.0.0.1:0".parse::<std::net::SocketAddr>().unwrap().into()).unwrap();
        sock.listen(1).unwrap();
        let addr = sock.local_addr().unwrap().as_socket().unwrap();
        let inode_drops = || {
            let ino = listening_sockets(&[me]).into_iter().find(|s| s.addr == addr).expect("the listener is seen");
            socket_drops(me, ino.fd).expect("its drops are readable")
        };
        assert_eq!(inode_drops(), 0);
        // Each attempt past the queue waits for a SYN that is dropped; a short timeout ends each.
        let clients: Vec<_> = (0..6)
            .map(|_| std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_millis(200)))
            .collect();
        assert!(clients.iter().any(|c| c.is_err()), "every attempt connected: the queue was not full");
        let dropped = inode_drops();
        assert!(dropped > 0, "{dropped}");
        assert!(drops(&[me]).unwrap() >= dropped);
    }

    /// A named namespace of the test's own (`svcbench-<pid>-…`, which a later svcbench removes if the test
    /// dies), with its loopback up; removed on drop.
    struct TestNs(crate::network::NsHandle);

    impl TestNs {
        fn new(tag: &str) -> TestNs {
            let name = format!("svcbench-{}-{tag}", std::process::id());
            crate::network::netns::run("ip", &["netns", "add", &name]).unwrap();
            let ns = TestNs(crate::network::NsHandle::open(&name).unwrap());
            crate::network::netns::ip_in(&name, &["link", "set", "lo", "up"]).unwrap();
            ns
        }
    }

    impl Drop for TestNs {
        fn drop(&mut self) {
            let _ = crate::network::netns::run("ip", &["netns", "del", &self.0.name]);
        }
    }

    fn listener(backlog: i32) -> (socket2::Socket, std::net::SocketAddr) {
        let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        sock.bind(&"127.0.0.1:0".parse::<std::net::SocketAddr>().unwrap().into()).unwrap();
        sock.listen(backlog).unwrap();
        let addr = sock.local_addr().unwrap().as_socket().unwrap();
        (sock, addr)
    }

    /// Attempts that each end after a short timeout when their SYN goes unanswered.
    fn attempts(addr: std::net::SocketAddr, n: usize) -> Vec<std::io::Result<std::net::TcpStream>> {
        (0..n).map(|_| std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_millis(200))).collect()
    }

    #[test]
    fn in_a_namespace_of_its_own_only_full_accept_queues_count() {
        let ns = TestNs::new("lqtest");
        crate::network::netns::within(Some(&ns.0), || {
            // A listener that discards every packet (a minimum TTL loopback's 64 never reaches) without its
            // queue ever being full: its socket's drop counter rises, as with an emulated link's late packets
            // of connections already closed, and no attempt is dropped at a full queue.
            let (discarding, discarding_addr) = listener(128);
            assert_eq!(
                unsafe {
                    libc::setsockopt(
                        std::os::fd::AsRawFd::as_raw_fd(&discarding),
                        libc::IPPROTO_IP,
                        libc::IP_MINTTL,
                        (&255i32 as *const i32).cast(),
                        4,
                    )
                },
                0
            );
            // And one with a queue of one that never accepts.
            let (full, full_addr) = listener(1);
            // A process in the namespace that holds both, as a service would.
            for s in [&discarding, &full] {
                let fd = std::os::fd::AsRawFd::as_raw_fd(s);
                // SAFETY: clears close-on-exec on a descriptor this test owns.
                unsafe { libc::fcntl(fd, libc::F_SETFD, 0) };
            }
            let mut holder = std::process::Command::new("sleep").arg("30").spawn().unwrap();
            let pid = holder.id() as i32;
            crate::poll::until(std::time::Duration::from_secs(5), std::time::Duration::from_millis(10), || {
                (listening_sockets(&[pid]).len() == 2).then_some(())
            })
            .expect("the holder's listeners are seen");
            assert_eq!(drops(&[pid]), Some(0));

            assert!(attempts(discarding_addr, 2).iter().all(|c| c.is_err()), "the listener answered");
            let sock = listening_sockets(&[pid]).into_iter().find(|s| s.addr == discarding_addr).unwrap();
            assert!(socket_drops(pid, sock.fd).unwrap() > 0, "the socket's own counter rose");
            assert_eq!(drops(&[pid]), Some(0), "discarded packets counted as attempts dropped at a full queue");

            assert!(
                attempts(full_addr, 6).iter().any(|c| c.is_err()),
                "every attempt connected: the queue was not full"
            );
            assert!(drops(&[pid]).unwrap() > 0, "an overflow of a full queue was not counted");
            let _ = holder.kill();
            let _ = holder.wait();
        })
        .unwrap();
    }

    #[test]
    fn netstat_counters_are_read_by_name() {
        let text = "TcpExt: SyncookiesSent ListenOverflows ListenDrops\nTcpExt: 3 17 20\nIpExt: InNoRoutes\nIpExt: 0\n";
        assert_eq!(netstat_field(text, "TcpExt", "ListenOverflows"), Some(17));
        assert_eq!(netstat_field(text, "IpExt", "ListenOverflows"), None);
    }
}

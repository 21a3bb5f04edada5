//! Connection attempts the kernel dropped because a listening socket's accept queue was full. Each one's
//! client sends its SYN again after 1 s (then 3 s, 7 s…), so a step's latencies hold those waits: seed
//! 004's Node, at its open-file limit, left its queue of 511 full and dropped thousands. Read from the
//! socket itself: a copy of the listener's descriptor (pidfd_getfd, Linux 5.6, which needs the right to
//! trace the process: root's) and the drop counter of its SO_MEMINFO, which the kernel raises on each.
use super::listening::listening_sockets;
use std::collections::BTreeSet;
use std::os::fd::{FromRawFd, OwnedFd};

/// <asm-generic/socket.h>; the libc crate names the offsets into it but not the option itself.
const SO_MEMINFO: libc::c_int = 55;
/// SK_MEMINFO_VARS: the length of the array SO_MEMINFO fills.
const SK_MEMINFO_VARS: usize = 9;

/// Drops so far, summed over the distinct listening sockets of `pids`; None where none could be read (no
/// listener, no right to copy its descriptor, an older kernel).
pub fn drops(pids: &[i32]) -> Option<u64> {
    let mut seen = BTreeSet::new();
    let mut total = None;
    for s in listening_sockets(pids) {
        if !seen.insert(s.inode) {
            continue;
        }
        if let Some(d) = socket_drops(s.pid, s.fd) {
            total = Some(total.unwrap_or(0) + d);
        }
    }
    total
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
}

//! The kernel's own record of an OOM kill, for a group that may be gone by the time it is asked about: a
//! container's cgroup (and its `oom_kill` counter) is removed by the engine as the container ends, and
//! the engine's verdict (`State.OOMKilled`) is sometimes false for a container the kernel killed at its cap.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;

/// Whether the kernel log still holds an OOM kill whose memory cgroup is `group` or one under it (a path
/// from a hierarchy's root, such as `/svcbench/<run>`). False when the log cannot be read (not root).
pub fn oom_kill_in(group: &str) -> bool {
    let Ok(mut f) = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NONBLOCK).open("/dev/kmsg") else {
        return false;
    };
    let (exact, under) = (format!("oom_memcg={group},"), format!("oom_memcg={group}/"));
    // One record per read, until the buffer's end (EAGAIN); a record overwritten meanwhile (EPIPE) is
    // skipped. Bounded: the ring holds at most a few thousand records.
    let mut buf = vec![0u8; 8192];
    for _ in 0..100_000 {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let rec = String::from_utf8_lossy(&buf[..n]);
                if rec.contains("oom-kill:") && (rec.contains(&exact) || rec.contains(&under)) {
                    return true;
                }
            }
            Err(e) if e.raw_os_error() == Some(libc::EPIPE) => continue,
            Err(_) => break,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    /// A record of the kernel's form, written to the real log (root): found for its group and a group
    /// above it, not for a group whose name only begins the same.
    #[test]
    fn an_oom_kill_record_is_found_by_its_group() {
        let group = format!("/svcbench/kernel-log-test-{}", std::process::id());
        let line = format!(
            "svcbench test: oom-kill:constraint=CONSTRAINT_MEMCG,oom_memcg={group}/libpod-0,task_memcg={group}/libpod-0,task=hog,pid=1\n"
        );
        std::fs::write("/dev/kmsg", line).expect("writing /dev/kmsg needs root");
        assert!(super::oom_kill_in(&group));
        assert!(super::oom_kill_in(&format!("{group}/libpod-0")));
        assert!(!super::oom_kill_in(&format!("{group}0")));
        assert!(!super::oom_kill_in("/svcbench/no-such-run-ever"));
    }
}

//! Who a process is, beyond its pid: pids are reused (after a reboot an old lock file's pid may be an
//! unrelated daemon's) and a name is whatever a process says it is. A process is the one recorded only when
//! its pid, its start time (field 22 of /proc/<pid>/stat, clock ticks since boot) and its executable all
//! match, seen from the same pid namespace.
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// What identifies one process for as long as it runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    pub pid: i32,
    pub start_ticks: u64,
    pub exe: PathBuf,
    /// The inode of the pid namespace the pid was seen in: a pid means nothing in another one.
    pub pid_ns: u64,
}

/// Whether the recorded process still runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    Running,
    Gone,
    /// Recorded in another pid namespace (another container): nothing here can tell.
    Unknown,
}

/// A process's start time, in clock ticks since boot.
pub fn start_ticks(pid: i32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let rest = &text[text.rfind(')')? + 2..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// A process's executable; a binary replaced on disk since it started (a rebuild) still counts as itself.
pub fn exe(pid: i32) -> Option<PathBuf> {
    let link = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    let text = link.to_string_lossy();
    Some(PathBuf::from(text.strip_suffix(" (deleted)").unwrap_or(&text)))
}

/// The inode of this process's pid namespace.
pub fn own_pid_ns() -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self/ns/pid").map(|m| m.ino()).unwrap_or(0)
}

impl Identity {
    pub fn of(pid: i32) -> Option<Identity> {
        Some(Identity { pid, start_ticks: start_ticks(pid)?, exe: exe(pid).unwrap_or_default(), pid_ns: own_pid_ns() })
    }

    pub fn me() -> Identity {
        let pid = std::process::id() as i32;
        Identity::of(pid).unwrap_or(Identity { pid, start_ticks: 0, exe: PathBuf::new(), pid_ns: own_pid_ns() })
    }

    pub fn liveness(&self) -> Liveness {
        if self.pid_ns != own_pid_ns() {
            return Liveness::Unknown;
        }
        match Identity::of(self.pid) {
            // An exe that cannot be read (a process of another user seen without root) is not a mismatch.
            Some(now)
                if now.start_ticks == self.start_ticks && (now.exe == self.exe || now.exe.as_os_str().is_empty()) =>
            {
                Liveness::Running
            }
            _ => Liveness::Gone,
        }
    }
}

/// When a process started, on the wall clock (boot time from /proc/stat plus its start ticks).
pub fn started_at(pid: i32) -> Option<SystemTime> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let btime: u64 = stat.lines().find_map(|l| l.strip_prefix("btime ")?.trim().parse().ok())?;
    let ticks = start_ticks(pid)? as f64 / ticks_per_second();
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(btime) + Duration::from_secs_f64(ticks))
}

/// Whether `pid` runs svcbench's executable (by the file it runs, not by the name it gives itself) and
/// started before `made` (with two seconds of slack for clock rounding): a reused pid that started after
/// the thing it is asked about is not its maker.
pub fn svcbench_since(pid: i32, made: Option<SystemTime>) -> bool {
    let is_svcbench = exe(pid).is_some_and(|e| e.file_name().is_some_and(|n| n == "svcbench"));
    let early_enough = match (made, started_at(pid)) {
        (Some(made), Some(started)) => started <= made + Duration::from_secs(2),
        _ => true,
    };
    is_svcbench && early_enough
}

/// Whether a process is in cgroup `dir` (by /proc/<pid>/cgroup, whose paths are relative to the
/// hierarchy's root: they end with the group's parent and name).
pub fn in_cgroup(pid: i32, dir: &Path) -> bool {
    let (Some(name), Some(parent)) = (dir.file_name(), dir.parent().and_then(|p| p.file_name())) else {
        return false;
    };
    let tail = format!("/{}/{}", parent.to_string_lossy(), name.to_string_lossy());
    std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.splitn(3, ':').nth(2))
        .any(|p| p.ends_with(&tail) || p.contains(&format!("{tail}/")))
}

/// Clock ticks per second, the unit of /proc's start times.
pub fn ticks_per_second() -> f64 {
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) as f64 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_is_itself_and_a_reused_pid_is_not() {
        let me = Identity::me();
        assert!(me.start_ticks > 0 && me.exe.is_absolute());
        assert_eq!(me.liveness(), Liveness::Running);
        assert_eq!(Identity { start_ticks: me.start_ticks + 1, ..me.clone() }.liveness(), Liveness::Gone);
        assert_eq!(Identity { exe: "/usr/sbin/sshd".into(), ..me.clone() }.liveness(), Liveness::Gone);
        assert_eq!(Identity { pid_ns: me.pid_ns + 1, ..me }.liveness(), Liveness::Unknown);
    }

    #[test]
    fn a_test_binary_is_not_svcbench_and_a_late_process_made_nothing_before_it() {
        let me = std::process::id() as i32;
        assert!(!svcbench_since(me, None), "a test binary is not svcbench");
        let started = started_at(me).unwrap();
        let age = SystemTime::now().duration_since(started).unwrap();
        assert!(age < Duration::from_secs(3600), "start time read wrong: {age:?} ago");
    }

    #[test]
    fn cgroup_membership_is_read_from_proc() {
        let me = std::process::id() as i32;
        let text = std::fs::read_to_string("/proc/self/cgroup").unwrap();
        let own = text.lines().filter_map(|l| l.splitn(3, ':').nth(2)).find(|p| p.matches('/').count() >= 2);
        if let Some(own) = own {
            assert!(in_cgroup(me, &Path::new("/sys/fs/cgroup/x").join(own.trim_start_matches('/'))));
        }
        assert!(!in_cgroup(me, Path::new("/sys/fs/cgroup/cpu/svcbench/no-such-group")));
    }
}

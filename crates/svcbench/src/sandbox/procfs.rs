//! Per-process figures from /proc: CPU ticks, RSS, threads, state; and the processes of a process group
//! (the fallback when no cgroup can be used).
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcStat {
    pub cpu_ticks: u64,
    pub rss_bytes: u64,
    pub threads: u64,
    pub zombie: bool,
    pub pgid: i32,
}

fn page_size() -> u64 {
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as u64 }
}

pub use crate::guard::identity::ticks_per_second;

pub fn stat(pid: i32) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let rest = &text[text.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let num = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
    // Field numbers of proc(5) minus 3: state=3, pgrp=5, utime=14, stime=15, num_threads=20, rss=24.
    Some(ProcStat {
        zombie: f.first() == Some(&"Z") || f.first() == Some(&"X"),
        pgid: f.get(2).and_then(|x| x.parse().ok()).unwrap_or(0),
        cpu_ticks: num(11) + num(12),
        threads: num(17),
        rss_bytes: num(21) * page_size(),
    })
}

/// Live processes whose process group is `pgid`. Zombies are left out: they hold nothing, cannot be
/// killed, and stay forever where PID 1 does not reap orphans (as on CI's init).
pub fn group_pids(pgid: i32) -> Vec<i32> {
    let Ok(rd) = std::fs::read_dir("/proc") else { return vec![] };
    rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| stat(pid).is_some_and(|s| s.pgid == pgid && !s.zombie))
        .collect()
}

/// Sum over processes.
pub fn totals(pids: &[i32]) -> ProcStat {
    let mut t = ProcStat::default();
    for &p in pids {
        if let Some(s) = stat(p) {
            if s.zombie {
                continue;
            }
            t.cpu_ticks += s.cpu_ticks;
            t.rss_bytes += s.rss_bytes;
            t.threads += s.threads;
        }
    }
    t
}

/// The open files of the process nearest its open-file limit (its soft RLIMIT_NOFILE, which the
/// sandbox raises to svcbench's own hard limit), or None when no process's could be read. At the limit
/// every new socket fails (EMFILE): accept() leaves connections waiting, outgoing calls fail.
pub fn open_files(pids: &[i32]) -> Option<super::sampler::OpenFiles> {
    pids.iter()
        .filter_map(|&pid| {
            let count = fd_count(pid)?;
            let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
            Some(super::sampler::OpenFiles { count, limit: soft_open_file_limit(&limits)? })
        })
        .reduce(super::sampler::OpenFiles::nearer)
}

/// The open descriptors of a process. Since Linux 6.2 the size of /proc/PID/fd is their count, which the
/// kernel reads off its table in microseconds; before, that size is 0 and the directory is listed (17 ms
/// for 20,000 descriptors here).
fn fd_count(pid: i32) -> Option<u64> {
    let dir = format!("/proc/{pid}/fd");
    match std::fs::metadata(&dir).ok()?.len() {
        0 => Some(std::fs::read_dir(&dir).ok()?.count() as u64),
        counted => Some(counted),
    }
}

/// Whether this kernel counts a process's descriptors without listing them (see `fd_count`): this
/// process always holds some, so a size of 0 says the kernel does not count.
pub fn fd_count_is_cheap() -> bool {
    static CHEAP: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *CHEAP.get_or_init(|| std::fs::metadata("/proc/self/fd").is_ok_and(|m| m.len() > 0))
}

/// The soft limit of "Max open files" in a /proc/PID/limits text; None when unlimited or absent.
fn soft_open_file_limit(limits: &str) -> Option<u64> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..].split_whitespace().next()?.parse().ok().filter(|n| *n > 0)
}

/// Nanoseconds the threads of these processes spent waiting on a run queue for a CPU (schedstat's second
/// field, summed over every task): CPU a process wanted and did not get, whoever took it.
pub fn runqueue_wait_ns(pids: &[i32]) -> u64 {
    let mut total = 0;
    for &p in pids {
        let Ok(rd) = std::fs::read_dir(format!("/proc/{p}/task")) else { continue };
        for t in rd.flatten() {
            let text = std::fs::read_to_string(t.path().join("schedstat")).unwrap_or_default();
            total += text.split_whitespace().nth(1).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
        }
    }
    total
}

/// The machine-wide CPU count this process may use.
pub use crate::cpus::allowed as allowed_cpus;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_files_counts_this_process_descriptors_against_its_soft_limit() {
        let me = std::process::id() as i32;
        let before = open_files(&[me]).expect("this process's open files are readable");
        let held: Vec<std::fs::File> = (0..32).map(|_| std::fs::File::open("/dev/null").unwrap()).collect();
        let during = open_files(&[me]).unwrap();
        // Other test threads may open or close files meanwhile; 32 more is far beyond their noise here.
        assert!(during.count >= before.count + 32 - 8, "{before:?} → {during:?}");
        let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit only writes the struct we pass.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) }, 0);
        assert_eq!(during.limit, lim.rlim_cur);
        drop(held);
        assert_eq!(open_files(&[]), None);
    }

    #[test]
    fn the_kernel_count_of_descriptors_is_the_listing_count() {
        // Since 6.2 the kernel counts them (this machine's and CI's kernels do); before, fd_count lists.
        let me = std::process::id() as i32;
        let held: Vec<std::fs::File> = (0..64).map(|_| std::fs::File::open("/dev/null").unwrap()).collect();
        // Listing holds one more descriptor (the directory's own) while it reads; other test threads
        // may open or close a few meanwhile.
        let listed = std::fs::read_dir(format!("/proc/{me}/fd")).unwrap().count() as i64;
        let counted = fd_count(me).unwrap() as i64;
        assert!((listed - counted).abs() <= 4, "listed {listed}, counted {counted}");
        assert!(counted >= 64, "{counted}");
        drop(held);
    }

    #[test]
    fn the_soft_open_file_limit_is_read_from_proc_limits() {
        let text = "Limit                     Soft Limit           Hard Limit           Units     \n\
                    Max processes             96364                96364                processes \n\
                    Max open files            1024                 20000                files     \n";
        assert_eq!(soft_open_file_limit(text), Some(1024));
        assert_eq!(
            soft_open_file_limit("Max open files            unlimited            unlimited            files"),
            None
        );
        assert_eq!(soft_open_file_limit("Max processes 5 5 processes"), None);
    }
}

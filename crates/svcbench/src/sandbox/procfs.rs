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

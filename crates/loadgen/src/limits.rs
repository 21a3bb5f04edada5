//! Process and thread facilities the engine needs from the OS: file limit, CPU pinning, CPU time.

use std::io;

/// Raises the soft open-file limit to the hard limit, so thousands of connections work.
/// Returns the limit now in force.
#[allow(clippy::unnecessary_cast)] // rlim_t is not u64 on every target
pub fn raise_nofile_limit() -> io::Result<u64> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit only read/write the struct we pass.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return Err(io::Error::last_os_error());
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit { rlim_cur: lim.rlim_max, rlim_max: lim.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) != 0 {
                return Err(io::Error::last_os_error());
            }
            lim = raised;
        }
    }
    Ok(lim.rlim_cur as u64)
}

/// CPUs this process may run on (respects taskset / cpusets).
pub fn available_cpus() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// Pins the calling thread to one CPU.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET bounds-checks against its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("CPU {cpu} is out of range")));
        }
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// User + system CPU time of the calling thread, in seconds.
pub fn thread_cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct we pass.
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_THREAD, &mut usage) != 0 {
            return 0.0;
        }
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        tv(usage.ru_utime) + tv(usage.ru_stime)
    }
}

/// A stopwatch of the calling thread's CPU time. A bounded loop (a parser's, a fuzz case's) is judged by
/// the CPU it burns: on a machine shared with other builds the wall clock also counts the waits for a CPU.
#[derive(Clone, Copy, Debug)]
pub struct ThreadCpuClock(f64);

impl ThreadCpuClock {
    pub fn start() -> ThreadCpuClock {
        ThreadCpuClock(thread_cpu_seconds())
    }

    /// CPU time the calling thread has used since `start` (call it on the same thread).
    pub fn elapsed(self) -> std::time::Duration {
        std::time::Duration::from_secs_f64((thread_cpu_seconds() - self.0).max(0.0))
    }
}

/// Time the calling thread has spent ready to run but waiting for a CPU, in seconds: the
/// second field of `/proc/thread-self/schedstat` (ns). 0 when the kernel does not provide it
/// (no schedstats, or not Linux), so a missing figure never raises a flag.
pub fn thread_runqueue_wait_seconds() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0.0, |ns| ns as f64 / 1e9)
}

/// Parses a CPU list such as `0`, `0,2`, `0-3`.
pub fn parse_cpu_list(s: &str) -> anyhow::Result<Vec<usize>> {
    let bad = || anyhow::anyhow!("CPU list '{s}' is not valid: write e.g. 0 or 0,2 or 0-3");
    let mut cpus = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
                if a > b {
                    return Err(bad());
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().map_err(|_| bad())?),
        }
    }
    Ok(cpus)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0").unwrap(), [0]);
        assert_eq!(parse_cpu_list("0,2-4").unwrap(), [0, 2, 3, 4]);
        assert!(parse_cpu_list("x").is_err());
        assert!(parse_cpu_list("3-1").is_err());
    }

    #[test]
    fn runqueue_wait_is_read_and_grows_monotonically() {
        let a = thread_runqueue_wait_seconds();
        let b = thread_runqueue_wait_seconds();
        assert!(a >= 0.0 && b >= a, "{a} then {b}");
    }

    #[test]
    fn nofile_limit_is_raised() {
        let n = raise_nofile_limit().unwrap();
        assert!(n >= 1024);
    }
}

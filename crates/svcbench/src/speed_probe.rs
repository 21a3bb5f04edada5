//! The machine-speed probe: a fixed CPU-bound loop timed on each CPU a step uses, just before and after its
//! load. On a shared VM the host slows the whole machine at times (5 runs of one service spread 20–29 %
//! here, and steal time reads ~0), and CPU time per request does not cancel that out; a probe that takes
//! longer than the session's usual tells which steps ran on a slowed machine (figures::validity).
//!
//! The loop is timed on the probing thread's own CPU clock, not the wall clock: time spent waiting for the
//! CPU behind other threads (a JVM service's JIT compiler and garbage collector keep working just after a
//! step) is not the machine being slow, and timing it flagged every step of every JVM service. Time the
//! host takes from the VM without reporting it as steal still lands on the thread's clock, as it should.

/// Iterations of the probe's loop: a few milliseconds on a current x86 core.
const WORK: u64 = 3_000_000;
/// Repetitions per CPU; the fastest counts, so one interrupt does not look like a slow machine.
const REPEAT: usize = 3;

/// The calling thread's CPU time in milliseconds.
fn thread_cpu_ms() -> f64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime only writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e3 + ts.tv_nsec as f64 / 1e6
}

fn fixed_work() -> f64 {
    let t0 = thread_cpu_ms();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..WORK {
        // xorshift with a dependency chain: neither vectorised nor folded away.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = x.wrapping_add(i);
    }
    std::hint::black_box(x);
    thread_cpu_ms() - t0
}

/// Milliseconds the fixed work takes on the slowest of `cpus` (each measured on a thread pinned to it, all
/// at once). None when no CPU could be probed.
pub fn measure(cpus: &[usize]) -> Option<f64> {
    let times: Vec<f64> = std::thread::scope(|s| {
        let handles: Vec<_> = cpus
            .iter()
            .map(|&cpu| {
                s.spawn(move || {
                    loadgen::limits::pin_current_thread(cpu).ok()?;
                    (0..REPEAT).map(|_| fixed_work()).reduce(f64::min)
                })
            })
            .collect();
        handles.into_iter().filter_map(|h| h.join().ok().flatten()).collect()
    });
    times.into_iter().reduce(f64::max)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_probe_measures_a_positive_time_on_an_allowed_cpu() {
        let cpus = crate::sandbox::procfs::allowed_cpus();
        let ms = super::measure(&cpus[..1]).unwrap();
        assert!(ms > 0.0 && ms < 10_000.0, "{ms}");
        // A CPU that does not exist cannot be pinned: nothing measured rather than a made-up figure.
        assert!(super::measure(&[100_000]).is_none());
    }

    #[test]
    fn a_busy_neighbour_on_the_same_cpu_does_not_read_as_a_slow_machine() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let cpu = crate::sandbox::procfs::allowed_cpus()[0];
        let quiet = (0..5).filter_map(|_| super::measure(&[cpu])).reduce(f64::min).unwrap();
        // Two busy threads pinned to the probe's CPU: on the wall clock the probe would take about 3×.
        let stop = AtomicBool::new(false);
        let (busy, wall) = std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| {
                    loadgen::limits::pin_current_thread(cpu).unwrap();
                    let t = std::time::Instant::now();
                    while !stop.load(Ordering::Relaxed) && t.elapsed() < std::time::Duration::from_secs(20) {
                        std::hint::spin_loop();
                    }
                });
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
            let t = std::time::Instant::now();
            let busy = (0..5).filter_map(|_| super::measure(&[cpu])).reduce(f64::min).unwrap();
            let wall = t.elapsed().as_secs_f64() * 1e3;
            stop.store(true, Ordering::Relaxed);
            (busy, wall)
        });
        // The neighbours did take the CPU (the probes' wall time is well above their CPU time) ...
        assert!(wall > 1.5 * 15.0 * busy, "wall {wall:.1} ms for 15 probes of {busy:.2} ms");
        // ... and the probe did not count it.
        assert!(busy < 1.5 * quiet, "quiet {quiet:.2} ms, beside two busy threads {busy:.2} ms");
    }
}

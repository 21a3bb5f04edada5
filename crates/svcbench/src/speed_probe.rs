//! The machine-speed probe: a fixed CPU-bound loop timed on each CPU a step uses, just before and after its
//! load. On a shared VM the host slows the whole machine at times (5 runs of one service spread 20–29 %
//! here, and steal time reads ~0), and CPU time per request does not cancel that out; a probe that takes
//! longer than the session's usual tells which steps ran on a slowed machine (figures::validity).
use std::time::Instant;

/// Iterations of the probe's loop: a few milliseconds on a current x86 core.
const WORK: u64 = 3_000_000;
/// Repetitions per CPU; the fastest counts, so one interrupt does not look like a slow machine.
const REPEAT: usize = 3;

fn fixed_work() -> f64 {
    let t0 = Instant::now();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for i in 0..WORK {
        // xorshift with a dependency chain: neither vectorised nor folded away.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = x.wrapping_add(i);
    }
    std::hint::black_box(x);
    t0.elapsed().as_secs_f64() * 1e3
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
}

//! One reading of a duet's counters: both sides' CPU and throttling, the generators' CPU (this process's)
//! and the shared store's, taken together at a slice boundary.
use super::deps::store_cpu_s;
use crate::sandbox::Probe;
use std::sync::Arc;
use std::time::Instant;

/// Both sides' counters and this process's CPU time (the generators') at one instant.
pub struct Reading {
    pub at: Instant,
    pub cpu_s: [f64; 2],
    pub throttled_s: [f64; 2],
    pub generator_cpu_s: f64,
    /// The shared store's processes' CPU seconds (None: no store, or unreadable).
    pub store_cpu_s: Option<f64>,
}

pub(super) fn read_now(probes: &[Arc<dyn Probe>; 2], store: &[Arc<dyn Probe>]) -> Reading {
    let (sa, sb) = (probes[0].sample(), probes[1].sample());
    Reading {
        at: Instant::now(),
        cpu_s: [sa.cpu_s, sb.cpu_s],
        throttled_s: [sa.throttled_s, sb.throttled_s],
        generator_cpu_s: process_cpu_s(),
        store_cpu_s: store_cpu_s(store),
    }
}

/// User and system CPU seconds of this process so far.
fn process_cpu_s() -> f64 {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return f64::NAN;
    }
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(u.ru_utime) + secs(u.ru_stime)
}

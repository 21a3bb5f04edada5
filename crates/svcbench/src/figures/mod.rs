//! One owner per derived figure: the success ratio, CPU and memory per request, saturation and validity
//! are defined here once, and the runner's stop rule, the store, the report and `compare` all use these
//! definitions (so a figure can never mean one thing in the live line and another in the report).
pub mod validity;

pub use validity::{Flag, Validity};

/// Above this share of its CPUs a process is taken as saturated (it, not the service, may be the bottleneck).
pub const SATURATED: f64 = 0.9;

/// The requests a step's success ratio is made of, in the terms of its load model.
#[derive(Debug, Clone, Copy, Default)]
pub struct Outcomes {
    pub ok: u64,
    /// Failed requests (each request once, whatever the reconnect attempts behind it).
    pub errors: u64,
    /// Requests still unanswered at the end that had waited at least half the step (starved connections).
    pub stalled: u64,
    /// Open model: requests due during the step (unsent ones count as failed, seed 004's "fewer than 90 %
    /// succeed"). None in the closed model.
    pub intended: Option<u64>,
}

/// Share of a step's requests that succeeded. Open model: of the requests due (sent or not); closed model:
/// of the finished requests plus those left unanswered for most of the step.
pub fn success_ratio(o: &Outcomes) -> f64 {
    match o.intended {
        Some(n) if n > 0 => (o.ok as f64 / n as f64).min(1.0),
        _ => {
            let all = o.ok + o.errors + o.stalled;
            if all == 0 {
                0.0
            } else {
                o.ok as f64 / all as f64
            }
        }
    }
}

/// Service CPU milliseconds per successful request.
pub fn cpu_ms_per_req(cpu_s: Option<f64>, ok: u64) -> Option<f64> {
    cpu_s.filter(|_| ok > 0).map(|c| c * 1000.0 / ok as f64)
}

/// Peak memory held per request/s of throughput (MiB·s per request), seed 000's memory efficiency.
pub fn mem_mib_s_per_req(mem_peak_mib: Option<f64>, rps: f64) -> Option<f64> {
    mem_peak_mib.filter(|_| rps > 0.0).map(|m| m / rps)
}

/// CPU used over CPU available: `cpu_s` seconds over `wall_s` seconds on `cpus` CPUs.
pub fn cpu_share(cpu_s: f64, wall_s: f64, cpus: usize) -> f64 {
    if wall_s <= 0.0 || cpus == 0 {
        0.0
    } else {
        cpu_s / (wall_s * cpus as f64)
    }
}

/// The service used its whole CPU allowance during a step: its quota, else the CPUs of its cpuset (as the
/// kernel holds them). Unknown allowance (no cgroup): not bound, as far as anyone can tell.
pub fn service_cpu_bound(cpu_s: f64, wall_s: f64, quota_cpus: Option<f64>, cpuset_cpus: Option<usize>) -> bool {
    let allowance = match (quota_cpus, cpuset_cpus) {
        (Some(q), Some(n)) => q.min(n as f64),
        (Some(q), None) => q,
        (None, Some(n)) => n as f64,
        (None, None) => return false,
    };
    wall_s > 0.0 && allowance > 0.0 && cpu_s / (wall_s * allowance) > SATURATED
}

/// CPU time per request over a whole run (startup, checks and idle time included, as seed 000 counted it).
pub fn run_cpu_s_per_req(total_cpu_s: Option<f64>, total_ok: Option<i64>) -> Option<f64> {
    match (total_cpu_s, total_ok) {
        (Some(cpu), Some(n)) if n > 0 => Some(cpu / n as f64),
        _ => None,
    }
}

/// Seed 000's "blatant simplification": CPU-seconds per request × 10⁹ requests, in vCPU-hours, times the price.
pub fn cost_per_billion(cpu_s_per_req: f64, vcpu_hour_price: f64) -> f64 {
    cpu_s_per_req * 1e9 / 3600.0 * vcpu_hour_price
}

/// Median of the finite values (the middle two averaged); None when there are none.
pub fn median(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_at_its_quota_or_its_cpuset_is_cpu_bound() {
        // 0.26 s of CPU in 1 s under a 0.25 CPU quota on one pinned CPU: bound by the quota.
        assert!(service_cpu_bound(0.26, 1.0, Some(0.25), Some(1)));
        // The same CPU under a 1-CPU quota: room to spare.
        assert!(!service_cpu_bound(0.26, 1.0, Some(1.0), Some(1)));
        // No quota, pinned to one CPU and using all of it.
        assert!(service_cpu_bound(0.95, 1.0, None, Some(1)));
        assert!(!service_cpu_bound(0.95, 1.0, None, Some(2)));
        // Nothing known about the limits: never taken as bound.
        assert!(!service_cpu_bound(5.0, 1.0, None, None));
    }

    #[test]
    fn success_ratio_has_one_definition_per_model() {
        // Closed: unanswered-for-most-of-the-step requests count against it.
        let closed = Outcomes { ok: 90, errors: 5, stalled: 5, intended: None };
        assert!((success_ratio(&closed) - 0.9).abs() < 1e-12);
        // Open: of the intended, so unsent requests count as failures even with no error at all.
        let open = Outcomes { ok: 80, errors: 0, stalled: 0, intended: Some(100) };
        assert!((success_ratio(&open) - 0.8).abs() < 1e-12);
        assert_eq!(success_ratio(&Outcomes::default()), 0.0);
    }
}

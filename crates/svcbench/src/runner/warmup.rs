//! Warming the dependencies before the first measured run. A store that has just loaded its data is cold
//! (caches empty, a JVM's code not yet compiled): the original locations-rs did 514 req/s at 1 connection
//! in its first run and 1,886 in its second. So before any run, the first service drives the scenario's
//! mix through the store in short windows until two in a row agree, and that warm-up is recorded with the
//! session; its figures are not stored as a run.
use crate::manifest::Service;
use crate::scenario::{Scenario, WarmupSpec};
use crate::service::instance::{Instance, StartSpec};
use anyhow::{Context, Result};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Serialize)]
pub struct WarmupRecord {
    pub service: String,
    /// Successful req/s of each window.
    pub windows: Vec<f64>,
    pub settled: bool,
    pub seconds: f64,
}

/// Two windows in a row within `tolerance` of each other.
pub fn settled(windows: &[f64], tolerance: f64) -> bool {
    match windows {
        [.., a, b] if *a > 0.0 && *b > 0.0 => (b / a - 1.0).abs() <= tolerance,
        _ => false,
    }
}

/// Where the warm-up's load comes from: the generator's CPUs and host.
pub struct LoadFrom<'a> {
    pub cpus: &'a [usize],
    pub host: &'a crate::network::Host,
}

pub fn warm_up(
    spec: &WarmupSpec,
    scenario: &Scenario,
    svc: &Service,
    start: &StartSpec,
    from: LoadFrom,
    startup_timeout: Duration,
    stop: &AtomicBool,
) -> Result<WarmupRecord> {
    let window = humantime::parse_duration(&spec.window).context("[warmup] window")?;
    let max = humantime::parse_duration(&spec.max).context("[warmup] max")?;
    let mix_name = spec.mix.as_deref().unwrap_or("default");
    let mix =
        scenario.mix(mix_name)?.clone().resolve(&scenario.dir).with_context(|| format!("[warmup] mix `{mix_name}`"))?;
    let mut inst = Instance::spawn(svc, start)?;
    inst.wait_ready(svc, startup_timeout, stop)?;
    let t0 = Instant::now();
    let mut windows = Vec::new();
    while !stop.load(Ordering::Relaxed) && t0.elapsed() < max && !settled(&windows, spec.tolerance) {
        let mut cfg = loadgen::LoadConfig::new(inst.target(), mix.clone(), loadgen::Model::closed(spec.connections));
        cfg.duration = window;
        cfg.threads = from.cpus.len().max(1);
        cfg.cpu_affinity = Some(from.cpus.to_vec());
        let r = from.host.within(|| loadgen::run(&cfg, None))?.context("warm-up load")?;
        windows.push(r.success_rps());
    }
    inst.sandbox.stop(Duration::from_secs(5));
    Ok(WarmupRecord {
        service: svc.name().to_string(),
        settled: settled(&windows, spec.tolerance),
        windows,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn settles_when_two_windows_agree() {
        assert!(!super::settled(&[514.0], 0.05));
        assert!(!super::settled(&[514.0, 1886.0], 0.05));
        assert!(super::settled(&[514.0, 1886.0, 1900.0], 0.05));
        assert!(!super::settled(&[0.0, 0.0], 0.05), "no answers is not a settled store");
    }
}

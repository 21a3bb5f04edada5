//! A background thread that reads a sandbox's counters at 20 Hz (the issue asks for at least 10), so that
//! every step has its memory high-water mark, RSS, thread count and throttling even where the kernel
//! keeps no per-step peak.
use super::Probe;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub const INTERVAL: Duration = Duration::from_millis(50);

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Sample {
    /// Seconds since the sampler started.
    pub t_s: f64,
    pub cpu_s: f64,
    pub mem_mib: f64,
    pub rss_mib: f64,
    pub threads: u64,
    pub throttled_s: f64,
    pub oom_kills: u64,
    pub alive: bool,
}

pub struct Sampler {
    samples: Arc<Mutex<Vec<Sample>>>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Sampler {
    /// Starts sampling; `on_death` is set when the probe reports no live process (service crashed or was
    /// OOM-killed), so that the load of the current step can stop at once.
    pub fn start(probe: Arc<dyn Probe>, on_death: Option<Arc<AtomicBool>>) -> Sampler {
        let samples = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (s2, stop2) = (samples.clone(), stop.clone());
        let handle = std::thread::Builder::new()
            .name("sampler".into())
            .spawn(move || {
                let t0 = Instant::now();
                let mut next = t0;
                while !stop2.load(Ordering::Relaxed) {
                    let mut s = probe.sample();
                    s.t_s = t0.elapsed().as_secs_f64();
                    if !s.alive {
                        if let Some(flag) = &on_death {
                            flag.store(true, Ordering::Relaxed);
                        }
                    }
                    s2.lock().unwrap().push(s);
                    next += INTERVAL;
                    let now = Instant::now();
                    if next > now {
                        std::thread::sleep(next - now);
                    } else {
                        next = now;
                    }
                }
            })
            .expect("spawn sampler thread");
        Sampler { samples, stop, handle: Some(handle) }
    }

    /// The samples taken since the previous call (one step's worth).
    pub fn take(&self) -> Vec<Sample> {
        std::mem::take(&mut *self.samples.lock().unwrap())
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Per-step summary of samples.
#[derive(Debug, Clone, Default)]
pub struct SampleSummary {
    pub mem_peak_mib: f64,
    pub rss_peak_mib: f64,
    pub threads_max: u64,
}

pub fn summarize(samples: &[Sample]) -> SampleSummary {
    SampleSummary {
        mem_peak_mib: samples.iter().map(|s| s.mem_mib).fold(0.0, f64::max),
        rss_peak_mib: samples.iter().map(|s| s.rss_mib).fold(0.0, f64::max),
        threads_max: samples.iter().map(|s| s.threads).max().unwrap_or(0),
    }
}

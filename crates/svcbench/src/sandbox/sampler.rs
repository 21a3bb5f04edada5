//! A background thread that reads a sandbox's counters at 20 Hz (the issue asks for at least 10), so that
//! every step has its memory high-water mark, RSS, thread count and throttling even where the kernel
//! keeps no per-step peak.
use super::Probe;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub const SAMPLES_PER_SECOND: u64 = 20;
pub const INTERVAL: Duration = Duration::from_millis(1000 / SAMPLES_PER_SECOND);

/// The open files of the service's process nearest its limit, and that limit (its RLIMIT_NOFILE).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenFiles {
    pub count: u64,
    pub limit: u64,
}

impl OpenFiles {
    /// The reading nearer its limit.
    pub fn nearer(self, other: OpenFiles) -> OpenFiles {
        let share = |o: OpenFiles| o.count as f64 / o.limit.max(1) as f64;
        if share(other) > share(self) {
            other
        } else {
            self
        }
    }
}

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
    /// Where the probe can read them, on the samples its `open_files_every` says.
    #[serde(default)]
    pub open_files: Option<OpenFiles>,
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
                let mut n: u64 = 0;
                let open_files_every = probe.open_files_every().max(1);
                while !stop2.load(Ordering::Relaxed) {
                    let mut s = probe.sample_with_open_files(n.is_multiple_of(open_files_every));
                    s.t_s = t0.elapsed().as_secs_f64();
                    n += 1;
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
    /// The reading nearest its limit, where open files were read.
    pub open_files_peak: Option<OpenFiles>,
}

pub fn summarize(samples: &[Sample]) -> SampleSummary {
    SampleSummary {
        mem_peak_mib: samples.iter().map(|s| s.mem_mib).fold(0.0, f64::max),
        rss_peak_mib: samples.iter().map(|s| s.rss_mib).fold(0.0, f64::max),
        threads_max: samples.iter().map(|s| s.threads).max().unwrap_or(0),
        open_files_peak: samples.iter().filter_map(|s| s.open_files).reduce(OpenFiles::nearer),
    }
}

//! Live progress on the terminal while a step runs: service, run, step, requests/s, time left. Also the
//! watchdog that ends a step early when the user interrupts or the service dies.
use loadgen::LiveStats;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub struct Progress {
    done: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Progress {
    /// `prefix`: "hello-go-nethttp run 1/2 step 3/12 c=4"; `left`: the session's time left after this step.
    /// `live`: the generator's running counts (None: agents in other processes, which report at the end).
    pub fn start(
        prefix: String,
        step_duration: Duration,
        left_after: Duration,
        live: Option<Arc<LiveStats>>,
        global_stop: Arc<AtomicBool>,
        step_stop: Arc<AtomicBool>,
    ) -> Progress {
        let done = Arc::new(AtomicBool::new(false));
        let d2 = done.clone();
        let handle = std::thread::spawn(move || {
            let tty = std::io::stderr().is_terminal();
            let t0 = Instant::now();
            let mut last_print = Instant::now();
            let mut last_ok = 0u64;
            let mut last_t = Instant::now();
            let mut rps = 0.0;
            while !d2.load(Ordering::Relaxed) {
                if global_stop.load(Ordering::Relaxed) {
                    step_stop.store(true, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(100));
                if let Some(snap) =
                    live.as_ref().filter(|_| last_t.elapsed() >= Duration::from_secs(1)).map(|l| l.snapshot())
                {
                    rps = (snap.requests_ok - last_ok) as f64 / last_t.elapsed().as_secs_f64();
                    last_ok = snap.requests_ok;
                    last_t = Instant::now();
                }
                let every = if tty { Duration::from_secs(1) } else { Duration::from_secs(10) };
                if last_print.elapsed() >= every {
                    last_print = Instant::now();
                    let left = step_duration.saturating_sub(t0.elapsed()) + left_after;
                    let line = match live {
                        Some(_) => format!("{prefix}  {rps:>9.0} req/s  {} left", fmt_duration(left)),
                        None => format!("{prefix}  agents running  {} left", fmt_duration(left)),
                    };
                    if tty {
                        eprint!("\r\x1b[2K{line}");
                    } else {
                        eprintln!("{line}");
                    }
                    let _ = std::io::stderr().flush();
                }
            }
            if tty {
                eprint!("\r\x1b[2K");
            }
        });
        Progress { done, handle: Some(handle) }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

pub fn fmt_duration(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// What a run costs beyond its profile's steps before one has been timed: startup, checks, probes, stop.
pub const RUN_OVERHEAD_GUESS: Duration = Duration::from_secs(15);

/// A plan's duration before anything has been timed: the profile's steps and the overhead guess per run.
pub fn estimate(runs: usize, profile: Duration) -> Duration {
    (profile + RUN_OVERHEAD_GUESS) * runs as u32
}

/// The time a whole session (or study) has left, from the average run so far.
pub struct TimeLeft {
    started: Instant,
    total: usize,
    done: usize,
}

impl TimeLeft {
    pub fn new(total: usize) -> TimeLeft {
        TimeLeft { started: Instant::now(), total, done: 0 }
    }

    /// Counts one run as done and says how far the session is.
    pub fn run_done(&mut self) -> String {
        self.done += 1;
        let per_run = self.started.elapsed() / self.done as u32;
        let left = per_run * self.total.saturating_sub(self.done) as u32;
        format!("{}/{} runs done, about {} left", self.done, self.total, fmt_duration(left))
    }
}

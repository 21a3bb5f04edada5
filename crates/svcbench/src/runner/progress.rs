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
    /// `prefix`: "hello-go-nethttp run 1/2 step 3/12 c=4"; `left_after`: the session's time left after this step
    /// (the run's later steps and the estimated later runs).
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
            let (mut last_ok, mut last_err) = (0u64, 0u64);
            let mut last_t = Instant::now();
            let (mut rps, mut err_rps) = (0.0, 0.0);
            while !d2.load(Ordering::Relaxed) {
                if global_stop.load(Ordering::Relaxed) {
                    step_stop.store(true, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(100));
                if let Some(snap) =
                    live.as_ref().filter(|_| last_t.elapsed() >= Duration::from_secs(1)).map(|l| l.snapshot())
                {
                    let secs = last_t.elapsed().as_secs_f64();
                    rps = (snap.requests_ok - last_ok) as f64 / secs;
                    err_rps = snap.errors.saturating_sub(last_err) as f64 / secs;
                    (last_ok, last_err) = (snap.requests_ok, snap.errors);
                    last_t = Instant::now();
                }
                let every = if tty { Duration::from_secs(1) } else { Duration::from_secs(10) };
                if last_print.elapsed() >= every {
                    last_print = Instant::now();
                    let left = step_duration.saturating_sub(t0.elapsed()) + left_after;
                    let line = match live {
                        Some(_) => live_line(&prefix, rps, err_rps, left),
                        None => format!("{prefix}  agents running  {} left", fmt_duration(left)),
                    };
                    if tty {
                        crate::err!("\r\x1b[2K{line}");
                    } else {
                        crate::errln!("{line}");
                    }
                    let _ = std::io::stderr().flush();
                }
            }
            if tty {
                crate::err!("\r\x1b[2K");
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

/// The line of a step under way: its successes a second, and its errors a second when there are any (a
/// service answering only errors, as seed 004's Node at its open-file limit did, otherwise shows 0 req/s).
fn live_line(prefix: &str, rps: f64, err_rps: f64, left: Duration) -> String {
    let errors = if err_rps >= 0.5 { format!(", {err_rps:.0} errors/s") } else { String::new() };
    format!("{prefix}  {rps:>9.0} req/s{errors}  {} left", fmt_duration(left))
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

/// The time a whole session (or study) has left, from the average run so far (before the first has ended:
/// the plan's estimate of one run).
pub struct TimeLeft {
    started: Instant,
    total: usize,
    done: usize,
    first_guess: Duration,
}

impl TimeLeft {
    pub fn new(total: usize, first_guess: Duration) -> TimeLeft {
        TimeLeft { started: Instant::now(), total, done: 0, first_guess }
    }

    fn per_run(&self) -> Duration {
        if self.done == 0 {
            self.first_guess
        } else {
            self.started.elapsed() / self.done as u32
        }
    }

    /// The estimated time of the runs after the one about to start.
    pub fn after_this_run(&self) -> Duration {
        self.per_run() * self.total.saturating_sub(self.done + 1) as u32
    }

    /// Counts one run as done and says how far the session is.
    pub fn run_done(&mut self) -> String {
        self.done += 1;
        let left = self.per_run() * self.total.saturating_sub(self.done) as u32;
        format!("{}/{} runs done, about {} left", self.done, self.total, fmt_duration(left))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_under_way_shows_its_errors_a_second_only_when_it_has_some() {
        let left = Duration::from_secs(61);
        assert_eq!(live_line("s", 1500.4, 0.2, left), "s       1500 req/s  0:01:01 left");
        assert_eq!(live_line("s", 0.0, 1532.0, left), "s          0 req/s, 1532 errors/s  0:01:01 left");
    }

    #[test]
    fn the_time_left_counts_the_later_runs_from_the_plan_then_from_the_runs_timed() {
        let mut left = TimeLeft::new(5, Duration::from_secs(60));
        // Before any run has ended: the plan's guess for each of the 4 runs after the first.
        assert_eq!(left.after_this_run(), Duration::from_secs(240));
        std::thread::sleep(Duration::from_millis(20));
        left.run_done();
        // Then the average run so far (a few ms here), for the 3 runs after the second.
        let later = left.after_this_run();
        assert!(later >= Duration::from_millis(60) && later < Duration::from_secs(3), "{later:?}");
        let mut last = TimeLeft::new(1, Duration::from_secs(60));
        assert_eq!(last.after_this_run(), Duration::ZERO);
        assert!(last.run_done().starts_with("1/1 runs done"));
    }
}

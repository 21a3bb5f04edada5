//! Open model (like wrk2 / Gatling / k6's constant-arrival-rate): requests are due at fixed
//! times whatever the server does. Latency counts from the intended send time, so a stalled
//! server shows in the percentiles (coordinated omission corrected). A due request with no idle
//! connection opens one, up to the cap; at the cap it waits, counted as sent late.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::{Driver, OpenResult};
use crate::client::connection::{Failure, State};
use crate::client::worker::Core;
use crate::config::RateRamp;
use crate::report::OpenStats;

/// The run's global arrival schedule: request k (0-based) is due at `time_of(k)` seconds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Schedule {
    ramp: RateRamp,
    duration: f64,
}

impl Schedule {
    pub(crate) fn new(ramp: RateRamp, duration: Duration) -> Schedule {
        Schedule { ramp, duration: duration.as_secs_f64() }
    }

    fn steps(&self) -> Option<u32> {
        if self.ramp.is_constant() {
            None
        } else {
            self.ramp.steps
        }
    }

    /// Rate of step `i` of `n`: from start to end in equal increments.
    fn step_rate(&self, i: u32, n: u32) -> f64 {
        if n <= 1 {
            self.ramp.start
        } else {
            self.ramp.start + (self.ramp.end - self.ramp.start) * f64::from(i) / f64::from(n - 1)
        }
    }

    /// Requests due in [0, t] (the count function's inverse is `time_of`).
    fn cumulative(&self, t: f64) -> f64 {
        let t = t.clamp(0.0, self.duration);
        let (a, b) = (self.ramp.start, self.ramp.end);
        match self.steps() {
            None => a * t + (b - a) * t * t / (2.0 * self.duration),
            Some(n) => {
                let len = self.duration / f64::from(n);
                let mut total = 0.0;
                for i in 0..n {
                    let from = f64::from(i) * len;
                    if t <= from {
                        break;
                    }
                    total += self.step_rate(i, n) * (t - from).min(len);
                }
                total
            }
        }
    }

    /// Seconds from the start at which request `k` is due; None past the end of the run.
    pub(crate) fn time_of(&self, k: u64) -> Option<f64> {
        let k = k as f64;
        let (a, b) = (self.ramp.start, self.ramp.end);
        let t = match self.steps() {
            None => {
                // Solve a t + c t^2 = k with c = (b - a) / 2D; this form is stable for c -> 0.
                let c = (b - a) / (2.0 * self.duration);
                if k == 0.0 {
                    0.0
                } else {
                    let disc = a * a + 4.0 * c * k;
                    if disc < 0.0 {
                        return None;
                    }
                    let denom = a + disc.sqrt();
                    if denom <= 0.0 {
                        return None;
                    }
                    2.0 * k / denom
                }
            }
            Some(n) => {
                let len = self.duration / f64::from(n);
                let mut before = 0.0;
                let mut found = None;
                for i in 0..n {
                    let rate = self.step_rate(i, n);
                    let in_step = rate * len;
                    if rate > 0.0 && k < before + in_step {
                        found = Some(f64::from(i) * len + (k - before) / rate);
                        break;
                    }
                    before += in_step;
                }
                found?
            }
        };
        (t < self.duration).then_some(t)
    }

    /// Global requests due at or before `t` seconds.
    pub(crate) fn due_by(&self, t: f64) -> u64 {
        if t < 0.0 {
            return 0;
        }
        // Request k is due at or before t iff k <= cumulative(t); guard float edges with time_of.
        let mut n = self.cumulative(t).floor() as u64 + 1;
        while n > 0 && self.time_of(n - 1).is_none_or(|x| x > t) {
            n -= 1;
        }
        while self.time_of(n).is_some_and(|x| x <= t) {
            n += 1;
        }
        n
    }
}

pub(crate) struct OpenDriver {
    schedule: Schedule,
    start: Instant,
    worker: u64,
    workers: u64,
    /// This worker's requests are the global ones `worker + m * workers`, m < `limit`.
    limit: u64,
    /// Next of this worker's requests to send, and when it is due.
    next_m: u64,
    next_at: Option<Instant>,
    cap: usize,
    /// Connections open or opening.
    open: usize,
    connecting: usize,
    idle: Vec<usize>,
    free_slots: Vec<usize>,
    /// Requests below this index were due while every allowed connection was busy.
    blocked_until: u64,
    sent_late: u64,
    max_lateness: Duration,
    /// Schedule lag of every send (µs): how late the generator itself was.
    lag: Histogram<u64>,
    /// Requests sent (before the deadline: nothing is sent after it).
    sent: u64,
    /// Past the deadline: requests still waiting for a connection stay unsent.
    stopped: bool,
}

impl OpenDriver {
    pub(crate) fn new(
        schedule: Schedule,
        start: Instant,
        worker: usize,
        workers: usize,
        cap: usize,
        max_requests: Option<u64>,
    ) -> OpenDriver {
        let (worker, workers) = (worker as u64, workers as u64);
        // Of the global requests 0..max, this worker owns those ≡ worker (mod workers).
        let limit = match max_requests {
            Some(max) if max > worker => (max - worker).div_ceil(workers),
            Some(_) => 0,
            None => u64::MAX,
        };
        let mut d = OpenDriver {
            schedule,
            start,
            worker,
            workers,
            limit,
            next_m: 0,
            next_at: None,
            cap: cap.max(1),
            open: 0,
            connecting: 0,
            idle: Vec::new(),
            free_slots: Vec::new(),
            blocked_until: 0,
            sent_late: 0,
            max_lateness: Duration::ZERO,
            lag: crate::histogram::new_latency_histogram(),
            sent: 0,
            stopped: false,
        };
        d.refresh_next();
        d
    }

    fn refresh_next(&mut self) {
        self.next_at = if self.next_m >= self.limit {
            None
        } else {
            self.schedule
                .time_of(self.worker + self.next_m * self.workers)
                .map(|t| self.start + Duration::from_secs_f64(t))
        };
    }

    /// This worker's requests due by `now` (capped by the request limit).
    fn due_count(&self, now: Instant) -> u64 {
        let global = self.schedule.due_by(now.saturating_duration_since(self.start).as_secs_f64());
        let mine = if global > self.worker { (global - self.worker).div_ceil(self.workers) } else { 0 };
        mine.min(self.limit)
    }

    fn due(&self, now: Instant) -> Option<Instant> {
        self.next_at.filter(|&at| at <= now && !self.stopped)
    }

    fn send(&mut self, core: &mut Core, idx: usize, at: Instant, now: Instant) {
        if self.next_m < self.blocked_until {
            self.sent_late += 1;
        }
        // A fresh clock reading: when several requests are due at once, the later ones of the
        // batch leave after `now`, and their lag must say so.
        let lag = Instant::now().saturating_duration_since(at);
        self.max_lateness = self.max_lateness.max(lag);
        // Sub-microsecond lags are recorded as 0 (the latency histogram's floor is 1 µs).
        self.lag.saturating_record((lag.as_micros() as u64).min(crate::histogram::MAX_LATENCY_US));
        self.sent += 1;
        self.next_m += 1;
        self.refresh_next();
        if !core.send(idx, at, now) {
            self.release(idx, false);
        }
    }

    /// Forgets a closed connection.
    fn release(&mut self, idx: usize, was_connecting: bool) {
        self.open -= 1;
        if was_connecting {
            self.connecting -= 1;
        }
        if let Some(pos) = self.idle.iter().position(|&i| i == idx) {
            self.idle.swap_remove(pos);
        }
        self.free_slots.push(idx);
    }

    fn open_connection(&mut self, core: &mut Core, now: Instant) {
        let idx = self.free_slots.pop().unwrap_or_else(|| core.add_slot(now));
        self.open += 1;
        self.connecting += 1;
        if !core.connect(idx, now) {
            self.release(idx, true);
            self.consume_one(now);
        }
    }

    /// A connection failure costs the oldest waiting request (it is counted as that error).
    fn consume_one(&mut self, now: Instant) {
        if self.due(now).is_some() {
            self.next_m += 1;
            self.refresh_next();
        }
    }
}

impl Driver for OpenDriver {
    fn start(&mut self, _core: &mut Core, _now: Instant) {}

    fn on_idle(&mut self, core: &mut Core, idx: usize, now: Instant, fresh: bool) {
        if fresh {
            self.connecting -= 1;
        }
        match self.due(now) {
            Some(at) => self.send(core, idx, at, now),
            None => self.idle.push(idx),
        }
    }

    fn on_closed(
        &mut self,
        _core: &mut Core,
        idx: usize,
        now: Instant,
        failure: Option<Failure>,
        was_connecting: bool,
    ) {
        self.release(idx, was_connecting);
        if was_connecting || matches!(failure, Some(Failure::ConnectRefused | Failure::ConnectTimeout)) {
            self.consume_one(now);
        }
    }

    fn dispatch(&mut self, core: &mut Core, now: Instant) {
        while let Some(at) = self.due(now) {
            let Some(idx) = self.idle.pop() else { break };
            debug_assert_eq!(core.conns[idx].state, State::Idle);
            self.send(core, idx, at, now);
        }
        if self.due(now).is_none() {
            return;
        }
        let due = self.due_count(now);
        let waiting = due.saturating_sub(self.next_m) as usize;
        let want = waiting.saturating_sub(self.connecting);
        let room = self.cap - self.open;
        for _ in 0..want.min(room) {
            self.open_connection(core, now);
        }
        if want > room {
            self.blocked_until = self.blocked_until.max(due);
        }
    }

    fn next_wakeup(&self, now: Instant) -> Option<Instant> {
        // With requests already waiting, only a connection event can help: don't spin.
        self.next_at.filter(|&at| at > now)
    }

    fn stop_sending(&mut self) {
        self.stopped = true;
    }

    fn finished(&self, core: &Core) -> bool {
        self.next_m >= self.limit && !core.any_busy()
    }

    fn open_result(&mut self, end: Instant) -> Option<OpenResult> {
        let intended = self.due_count(end).max(self.next_m);
        let max_lateness_ms = self.max_lateness.as_secs_f64() * 1000.0;
        let window = end.saturating_duration_since(self.start).as_secs_f64();
        let stats = OpenStats {
            intended,
            sent_late: self.sent_late,
            unsent: intended - self.next_m,
            max_lateness_ms,
            lag_p50_ms: self.lag.value_at_quantile(0.5) as f64 / 1000.0,
            lag_p99_ms: self.lag.value_at_quantile(0.99) as f64 / 1000.0,
            lag_max_ms: max_lateness_ms,
            achieved_rate: if window > 0.0 { self.sent as f64 / window } else { 0.0 },
        };
        let lag = std::mem::replace(&mut self.lag, crate::histogram::new_latency_histogram());
        Some(OpenResult { stats, lag, sent: self.sent })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule(a: f64, b: f64, steps: Option<u32>, secs: u64) -> Schedule {
        Schedule::new(RateRamp { start: a, end: b, steps }, Duration::from_secs(secs))
    }

    #[test]
    fn constant_rate() {
        let s = schedule(100.0, 100.0, None, 10);
        assert_eq!(s.time_of(0), Some(0.0));
        assert!((s.time_of(150).unwrap() - 1.5).abs() < 1e-9);
        assert_eq!(s.time_of(1000), None);
        assert_eq!(s.due_by(0.0), 1);
        assert_eq!(s.due_by(1.0), 101);
        assert_eq!(s.due_by(100.0), 1000);
    }

    #[test]
    fn linear_ramp() {
        // 0 -> 200 req/s over 10 s: 1000 requests, the first half of them in the last ~2.9 s.
        let s = schedule(0.0, 200.0, None, 10);
        assert_eq!(s.due_by(10.0), 1000);
        let mid = s.time_of(500).unwrap();
        assert!((mid - 50f64.sqrt()).abs() < 1e-6, "{mid}");
        let down = schedule(200.0, 0.0, None, 10);
        assert_eq!(down.due_by(10.0), 1000);
        assert!(down.time_of(999).is_some() && down.time_of(1000).is_none());
        for k in [1, 10, 300, 999] {
            let t = s.time_of(k).unwrap();
            assert_eq!(s.due_by(t), k + 1, "k={k}");
        }
    }

    #[test]
    fn stepped_ramp() {
        // 100, 200, 300 req/s for 1 s each.
        let s = schedule(100.0, 300.0, Some(3), 3);
        assert_eq!(s.due_by(1.0 - 1e-9), 100);
        assert_eq!(s.due_by(2.0 - 1e-9), 300);
        assert_eq!(s.due_by(3.0), 600);
        assert!((s.time_of(100).unwrap() - 1.0).abs() < 1e-9);
        assert!((s.time_of(350).unwrap() - 2.0 - 50.0 / 300.0).abs() < 1e-9);
    }

    #[test]
    fn workers_split_the_schedule() {
        let s = schedule(1000.0, 1000.0, None, 1);
        let start = Instant::now();
        let end = start + Duration::from_secs(1);
        let total: u64 = (0..3).map(|w| OpenDriver::new(s, start, w, 3, 10, None).due_count(end)).sum();
        assert_eq!(total, 1000);
        let limited: u64 = (0..3).map(|w| OpenDriver::new(s, start, w, 3, 10, Some(100)).due_count(end)).sum();
        assert_eq!(limited, 100);
    }
}

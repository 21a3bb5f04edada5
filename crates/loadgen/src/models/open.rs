//! Open model (like wrk2 / Gatling / k6's constant-arrival-rate): requests are due at fixed
//! times whatever the server does. Latency counts from the intended send time, so a stalled
//! server shows in the percentiles (coordinated omission corrected). A due request with no idle
//! connection opens one, up to the cap; at the cap it waits, counted as sent late.
//!
//! Profile step: `rate = 1000`, `rate = [100, 200]` (one step each), `rate = "100:1000"` (a
//! ramp within the step), `rate_range = [from, to, by]`; with `max_connections` and `pacing`.
//! Agents: each is given the whole rate and sends its own share of one schedule. Success: of
//! the requests due, sent or not. Its own flags: `rate_not_held` and `schedule_lag`.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use hdrhistogram::Histogram;

use super::{keys, Kind, LoadAxis, LoadModel, Model, RunShare, StoredLoad};
use super::{share, RateRamp, MAX_CONNECTIONS, MAX_RATE};
use crate::client::connection::{Failure, State};
use crate::client::driver::{Driver, OpenResult};
use crate::client::pacing::Pacing;
use crate::client::worker::Core;
use crate::flag::{Flag, FlagCode, RATE_HELD_SHARE, SCHEDULE_LAG_P99_MS};
use crate::report::{LoadReport, OpenStats};

/// Requests per second (constant, or ramped over the run), with a cap on connections.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Open {
    pub rate: RateRamp,
    pub max_connections: usize,
}

pub(super) const KIND: Kind = Kind {
    name: "open",
    family: "open-model",
    triggers: &["rate", "rate_range"],
    options: &["max_connections", "pacing"],
    from_step,
    from_stored,
};

/// A step's `max_connections`, or the default, within one machine's ports.
pub(super) fn max_connections(step: &toml::Table, default: usize) -> Result<usize> {
    let m = match step.get("max_connections") {
        Some(v) => keys::count("max_connections", v)?,
        None => default as i64,
    };
    if m < 1 || m > MAX_CONNECTIONS as i64 {
        bail!("max_connections = {m}: must be between 1 and {MAX_CONNECTIONS}");
    }
    Ok(m as usize)
}

/// A step's rate in requests per second, within what one machine can send.
pub(super) fn rate(key: &str, v: &toml::Value) -> Result<f64> {
    let x = keys::number(key, v)?;
    if x > 0.0 && x <= MAX_RATE {
        Ok(x)
    } else {
        bail!("{key} must be above 0 and at most 10,000,000 requests/s, got {x}")
    }
}

fn from_step(step: &toml::Table, default_max_connections: usize) -> Result<Vec<Model>> {
    let max_connections = max_connections(step, default_max_connections)?;
    let open = |start, end| Model::Open(Open { rate: RateRamp { start, end, steps: None }, max_connections });
    if let Some([from, to, by]) =
        step.get("rate_range").map(|v| keys::numbers("rate_range", v, "[from, to, step]")).transpose()?
    {
        return Ok(rate_range(from, to, by)?.into_iter().map(|r| open(r, r)).collect());
    }
    match &step["rate"] {
        toml::Value::String(t) => {
            let (a, b) = t.split_once(':').context("rate text must be \"FROM:TO\" (a ramp), e.g. \"100:1000\"")?;
            let num = |x: &str| -> Result<toml::Value> {
                let v: f64 = x.trim().parse().with_context(|| format!("rate {t:?}: {x:?} is not a number"))?;
                Ok(toml::Value::Float(v))
            };
            Ok(vec![open(rate("rate", &num(a)?)?, rate("rate", &num(b)?)?)])
        }
        v => Ok(keys::list("rate", v, rate)?.into_iter().map(|r| open(r, r)).collect()),
    }
}

/// Most rates one `rate_range` expands to: a profile holds at most a thousand steps (svcbench's
/// profile/limits.rs), and a range past that is a typo that would expand until memory runs out.
pub const MAX_RANGE_RATES: usize = 1_000;

/// The rates of `rate_range = [from, to, by]`, counted before any is made: finite, positive, `to >= from`,
/// at most [`MAX_RATE`] and at most [`MAX_RANGE_RATES`] of them.
pub fn rate_range(from: f64, to: f64, by: f64) -> Result<Vec<f64>> {
    if !(from.is_finite() && to.is_finite() && by.is_finite()) {
        bail!("rate_range = [{from}, {to}, {by}]: every number must be finite");
    }
    if !(from > 0.0 && by > 0.0 && to >= from) {
        bail!("rate_range must be [from > 0, to >= from, step > 0]");
    }
    if to > MAX_RATE {
        bail!("rate_range = [{from}, {to}, {by}]: rates are at most {MAX_RATE:.0} requests/s");
    }
    // The same tolerance as adding `by` up to `to`: a range that lands on `to` includes it.
    let count = ((to - from) / by + 1e-9).floor() + 1.0;
    if count > MAX_RANGE_RATES as f64 {
        bail!(
            "rate_range = [{from}, {to}, {by}] makes {count:.0} steps; a profile holds at most {MAX_RANGE_RATES}: \
             take a larger step"
        );
    }
    Ok((0..count as usize).map(|i| from + i as f64 * by).collect())
}

fn from_stored(s: &StoredLoad) -> Option<Model> {
    let start = s.rate?;
    let rate = RateRamp { start, end: s.rate_end.unwrap_or(start), steps: None };
    Some(Model::Open(Open { rate, max_connections: 0 }))
}

impl Open {
    pub(super) fn driver(&self, run: &RunShare) -> OpenDriver {
        OpenDriver::new(
            Schedule::new(self.rate, run.duration),
            run.start,
            run.worker,
            run.workers,
            share(self.max_connections, run.threads, run.thread),
            run.max_requests,
        )
    }
}

impl LoadModel for Open {
    fn name(&self) -> &'static str {
        "open"
    }
    fn label(&self) -> String {
        let RateRamp { start, end, .. } = self.rate;
        if start == end {
            format!("r={start}/s")
        } else {
            format!("r={start}→{end}/s")
        }
    }
    fn load(&self) -> f64 {
        self.rate.start
    }
    fn load_text(&self) -> String {
        format!("{}/s", self.rate.start)
    }
    fn axis(&self) -> LoadAxis {
        LoadAxis::OfferedRate
    }
    fn describe(&self) -> String {
        format!(
            ", {}, up to {} connections (open model: latency from the intended send time)",
            self.rate, self.max_connections
        )
    }
    fn pool(&self) -> usize {
        self.max_connections
    }
    fn stored(&self) -> StoredLoad {
        StoredLoad { model: "open", connections: None, rate: Some(self.rate.start), rate_end: Some(self.rate.end) }
    }
    fn validate(&self) -> Result<()> {
        validate_cap(self.max_connections)?;
        let rate = &self.rate;
        if !(rate.start >= 0.0 && rate.end >= 0.0) || (rate.start == 0.0 && rate.end == 0.0) {
            bail!("rate {rate} is not positive: give requests per second, e.g. 1000");
        }
        if rate.steps == Some(0) {
            bail!("rate steps is 0: use at least 1 step, or leave it out for a linear ramp");
        }
        Ok(())
    }
    fn check_agents(&self, _agents: usize) -> Result<()> {
        Ok(())
    }
    fn agent_threads(&self, threads: usize, _agents: usize) -> usize {
        threads
    }
    fn agent_args(&self, agents: usize, i: usize, threads: usize, pacing: Pacing) -> Vec<String> {
        // The whole rate: agent i sends its own share of one schedule.
        let r = self.rate;
        let rate = if r.is_constant() { r.start.to_string() } else { format!("{}:{}", r.start, r.end) };
        let cap = share(self.max_connections, agents, i).max(threads);
        vec![
            "--rate".into(),
            rate,
            "--pacing".into(),
            pacing.name().into(),
            "--max-connections".into(),
            cap.to_string(),
        ]
    }
    fn offered(&self, report: &LoadReport) -> Option<u64> {
        report.open.as_ref().map(|o| o.intended)
    }
    fn held_rate(&self, report: &LoadReport) -> Option<f64> {
        report.open.as_ref().map(|o| o.intended as f64 / report.duration_s.max(1e-9))
    }
    fn pacing(&self, pacing: Pacing) -> Option<Pacing> {
        Some(pacing)
    }
    fn drain(&self, request_timeout: Duration) -> Duration {
        // Every due request counts: answers to those sent before the deadline are awaited.
        request_timeout
    }
    fn offered_per_second(&self, _duration_s: f64) -> Option<Vec<f64>> {
        // A step at one rate (or the `A:B` ramp, charted by its start rate as before) is one figure.
        None
    }
}

/// The connection cap of a scheduled model: at least one, within one machine's ports.
pub(super) fn validate_cap(max_connections: usize) -> Result<()> {
    if max_connections > MAX_CONNECTIONS {
        bail!("{max_connections} connections: one machine has at most {MAX_CONNECTIONS} local ports to one target")
    }
    if max_connections == 0 {
        bail!("max connections is 0: allow at least 1 connection")
    }
    Ok(())
}

/// The flags of a run on a schedule: was the rate held, and did the generator send on time.
pub(crate) fn flags(o: &OpenStats, duration_s: f64) -> Vec<Flag> {
    let mut flags = Vec::new();
    let intended_rate = if duration_s > 0.0 { o.intended as f64 / duration_s } else { 0.0 };
    if o.unsent > 0 || o.achieved_rate < RATE_HELD_SHARE * intended_rate {
        flags.push(Flag::new(
            FlagCode::RateNotHeld,
            format!(
                "The open model sent {:.0} req/s of the intended {:.0} req/s and left {} of {} due requests unsent.",
                o.achieved_rate, intended_rate, o.unsent, o.intended
            ),
        ));
    }
    if o.lag_p99_ms > SCHEDULE_LAG_P99_MS {
        // Sends that waited for a busy connection are late because of the service; say
        // how many, so users can tell that from a generator that woke up late.
        let busy = if o.sent_late > 0 {
            format!(" {} of the sends waited for a busy connection (the service's backpressure).", o.sent_late)
        } else {
            String::new()
        };
        flags.push(Flag::new(
            FlagCode::ScheduleLag,
            format!(
                "The generator sent requests late (lag p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms; p99 above {SCHEDULE_LAG_P99_MS} ms): its lateness is counted in the latencies.{busy}",
                o.lag_p50_ms, o.lag_p99_ms, o.lag_max_ms
            ),
        ));
    }
    flags
}

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
    fn the_whole_rate_goes_to_every_agent_and_the_start_rate_is_the_load() {
        let m = Open { rate: RateRamp { start: 100.0, end: 300.0, steps: None }, max_connections: 10 };
        assert_eq!((m.load(), m.load_text(), m.label()), (100.0, "100/s".to_string(), "r=100→300/s".to_string()));
        let a = m.agent_args(3, 0, 2, Pacing::Spin);
        assert_eq!(a, ["--rate", "100:300", "--pacing", "spin", "--max-connections", "4"]);
        assert_eq!(m.agent_args(3, 2, 4, Pacing::Timer)[5], "4", "never fewer connections than threads");
        assert_eq!(m.agent_threads(4, 3), 4);
        assert_eq!(Model::from_stored(m.name(), m.stored()), Some(Model::Open(Open { max_connections: 0, ..m })));
    }

    #[test]
    fn steps_read_rates_ranges_and_ramps() {
        let step = |text: &str| Model::from_step(&toml::from_str(text).unwrap(), 7);
        let rates: Vec<String> = step("rate = [100, 200.5]").unwrap().iter().map(|m| m.label()).collect();
        assert_eq!(rates, ["r=100/s", "r=200.5/s"]);
        assert_eq!(step("rate_range = [50, 150, 50]").unwrap().len(), 3);
        assert_eq!(step("rate = \"10:20\"\nmax_connections = 3").unwrap()[0].label(), "r=10→20/s");
        assert_eq!(step("rate = 1").unwrap()[0].pool(), 7);
        let err = |text: &str| step(text).unwrap_err().to_string();
        assert!(err("rate = 0").contains("above 0"));
        assert!(err("rate_range = [5, 1, 1]").contains("to >= from"));
        assert!(err("rate = 1\nmax_connections = 0").contains("max_connections = 0"));
        assert!(err("rate = 1\nrate_range = [1, 2, 1]").contains("exactly one of"));
        assert!(err("connections = 1\npacing = 'spin'").contains("pacing is for open-model steps"));
        assert!(err("rate = 1\nrepat = 2").contains("unknown key `repat`"));
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

//! One worker thread: an event loop owning a share of the connections.
//!
//! I/O stack: mio (epoll, edge-triggered) driven by hand, one loop per thread, every connection
//! a small state machine. Chosen on measurement against the obvious alternative, a tokio
//! current-thread runtime per thread with a task per connection (`write_all` / `read`, same
//! parser, same histogram), both against nginx (1 worker, CPU 1), generator on CPU 0, 1 thread,
//! 3 alternating 5 s runs each, CPU time per request from the child's rusage:
//!   connections   this loop        tokio probe      wrk 4.1 (reference)
//!   64            4.01-4.06 µs     4.03-4.15 µs     4.66-4.84 µs     (quiet machine)
//!   256           3.80-3.94 µs     3.94-4.09 µs     4.66-4.88 µs     (quiet machine)
//!   256           3.9-4.1 µs       4.75-5.05 µs     5.28-5.57 µs     (other jobs running)
//! Requests/s were the same within noise (~185-245k). The loop costs 2-4 % less CPU per
//! request on a quiet machine and holds up better under contention, although it does more
//! per request than the probe did (per-second series, status counts, timeouts); and it gives
//! the open model direct control of wake-ups and of which connection sends, without a
//! runtime's scheduler in between. The probe was not kept.

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Registry, Token};

use super::connection::{Connection, Failure, Outcome, Ready, State};
use super::driver::Driver;
use super::pacing::Pacing;
use super::recorder::Recorder;
use crate::request::template::RequestFactory;

/// How often timeouts are checked, reconnects retried and live counters published.
pub(crate) const TICK: Duration = Duration::from_millis(10);
/// Size of the worker's read buffer (also the largest response head accepted).
const READ_BUFFER: usize = 64 * 1024;
/// Event token of the open model's wake-up timer (connections use their slot index).
const TIMER: Token = Token(usize::MAX);
/// A wake-up closer than this is not slept for: the loop polls without blocking instead,
/// since arming a timer and waking from epoll costs about as much and is less punctual.
const SPIN_BELOW: Duration = Duration::from_micros(50);
/// A request in flight longer than this at the end of the window counts as stalled, and its
/// connection as starved if it never got an answer while a request sent this much later did.
pub(crate) const STALLED_AFTER: Duration = Duration::from_secs(1);

/// The open model's wake-up clock: a timerfd with nanosecond resolution. epoll's own timeout
/// has millisecond resolution (mio rounds it up), which would send a request due in 0.2 ms up to
/// a millisecond late, and open-model latency charges that lateness to the service.
/// Measured with bench/open-model-lag.sh (one worker, 2-vCPU VM, quiet moments): send lag p50
/// 0.5 ms -> under 0.1 ms and p99 about 3 ms -> under 0.8 ms at 1k-50k req/s. The price is a
/// wake-up per send instead of one per millisecond: at 10k req/s the worker's CPU share went
/// from about 22 % to about 55 % (about 10 % of it polling for sends under 50 µs away).
struct WakeTimer {
    fd: OwnedFd,
    /// The instant the timer is armed for, if armed and not yet fired.
    armed: Option<Instant>,
}

impl WakeTimer {
    fn new(registry: &Registry) -> io::Result<WakeTimer> {
        // SAFETY: plain syscall; the returned descriptor is owned by the OwnedFd below.
        let raw = unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        registry.register(&mut SourceFd(&fd.as_raw_fd()), TIMER, Interest::READABLE)?;
        Ok(WakeTimer { fd, armed: None })
    }

    /// Fires at `at` (relative to `now`; `now` may be slightly stale, which fires early, never
    /// late). Re-arming for the same instant is skipped: it costs a syscall per loop pass.
    fn arm(&mut self, at: Instant, now: Instant) -> io::Result<()> {
        if self.armed == Some(at) {
            return Ok(());
        }
        // A zero it_value would disarm the timer instead.
        let d = at.saturating_duration_since(now).max(Duration::from_nanos(1));
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec { tv_sec: d.as_secs() as libc::time_t, tv_nsec: d.subsec_nanos() as _ },
        };
        // SAFETY: the descriptor is a timerfd we own; `spec` outlives the call.
        if unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        self.armed = Some(at);
        Ok(())
    }

    /// The timer fired: read its expiry count so the descriptor is no longer readable.
    fn clear(&mut self) {
        let mut expirations = [0u8; 8];
        // SAFETY: reads at most 8 bytes into a buffer of 8; errors (EAGAIN) are harmless here.
        unsafe { libc::read(self.fd.as_raw_fd(), expirations.as_mut_ptr().cast(), expirations.len()) };
        self.armed = None;
    }
}

/// The connections of one worker and what they need to do I/O; the model (driver) decides
/// when to connect and send.
pub(crate) struct Core {
    poll: Poll,
    addr: SocketAddr,
    pub(crate) conns: Vec<Connection>,
    factory: RequestFactory,
    read_buf: Vec<u8>,
    pub(crate) stats: Recorder,
    connect_timeout: Duration,
    request_timeout: Duration,
    keepalive: bool,
    /// Open model: precise wake-ups for due requests.
    timer: Option<WakeTimer>,
    /// Open model with spin pacing: poll without sleeping until the next send.
    spin: bool,
    /// Closed model: a slot failing to reconnect again and again counts one error (the one
    /// request it could not send), not one per retry; the open model's failed attempts each
    /// cost a due request, so each is an error.
    one_error_per_failing_slot: bool,
    /// When the latest-sent request that got an answer was sent: a request sent well before it and
    /// still waiting was overtaken (see [`SlotEnd`]).
    latest_answered_send: Option<Instant>,
}

impl Core {
    pub(crate) fn new(
        addr: SocketAddr,
        factory: RequestFactory,
        stats: Recorder,
        connect_timeout: Duration,
        request_timeout: Duration,
        keepalive: bool,
        pacing: Option<Pacing>,
    ) -> Result<Core> {
        let poll = Poll::new().context("cannot create the event loop (epoll)")?;
        let open_model = pacing.is_some();
        let timer = if pacing == Some(Pacing::Timer) {
            Some(WakeTimer::new(poll.registry()).context("cannot create the open model's wake-up timer (timerfd)")?)
        } else {
            None
        };
        Ok(Core {
            poll,
            addr,
            conns: Vec::new(),
            factory,
            read_buf: vec![0; READ_BUFFER],
            stats,
            connect_timeout,
            request_timeout,
            keepalive,
            timer,
            spin: pacing == Some(Pacing::Spin),
            one_error_per_failing_slot: !open_model,
            latest_answered_send: None,
        })
    }

    /// Counts a failure of slot `idx`. `was_connecting`: it was a connect attempt.
    pub(crate) fn record_failure(&mut self, idx: usize, why: Failure, was_connecting: bool) {
        if was_connecting {
            self.stats.connect_attempts_failed += 1;
            let c = &mut self.conns[idx];
            let repeated = c.connect_failing;
            c.connect_failing = true;
            if repeated && self.one_error_per_failing_slot {
                return;
            }
        }
        self.stats.failure(why);
    }

    /// The figures taken at the end of the measured window (see [`WindowEnd`]).
    pub(crate) fn window_end(&self, now: Instant) -> WindowEnd {
        let mut oldest = Duration::ZERO;
        let mut stalled = 0;
        let slots = self
            .conns
            .iter()
            .map(|c| {
                let waiting = if c.is_busy() { Some(now.saturating_duration_since(c.since)) } else { None };
                if let Some(w) = waiting {
                    oldest = oldest.max(w);
                    stalled += u64::from(w > STALLED_AFTER);
                }
                SlotEnd {
                    answers: c.answers,
                    sent: c.sent,
                    tried: c.tried,
                    connected: c.connected_once,
                    pending_since: c.pending_since(),
                }
            })
            .collect();
        WindowEnd {
            slots,
            oldest_unanswered: oldest,
            stalled,
            ok: self.stats.ok,
            latest_answered_send: self.latest_answered_send,
        }
    }

    /// A new connection slot; returns its index (also its event token).
    pub(crate) fn add_slot(&mut self, now: Instant) -> usize {
        self.conns.push(Connection::new(now, self.keepalive));
        self.conns.len() - 1
    }

    /// Starts connecting slot `idx`. False if it failed at once (the failure is recorded).
    pub(crate) fn connect(&mut self, idx: usize, now: Instant) -> bool {
        // Closing the slot's previous socket is not connecting: it is timed apart.
        self.conns[idx].close();
        let t = Instant::now();
        let outcome = self.conns[idx].connect(self.addr, self.poll.registry(), Token(idx), now);
        self.stats.connecting += t.elapsed();
        match outcome {
            Outcome::Failed(why) => {
                self.record_failure(idx, why, true);
                false
            }
            _ => true,
        }
    }

    /// Sends the next request on idle connection `idx`; latency will count from `origin`.
    /// False if the write failed (recorded; the connection is closed).
    pub(crate) fn send(&mut self, idx: usize, origin: Instant, now: Instant) -> bool {
        match self.conns[idx].send(&mut self.factory, origin, now, &mut self.stats.traffic) {
            Outcome::Failed(why) => {
                self.record_failure(idx, why, false);
                false
            }
            _ => true,
        }
    }

    /// Ends the worker: closes every connection, keeps the tallies.
    pub(crate) fn into_stats(self) -> Recorder {
        self.stats
    }

    pub(crate) fn any_busy(&self) -> bool {
        self.conns.iter().any(|c| c.is_busy() || c.state == State::Connecting)
    }

    /// When the latest request still unanswered was sent.
    fn last_sent(&self) -> Option<Instant> {
        self.conns.iter().filter(|c| c.is_busy()).map(|c| c.since).max()
    }

    /// Requests sent and not yet answered.
    pub(crate) fn in_flight(&self) -> u64 {
        self.conns.iter().filter(|c| c.is_busy()).count() as u64
    }

    /// Closes connections whose connect or request took too long.
    fn expire(&mut self, driver: &mut dyn Driver, now: Instant) {
        for idx in 0..self.conns.len() {
            let c = &self.conns[idx];
            let why = match c.state {
                State::Connecting if now.duration_since(c.since) >= self.connect_timeout => Failure::ConnectTimeout,
                State::Sending | State::Awaiting if now.duration_since(c.since) >= self.request_timeout => {
                    Failure::RequestTimeout
                }
                _ => continue,
            };
            let was_connecting = c.state == State::Connecting;
            self.conns[idx].close();
            self.record_failure(idx, why, was_connecting);
            driver.on_closed(self, idx, now, Some(why), was_connecting);
        }
    }
}

/// Everything a worker needs besides its core and driver.
pub(crate) struct Clock {
    pub(crate) deadline: Instant,
    pub(crate) stop: Option<Arc<AtomicBool>>,
    /// After the deadline, how long to wait for answers to requests already sent (open model:
    /// the request timeout, so every request ends as a success or an error; zero: stop at once).
    pub(crate) drain: Duration,
}

/// One slot at the end of the measured window.
pub(crate) struct SlotEnd {
    pub(crate) answers: u64,
    pub(crate) sent: u64,
    pub(crate) tried: bool,
    pub(crate) connected: bool,
    /// When its connect or request in flight started (None: nothing in flight).
    pub(crate) pending_since: Option<Instant>,
}

/// What a worker saw at the end of the measured window (before the open model's drain).
pub(crate) struct WindowEnd {
    pub(crate) slots: Vec<SlotEnd>,
    pub(crate) oldest_unanswered: Duration,
    /// Requests in flight for longer than [`STALLED_AFTER`].
    pub(crate) stalled: u64,
    /// Successes so far.
    pub(crate) ok: u64,
    /// When the latest-sent request that got an answer so far was sent.
    pub(crate) latest_answered_send: Option<Instant>,
}

/// How a worker's loop ended.
pub(crate) struct LoopEnd {
    /// End of the measured window: the deadline, the stop, or the driver's end.
    pub(crate) at: Instant,
    /// When the loop returned (after the drain; answers until then are counted).
    pub(crate) last: Instant,
    /// Requests still unanswered then.
    pub(crate) in_flight: u64,
    pub(crate) window: WindowEnd,
}

/// When a drain ends: once the latest request sent (late ones after the deadline too) has had its
/// whole timeout, and a tick more for the expiry to see it, so that each ends as a success or an error.
fn drain_end(clock: &Clock, last_sent: Option<Instant>) -> Instant {
    if clock.drain.is_zero() {
        return clock.deadline;
    }
    last_sent.map_or(clock.deadline, |s| s.max(clock.deadline)) + clock.drain + TICK
}

/// Runs the loop until the deadline (then drains, see [`Clock::drain`]), a stop, or the
/// driver's end.
pub(crate) fn run_loop(core: &mut Core, driver: &mut dyn Driver, clock: &Clock) -> Result<LoopEnd> {
    let mut events = Events::with_capacity(1024);
    let mut now = Instant::now();
    driver.start(core, now);
    let mut next_tick = now + TICK;
    let mut window: Option<WindowEnd> = None;
    let mut drain_until: Option<Instant> = None;
    loop {
        let stopped = clock.stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed));
        // Past the deadline the loop only collects answers, until the drain ends.
        let draining = now >= clock.deadline;
        if draining && drain_until.is_none() {
            // Requests due before the deadline that the loop reached only after it (a late
            // wake-up on a busy machine) still go out: they belong to the window's schedule,
            // and leaving them unsent would report a rate the generator did not mean.
            driver.dispatch(core, now);
            driver.stop_sending();
            drain_until = Some(drain_end(clock, core.last_sent()));
        }
        let until = drain_until.unwrap_or(clock.deadline);
        if draining {
            // The window's figures are taken once, as the drain begins.
            let snapshot = window.take().unwrap_or_else(|| core.window_end(now));
            if stopped || now >= until || !core.any_busy() {
                return Ok(LoopEnd { at: clock.deadline, last: now, in_flight: core.in_flight(), window: snapshot });
            }
            window = Some(snapshot);
        } else if stopped || driver.finished(core) {
            let window = core.window_end(now);
            return Ok(LoopEnd { at: now, last: now, in_flight: core.in_flight(), window });
        }
        core.stats.close_seconds(now);
        if now >= next_tick {
            core.expire(driver, now);
            core.stats.publish();
            driver.on_tick(core, now);
            next_tick = now + TICK;
        }
        driver.dispatch(core, now);

        let wake = until.min(next_tick).min(core.stats.next_second_at());
        let mut timeout = Some(wake.saturating_duration_since(now));
        let mut spin_from = None;
        if let Some(at) = driver.next_wakeup(now).filter(|&at| at < wake) {
            // Too close to sleep for (or never sleeping): look at the sockets and come
            // straight back.
            let close = core.timer.is_some() && at.saturating_duration_since(now) < SPIN_BELOW;
            if core.spin || close {
                timeout = Some(Duration::ZERO);
                spin_from = Some(Instant::now());
            } else if let Some(timer) = &mut core.timer {
                // The timer fires before anything else is due, so epoll needs no timeout (and
                // no second kernel timer): one timer per sleep costs less CPU.
                timer.arm(at, now).context("cannot arm the open model's wake-up timer")?;
                timeout = None;
            } else {
                timeout = Some(at.saturating_duration_since(now));
            }
        }
        if let Err(e) = core.poll.poll(&mut events, timeout) {
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(e).context("event loop poll failed");
            }
        }
        if let Some(from) = spin_from.filter(|_| events.is_empty()) {
            // Waiting by polling, not work: kept apart so that precise pacing is not taken for
            // a saturated generator.
            core.stats.spin += from.elapsed();
        }
        for event in events.iter() {
            if event.token() == TIMER {
                if let Some(timer) = &mut core.timer {
                    timer.clear();
                }
                continue;
            }
            let idx = event.token().0;
            let Some(conn) = core.conns.get_mut(idx) else {
                continue;
            };
            let was_connecting = conn.state == State::Connecting;
            let peer_closed = event.is_read_closed() || event.is_error();
            let ready = Ready {
                readable: event.is_readable() || peer_closed,
                writable: event.is_writable() || event.is_write_closed() || event.is_error(),
                peer_closed,
            };
            let outcome = conn.on_event(ready, &mut core.read_buf, &mut core.stats.traffic);
            match outcome {
                Outcome::Nothing => {}
                Outcome::Connected => {
                    core.stats.connections_opened += 1;
                    let c = &mut core.conns[idx];
                    c.connected_once = true;
                    c.connect_failing = false;
                    driver.on_idle(core, idx, Instant::now(), true);
                }
                Outcome::Response { status, reusable } => {
                    let t = Instant::now();
                    let origin = core.conns[idx].origin;
                    core.conns[idx].answers += 1;
                    core.latest_answered_send = core.latest_answered_send.max(Some(core.conns[idx].since));
                    core.stats.response(status, origin, t);
                    if reusable {
                        driver.on_idle(core, idx, t, false);
                    } else {
                        driver.on_closed(core, idx, t, None, false);
                    }
                }
                Outcome::Failed(why) => {
                    core.record_failure(idx, why, was_connecting);
                    driver.on_closed(core, idx, Instant::now(), Some(why), was_connecting);
                }
                Outcome::ClosedIdle => driver.on_closed(core, idx, Instant::now(), None, false),
            }
        }
        now = Instant::now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drain_lasts_the_whole_timeout_of_the_latest_request_sent() {
        let deadline = Instant::now();
        let clock = Clock { deadline, stop: None, drain: Duration::from_secs(2) };
        let ms = Duration::from_millis;
        // Nothing in flight, or sent before the deadline: the timeout from the deadline, and a tick.
        assert_eq!(drain_end(&clock, None), deadline + ms(2010));
        assert_eq!(drain_end(&clock, Some(deadline - ms(300))), deadline + ms(2010));
        // Sent 300 ms late, after the deadline: its own timeout counts.
        assert_eq!(drain_end(&clock, Some(deadline + ms(300))), deadline + ms(2310));
        // The closed model does not drain.
        let closed = Clock { drain: Duration::ZERO, ..clock };
        assert_eq!(drain_end(&closed, Some(deadline + ms(300))), deadline);
    }
}

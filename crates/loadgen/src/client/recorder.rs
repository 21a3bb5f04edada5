//! A worker's running tallies: plain fields owned by one thread, shared only at second
//! boundaries (timeline) and ticks (live counters).

use std::sync::Arc;
use std::time::Instant;

use hdrhistogram::Histogram;

use super::connection::{Failure, Traffic};
use crate::histogram::{new_latency_histogram, new_second_histogram, record_us};
use crate::report::ErrorCounts;
use crate::request::StatusSet;
use crate::timeline::{LiveStats, Timeline};

pub(crate) struct Recorder {
    success: StatusSet,
    pub(crate) hist: Histogram<u64>,
    pub(crate) ok: u64,
    pub(crate) errors: ErrorCounts,
    /// Responses by status code (index = status, 0..1000).
    pub(crate) statuses: Vec<u64>,
    pub(crate) traffic: Traffic,
    pub(crate) connections_opened: u64,
    pub(crate) connect_attempts_failed: u64,
    /// Time spent polling without sleeping for a send due within microseconds (open model).
    pub(crate) spin: std::time::Duration,
    /// Time inside connect() itself (the socket made, its local port chosen, the SYN sent).
    pub(crate) connecting: std::time::Duration,
    // The second in progress.
    start: Instant,
    second: u64,
    second_ok: u64,
    second_errors: u64,
    second_hist: Histogram<u64>,
    timeline: Arc<Timeline>,
    // Not yet published to the live counters.
    live: Option<Arc<LiveStats>>,
    live_ok: u64,
    live_errors: u64,
}

impl Recorder {
    pub(crate) fn new(
        success: StatusSet,
        start: Instant,
        timeline: Arc<Timeline>,
        live: Option<Arc<LiveStats>>,
    ) -> Recorder {
        Recorder {
            success,
            hist: new_latency_histogram(),
            ok: 0,
            errors: ErrorCounts::default(),
            statuses: vec![0; 1000],
            traffic: Traffic::default(),
            connections_opened: 0,
            connect_attempts_failed: 0,
            spin: std::time::Duration::ZERO,
            connecting: std::time::Duration::ZERO,
            start,
            second: 0,
            second_ok: 0,
            second_errors: 0,
            second_hist: new_second_histogram(),
            timeline,
            live,
            live_ok: 0,
            live_errors: 0,
        }
    }

    /// A complete response; its latency counts only when it is a success.
    #[inline]
    pub(crate) fn response(&mut self, status: u16, origin: Instant, now: Instant) {
        if let Some(n) = self.statuses.get_mut(status as usize) {
            *n += 1;
        }
        if self.success.contains(status) {
            let us = now.saturating_duration_since(origin).as_micros() as u64;
            record_us(&mut self.hist, us);
            record_us(&mut self.second_hist, us);
            self.ok += 1;
            self.second_ok += 1;
            self.live_ok += 1;
        } else {
            self.errors.status += 1;
            self.count_error();
        }
    }

    pub(crate) fn failure(&mut self, why: Failure) {
        let e = &mut self.errors;
        match why {
            Failure::ConnectRefused => e.connect_refused += 1,
            Failure::ConnectTimeout => e.connect_timeout += 1,
            Failure::ClientResource => e.client_resource += 1,
            Failure::Reset => e.reset += 1,
            Failure::ClosedEarly => e.closed_early += 1,
            Failure::RequestTimeout => e.request_timeout += 1,
            Failure::Malformed => e.malformed += 1,
        }
        self.count_error();
    }

    fn count_error(&mut self) {
        self.second_errors += 1;
        self.live_errors += 1;
    }

    /// Start of the next second, as an instant.
    pub(crate) fn next_second_at(&self) -> Instant {
        self.start + std::time::Duration::from_secs(self.second + 1)
    }

    /// Hands every second that ended before `now` to the timeline.
    pub(crate) fn close_seconds(&mut self, now: Instant) {
        while now >= self.next_second_at() {
            self.submit_second();
            self.second += 1;
        }
    }

    fn submit_second(&mut self) {
        self.timeline.submit(self.second, self.second_ok, self.second_errors, &self.second_hist);
        self.second_ok = 0;
        self.second_errors = 0;
        self.second_hist.reset();
    }

    /// Publishes counts to the live view.
    pub(crate) fn publish(&mut self) {
        if let Some(live) = &self.live {
            live.add(self.live_ok, self.live_errors);
        }
        self.live_ok = 0;
        self.live_errors = 0;
    }

    /// End of the run at `end`: the seconds up to it go to the timeline, the last one partial.
    pub(crate) fn finish(&mut self, end: Instant) {
        self.close_seconds(end);
        if self.start + std::time::Duration::from_secs(self.second) < end {
            self.submit_second();
        }
        self.publish();
    }
}

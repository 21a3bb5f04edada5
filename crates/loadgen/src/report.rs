//! What a run measured, and how reports of generators that ran at the same time are merged.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::histogram;
pub use crate::histogram::Percentiles;

/// Failed requests, each kind counted separately.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCounts {
    /// The connection could not be made: refused (no listener) or otherwise failed at once.
    pub connect_refused: u64,
    /// The connection was not made within the connect timeout.
    pub connect_timeout: u64,
    /// The generator hit its own limits opening a connection (out of file descriptors, local
    /// ports or memory: EMFILE, ENFILE, EADDRNOTAVAIL, ENOBUFS, ENOMEM). Not the service's
    /// fault: a run with these measured the client machine.
    #[serde(default)]
    pub client_resource: u64,
    /// The connection was reset (or a read or write failed) while a request was in flight.
    #[serde(default)]
    pub reset: u64,
    /// The server closed the connection cleanly while a request was in flight, before the
    /// response was complete.
    #[serde(default)]
    pub closed_early: u64,
    /// No complete response within the request timeout after sending.
    pub request_timeout: u64,
    /// The response was not valid HTTP/1.x.
    pub malformed: u64,
    /// A complete response with a status outside the success set.
    pub status: u64,
}

impl ErrorCounts {
    pub fn total(&self) -> u64 {
        self.connect_refused
            + self.connect_timeout
            + self.client_resource
            + self.reset
            + self.closed_early
            + self.request_timeout
            + self.malformed
            + self.status
    }

    pub(crate) fn add(&mut self, o: &ErrorCounts) {
        self.connect_refused += o.connect_refused;
        self.connect_timeout += o.connect_timeout;
        self.client_resource += o.client_resource;
        self.reset += o.reset;
        self.closed_early += o.closed_early;
        self.request_timeout += o.request_timeout;
        self.malformed += o.malformed;
        self.status += o.status;
    }
}

/// One second of the run (second 0 starts when the run starts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct SecondStats {
    pub second: u64,
    pub ok: u64,
    pub errors: u64,
    /// Latency of the successful responses completed in this second (0 when there were none).
    pub p50_ms: f64,
    pub p99_ms: f64,
}

/// Open-model bookkeeping: was the intended schedule kept?
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct OpenStats {
    /// Requests due during the run.
    pub intended: u64,
    /// Requests sent after their intended time because every allowed connection was busy.
    pub sent_late: u64,
    /// Requests due during the run but never sent (still waiting for a connection at the end).
    pub unsent: u64,
    /// Largest delay between a request's intended and actual send time (= `lag_max_ms`).
    pub max_lateness_ms: f64,
    /// Schedule lag (actual send time minus intended send time) of every sent request: the
    /// median, the 99th percentile and the largest. Open-model latency counts from the intended
    /// time, so the generator's own lag is charged to the service; users judge a run with a
    /// large lag as measuring the generator.
    #[serde(default)]
    pub lag_p50_ms: f64,
    #[serde(default)]
    pub lag_p99_ms: f64,
    #[serde(default)]
    pub lag_max_ms: f64,
    /// Requests actually sent within the measured window, per second of the window.
    #[serde(default)]
    pub achieved_rate: f64,
}

/// Per-connection fairness: did every connection get answers, or did the service serve some
/// connections while others waited the whole run (a fixed pool of blocking workers pinned to
/// keep-alive connections does that, and the mean hides it)?
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ConnectionStats {
    /// Connection slots that existed during the run. A slot keeps its counts across
    /// reconnects: it is one of the model's connections, not one socket.
    pub used: u64,
    /// Slots that got no answer in the whole run while other slots did (counted only for runs of
    /// at least a second). A slot whose request is still out is starved only when a request sent
    /// a second or more after it was answered first (overtaken, not merely slow); a slot the open
    /// model never gave a request is not starved.
    pub starved: u64,
    /// Slots that never got connected.
    pub never_connected: u64,
    /// Complete responses per slot: the fewest, the median and the most.
    pub answers_min: u64,
    pub answers_median: u64,
    pub answers_max: u64,
    /// At the end of the measured window: how long the oldest request still in flight had been
    /// waiting since it was sent (0 when none was in flight).
    pub oldest_unanswered_ms: f64,
    /// Requests in flight at the end of the measured window that had been waiting longer than
    /// a second.
    pub stalled: u64,
}

/// What one worker thread of the generator cost, so users can tell a saturated or starved
/// generator from a slow service.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerUsage {
    /// CPU time (user + system) of the worker thread.
    pub cpu_s: f64,
    /// Wall time of the worker, over the same span as `cpu_s`.
    pub wall_s: f64,
    /// Time the worker was ready to run but waited for a CPU (from the kernel's schedstat; 0
    /// where the kernel does not report it).
    pub runqueue_wait_s: f64,
    /// Part of `cpu_s` spent polling without sleeping because the open model's next send was
    /// due within microseconds (sleeping would wake too late). It is waiting, not work: a
    /// generator busy with it still has room for more load.
    #[serde(default)]
    pub spin_s: f64,
    /// Part of the wall time spent inside connect() calls. The kernel picks the local port there:
    /// where closed connections' ports are not reused it searches a filling range, and the
    /// generator, not the service, sets the pace of `Connection: close` load (docs/network.md).
    #[serde(default)]
    pub connect_s: f64,
}

/// Every figure of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    /// Measured duration (shorter than asked when the request count or a stop ended the run).
    pub duration_s: f64,
    pub requests_ok: u64,
    /// Successes completed by the end of the measured window. The open model keeps collecting
    /// answers after the deadline (the drain); those count in `requests_ok` but not here.
    #[serde(default)]
    pub requests_ok_in_window: u64,
    /// Equals `errors.total()`.
    pub requests_err: u64,
    pub errors: ErrorCounts,
    /// Every complete response by status, successful or not.
    pub status_counts: BTreeMap<u16, u64>,
    /// Latency of successful responses. Closed model: from the send; open model: from the
    /// intended send time.
    pub latency: Percentiles,
    /// Base64 of the latency histogram's standard V2 + DEFLATE encoding (values in µs).
    pub latency_hdr: String,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// Connections established (a reconnect after the server closed one counts again).
    pub connections_opened: u64,
    /// Every connection attempt that failed. In the closed model a connection that keeps
    /// failing to reconnect counts one error (the request it could not send), but every attempt
    /// here.
    #[serde(default)]
    pub connect_attempts_failed: u64,
    #[serde(default)]
    pub connections: ConnectionStats,
    /// Requests sent but unanswered when the run ended: neither successes nor errors. The open
    /// model waits up to the request timeout for them after the duration, so there this is zero
    /// unless a stop cut the wait short; the closed model (like wrk) does not wait.
    #[serde(default)]
    pub in_flight_at_end: u64,
    pub timeline: Vec<SecondStats>,
    /// Present for the open model.
    pub open: Option<OpenStats>,
    /// Open model: base64 of the send-lag histogram (same encoding as `latency_hdr`, µs), so that the
    /// lag percentiles of several generators merge exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lag_hdr: Option<String>,
    pub threads: usize,
    /// CPU time (user + system) the generator's worker threads used during the run.
    pub client_cpu_s: f64,
    /// Each worker thread's usage, in worker order (merged reports: concatenated).
    #[serde(default)]
    pub workers: Vec<WorkerUsage>,
}

impl LoadReport {
    /// The latency histogram (µs values), decoded from `latency_hdr`.
    pub fn histogram(&self) -> Result<Histogram<u64>> {
        histogram::decode(&self.latency_hdr)
    }

    pub fn success_rps(&self) -> f64 {
        if self.duration_s > 0.0 {
            self.requests_ok as f64 / self.duration_s
        } else {
            0.0
        }
    }

    /// Failed share of all finished requests (0 when there were none).
    pub fn error_ratio(&self) -> f64 {
        let all = self.requests_ok + self.requests_err;
        if all == 0 {
            0.0
        } else {
            self.requests_err as f64 / all as f64
        }
    }

    /// Client CPU time per successful request, in microseconds.
    pub fn client_cpu_us_per_request(&self) -> f64 {
        if self.requests_ok == 0 {
            0.0
        } else {
            self.client_cpu_s * 1e6 / self.requests_ok as f64
        }
    }
}

/// Merges reports of generators that ran at the same time against the same target (several
/// processes or machines): counts add up, latency percentiles are recomputed from the merged
/// histograms (exact), the duration is the longest. Per-second p50/p99 cannot be merged
/// exactly from summaries: the merged timeline keeps the highest of each second's values.
/// The open model's schedule lag percentiles come from the merged lag histograms when every
/// report carries one (else the highest of the reports' values, a bound); the median answers per
/// connection keep the highest of the reports' values (a bound, not the exact figure), and
/// achieved rates add up.
pub fn merge_reports(reports: &[LoadReport]) -> Result<LoadReport> {
    let Some(first) = reports.first() else {
        bail!("no reports to merge");
    };
    let mut hist = first.histogram().context("report 1")?;
    let mut lag = first.lag_hdr.as_deref().map(histogram::decode).transpose().context("report 1: lag")?;
    let mut merged = first.clone();
    let mut timeline: BTreeMap<u64, SecondStats> = first.timeline.iter().map(|s| (s.second, *s)).collect();
    for (i, r) in reports.iter().enumerate().skip(1) {
        let h = r.histogram().with_context(|| format!("report {}", i + 1))?;
        hist.add(&h).map_err(|e| anyhow::anyhow!("report {}: histograms do not merge: {e:?}", i + 1))?;
        lag = match (lag, r.lag_hdr.as_deref()) {
            (Some(mut a), Some(b)) => {
                let b = histogram::decode(b).with_context(|| format!("report {}: lag", i + 1))?;
                a.add(&b).map_err(|e| anyhow::anyhow!("report {}: lag histograms do not merge: {e:?}", i + 1))?;
                Some(a)
            }
            _ => None,
        };
        merged.duration_s = merged.duration_s.max(r.duration_s);
        merged.requests_ok += r.requests_ok;
        merged.requests_err += r.requests_err;
        merged.errors.add(&r.errors);
        for (status, n) in &r.status_counts {
            *merged.status_counts.entry(*status).or_default() += n;
        }
        merged.bytes_in += r.bytes_in;
        merged.bytes_out += r.bytes_out;
        merged.connections_opened += r.connections_opened;
        merged.connect_attempts_failed += r.connect_attempts_failed;
        merged.requests_ok_in_window += r.requests_ok_in_window;
        merged.connections = merge_connections(&merged.connections, &r.connections);
        merged.workers.extend_from_slice(&r.workers);
        merged.in_flight_at_end += r.in_flight_at_end;
        merged.threads += r.threads;
        merged.client_cpu_s += r.client_cpu_s;
        for s in &r.timeline {
            let e = timeline.entry(s.second).or_insert(SecondStats { second: s.second, ..Default::default() });
            e.ok += s.ok;
            e.errors += s.errors;
            e.p50_ms = e.p50_ms.max(s.p50_ms);
            e.p99_ms = e.p99_ms.max(s.p99_ms);
        }
        merged.open = match (merged.open, r.open) {
            (None, None) => None,
            (a, b) => {
                let (a, b) = (a.unwrap_or_default(), b.unwrap_or_default());
                Some(OpenStats {
                    intended: a.intended + b.intended,
                    sent_late: a.sent_late + b.sent_late,
                    unsent: a.unsent + b.unsent,
                    max_lateness_ms: a.max_lateness_ms.max(b.max_lateness_ms),
                    lag_p50_ms: a.lag_p50_ms.max(b.lag_p50_ms),
                    lag_p99_ms: a.lag_p99_ms.max(b.lag_p99_ms),
                    lag_max_ms: a.lag_max_ms.max(b.lag_max_ms),
                    achieved_rate: a.achieved_rate + b.achieved_rate,
                })
            }
        };
    }
    merged.timeline = timeline.into_values().collect();
    merged.latency = histogram::percentiles(&hist);
    merged.latency_hdr = histogram::encode(&hist)?;
    merged.lag_hdr = None;
    if let (Some(lag), Some(o)) = (lag, merged.open.as_mut()) {
        o.lag_p50_ms = lag.value_at_quantile(0.5) as f64 / 1000.0;
        o.lag_p99_ms = lag.value_at_quantile(0.99) as f64 / 1000.0;
        merged.lag_hdr = Some(histogram::encode(&lag)?);
    }
    Ok(merged)
}

/// Connection fairness of two generators that ran at the same time: counts add up, the fewest
/// and most answers are the extremes, the median is the higher of the two (the exact median
/// needs every slot's count, which reports do not carry).
fn merge_connections(a: &ConnectionStats, b: &ConnectionStats) -> ConnectionStats {
    if a.used == 0 {
        return *b;
    }
    if b.used == 0 {
        return *a;
    }
    ConnectionStats {
        used: a.used + b.used,
        starved: a.starved + b.starved,
        never_connected: a.never_connected + b.never_connected,
        answers_min: a.answers_min.min(b.answers_min),
        answers_median: a.answers_median.max(b.answers_median),
        answers_max: a.answers_max.max(b.answers_max),
        oldest_unanswered_ms: a.oldest_unanswered_ms.max(b.oldest_unanswered_ms),
        stalled: a.stalled + b.stalled,
    }
}

//! What a run measured, and how reports of generators that ran at the same time are merged.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::histogram;

/// Failed requests, each kind counted separately.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCounts {
    /// The connection could not be made: refused (no listener) or otherwise failed at once.
    pub connect_refused: u64,
    /// The connection was not made within the connect timeout.
    pub connect_timeout: u64,
    /// No complete response within the request timeout after sending.
    pub request_timeout: u64,
    /// The connection was reset or closed before the response was complete.
    pub read_closed: u64,
    /// The response was not valid HTTP/1.x.
    pub malformed: u64,
    /// A complete response with a status outside the success set.
    pub status: u64,
}

impl ErrorCounts {
    pub fn total(&self) -> u64 {
        self.connect_refused
            + self.connect_timeout
            + self.request_timeout
            + self.read_closed
            + self.malformed
            + self.status
    }

    pub(crate) fn add(&mut self, o: &ErrorCounts) {
        self.connect_refused += o.connect_refused;
        self.connect_timeout += o.connect_timeout;
        self.request_timeout += o.request_timeout;
        self.read_closed += o.read_closed;
        self.malformed += o.malformed;
        self.status += o.status;
    }
}

/// Latency summary in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub mean: f64,
    pub stdev: f64,
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub p9999: f64,
    pub max: f64,
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
    /// Largest delay between a request's intended and actual send time.
    pub max_lateness_ms: f64,
}

/// Every figure of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    /// Measured duration (shorter than asked when the request count or a stop ended the run).
    pub duration_s: f64,
    pub requests_ok: u64,
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
    /// Requests sent but unanswered when the run ended: neither successes nor errors. The open
    /// model waits up to the request timeout for them after the duration, so there this is zero
    /// unless a stop cut the wait short; the closed model (like wrk) does not wait.
    #[serde(default)]
    pub in_flight_at_end: u64,
    pub timeline: Vec<SecondStats>,
    /// Present for the open model.
    pub open: Option<OpenStats>,
    pub threads: usize,
    /// CPU time (user + system) the generator's worker threads used during the run.
    pub client_cpu_s: f64,
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
pub fn merge_reports(reports: &[LoadReport]) -> Result<LoadReport> {
    let Some(first) = reports.first() else {
        bail!("no reports to merge");
    };
    let mut hist = first.histogram().context("report 1")?;
    let mut merged = first.clone();
    let mut timeline: BTreeMap<u64, SecondStats> = first.timeline.iter().map(|s| (s.second, *s)).collect();
    for (i, r) in reports.iter().enumerate().skip(1) {
        let h = r.histogram().with_context(|| format!("report {}", i + 1))?;
        hist.add(&h).map_err(|e| anyhow::anyhow!("report {}: histograms do not merge: {e:?}", i + 1))?;
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
                })
            }
        };
    }
    merged.timeline = timeline.into_values().collect();
    merged.latency = histogram::percentiles(&hist);
    merged.latency_hdr = histogram::encode(&hist)?;
    Ok(merged)
}

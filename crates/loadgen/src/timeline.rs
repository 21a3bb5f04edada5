//! The per-second time series, assembled from the workers' seconds, and the live counters a
//! caller can poll during a run. Workers touch the shared state a few times per second at most,
//! never per request.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use hdrhistogram::Histogram;

use crate::histogram::new_second_histogram;
use crate::report::SecondStats;

/// Progress of a running load, for live display or a metrics endpoint.
#[derive(Debug, Default)]
pub struct LiveStats {
    /// Successful responses so far (updated about every 20 ms).
    pub requests_ok: AtomicU64,
    /// Failed requests so far, all kinds.
    pub errors: AtomicU64,
    last_second: Mutex<Option<SecondStats>>,
}

/// A consistent-enough copy of [`LiveStats`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LiveSnapshot {
    pub requests_ok: u64,
    pub errors: u64,
    /// The last second completed by every worker.
    pub last_second: Option<SecondStats>,
}

impl LiveStats {
    pub fn snapshot(&self) -> LiveSnapshot {
        LiveSnapshot {
            requests_ok: self.requests_ok.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            last_second: *self.last_second.lock().unwrap_or_else(|e| e.into_inner()),
        }
    }

    pub(crate) fn add(&self, ok: u64, errors: u64) {
        if ok > 0 {
            self.requests_ok.fetch_add(ok, Ordering::Relaxed);
        }
        if errors > 0 {
            self.errors.fetch_add(errors, Ordering::Relaxed);
        }
    }
}

struct Pending {
    reports: usize,
    ok: u64,
    errors: u64,
    hist: Histogram<u64>,
}

/// Collects each worker's seconds; a second is final once every worker has reported it.
pub(crate) struct Timeline {
    workers: usize,
    live: Option<Arc<LiveStats>>,
    inner: Mutex<(BTreeMap<u64, Pending>, Vec<SecondStats>)>,
}

fn summarize(second: u64, p: &Pending) -> SecondStats {
    let q = |x: f64| {
        if p.hist.is_empty() {
            0.0
        } else {
            p.hist.value_at_quantile(x) as f64 / 1000.0
        }
    };
    SecondStats { second, ok: p.ok, errors: p.errors, p50_ms: q(0.5), p99_ms: q(0.99) }
}

impl Timeline {
    pub(crate) fn new(workers: usize, live: Option<Arc<LiveStats>>) -> Timeline {
        Timeline { workers, live, inner: Mutex::new((BTreeMap::new(), Vec::new())) }
    }

    /// One worker's figures for one second.
    pub(crate) fn submit(&self, second: u64, ok: u64, errors: u64, hist: &Histogram<u64>) {
        let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let (pending, done) = &mut *guard;
        let p = pending.entry(second).or_insert_with(|| Pending {
            reports: 0,
            ok: 0,
            errors: 0,
            hist: new_second_histogram(),
        });
        p.reports += 1;
        p.ok += ok;
        p.errors += errors;
        if !hist.is_empty() {
            p.hist.add(hist).expect("same histogram bounds");
        }
        if p.reports == self.workers {
            let p = pending.remove(&second).expect("present");
            let stats = summarize(second, &p);
            done.push(stats);
            if let Some(live) = &self.live {
                *live.last_second.lock().unwrap_or_else(|e| e.into_inner()) = Some(stats);
            }
        }
    }

    /// The series, including seconds not every worker reached (the run's last, partial one).
    pub(crate) fn finish(&self) -> Vec<SecondStats> {
        let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let (pending, done) = &mut *guard;
        let mut all: Vec<SecondStats> = std::mem::take(done);
        all.extend(std::mem::take(pending).iter().map(|(s, p)| summarize(*s, p)));
        all.sort_by_key(|s| s.second);
        all
    }
}

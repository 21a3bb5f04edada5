//! The metrics `compare` judges: per run and per step, their units and which way is better; the names
//! `--metric` and `--fail-on` accept.
use crate::report::data::StepRow;
use crate::report::summary::RunFigures;
use anyhow::{bail, Result};

/// A compared figure of `T`: a run's figures (`RunFigures`) or one step (`Step`).
pub struct Metric<T> {
    pub key: &'static str,
    pub title: &'static str,
    pub unit: &'static str,
    pub higher_is_better: bool,
    /// Speed metrics say faster/slower; size metrics smaller/larger.
    pub speed: bool,
    pub value: fn(&T) -> Option<f64>,
}

pub const METRICS: &[Metric<RunFigures>] = &[
    Metric {
        key: "peak_rps",
        title: "peak success req/s",
        unit: "req/s",
        higher_is_better: true,
        speed: true,
        value: |f| f.peak_rps,
    },
    Metric {
        key: "cpu_per_req",
        title: "CPU time per request (whole run)",
        unit: "µs",
        higher_is_better: false,
        speed: true,
        value: |f| f.cpu_us_per_req,
    },
    Metric {
        key: "p50_ms",
        title: "p50 latency at the peak step",
        unit: "ms",
        higher_is_better: false,
        speed: true,
        value: |f| f.p50_at_peak_ms,
    },
    Metric {
        key: "p99_ms",
        title: "p99 latency at the peak step",
        unit: "ms",
        higher_is_better: false,
        speed: true,
        value: |f| f.p99_at_peak_ms,
    },
    Metric {
        key: "startup_ms",
        title: "startup time",
        unit: "ms",
        higher_is_better: false,
        speed: true,
        value: |f| f.startup_ms,
    },
    Metric {
        key: "idle_mem",
        title: "idle memory",
        unit: "MiB",
        higher_is_better: false,
        speed: false,
        value: |f| f.idle_mem_mib,
    },
    Metric {
        key: "peak_mem",
        title: "peak memory",
        unit: "MiB",
        higher_is_better: false,
        speed: false,
        value: |f| f.peak_mem_mib,
    },
];

/// Per-step metrics: one verdict per step both sides ran.
pub const STEP_METRICS: &[Metric<StepRow>] = &[
    Metric {
        key: "step_rps",
        title: "success req/s",
        unit: "req/s",
        higher_is_better: true,
        speed: true,
        value: |s| Some(s.success_rps),
    },
    Metric {
        key: "step_p99_ms",
        title: "p99 latency",
        unit: "ms",
        higher_is_better: false,
        speed: true,
        value: |s| s.p99,
    },
];

/// Every metric key, whole-run and per step (what `--fail-on` and `--metric` accept).
pub(super) fn metric_keys() -> impl Iterator<Item = &'static str> {
    METRICS.iter().map(|m| m.key).chain(STEP_METRICS.iter().map(|m| m.key))
}

pub(super) fn check_metric(option: &str, given: &str, metric: &str) -> Result<()> {
    if metric != "all" && !metric_keys().any(|k| k == metric) {
        let keys: Vec<&str> = metric_keys().collect();
        bail!("{option} {given:?}: unknown metric {metric:?}; metrics are {} (or all)", keys.join(", "));
    }
    Ok(())
}

/// `--metric` terms: the metrics to compare (every one when empty). Fewer lines make a smaller family to
/// correct for, so each line needs less evidence: a CI gate on peak_rps alone decides with fewer runs.
pub fn parse_metrics(terms: &[String]) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for t in terms.iter().flat_map(|t| t.split(',')).map(str::trim).filter(|t| !t.is_empty()) {
        check_metric("--metric", t, t)?;
        if t == "all" {
            return Ok(Vec::new());
        }
        out.push(t.to_string());
    }
    Ok(out)
}

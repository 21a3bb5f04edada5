//! The figures of the summary table: per run, then per group as median and min–max over its runs.
//! Compare uses the same per-run figures, so the report and the verdicts can never disagree.
use super::data::{Dataset, Run, StepRow};
use super::stats::Spread;
use loadgen::LoadModel;
use serde::Serialize;

/// One run's figures. None where the run did not get that far (e.g. no step finished).
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunFigures {
    /// Highest success req/s of any step.
    pub peak_rps: Option<f64>,
    /// Connections (closed model) or offered req/s (open model) of that step.
    pub peak_at: Option<f64>,
    /// The highest knee of its steps read second by second (a ramp): the offered req/s up to which the
    /// objectives held (report/seconds.rs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub knee_rps: Option<f64>,
    /// p50 and p99 latency (ms) of that step.
    pub p50_at_peak_ms: Option<f64>,
    pub p99_at_peak_ms: Option<f64>,
    /// total_cpu_s / total_requests_ok in µs: startup, checks and idle time included (seed 000).
    pub cpu_us_per_req: Option<f64>,
    /// USD per 10⁹ requests at the given price per vCPU-hour.
    pub cost_per_billion: Option<f64>,
    pub startup_ms: Option<f64>,
    pub idle_mem_mib: Option<f64>,
    /// Highest step memory peak (cgroup memory, page cache included).
    pub peak_mem_mib: Option<f64>,
}

/// The run's figures from the steps that may be quoted (valid ones, unless `include_invalid`): a step where
/// the store or the generator was saturated, or connections starved, never makes the peak.
pub fn run_figures(run: &Run, vcpu_hour_price: f64, include_invalid: bool) -> RunFigures {
    let peak: Option<&StepRow> = run
        .steps
        .iter()
        .filter(|s| s.success_rps.is_finite() && (include_invalid || s.validity().valid()))
        .max_by(|a, b| a.success_rps.total_cmp(&b.success_rps));
    // A run the service ended has no whole-run figure: its CPU covers a step that broke it.
    let cpu_s_per_req = (include_invalid || run.counts())
        .then(|| crate::figures::run_cpu_s_per_req(run.total_cpu_s, run.total_requests_ok))
        .flatten();
    RunFigures {
        peak_rps: peak.map(|s| s.success_rps),
        peak_at: peak.and_then(|s| s.load()).map(|m| m.load()),
        // A ramp is meant to pass the service's capacity: flags the service's failures raise do not
        // take its knee away.
        knee_rps: run
            .steps
            .iter()
            .filter(|s| include_invalid || s.validity().service_failures_only())
            .filter_map(super::seconds::knee)
            .reduce(f64::max),
        p50_at_peak_ms: peak.and_then(|s| s.p50),
        p99_at_peak_ms: peak.and_then(|s| s.p99),
        cpu_us_per_req: cpu_s_per_req.map(|c| c * 1e6),
        cost_per_billion: cpu_s_per_req.map(|c| cost_per_billion(c, vcpu_hour_price)),
        startup_ms: run.startup_ms,
        idle_mem_mib: run.idle_mem_mib,
        peak_mem_mib: run.steps.iter().filter_map(|s| s.mem_peak_mib).reduce(f64::max),
    }
}

use crate::figures::cost_per_billion;

/// Why steps or runs were left out of a group's figures: "3 steps: dependency saturated (3)".
pub fn left_out(d: &Dataset, g: usize) -> (Vec<String>, Vec<String>) {
    let mut runs = Vec::new();
    let mut steps: std::collections::BTreeMap<String, usize> = Default::default();
    for r in d.group_runs(g) {
        if !d.include_invalid && !r.enters_figures() {
            runs.push(format!("{} ({})", r.label, r.validity().summary()));
            continue;
        }
        for s in &r.steps {
            let v = s.validity();
            if !d.include_invalid && !v.valid() {
                *steps.entry(v.summary()).or_default() += 1;
            }
        }
    }
    (runs, steps.into_iter().map(|(why, n)| format!("{n} × {why}")).collect())
}

#[derive(Debug, Clone, Serialize)]
pub struct GroupSummary {
    pub name: String,
    /// Runs that enter the figures (completed or ended by the service, limits as asked; all with
    /// --include-invalid).
    pub runs: usize,
    /// Of those, the runs the service ended (OOM-killed, crashed, stuck at its memory cap): their valid steps
    /// before the end count, their whole-run figures do not.
    pub ended_by_the_service: usize,
    /// Runs left out, with why.
    pub runs_left_out: Vec<String>,
    /// Steps left out of the peaks, by reason ("3 × dependency saturated").
    pub steps_left_out: Vec<String>,
    pub peak_rps: Option<Spread>,
    pub peak_at: Option<Spread>,
    /// Median knee over the runs with one (steps read second by second).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub knee_rps: Option<Spread>,
    /// Whether peak_at is in offered req/s (open model) rather than connections.
    pub peak_at_rate: bool,
    pub cpu_us_per_req: Option<Spread>,
    pub cost_per_billion: Option<Spread>,
    pub startup_ms: Option<Spread>,
    pub idle_mem_mib: Option<Spread>,
    pub peak_mem_mib: Option<Spread>,
    pub artifact_mib: Option<f64>,
    pub oom_kills: usize,
    pub graceful: usize,
    /// Runs that got as far as a stop (graceful or not); the denominator of `graceful`.
    pub stopped: usize,
}

pub fn group_summaries(d: &Dataset, vcpu_hour_price: f64) -> Vec<GroupSummary> {
    (0..d.groups.len())
        .map(|g| {
            let runs: Vec<&Run> = d.counted_runs(g).collect();
            let figs: Vec<RunFigures> =
                runs.iter().map(|r| run_figures(r, vcpu_hour_price, d.include_invalid)).collect();
            let (runs_left_out, steps_left_out) = left_out(d, g);
            let spread = |f: fn(&RunFigures) -> Option<f64>| Spread::of(figs.iter().filter_map(f));
            GroupSummary {
                name: d.groups[g].name.clone(),
                runs: runs.len(),
                ended_by_the_service: runs.iter().filter(|r| r.ended_by_the_service()).count(),
                runs_left_out,
                steps_left_out,
                peak_rps: spread(|f| f.peak_rps),
                peak_at: Spread::of_observed(figs.iter().filter_map(|f| f.peak_at)),
                knee_rps: Spread::of_observed(figs.iter().filter_map(|f| f.knee_rps)),
                peak_at_rate: runs
                    .iter()
                    .flat_map(|r| &r.steps)
                    .all(|s| s.load().is_some_and(|m| m.axis() == loadgen::LoadAxis::OfferedRate))
                    && runs.iter().any(|r| !r.steps.is_empty()),
                cpu_us_per_req: spread(|f| f.cpu_us_per_req),
                cost_per_billion: spread(|f| f.cost_per_billion),
                startup_ms: spread(|f| f.startup_ms),
                idle_mem_mib: spread(|f| f.idle_mem_mib),
                peak_mem_mib: spread(|f| f.peak_mem_mib),
                artifact_mib: d.groups[g].service.artifact_bytes.map(|b| b as f64 / (1u64 << 20) as f64),
                oom_kills: runs.iter().filter(|r| r.oom_killed).count(),
                graceful: runs.iter().filter(|r| r.stopped_gracefully == Some(true)).count(),
                stopped: runs.iter().filter(|r| r.stopped_gracefully.is_some()).count(),
            }
        })
        .collect()
}

//! The typed records the store writes and reads. A step is one struct, `StepRow`, for both directions: its
//! field names are the step table's column names, so a new step figure is a field here, a line in
//! upgrade.rs, and nothing else in the store.
use crate::figures::Validity;
use serde::{Deserialize, Serialize};

/// One load level of a run, as stored.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StepRow {
    pub seq: i64,
    pub label: String,
    /// closed or open
    pub model: String,
    pub connections: Option<i64>,
    pub rate: Option<f64>,
    pub rate_end: Option<f64>,
    pub mix: String,
    pub upstream_delay_ms: Option<i64>,
    /// The measured window (an open model's drain not included).
    pub duration_s: f64,
    /// Successes, answers during an open model's drain included (latency and success ratio count them).
    pub requests_ok: i64,
    /// Successes completed inside the window: what success req/s counts.
    pub requests_ok_in_window: Option<i64>,
    /// Failed requests, each request once.
    pub requests_err: i64,
    /// Older summaries, still written for stores made before the kinds were kept apart.
    pub err_connect: i64,
    pub err_timeout: i64,
    pub err_read: i64,
    pub err_status: i64,
    pub err_malformed: i64,
    pub err_connect_refused: Option<i64>,
    pub err_connect_timeout: Option<i64>,
    pub err_client_resource: Option<i64>,
    pub err_reset: Option<i64>,
    pub err_closed_early: Option<i64>,
    pub connect_attempts_failed: Option<i64>,
    /// JSON object: status → count.
    pub status_counts: String,
    pub success_rps: f64,
    pub success_ratio: Option<f64>,
    pub error_ratio: f64,
    pub p50: Option<f64>,
    pub p75: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    pub p999: Option<f64>,
    pub p9999: Option<f64>,
    pub max_ms: Option<f64>,
    pub mean_ms: Option<f64>,
    pub latency_hdr: String,
    pub open_intended: Option<i64>,
    pub open_late: Option<i64>,
    pub open_unsent: Option<i64>,
    pub open_max_lateness_ms: Option<f64>,
    pub open_lag_p50_ms: Option<f64>,
    pub open_lag_p99_ms: Option<f64>,
    pub open_lag_max_ms: Option<f64>,
    pub open_achieved_rate: Option<f64>,
    pub conn_used: Option<i64>,
    pub conn_starved: Option<i64>,
    pub conn_never_connected: Option<i64>,
    pub answers_min: Option<i64>,
    pub answers_median: Option<i64>,
    pub answers_max: Option<i64>,
    pub oldest_unanswered_ms: Option<f64>,
    pub stalled: Option<i64>,
    pub in_flight_at_end: Option<i64>,
    pub cpu_s: Option<f64>,
    pub cpu_ms_per_req: Option<f64>,
    pub mem_peak_mib: Option<f64>,
    pub mem_mib_s_per_req: Option<f64>,
    pub rss_peak_mib: Option<f64>,
    pub threads_max: Option<i64>,
    /// Open files of the service's process nearest its open-file limit, at the step's reading nearest
    /// it, and that limit (its soft RLIMIT_NOFILE); None where they were not read.
    pub open_files_peak: Option<i64>,
    pub open_files_limit: Option<i64>,
    /// Connection attempts the kernel dropped during the step at the service's full accept queue (their
    /// clients sent their SYN again after 1 s, 3 s…), and at its dependencies'; None where not read.
    pub listen_drops: Option<i64>,
    pub dep_listen_drops: Option<i64>,
    pub throttled_s: Option<f64>,
    pub client_cpu_s: Option<f64>,
    pub client_cpus: Option<i64>,
    /// Older rule's mark, kept for older stores; validity flags say more.
    pub client_saturated: bool,
    /// JSON: per worker {cpu_s, runqueue_wait_s, wall_s}.
    pub client_workers: Option<String>,
    pub dep_cpu_s: Option<f64>,
    pub dep_wait_s: Option<f64>,
    pub dep_saturated: bool,
    pub probe_ms: Option<f64>,
    pub oom_killed: bool,
    pub crashed: bool,
    pub samples: i64,
    /// JSON: per-second successes, errors, p50, p99.
    pub timeline: String,
    pub dependency_calls: Option<i64>,
    pub valid: Option<bool>,
    /// JSON: [{code, detail}].
    pub flags: Option<String>,
    /// RSS at the step's last sampler reading (read only: seed 002's "RSS after replay").
    #[serde(default, skip_serializing)]
    pub rss_end_mib: Option<f64>,
}

impl StepRow {
    /// The step's flags; for a step stored before validity was, the saturation marks it had.
    pub fn validity(&self) -> Validity {
        match &self.flags {
            Some(j) => Validity::from_json(j),
            None => Validity {
                flags: crate::figures::validity::legacy_step_flags(
                    self.client_saturated,
                    self.dep_saturated,
                    self.oom_killed,
                    self.crashed,
                ),
            },
        }
    }

    /// Share of the requests that succeeded (figures::success_ratio); recomputed for older rows.
    pub fn success_ratio(&self) -> f64 {
        self.success_ratio.unwrap_or_else(|| {
            crate::figures::success_ratio(&crate::figures::Outcomes {
                ok: self.requests_ok.max(0) as u64,
                errors: self.requests_err.max(0) as u64,
                stalled: self.stalled.unwrap_or(0).max(0) as u64,
                intended: self.open_intended.map(|n| n.max(0) as u64),
            })
        })
    }

    /// The load model the step ran, with its numbers (loadgen's models read them back); None for a model
    /// this build does not know.
    pub fn load(&self) -> Option<loadgen::Model> {
        loadgen::Model::from_stored(
            &self.model,
            loadgen::StoredLoad {
                connections: self.connections.map(|c| c.max(0) as usize),
                rate: self.rate,
                rate_end: self.rate_end,
                ..Default::default()
            },
        )
    }

    /// Failed requests by kind, the kinds kept apart where the store has them.
    pub fn errors_by_kind(&self) -> Vec<(&'static str, i64)> {
        let split = self.err_connect_refused.is_some();
        let v = |x: Option<i64>| x.unwrap_or(0);
        let mut out = if split {
            vec![
                ("connect refused", v(self.err_connect_refused)),
                ("connect timeout", v(self.err_connect_timeout)),
                ("client resources", v(self.err_client_resource)),
                ("reset", v(self.err_reset)),
                ("closed early", v(self.err_closed_early)),
            ]
        } else {
            vec![("connect", self.err_connect), ("read/closed", self.err_read)]
        };
        out.extend([
            ("request timeout", self.err_timeout),
            ("malformed", self.err_malformed),
            ("status", self.err_status),
        ]);
        out
    }
}

/// A session as `svcbench run` starts it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SessionRecord {
    pub label: Option<String>,
    pub command: String,
    pub scenario: String,
    pub profile: String,
    pub runs_per_service: u32,
    pub host: crate::host::HostFacts,
    pub cgroup_version: String,
    pub limit_cpus: Option<f64>,
    pub limit_memory_mib: Option<f64>,
    pub service_cpuset: Option<String>,
    pub loadgen_cpuset: Option<String>,
    pub probe_tolerance: f64,
    /// The study the session ran for (`svcbench study`).
    pub study: Option<String>,
}

/// A run's figures once the service answered.
#[derive(Debug, Clone, Default)]
pub struct RunStartup {
    /// From the start command to the first answer (what a rollout waits).
    pub startup_ms: f64,
    /// From the engine's "started" to the first answer (a container; the seeds' definition).
    pub startup_engine_ms: Option<f64>,
    pub idle_mem_mib: f64,
    pub idle_rss_mib: f64,
    pub idle_threads: u64,
}

/// The limits the run's cgroup actually held, read back after the service started.
#[derive(Debug, Clone, Default)]
pub struct RunLimits {
    pub cgroup_version: String,
    pub cpus: Option<f64>,
    pub memory_mib: Option<f64>,
    pub cpuset: Option<String>,
}

/// The cell of a study's limits axis a run belongs to: the limits as asked (RunLimits holds what the
/// kernel applied).
#[derive(Debug, Clone, Default)]
pub struct RunCell {
    pub key: String,
    pub cpus: Option<f64>,
    pub memory_mib: Option<f64>,
}

/// How a run ended: its totals and its stop.
#[derive(Debug, Clone, Default)]
pub struct RunEnd {
    pub total_requests_ok: u64,
    pub total_cpu_s: f64,
    /// None when the service did not get as far as a stop of its own (it died).
    pub shutdown_ms: Option<f64>,
    pub stopped_gracefully: Option<bool>,
    pub exit_code: Option<i32>,
    pub exit_signal: Option<i32>,
}

/// The service died: how, and at which stage ("startup", "checks", "step 3").
#[derive(Debug, Clone)]
pub struct RunDeath {
    pub cause: DeathCause,
    pub stage: String,
}

/// How a run's service ended under its limits: each is the service's answer there, not a lost measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DeathCause {
    /// The memory cgroup's OOM counter rose.
    OomKilled,
    /// It exited or was killed otherwise.
    Crashed,
    /// It sat at its memory cap without answering (a JVM thrashing in too small a container) and svcbench
    /// ended it.
    StuckAtMemoryCap,
}

impl DeathCause {
    /// An ended process: the cap's kill or another end.
    pub fn of_exit(oom_killed: bool) -> DeathCause {
        if oom_killed {
            DeathCause::OomKilled
        } else {
            DeathCause::Crashed
        }
    }

    /// Its column in `run`.
    pub fn column(self) -> &'static str {
        match self {
            DeathCause::OomKilled => "oom_killed",
            DeathCause::Crashed => "crashed",
            DeathCause::StuckAtMemoryCap => "stuck_at_memory_cap",
        }
    }
}

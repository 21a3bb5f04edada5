//! Is a run's figure about the service, or about the generator? Flags raised from the
//! generator's own side of the run, each with a code for machines and one English sentence with
//! the numbers for users. A report with flags measured something other than the service (or not
//! only the service); svcbench marks such steps as not valid.
//!
//! Codes:
//! - `generator_saturated`: a worker thread used more than [`SATURATED_CPU_SHARE`] of its wall
//!   time on CPU (polling while waiting for a due send excluded): the generator, not the
//!   service, may have set the pace. One saturated worker among several is enough.
//! - `generator_contended`: a worker waited for a CPU (run queue) more than
//!   [`CONTENDED_WAIT_SHARE`] of its wall time: another process took the generator's CPU, so
//!   sends and answer reads were delayed by the machine, not the service.
//! - `generator_connect_bound`: a worker spent more than [`CONNECT_BOUND_SHARE`] of its wall
//!   time inside connect(): with `Connection: close` each request opens a connection, and where
//!   the kernel does not reuse the generator's closed ports it searches a filling range for a
//!   free one; the generator's pace is then that search's, whatever its CPU share.
//! - `client_resource_errors`: connections failed on the client's own limits (file
//!   descriptors, local ports, memory).
//! - `rate_not_held`: open model; requests were left unsent, or fewer than
//!   [`RATE_HELD_SHARE`] of the intended requests per second were sent.
//! - `schedule_lag`: open model; the 99th percentile of send lag (actual minus intended send
//!   time) exceeded [`SCHEDULE_LAG_P99_MS`]: the generator's lateness is inside the latencies.
//! - `starved_connections`: some connections got no answer in the whole run while others did,
//!   requests sent a second or more after theirs were answered first (`ConnectionStats::starved`);
//!   or no request got an answer at all while some were out: the run measured nothing of the
//!   service but that it did not answer within the run (a service that hangs, or answers slower
//!   than the step lasts), and its 0 req/s is not a throughput.

pub use crate::flag::{
    Flag, FlagCode, CONNECT_BOUND_SHARE, CONTENDED_WAIT_SHARE, RATE_HELD_SHARE, SATURATED_CPU_SHARE,
    SCHEDULE_LAG_P99_MS,
};
use crate::report::{LoadReport, WorkerUsage};

fn flag(code: FlagCode, detail: String) -> Flag {
    Flag::new(code, detail)
}

impl LoadReport {
    /// Every flag this run raises, in the order of the codes above (empty: nothing found).
    pub fn flags(&self) -> Vec<Flag> {
        let mut flags = Vec::new();
        flags.extend(self.worker_flag(
            FlagCode::GeneratorSaturated,
            SATURATED_CPU_SHARE,
            |w| (w.cpu_s - w.spin_s).max(0.0),
            ["were saturated", "on CPU", "the generator may have set the pace, not the service."],
        ));
        flags.extend(self.worker_flag(
            FlagCode::GeneratorContended,
            CONTENDED_WAIT_SHARE,
            |w| w.runqueue_wait_s,
            ["waited for a CPU", "for", "another thread or process took the generator's CPU."],
        ));
        flags.extend(self.worker_flag(
            FlagCode::GeneratorConnectBound,
            CONNECT_BOUND_SHARE,
            |w| w.connect_s,
            [
                "spent their time opening connections",
                "inside connect()",
                "the kernel's search for a free local port, not the service, may have set the pace.",
            ],
        ));
        let resource = self.errors.client_resource;
        if resource > 0 {
            flags.push(flag(
                FlagCode::ClientResourceErrors,
                format!(
                    "{resource} connection attempts failed on the client's own limits (file descriptors, local ports or memory), not on the service."
                ),
            ));
        }
        if let Some(o) = &self.open {
            // The scheduled models' own flags.
            flags.extend(crate::models::open::flags(o, self.duration_s));
        }
        let c = &self.connections;
        if c.starved > 0 {
            flags.push(flag(
                FlagCode::StarvedConnections,
                format!(
                    "{} of {} connections got no answer in the whole step; oldest request waited {:.1} s.",
                    c.starved,
                    c.used,
                    c.oldest_unanswered_ms / 1000.0
                ),
            ));
        } else if self.requests_ok + self.requests_err == 0 && self.in_flight_at_end > 0 {
            flags.push(flag(
                FlagCode::StarvedConnections,
                format!(
                    "no request got an answer in the whole step; {} still waiting at its end, the oldest for {:.1} s.",
                    self.in_flight_at_end,
                    c.oldest_unanswered_ms / 1000.0
                ),
            ));
        }
        flags
    }

    /// The flag `code` when a worker spent more than `limit` of its wall time on `part`. The
    /// busiest worker names the problem; the count says whether it was one or all. `words`: what
    /// the workers did, how the busiest did it, and what that means for the figures.
    fn worker_flag(
        &self,
        code: FlagCode,
        limit: f64,
        part: impl Fn(&WorkerUsage) -> f64,
        words: [&str; 3],
    ) -> Option<Flag> {
        let [what, how, meaning] = words;
        let over: Vec<(usize, f64)> = self
            .workers
            .iter()
            .enumerate()
            .map(|(i, w)| (i, if w.wall_s > 0.0 { part(w) / w.wall_s } else { 0.0 }))
            .filter(|(_, s)| *s > limit)
            .collect();
        let &(i, s) = over.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
        Some(flag(
            code,
            format!(
                "{} of {} generator workers {what} (worker {i} {how} {:.0}% of its time, above {:.0}%): {meaning}",
                over.len(),
                self.workers.len(),
                s * 100.0,
                limit * 100.0
            ),
        ))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::report::{ConnectionStats, ErrorCounts, OpenStats, Percentiles, WorkerUsage};

    /// A healthy closed-model run: 10 s, two workers at half load, no errors.
    pub(crate) fn healthy() -> LoadReport {
        LoadReport {
            duration_s: 10.0,
            requests_ok: 100_000,
            requests_ok_in_window: 100_000,
            requests_err: 0,
            errors: ErrorCounts::default(),
            status_counts: BTreeMap::from([(200, 100_000)]),
            latency: Percentiles::default(),
            latency_hdr: String::new(),
            bytes_in: 0,
            bytes_out: 0,
            connections_opened: 8,
            connect_attempts_failed: 0,
            connections: ConnectionStats {
                used: 8,
                answers_min: 12_000,
                answers_median: 12_500,
                answers_max: 13_000,
                ..Default::default()
            },
            in_flight_at_end: 8,
            timeline: vec![],
            open: None,
            lag_hdr: None,
            threads: 2,
            client_cpu_s: 10.0,
            workers: vec![
                WorkerUsage { cpu_s: 5.0, wall_s: 10.0, runqueue_wait_s: 0.1, spin_s: 0.0, connect_s: 0.0 };
                2
            ],
        }
    }

    fn open_healthy() -> LoadReport {
        let mut r = healthy();
        r.open = Some(OpenStats {
            intended: 100_000,
            sent_late: 0,
            unsent: 0,
            max_lateness_ms: 0.4,
            lag_p50_ms: 0.01,
            lag_p99_ms: 0.1,
            lag_max_ms: 0.4,
            achieved_rate: 10_000.0,
        });
        r
    }

    fn codes(r: &LoadReport) -> Vec<FlagCode> {
        r.flags().into_iter().map(|f| f.code).collect()
    }

    #[test]
    fn healthy_runs_raise_nothing() {
        assert!(healthy().flags().is_empty(), "{:?}", healthy().flags());
        assert!(open_healthy().flags().is_empty(), "{:?}", open_healthy().flags());
    }

    #[test]
    fn one_saturated_worker_among_several_is_enough() {
        let mut r = healthy();
        r.workers[1].cpu_s = 9.5;
        let flags = r.flags();
        assert_eq!(codes(&r), [FlagCode::GeneratorSaturated]);
        assert!(flags[0].detail.contains("worker 1") && flags[0].detail.contains("95%"), "{}", flags[0].detail);
        // Polling for a due send is waiting, not work.
        r.workers[1].spin_s = 2.0;
        assert!(r.flags().is_empty());
    }

    #[test]
    fn run_queue_wait_means_contention() {
        let mut r = healthy();
        r.workers[0].runqueue_wait_s = 1.5;
        let flags = r.flags();
        assert_eq!(codes(&r), [FlagCode::GeneratorContended]);
        assert!(flags[0].detail.contains("15%"), "{}", flags[0].detail);
        r.workers[0].runqueue_wait_s = 0.9;
        assert!(r.flags().is_empty());
    }

    #[test]
    fn time_inside_connect_means_the_generator_set_the_pace() {
        // Half loaded on CPU, yet nearly half its time opening connections: the port search's pace.
        let mut r = healthy();
        r.workers[0].connect_s = 4.5;
        let flags = r.flags();
        assert_eq!(codes(&r), [FlagCode::GeneratorConnectBound]);
        assert!(flags[0].detail.contains("worker 0") && flags[0].detail.contains("45%"), "{}", flags[0].detail);
        r.workers[0].connect_s = 1.0;
        assert!(r.flags().is_empty());
    }

    #[test]
    fn one_starved_agent_invalidates_the_merged_run() {
        // Two agents (generator hosts) merged: the one that waited for its CPU flags the whole.
        let agent = || {
            let mut r = healthy();
            r.latency_hdr = crate::histogram::encode(&crate::histogram::new_latency_histogram()).unwrap();
            r
        };
        let mut starved = agent();
        starved.workers[1].runqueue_wait_s = 2.5;
        let merged = crate::report::merge_reports(&[agent(), starved]).unwrap();
        let flags = merged.flags();
        assert_eq!(codes(&merged), [FlagCode::GeneratorContended]);
        assert!(
            flags[0].detail.starts_with("1 of 4 generator workers") && flags[0].detail.contains("worker 3"),
            "{}",
            flags[0].detail
        );
        assert!(crate::report::merge_reports(&[agent(), agent()]).unwrap().flags().is_empty());
    }

    #[test]
    fn client_resource_errors_are_flagged() {
        let mut r = healthy();
        r.errors.client_resource = 3;
        r.requests_err = 3;
        let flags = r.flags();
        assert_eq!(codes(&r), [FlagCode::ClientResourceErrors]);
        assert!(flags[0].detail.starts_with("3 connection attempts"), "{}", flags[0].detail);
    }

    #[test]
    fn open_model_rate_not_held() {
        let mut r = open_healthy();
        r.open.as_mut().unwrap().achieved_rate = 9_000.0;
        assert_eq!(codes(&r), [FlagCode::RateNotHeld]);
        let mut r = open_healthy();
        r.open.as_mut().unwrap().achieved_rate = 9_600.0;
        assert!(r.flags().is_empty());
        r.open.as_mut().unwrap().unsent = 1;
        let flags = r.flags();
        assert_eq!(codes(&r), [FlagCode::RateNotHeld]);
        assert!(flags[0].detail.contains("1 of 100000"), "{}", flags[0].detail);
    }

    #[test]
    fn open_model_schedule_lag() {
        let mut r = open_healthy();
        r.open.as_mut().unwrap().lag_p99_ms = 1.5;
        let flags = r.flags();
        assert_eq!(codes(&r), [FlagCode::ScheduleLag]);
        assert!(flags[0].detail.contains("p99 1.500 ms"), "{}", flags[0].detail);
        assert!(!flags[0].detail.contains("busy connection"), "{}", flags[0].detail);
        r.open.as_mut().unwrap().sent_late = 7;
        assert!(r.flags()[0]
            .detail
            .ends_with("7 of the sends waited for a busy connection (the service's backpressure)."));
        r.open.as_mut().unwrap().lag_p99_ms = 0.9;
        assert!(r.flags().is_empty());
    }

    #[test]
    fn starved_connections_are_flagged_with_the_wait() {
        let mut r = healthy();
        r.connections.starved = 2;
        r.connections.used = 4;
        r.connections.oldest_unanswered_ms = 9_500.0;
        let flags = r.flags();
        assert_eq!(codes(&r), [FlagCode::StarvedConnections]);
        assert_eq!(flags[0].detail, "2 of 4 connections got no answer in the whole step; oldest request waited 9.5 s.");
    }

    #[test]
    fn a_step_in_which_no_request_got_an_answer_is_flagged() {
        // A service whose answers take longer than the step (a 1 s upstream delay in 1 s steps): 0 req/s
        // that is no throughput.
        let mut r = healthy();
        (r.requests_ok, r.requests_ok_in_window, r.requests_err, r.in_flight_at_end) = (0, 0, 0, 16);
        r.connections.oldest_unanswered_ms = 1_000.0;
        let flags = r.flags();
        assert_eq!(codes(&r), [FlagCode::StarvedConnections]);
        assert!(
            flags[0].detail.starts_with("no request got an answer in the whole step; 16 still waiting"),
            "{flags:?}"
        );
        // Errors are answers (the service's failures, counted as such): nothing more to flag here.
        r.requests_err = 3;
        assert!(r.flags().is_empty());
    }
}

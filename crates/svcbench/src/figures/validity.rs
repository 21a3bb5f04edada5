//! Validity: the reasons a step or a run may not be quoted. A figure is quoted (peak req/s, medians, verdicts,
//! README tables) only from valid steps of counted runs (completed, or ended by the service under its limits:
//! store::read::Run::enters_figures); every flag is stored with its step or run and shown wherever the figure
//! is. The generator's own judgements (headroom, open-model fidelity, starved connections) come from loadgen
//! (`LoadReport::flags`); this module adds what only svcbench judges: dependencies, the machine's speed,
//! open-model sustainability, the service's end, the limits and the run.
use serde::{Deserialize, Serialize};

/// One reason a figure is not clean: a stable code and a sentence with the numbers. The generator's type,
/// so its judgements are stored as they come.
pub use loadgen::Flag;

/// The codes: an enum with the reader's words (loadgen's, since the generator raises half of them).
pub use loadgen::FlagCode;

/// The flags of one step or run; valid when there are none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Validity {
    pub flags: Vec<Flag>,
}

impl Validity {
    pub fn valid(&self) -> bool {
        self.flags.is_empty()
    }

    /// "dependency saturated, starved connections" (distinct labels, in order).
    pub fn summary(&self) -> String {
        let mut labels: Vec<&str> = Vec::new();
        for f in &self.flags {
            let l = f.code.label();
            if !labels.contains(&l) {
                labels.push(l);
            }
        }
        labels.join(", ")
    }

    pub fn details(&self) -> String {
        // Each detail is a sentence of its own; joined, their full stops would read ".;".
        self.flags.iter().map(|f| f.detail.trim_end_matches('.')).collect::<Vec<_>>().join("; ")
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(&self.flags).unwrap_or_else(|_| "[]".into())
    }

    pub fn from_json(s: &str) -> Validity {
        Validity { flags: serde_json::from_str(s).unwrap_or_default() }
    }

    /// Whether every flag is the service's own failure (a death, a growing backlog, starved connections),
    /// or the open model's rate and lag beside one of them: the measurement itself held, so what the step
    /// shows of the service (e.g. seed 004's X, "stopped answering") stands, though its figures are not
    /// quoted. True for a valid step.
    pub fn service_failures_only(&self) -> bool {
        let failed = self.flags.iter().any(|f| f.code.is_service_failure());
        self.flags.iter().all(|f| f.code.is_service_failure() || (failed && f.code.is_backpressure()))
    }

    pub fn has(&self, code: FlagCode) -> bool {
        self.flags.iter().any(|f| f.code == code)
    }

    /// Whether a run with these steps (in order) told nothing of its service: no step valid, and its first
    /// left out for the measurement's own reasons only. A run whose first step failed for the service's reason
    /// is the service's answer (below that load), and counts.
    pub fn measured_nothing(steps: &[Validity]) -> bool {
        let first_spoiled =
            steps.first().is_some_and(|v| !v.valid() && v.flags.iter().all(|f| f.code.is_measurement_failure()));
        first_spoiled && steps.iter().all(|v| !v.valid())
    }
}

/// A dependency's use of its CPUs during a step.
#[derive(Debug, Clone, Copy)]
pub struct DependencyUsage {
    pub cpu_s: f64,
    /// Time its threads together spent waiting for a CPU (run queue), where it can be read.
    pub wait_s: Option<f64>,
    pub cpus: usize,
}

/// The dependencies (a store, an upstream) lacked CPU: alone above the saturation mark, together with the
/// load generator on the CPUs they share (OpenSearch at 0.86 CPU + the generator at 0.14 on one core), or
/// their threads together waited for a CPU more than half the step while the service had CPU to spare.
/// A service that used its whole CPU allowance (`service_cpu_bound`) is itself the bottleneck: the
/// store's run-queue waits then come from the bursts a throttled service sends when its quota period
/// turns over (measured: OpenSearch 45 % busy, waiting 1 s per second, behind a service at 0.25 of
/// 0.25 CPU), not from a store that limits the rate; the store's CPU share still flags the step.
pub fn dependency_flags(
    dep: &DependencyUsage,
    generator_cpu_s: f64,
    shared_cpus: usize,
    wall_s: f64,
    service_cpu_bound: bool,
) -> Vec<Flag> {
    let alone = super::cpu_share(dep.cpu_s, wall_s, dep.cpus);
    let together = super::cpu_share(dep.cpu_s + generator_cpu_s, wall_s, shared_cpus);
    let waited = dep.wait_s.map(|w| if wall_s > 0.0 { w / wall_s } else { 0.0 }).unwrap_or(0.0);
    let mut out = Vec::new();
    if alone > super::SATURATED || together > super::SATURATED || (waited > 0.5 && !service_cpu_bound) {
        out.push(Flag::new(
            FlagCode::DependencySaturated,
            format!(
                "dependencies used {:.0} % of their {} CPU(s), {:.0} % together with the load generator, and \
                 waited {:.2} s per second for a CPU: the store, not the service, may be the bottleneck",
                alone * 100.0,
                dep.cpus,
                together * 100.0,
                waited
            ),
        ));
    }
    out
}

/// The accept queue of a dependency svcbench started (the mock upstream, OpenSearch) overflowed during the
/// step: the calls whose connection attempts it dropped waited a second or more for the kernel to send
/// their SYN again, a delay of the dependency's, not the service's.
pub fn dependency_queue_flag(dropped: Option<u64>) -> Option<Flag> {
    let dropped = dropped.filter(|d| *d > 0)?;
    Some(Flag::new(
        FlagCode::DependencySaturated,
        format!(
            "a dependency's accept queue was full {dropped} time(s): calls to it waited a second or more to \
             connect, so the dependency, not the service, set part of the latencies"
        ),
    ))
}

/// The machine-speed probe (a fixed CPU-bound loop, in ms) departs from the session's median by more than
/// `tolerance` (0.10 = 10 %): the host slowed the VM (or sped it up) during this step.
pub fn probe_flag(probe_ms: f64, session_median_ms: f64, tolerance: f64) -> Option<Flag> {
    if !(probe_ms.is_finite() && session_median_ms > 0.0) {
        return None;
    }
    let drift = probe_ms / session_median_ms - 1.0;
    (drift.abs() > tolerance).then(|| {
        Flag::new(
            FlagCode::MachineSpeed,
            format!(
                "the machine-speed probe took {probe_ms:.2} ms against the session's median {session_median_ms:.2} ms \
                 ({:+.0} %, tolerance ±{:.0} %): the machine was not running at its usual speed",
                drift * 100.0,
                tolerance * 100.0
            ),
        )
    })
}

/// The machine-speed flags of a session's steps, once every step ran: (step, flag) for each probe beyond
/// `tolerance` of the session's median. A step flagged already is not flagged twice.
pub fn speed_flags(probed: &[(i64, f64, Validity)], tolerance: f64) -> Vec<(i64, Flag)> {
    let Some(median) = crate::figures::median(probed.iter().map(|p| p.1)) else { return Vec::new() };
    probed
        .iter()
        .filter(|(_, _, v)| !v.has(FlagCode::MachineSpeed))
        .filter_map(|(id, probe, _)| probe_flag(*probe, median, tolerance).map(|f| (*id, f)))
        .collect()
}

/// Completions below this share of the offered rate are "behind".
pub const SUSTAINED_SHARE: f64 = 0.95;
/// Latency in the step's last third above this multiple of its first third is "rising".
pub const RISING: f64 = 1.5;

/// Open-model sustainability: a step whose completions fall behind the offered rate while latency rises
/// through it is building a backlog; its req/s is what the service managed, not a rate it can sustain
/// (seed 004's Spring MVC at 300 req/s offered: 200 completed per second while p50 climbed from 1 to 3.4 s).
/// `p50_by_second`: the step's per-second p50 (ms), 0 where nothing completed. Needs 3 seconds.
pub fn sustain_flag(offered_rps: f64, completed_rps: f64, p50_by_second: &[f64]) -> Option<Flag> {
    let n = p50_by_second.len();
    if n < 3 || offered_rps <= 0.0 || completed_rps >= SUSTAINED_SHARE * offered_rps {
        return None;
    }
    let third = n / 3;
    let median = |xs: &[f64]| crate::figures::median(xs.iter().copied().filter(|x| *x > 0.0));
    let (first, last) = (median(&p50_by_second[..third]), median(&p50_by_second[n - third..]));
    let (Some(first), Some(last)) = (first, last) else {
        // Nothing completed in a third of the step: behind and not answering is a backlog too.
        return Some(Flag::new(
            FlagCode::NotSustained,
            format!("{completed_rps:.0} of {offered_rps:.0} req/s offered completed in the step, and a third of it saw no answer"),
        ));
    };
    (last > RISING * first).then(|| {
        Flag::new(
            FlagCode::NotSustained,
            format!(
                "{completed_rps:.0} of {offered_rps:.0} req/s offered completed in the step while p50 rose from \
                 {first:.1} to {last:.1} ms: a growing backlog, not a sustainable rate"
            ),
        )
    })
}

/// The service held as many open files as its limit allows (`(count, limit)`, its process nearest the
/// limit): from there every new socket fails with EMFILE, accepted connections wait and calls to its
/// dependencies fail, so the step's errors are that limit's, which svcbench sets (the soft limit raised
/// to its own hard one), not one the user asked. Seed 004's Node answered 502s so at 20,000.
pub fn open_file_flag(peak: Option<(u64, u64)>) -> Option<Flag> {
    let (count, limit) = peak?;
    (limit > 0 && count >= limit).then(|| {
        Flag::new(
            FlagCode::OpenFileLimit,
            format!(
                "the service held {count} open files, its limit of {limit} (RLIMIT_NOFILE): its new sockets failed, \
                 so errors from there on are the limit's, not only the framework's (docs/measuring.md)"
            ),
        )
    })
}

pub fn service_end_flags(oom_killed: bool, crashed: bool) -> Vec<Flag> {
    let mut out = Vec::new();
    if oom_killed {
        out.push(Flag::new(
            FlagCode::OomKilled,
            "the service was killed by the kernel at its memory cap during this step",
        ));
    }
    if crashed {
        out.push(Flag::new(FlagCode::Crashed, "the service exited during this step"));
    }
    out
}

/// A run's own flags: not completed, limits that were not applied as asked, a store that changed while it ran
/// (each change in one sentence: its data is no longer the scenario's, so neither are the answers).
pub fn run_flags(status: &str, limit_mismatches: &[String], store_changes: &[String]) -> Vec<Flag> {
    let mut out = Vec::new();
    if status != "completed" {
        let enters = if status == "failed" {
            "its valid steps enter medians and verdicts only if the service itself ended it under the limits asked \
             (OOM-killed, crashed, stuck at its memory cap); its whole-run figures never do"
        } else {
            "it enters no median and no verdict"
        };
        out.push(Flag::new(FlagCode::Incomplete, format!("the run is {status}: {enters}")));
    }
    for m in limit_mismatches {
        out.push(Flag::new(FlagCode::Unlimited, m.clone()));
    }
    if !store_changes.is_empty() {
        out.push(Flag::new(
            FlagCode::StoreChanged,
            format!("the store changed during the run: {}", store_changes.join("; ")),
        ));
    }
    out
}

/// Flags of a step recorded before validity was stored (older stores): the saturation marks it had.
pub fn legacy_step_flags(client_saturated: bool, dep_saturated: bool, oom_killed: bool, crashed: bool) -> Vec<Flag> {
    let mut out = Vec::new();
    if client_saturated {
        out.push(Flag::new(FlagCode::LegacyClientSaturated, "the load generator used over 90 % of its CPUs"));
    }
    if dep_saturated {
        out.push(Flag::new(FlagCode::DependencySaturated, "dependencies used over 90 % of their CPUs"));
    }
    out.extend(service_end_flags(oom_killed, crashed));
    out
}

#[cfg(test)]
mod sustain_tests {
    use super::*;

    #[test]
    fn a_backlog_is_not_sustained_and_a_kept_rate_is() {
        // Behind the offered rate with latency climbing: flagged.
        let climbing = [1000.0, 1200.0, 1800.0, 2400.0, 2900.0, 3400.0];
        let f = sustain_flag(300.0, 200.0, &climbing).expect("a growing backlog");
        assert!(f.detail.contains("200 of 300") && f.detail.contains("rose"), "{}", f.detail);
        // Behind, but latency flat (errors, not a queue): another flag's business.
        assert!(sustain_flag(300.0, 200.0, &[5.0, 5.2, 4.9, 5.1, 5.0, 5.3]).is_none());
        // Keeping up while latency rises a little: sustained.
        assert!(sustain_flag(300.0, 298.0, &climbing).is_none());
        // Too short to tell.
        assert!(sustain_flag(300.0, 100.0, &[1.0, 9.0]).is_none());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_are_joined_without_their_full_stops() {
        let v = Validity {
            flags: vec![
                loadgen::Flag::new(FlagCode::OpenFileLimit, "at its limit."),
                loadgen::Flag::new(FlagCode::DependencySaturated, "queue full 3 time(s)."),
            ],
        };
        assert_eq!(v.details(), "at its limit; queue full 3 time(s)");
    }

    #[test]
    fn a_service_at_its_open_file_limit_is_flagged_below_it_not() {
        let f = open_file_flag(Some((20_000, 20_000))).expect("at the limit");
        assert_eq!(f.code, FlagCode::OpenFileLimit);
        assert!(f.detail.contains("20000 open files, its limit of 20000"), "{}", f.detail);
        assert!(!FlagCode::OpenFileLimit.is_measurement_failure() && !FlagCode::OpenFileLimit.is_service_failure());
        assert!(!Validity { flags: vec![f] }.valid());
        assert_eq!(open_file_flag(Some((19_999, 20_000))), None);
        assert_eq!(open_file_flag(None), None);
    }

    #[test]
    fn a_dependency_whose_accept_queue_overflowed_is_flagged() {
        let f = dependency_queue_flag(Some(60)).expect("60 drops");
        assert_eq!(f.code, FlagCode::DependencySaturated);
        assert!(f.detail.contains("full 60 time(s)"), "{}", f.detail);
        assert_eq!(dependency_queue_flag(Some(0)), None);
        assert_eq!(dependency_queue_flag(None), None);
    }

    #[test]
    fn a_store_saturated_step_is_flagged_and_a_quiet_one_is_not() {
        let busy = DependencyUsage { cpu_s: 8.8, wait_s: Some(0.1), cpus: 1 };
        let flags = dependency_flags(&busy, 0.5, 1, 10.0, false);
        assert_eq!(flags.len(), 1);
        assert_eq!(flags[0].code, FlagCode::DependencySaturated);
        // Alone at 86 %, with the generator on the same CPU at 14 %: together saturated.
        let shared = DependencyUsage { cpu_s: 8.6, wait_s: None, cpus: 1 };
        assert_eq!(dependency_flags(&shared, 1.4, 1, 10.0, false).len(), 1);
        let quiet = DependencyUsage { cpu_s: 2.0, wait_s: Some(0.5), cpus: 1 };
        assert!(dependency_flags(&quiet, 1.0, 1, 10.0, false).is_empty());
        // Threads that waited for a CPU most of the step: saturated whatever the CPU share says.
        let starved = DependencyUsage { cpu_s: 2.0, wait_s: Some(6.0), cpus: 1 };
        assert_eq!(dependency_flags(&starved, 1.0, 1, 10.0, false).len(), 1);
        // ... unless the service used its whole CPU allowance: then it, not the store, set the pace.
        assert!(dependency_flags(&starved, 1.0, 1, 10.0, true).is_empty());
        // A store busy over the mark flags the step whatever the service did.
        assert_eq!(dependency_flags(&busy, 0.5, 1, 10.0, true).len(), 1);
        assert_eq!(dependency_flags(&shared, 1.4, 1, 10.0, true).len(), 1);
    }

    #[test]
    fn probe_drift_beyond_the_tolerance_is_flagged() {
        assert!(probe_flag(10.5, 10.0, 0.1).is_none());
        assert_eq!(probe_flag(11.5, 10.0, 0.1).unwrap().code, FlagCode::MachineSpeed);
        assert_eq!(probe_flag(8.5, 10.0, 0.1).unwrap().code, FlagCode::MachineSpeed);
        assert!(probe_flag(f64::NAN, 10.0, 0.1).is_none());
    }

    #[test]
    fn speed_flags_judge_each_probe_against_the_sessions_median_once() {
        let flagged = Validity { flags: vec![probe_flag(20.0, 10.0, 0.1).unwrap()] };
        let probed = [
            (1, 10.0, Validity::default()),
            (2, 10.2, Validity::default()),
            (3, 13.0, Validity::default()),
            (4, 20.0, flagged),
            (5, 9.9, Validity::default()),
        ];
        let steps: Vec<i64> = speed_flags(&probed, 0.1).iter().map(|(id, _)| *id).collect();
        // Median 10.2: step 3 drifted 27 %; step 4 drifted too but carries the flag already.
        assert_eq!(steps, [3]);
        assert!(speed_flags(&[], 0.1).is_empty());
    }

    #[test]
    fn validity_round_trips_and_summarises() {
        let v = Validity { flags: run_flags("interrupted", &["asked 0.5 CPUs, cgroup has no quota".into()], &[]) };
        assert!(!v.valid());
        assert_eq!(v.summary(), "run not completed, limits not applied as asked");
        assert_eq!(Validity::from_json(&v.to_json()), v);
        assert!(Validity::default().valid());
    }

    #[test]
    fn a_run_measured_nothing_only_when_the_measurement_spoiled_its_first_step_and_none_was_valid() {
        let of = |codes: &[FlagCode]| Validity { flags: codes.iter().map(|c| Flag::new(*c, "")).collect() };
        let late = of(&[FlagCode::ScheduleLag]);
        let failed = of(&[FlagCode::RateNotHeld, FlagCode::ScheduleLag, FlagCode::NotSustained]);
        // Seed 004's capacity: late from the first step, then the service falling behind.
        assert!(Validity::measured_nothing(&[late.clone(), of(&[FlagCode::MachineSpeed]), failed.clone()]));
        // One valid step is a figure.
        assert!(!Validity::measured_nothing(&[late.clone(), Validity::default(), failed.clone()]));
        // Failing the first step is the service's answer; so is a death, and unapplied limits are the run's.
        assert!(!Validity::measured_nothing(&[failed.clone(), late.clone()]));
        assert!(!Validity::measured_nothing(&[of(&[FlagCode::ScheduleLag, FlagCode::OomKilled])]));
        assert!(!Validity::measured_nothing(&[of(&[FlagCode::Unlimited])]));
        assert!(!Validity::measured_nothing(&[]));
    }
}

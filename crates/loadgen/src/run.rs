//! A run: workers started on their threads, their results folded into one report.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};

use crate::client::driver::OpenResult;
use crate::client::recorder::Recorder;
use crate::client::worker::{run_loop, Clock, Core, WindowEnd, STALLED_AFTER};
use crate::config::LoadConfig;
use crate::histogram::{encode, new_latency_histogram, percentiles};
use crate::limits;
use crate::models::{LoadModel, RunShare};
use crate::report::{ConnectionStats, ErrorCounts, LoadReport, OpenStats, WorkerUsage};
use crate::request::template::RequestFactory;
use crate::timeline::{LiveStats, Timeline};

/// What one worker hands back.
struct WorkerResult {
    stats: Recorder,
    open: Option<OpenResult>,
    ended: Instant,
    in_flight: u64,
    window: WindowEnd,
    usage: WorkerUsage,
}

/// Runs the load described by `config` until its duration, request count or stop flag.
/// `live`, if given, is updated during the run.
pub fn run(config: &LoadConfig, live: Option<Arc<LiveStats>>) -> Result<LoadReport> {
    config.validate()?;
    let addr = config.target.resolve()?;
    // Best effort: without it, large connection counts fail with "too many open files".
    let _ = limits::raise_nofile_limit();
    let pool = config.model.pool();
    // Never more threads than connections: a worker without connections would idle.
    let workers = config.threads.min(pool).max(1);
    // Compile once up front so template errors surface before any thread starts.
    RequestFactory::new(&config.mix, &config.target.host_header(), config.keepalive, 0, workers)?;

    let timeline = Arc::new(Timeline::new(workers, live.clone()));
    let budget = config.model.budget(config.max_requests);
    if let Some(at) = config.start_at {
        // Agents on several hosts start together; a time already past starts at once.
        let wait = at.duration_since(std::time::SystemTime::now()).unwrap_or_default();
        if wait > Duration::from_secs(60) {
            return Err(anyhow!(
                "the agreed start time is {:.0} s away: are the hosts' clocks in sync?",
                wait.as_secs_f64()
            ));
        }
        std::thread::sleep(wait);
    }
    // Among several agents, this one's workers are the global workers `index * threads + i` of
    // `count * threads`; alone, simply `i` of `workers`.
    let (agent, agents) = config.agent;
    let (first_worker, all_workers) =
        if agents > 1 { (agent * config.threads, agents * config.threads) } else { (0, workers) };
    if agents > 1 && workers < config.threads {
        return Err(anyhow!(
            "{pool} connections for {} threads: an agent needs at least one connection per thread",
            config.threads
        ));
    }
    let start = Instant::now();
    let clock = Clock {
        deadline: start + config.duration,
        stop: config.stop.clone(),
        // A scheduled model counts every due request: answers to those sent before the deadline
        // are awaited (a timeout bounds them); the closed model, like wrk, stops at once.
        drain: config.model.drain(config.request_timeout),
    };

    let results: Vec<Result<WorkerResult>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|i| {
                let (timeline, live, budget, clock) = (timeline.clone(), live.clone(), budget.clone(), &clock);
                std::thread::Builder::new()
                    .name(format!("loadgen-{i}"))
                    .spawn_scoped(scope, move || -> Result<WorkerResult> {
                        if let Some(cpus) = &config.cpu_affinity {
                            let cpu = cpus[i % cpus.len()];
                            limits::pin_current_thread(cpu)
                                .with_context(|| format!("cannot pin a worker to CPU {cpu}"))?;
                        }
                        // CPU, wall and run-queue time all over the same span.
                        let cpu_before = limits::thread_cpu_seconds();
                        let wait_before = limits::thread_runqueue_wait_seconds();
                        let wall_before = Instant::now();
                        let factory = RequestFactory::new(
                            &config.mix,
                            &config.target.host_header(),
                            config.keepalive,
                            first_worker + i,
                            all_workers,
                        )?;
                        let stats = Recorder::new(config.success.clone(), start, timeline, live);
                        let mut core = Core::new(
                            addr,
                            factory,
                            stats,
                            config.connect_timeout,
                            config.request_timeout,
                            config.keepalive,
                            config.model.pacing(config.pacing),
                        )?;
                        let mut driver = config.model.driver(&RunShare {
                            start,
                            duration: config.duration,
                            thread: i,
                            threads: workers,
                            worker: first_worker + i,
                            workers: all_workers,
                            max_requests: config.max_requests,
                            budget,
                        });
                        let end = run_loop(&mut core, driver.as_mut(), clock)?;
                        let open = driver.open_result(end.at);
                        // Closing the sockets is part of the run's CPU time.
                        let mut stats = core.into_stats();
                        stats.finish(end.last);
                        let usage = WorkerUsage {
                            cpu_s: limits::thread_cpu_seconds() - cpu_before,
                            wall_s: wall_before.elapsed().as_secs_f64(),
                            runqueue_wait_s: (limits::thread_runqueue_wait_seconds() - wait_before).max(0.0),
                            spin_s: stats.spin.as_secs_f64(),
                            connect_s: stats.connecting.as_secs_f64(),
                        };
                        Ok(WorkerResult {
                            stats,
                            open,
                            ended: end.at,
                            in_flight: end.in_flight,
                            window: end.window,
                            usage,
                        })
                    })
                    .expect("spawn worker thread")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(anyhow!("a load worker thread panicked"))))
            .collect()
    });
    let results = results.into_iter().collect::<Result<Vec<_>>>()?;
    build_report(results, start, timeline.finish(), workers)
}

fn build_report(
    results: Vec<WorkerResult>,
    start: Instant,
    timeline: Vec<crate::report::SecondStats>,
    workers: usize,
) -> Result<LoadReport> {
    let mut hist = new_latency_histogram();
    let mut lag = new_latency_histogram();
    let mut errors = ErrorCounts::default();
    let mut statuses = vec![0u64; 1000];
    let (mut ok, mut ok_in_window, mut bytes_in, mut bytes_out, mut opened, mut cpu_s) = (0, 0, 0, 0, 0, 0.0);
    let (mut in_flight, mut attempts_failed, mut sent) = (0, 0, 0);
    let mut open: Option<OpenStats> = None;
    let mut ended = start;
    for r in &results {
        hist.add(&r.stats.hist).map_err(|e| anyhow!("cannot merge worker histograms: {e:?}"))?;
        errors.add(&r.stats.errors);
        for (total, n) in statuses.iter_mut().zip(&r.stats.statuses) {
            *total += n;
        }
        ok += r.stats.ok;
        ok_in_window += r.window.ok;
        bytes_in += r.stats.traffic.bytes_in;
        bytes_out += r.stats.traffic.bytes_out;
        opened += r.stats.connections_opened;
        attempts_failed += r.stats.connect_attempts_failed;
        cpu_s += r.usage.cpu_s;
        in_flight += r.in_flight;
        ended = ended.max(r.ended);
        if let Some(o) = &r.open {
            lag.add(&o.lag).map_err(|e| anyhow!("cannot merge worker lag histograms: {e:?}"))?;
            sent += o.sent;
            let t = open.get_or_insert_with(OpenStats::default);
            t.intended += o.stats.intended;
            t.sent_late += o.stats.sent_late;
            t.unsent += o.stats.unsent;
            t.max_lateness_ms = t.max_lateness_ms.max(o.stats.max_lateness_ms);
        }
    }
    let duration = ended.duration_since(start).max(Duration::from_micros(1)).as_secs_f64();
    if let Some(o) = &mut open {
        // Exact over all workers: their lag histograms were merged.
        o.lag_p50_ms = lag.value_at_quantile(0.5) as f64 / 1000.0;
        o.lag_p99_ms = lag.value_at_quantile(0.99) as f64 / 1000.0;
        o.lag_max_ms = o.max_lateness_ms;
        o.achieved_rate = sent as f64 / duration;
    }
    Ok(LoadReport {
        duration_s: duration,
        requests_ok: ok,
        requests_ok_in_window: ok_in_window,
        requests_err: errors.total(),
        errors,
        status_counts: statuses
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(status, n)| (status as u16, *n))
            .collect(),
        latency: percentiles(&hist),
        latency_hdr: encode(&hist)?,
        bytes_in,
        bytes_out,
        connections_opened: opened,
        connect_attempts_failed: attempts_failed,
        connections: connection_stats(results.iter().map(|r| &r.window), duration),
        in_flight_at_end: in_flight,
        timeline,
        lag_hdr: open.is_some().then(|| encode(&lag)).transpose()?,
        open,
        threads: workers,
        client_cpu_s: cpu_s,
        workers: results.iter().map(|r| r.usage).collect(),
    })
}

/// Runs shorter than this never count starved connections: a slow first answer is not unfair.
const STARVED_MIN_RUN_S: f64 = 1.0;

/// Fairness over every worker's slots at the end of the window.
fn connection_stats<'a>(windows: impl Iterator<Item = &'a WindowEnd> + Clone, duration_s: f64) -> ConnectionStats {
    // A connect or request still pending is starved when a request sent at least STALLED_AFTER after
    // it got its answer first: it was overtaken, not merely slow. Behind a dependency that answers in
    // 8 s, a connection opened in a step's last 8 s has no answer yet, like every request sent after it.
    let latest_answered = windows.clone().filter_map(|w| w.latest_answered_send).max();
    let overtaken = |sent: Instant| latest_answered.is_some_and(|l| l >= sent + STALLED_AFTER);
    let mut c = ConnectionStats::default();
    let mut answers = Vec::new();
    let mut candidates = 0;
    for w in windows {
        c.oldest_unanswered_ms = c.oldest_unanswered_ms.max(w.oldest_unanswered.as_secs_f64() * 1000.0);
        c.stalled += w.stalled;
        for s in &w.slots {
            answers.push(s.answers);
            c.never_connected += u64::from(!s.connected);
            // A slot that tried and got nothing: its connects and requests ended without an
            // answer, or the one still pending was overtaken. A connected slot the open model never
            // needed is not starved.
            let sought = s.tried && (!s.connected || s.sent > 0);
            let passed_over = s.pending_since.is_none_or(overtaken);
            candidates += u64::from(s.answers == 0 && sought && passed_over);
        }
    }
    answers.sort_unstable();
    c.used = answers.len() as u64;
    if let (Some(&min), Some(&max)) = (answers.first(), answers.last()) {
        c.answers_min = min;
        c.answers_max = max;
        c.answers_median = answers[answers.len() / 2];
    }
    if c.answers_max >= 1 && duration_s >= STARVED_MIN_RUN_S {
        c.starved = candidates;
    }
    c
}

//! Histograms leave the generator in the standard HDR encoding and merge without loss.

mod common;

use std::collections::BTreeMap;

use common::{closed, serial, TestServer};
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use loadgen::histogram::{decode, encode, new_latency_histogram, percentiles, write_interval_log};
use loadgen::{merge_reports, ErrorCounts, LoadReport};

/// A report as a generator would make it from these latencies (µs).
fn report_of(latencies_us: &[u64], errors: u64) -> LoadReport {
    let mut h = new_latency_histogram();
    for &v in latencies_us {
        h.record(v).unwrap();
    }
    LoadReport {
        duration_s: 10.0,
        requests_ok: latencies_us.len() as u64,
        requests_ok_in_window: latencies_us.len() as u64,
        requests_err: errors,
        errors: ErrorCounts { status: errors, ..Default::default() },
        status_counts: BTreeMap::from([(200, latencies_us.len() as u64)]),
        latency: percentiles(&h),
        latency_hdr: encode(&h).unwrap(),
        bytes_in: 100,
        bytes_out: 50,
        connections_opened: 4,
        connect_attempts_failed: 0,
        connections: Default::default(),
        in_flight_at_end: 0,
        timeline: vec![],
        open: None,
        lag_hdr: None,
        threads: 1,
        client_cpu_s: 0.5,
        workers: vec![],
    }
}

#[test]
fn agents_lag_histograms_merge_exactly() {
    // One agent always on time (10 µs), one always 2 ms late, 50 sends each: the merged median is
    // the punctual agent's lag and the 99th percentile the late one's, which the agents' own
    // percentiles alone could not give (the higher p50 would be 2 ms).
    let with_lag = |lag_us: u64| {
        let mut r = report_of(&[1000], 0);
        let mut h = new_latency_histogram();
        for _ in 0..50 {
            h.record(lag_us).unwrap();
        }
        let ms = lag_us as f64 / 1000.0;
        r.open = Some(loadgen::OpenStats {
            intended: 50,
            lag_p50_ms: ms,
            lag_p99_ms: ms,
            lag_max_ms: ms,
            ..Default::default()
        });
        r.lag_hdr = Some(encode(&h).unwrap());
        r
    };
    let m = merge_reports(&[with_lag(10), with_lag(2000)]).unwrap();
    let o = m.open.unwrap();
    assert!((o.lag_p50_ms - 0.01).abs() < 0.001, "p50 {}", o.lag_p50_ms);
    assert!((o.lag_p99_ms - 2.0).abs() < 0.01, "p99 {}", o.lag_p99_ms);
    assert_eq!(decode(m.lag_hdr.as_deref().unwrap()).unwrap().len(), 100);
}

#[test]
fn export_import_merge_equals_one_combined_run() {
    // Three generators with different latency shapes (a fast one, a slow one, one with a tail).
    let mut rng = fastrand::Rng::with_seed(7);
    let a: Vec<u64> = (0..50_000).map(|_| 200 + rng.u64(..800)).collect();
    let b: Vec<u64> = (0..20_000).map(|_| 5_000 + rng.u64(..20_000)).collect();
    let c: Vec<u64> = (0..10_000).map(|i| if i % 100 == 0 { 1_000_000 + rng.u64(..500_000) } else { 900 }).collect();

    // Export as JSON (what --json writes and the store keeps), import, merge.
    let exported: Vec<String> =
        [&a, &b, &c].iter().enumerate().map(|(i, v)| serde_json::to_string(&report_of(v, i as u64)).unwrap()).collect();
    let imported: Vec<LoadReport> = exported.iter().map(|s| serde_json::from_str(s).unwrap()).collect();
    let merged = merge_reports(&imported).unwrap();

    let all: Vec<u64> = a.iter().chain(&b).chain(&c).copied().collect();
    let combined = report_of(&all, 0);
    assert_eq!(merged.latency, combined.latency);
    assert_eq!(merged.histogram().unwrap(), combined.histogram().unwrap());
    assert_eq!(merged.requests_ok, 80_000);
    assert_eq!(merged.requests_err, 3, "errors 0 + 1 + 2");
    assert_eq!(merged.errors.status, 3);
    assert_eq!(merged.status_counts[&200], 80_000);
    assert_eq!((merged.bytes_in, merged.connections_opened, merged.threads), (300, 12, 3));
    assert_eq!(merged.duration_s, 10.0);
    assert!((merged.client_cpu_s - 1.5).abs() < 1e-9);
    // The tail of `c` dominates p99.9 only when merged correctly (not by averaging).
    assert!(merged.latency.p999 > 1_000.0, "{:?}", merged.latency);
}

#[test]
fn real_runs_merge_exactly() {
    let _serial = serial();
    let server = TestServer::fixed(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    let r1 = loadgen::run(&closed(server.target(), 1, 300), None).unwrap();
    let r2 = loadgen::run(&closed(server.target(), 2, 300), None).unwrap();
    let merged = merge_reports(&[r1.clone(), r2.clone()]).unwrap();
    let mut h = r1.histogram().unwrap();
    h.add(r2.histogram().unwrap()).unwrap();
    assert_eq!(merged.latency, percentiles(&h));
    assert_eq!(merged.requests_ok, r1.requests_ok + r2.requests_ok);
    assert_eq!(h.len(), merged.requests_ok);
    let seconds: u64 = merged.timeline.iter().map(|s| s.ok).sum();
    assert_eq!(seconds, merged.requests_ok);
}

#[test]
fn interval_log_is_readable_by_hdr_tools() {
    let mut h = new_latency_histogram();
    for v in [100, 2_000, 30_000, 400_000] {
        h.record(v).unwrap();
    }
    let path = std::env::temp_dir().join(format!("loadgen-{}.hlog", std::process::id()));
    let start = std::time::SystemTime::now();
    write_interval_log(&path, &h, start, std::time::Duration::from_secs(10)).unwrap();
    let text = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).ok();
    let intervals: Vec<_> = IntervalLogIterator::new(&text)
        .filter_map(|e| match e.unwrap() {
            LogEntry::Interval(i) => Some(i),
            _ => None,
        })
        .collect();
    assert_eq!(intervals.len(), 1);
    assert_eq!(intervals[0].duration(), std::time::Duration::from_secs(10));
    assert!((intervals[0].max() - 400.0).abs() < 1.0, "max column in ms: {}", intervals[0].max());
    let back = decode(intervals[0].encoded_histogram()).unwrap();
    assert_eq!(back, h);
}

#[test]
fn fairness_usage_and_lag_merge() {
    use loadgen::{ConnectionStats, OpenStats, WorkerUsage};
    let mut a = report_of(&[1000, 2000], 0);
    let mut b = report_of(&[3000], 0);
    a.connections = ConnectionStats {
        used: 4,
        starved: 1,
        never_connected: 0,
        answers_min: 0,
        answers_median: 10,
        answers_max: 20,
        oldest_unanswered_ms: 1500.0,
        stalled: 1,
    };
    b.connections = ConnectionStats {
        used: 2,
        starved: 0,
        never_connected: 1,
        answers_min: 5,
        answers_median: 30,
        answers_max: 40,
        oldest_unanswered_ms: 200.0,
        stalled: 0,
    };
    a.workers = vec![WorkerUsage { cpu_s: 1.0, wall_s: 10.0, runqueue_wait_s: 0.1, spin_s: 0.0, connect_s: 0.0 }];
    b.workers = vec![WorkerUsage { cpu_s: 2.0, wall_s: 10.0, runqueue_wait_s: 0.2, spin_s: 0.5, connect_s: 0.0 }];
    a.connect_attempts_failed = 3;
    b.connect_attempts_failed = 4;
    let lag = |p50, p99, max, rate| OpenStats {
        intended: 100,
        max_lateness_ms: max,
        lag_p50_ms: p50,
        lag_p99_ms: p99,
        lag_max_ms: max,
        achieved_rate: rate,
        ..Default::default()
    };
    a.open = Some(lag(0.01, 0.2, 0.5, 10.0));
    b.open = Some(lag(0.02, 0.1, 0.9, 9.0));
    let m = merge_reports(&[a, b]).unwrap();
    let c = m.connections;
    assert_eq!((c.used, c.starved, c.never_connected, c.stalled), (6, 1, 1, 1));
    assert_eq!((c.answers_min, c.answers_median, c.answers_max), (0, 30, 40), "median: the higher one");
    assert_eq!(c.oldest_unanswered_ms, 1500.0);
    assert_eq!(m.workers.len(), 2);
    assert_eq!(m.workers[1].spin_s, 0.5);
    assert_eq!(m.connect_attempts_failed, 7);
    assert_eq!(m.requests_ok_in_window, 3);
    let o = m.open.unwrap();
    assert_eq!((o.lag_p50_ms, o.lag_p99_ms, o.lag_max_ms, o.max_lateness_ms), (0.02, 0.2, 0.9, 0.9));
    assert_eq!(o.achieved_rate, 19.0);
}

#[test]
fn reports_written_before_the_new_fields_still_read() {
    let mut v: serde_json::Value = serde_json::to_value(report_of(&[1000], 0)).unwrap();
    let obj = v.as_object_mut().unwrap();
    for key in ["requests_ok_in_window", "connect_attempts_failed", "connections", "workers"] {
        obj.remove(key);
    }
    let errors = obj["errors"].as_object_mut().unwrap();
    for key in ["client_resource", "reset", "closed_early"] {
        errors.remove(key);
    }
    errors.insert("read_closed".into(), 2.into());
    let r: LoadReport = serde_json::from_value(v).unwrap();
    assert_eq!(r.connections, Default::default());
    assert!(r.workers.is_empty() && r.flags().is_empty());
}

//! Run control (request count, stop, keep-alive), what goes on the wire, and live progress.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{closed, serial, Next, Seen, TestServer};
use loadgen::{LiveStats, LoadConfig, Model, RateRamp, RequestMix, RequestTemplate, ValueList, ValueOrder};

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

#[test]
fn request_count_ends_the_run() {
    let _serial = serial();
    let server = TestServer::fixed(OK);
    let mut config = closed(server.target(), 4, 10_000);
    config.threads = 2;
    config.max_requests = Some(500);
    let started = Instant::now();
    let r = loadgen::run(&config, None).unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(r.requests_ok, 500);
    assert_eq!(r.requests_err, 0);

    let mut open = LoadConfig::new(
        server.target(),
        RequestMix::single("GET", "/"),
        Model::Open(loadgen::Open { rate: RateRamp::constant(1000.0), max_connections: 8 }),
    );
    open.max_requests = Some(300);
    open.threads = 2;
    let r = loadgen::run(&open, None).unwrap();
    assert_eq!(r.requests_ok, 300);
    // At 1000/s, 300 requests take 0.3 s, far from the 10 s duration.
    assert!(r.duration_s < 3.0, "{} s", r.duration_s);
}

#[test]
fn stop_flag_ends_the_run_promptly() {
    let _serial = serial();
    let server = TestServer::fixed(OK);
    let stop = Arc::new(AtomicBool::new(false));
    let mut config = closed(server.target(), 4, 30_000);
    config.stop = Some(stop.clone());
    let live = Arc::new(LiveStats::default());
    let (stop2, live2) = (stop.clone(), live.clone());
    let watcher = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1300));
        let snap = live2.snapshot();
        stop2.store(true, Ordering::SeqCst);
        (snap, Instant::now())
    });
    let started = Instant::now();
    let r = loadgen::run(&config, Some(live.clone())).unwrap();
    let ended = Instant::now();
    let (snap, stopped_at) = watcher.join().unwrap();
    // Measured from the moment the flag was set (a busy machine may wake the watcher late): the 30 s run
    // ends well within a second of it.
    let after_stop = ended.saturating_duration_since(stopped_at);
    assert!(after_stop < Duration::from_millis(700), "ended {after_stop:?} after the stop");
    assert!(r.duration_s < (stopped_at - started).as_secs_f64() + 0.7, "{} s", r.duration_s);
    assert!(r.requests_ok > 0);
    // Live progress was visible during the run, and the last second was complete.
    assert!(snap.requests_ok > 0 && snap.requests_ok <= r.requests_ok, "{snap:?}");
    let second = snap.last_second.expect("second 0 was complete");
    assert_eq!(second.second, 0);
    assert!(second.ok > 0 && second.p50_ms > 0.0, "{second:?}");
    assert_eq!(live.snapshot().requests_ok, r.requests_ok);
}

#[test]
fn no_keepalive_opens_a_connection_per_request() {
    let _serial = serial();
    let server = TestServer::start(
        None,
        Arc::new(|seen: &Seen, s: &mut TcpStream| {
            assert!(seen.head.contains("Connection: close\r\n"), "{}", seen.head);
            s.write_all(OK)?;
            Ok(Next::Close)
        }),
    );
    let mut config = closed(server.target(), 2, 10_000);
    config.keepalive = false;
    config.max_requests = Some(200);
    let r = loadgen::run(&config, None).unwrap();
    assert_eq!(r.requests_ok, 200);
    assert_eq!(r.requests_err, 0);
    assert!((200..=202).contains(&r.connections_opened), "{}", r.connections_opened);
}

/// A server that answers every request with OK and keeps what it was sent.
fn recording_server() -> (TestServer, Arc<Mutex<Vec<Seen>>>) {
    let seen = Arc::new(Mutex::new(Vec::<Seen>::new()));
    let seen2 = seen.clone();
    let server = TestServer::start(
        None,
        Arc::new(move |req: &Seen, s: &mut TcpStream| {
            seen2.lock().unwrap().push(req.clone());
            s.write_all(OK)?;
            Ok(Next::KeepOpen)
        }),
    );
    (server, seen)
}

#[test]
fn templates_and_values_reach_the_server() {
    let _serial = serial();
    let (server, seen) = recording_server();
    let mut get = RequestTemplate::new("GET", "/city/{id}?lang={lang}");
    get.weight = 3;
    let mut post = RequestTemplate::new("POST", "/users");
    post.headers.push(("Content-Type".into(), "application/json".into()));
    post.body = br#"{"name":"user-{unique}"}"#.to_vec();
    let ids: Vec<String> = (1..=5).map(|i| i.to_string()).collect();
    let mix = RequestMix {
        templates: vec![get, post],
        values: vec![
            ValueList { name: "id".into(), values: ids, order: ValueOrder::RoundRobin },
            ValueList { name: "lang".into(), values: vec!["cs".into(), "de".into()], order: ValueOrder::Random },
        ],
        seed: 11,
    };
    let mut config = LoadConfig::new(server.target(), mix, Model::closed(1));
    config.threads = 1;
    config.max_requests = Some(400);
    let r = loadgen::run(&config, None).unwrap();
    assert_eq!(r.requests_ok, 400);

    let seen = seen.lock().unwrap();
    let host = format!("Host: {}\r\n", server.addr);
    assert!(seen.iter().all(|s| s.head.contains(&host)));
    let gets: Vec<&Seen> = seen.iter().filter(|s| s.head.starts_with("GET ")).collect();
    let posts: Vec<&Seen> = seen.iter().filter(|s| s.head.starts_with("POST ")).collect();
    assert!((260..=340).contains(&gets.len()), "{} GETs of 400", gets.len());
    // Round-robin ids: 1, 2, 3, 4, 5, 1, ... in order.
    for (i, g) in gets.iter().enumerate() {
        let want = format!("GET /city/{}?lang=", i % 5 + 1);
        assert!(g.head.starts_with(&want), "{} (want {want})", g.head);
    }
    assert!(gets.iter().any(|g| g.head.contains("lang=cs")) && gets.iter().any(|g| g.head.contains("lang=de")));
    // Unique numbers are unique, and Content-Length matches each rendered body.
    let mut names: Vec<String> = posts.iter().map(|p| String::from_utf8(p.body.clone()).unwrap()).collect();
    for p in &posts {
        assert!(p.head.contains(&format!("Content-Length: {}\r\n", p.body.len())), "{}", p.head);
        assert!(p.head.contains("Content-Type: application/json\r\n"));
    }
    let n = names.len();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), n);
    assert!(names.iter().all(|b| b.starts_with(r#"{"name":"user-"#)));
}

#[test]
fn timeline_adds_up() {
    let _serial = serial();
    let server = TestServer::fixed(OK);
    let mut config = closed(server.target(), 2, 2500);
    config.threads = 2;
    let r = loadgen::run(&config, None).unwrap();
    let seconds: Vec<u64> = r.timeline.iter().map(|s| s.second).collect();
    assert_eq!(seconds, [0, 1, 2]);
    assert_eq!(r.timeline.iter().map(|s| s.ok).sum::<u64>(), r.requests_ok);
    assert!(r.timeline.iter().all(|s| s.ok > 0 && s.p99_ms >= s.p50_ms && s.p50_ms > 0.0));
    assert_eq!(r.threads, 2);
    assert!(r.client_cpu_s > 0.0);
    assert!((r.duration_s - 2.5).abs() < 0.05, "{}", r.duration_s);
    assert_eq!(r.bytes_in, r.requests_ok * OK.len() as u64);
}

#[test]
fn thousands_of_connections_work() {
    let _serial = serial();
    let server = TestServer::fixed(OK);
    // Long enough for the thread-per-connection test server to accept them all.
    let mut config = closed(server.target(), 2000, 4000);
    config.threads = 2;
    config.connect_timeout = std::time::Duration::from_secs(3);
    let r = loadgen::run(&config, None).unwrap();
    assert_eq!(r.requests_err, 0, "{:?}", r.errors);
    assert_eq!(r.connections_opened, 2000, "{r:?}");
    assert!(r.requests_ok >= 2000);
}

#[test]
fn two_agents_send_the_schedule_once_with_no_unique_number_twice() {
    let _serial = serial();
    let (server, seen) = recording_server();
    let mix = RequestMix { templates: vec![RequestTemplate::new("GET", "/u/{unique}")], values: vec![], seed: 3 };
    // Two agents with two threads each, the whole rate each, one agreed start a moment away.
    let start_at = std::time::SystemTime::now() + Duration::from_millis(300);
    let reports: Vec<loadgen::LoadReport> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|agent| {
                let mut config = LoadConfig::new(
                    server.target(),
                    mix.clone(),
                    Model::Open(loadgen::Open { rate: RateRamp::constant(400.0), max_connections: 16 }),
                );
                config.duration = Duration::from_secs(1);
                config.threads = 2;
                config.agent = (agent, 2);
                config.start_at = Some(start_at);
                s.spawn(move || loadgen::run(&config, None).unwrap())
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    // Each agent took half of the 400 due requests; together they sent each once.
    let intended: Vec<u64> = reports.iter().map(|r| r.open.unwrap().intended).collect();
    assert_eq!(intended.iter().sum::<u64>(), 400, "{intended:?}");
    assert!(intended.iter().all(|&n| n == 200), "{intended:?}");
    let merged = loadgen::merge_reports(&reports).unwrap();
    assert_eq!(merged.requests_ok, 400);
    let mut paths: Vec<String> =
        seen.lock().unwrap().iter().map(|s| s.head.lines().next().unwrap().to_string()).collect();
    assert_eq!(paths.len(), 400);
    paths.sort();
    paths.dedup();
    assert_eq!(paths.len(), 400, "a {{unique}} number was sent twice");
}

//! The ramp model end to end: a rate rising over the run against a server that refuses work above a known
//! rate, read second by second, finds its knee near that rate.

mod common;

use std::collections::VecDeque;
use std::io::Write;
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{serial, Next, Seen, TestServer};
use loadgen::knee::{knee, slices, Objectives};
use loadgen::models::Ramp;
use loadgen::{LoadConfig, Model, RequestMix};

const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy";

/// Answers 503 to a request when more than `capacity` requests arrived in the second before it.
fn server_with_capacity(capacity: usize) -> TestServer {
    let arrivals = Arc::new(Mutex::new(VecDeque::<Instant>::new()));
    TestServer::start(
        None,
        Arc::new(move |_: &Seen, s: &mut TcpStream| {
            let now = Instant::now();
            let over = {
                let mut a = arrivals.lock().unwrap();
                while a.front().is_some_and(|t| now.duration_since(*t) > Duration::from_secs(1)) {
                    a.pop_front();
                }
                a.push_back(now);
                a.len() > capacity
            };
            s.write_all(if over { BUSY } else { OK })?;
            Ok(Next::KeepOpen)
        }),
    )
}

#[test]
fn a_ramp_finds_the_knee_of_a_server_with_a_known_capacity() {
    let _serial = serial();
    let capacity = 1000;
    let server = server_with_capacity(capacity);
    let ramp = Model::Ramp(Ramp { from: 200.0, to: 2000.0, max_connections: 64 });
    let mut config = LoadConfig::new(server.target(), RequestMix::single("GET", "/"), ramp);
    config.duration = Duration::from_secs(10);
    config.threads = 1;
    config.request_timeout = Duration::from_secs(2);
    let report = loadgen::run(&config, None).unwrap();

    // The whole ramp was offered: (from + to) / 2 · d requests, the intended schedule, not fewer.
    let intended = report.open.as_ref().unwrap().intended;
    assert!((intended as i64 - 11_000).abs() <= 2, "{intended} requests due");
    let s = slices(&config.model, config.duration.as_secs_f64(), &report.timeline).unwrap();
    assert_eq!(s.len(), 10);
    assert!((s[0].offered - 290.0).abs() < 1e-6 && (s[9].offered - 1910.0).abs() < 1e-6, "{s:?}");
    // Past the capacity the server counts every arrival, refused or not, so it refuses them all.
    assert!(s[9].success < 0.1 && s[2].success > 0.99, "{s:?}");
    // The rate rises 180 req/s each second, and the server's window is a second long: the last second
    // that held offered between capacity - 2 × 180 and capacity + 180. The p99 limit is wide, so that a
    // busy machine's scheduling does not end the ramp before the server does.
    let objectives = Objectives { max_p99_ms: Some(500.0), ..Objectives::default() };
    let k = knee(&s, &objectives).expect("the first seconds held");
    assert!((640.0..=1180.0).contains(&k), "knee {k} req/s, capacity {capacity}: {s:?}");
}

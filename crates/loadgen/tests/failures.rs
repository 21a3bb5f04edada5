//! Misbehaving servers: each failure lands under its own kind, with the right counts, and the
//! generator neither crashes nor hangs.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{closed, dead_port, open_model, serial, Next, Seen, TestServer};
use loadgen::{ErrorCounts, LoadReport, StatusSet, Target};

fn only(report: &LoadReport, kind: fn(&ErrorCounts) -> u64) -> u64 {
    let n = kind(&report.errors);
    assert_eq!(report.requests_err, n, "other error kinds were counted: {:?}", report.errors);
    assert_eq!(report.requests_err, report.errors.total());
    n
}

#[test]
fn no_listener_counts_only_connect_errors_and_ends_on_time() {
    let _serial = serial();
    let addr = dead_port();
    let target = Target { host: "127.0.0.1".into(), port: addr.port() };

    let started = Instant::now();
    let r = loadgen::run(&closed(target.clone(), 4, 1000), None).unwrap();
    let took = started.elapsed();
    assert!(took < Duration::from_millis(1500), "took {took:?}");
    assert_eq!(r.requests_ok, 0);
    let refused = only(&r, |e| e.connect_refused);
    // Each of the 4 connections could not send its one request; the retries every 10-20 ms
    // are attempts, not further errors.
    assert_eq!(refused, 4, "{refused} refused");
    assert!(r.connect_attempts_failed >= 8, "{} attempts failed", r.connect_attempts_failed);
    assert_eq!(r.connections_opened, 0);
    assert!(r.status_counts.is_empty());

    // Open model: every due request fails with the connection.
    let open = open_model(target, 100.0, 10, Duration::from_secs(1));
    let r = loadgen::run(&open, None).unwrap();
    let refused = only(&r, |e| e.connect_refused);
    let o = r.open.unwrap();
    assert_eq!(o.intended, 100);
    assert!(refused + o.unsent >= 99 && refused <= 100, "{refused} refused, {o:?}");
    assert_eq!(r.connect_attempts_failed, refused, "each failed attempt cost one due request");
}

#[test]
fn closed_model_retrying_a_dead_port_counts_one_error_per_connection() {
    let _serial = serial();
    let addr = dead_port();
    let target = Target { host: "127.0.0.1".into(), port: addr.port() };
    const N: u64 = 8;
    let r = loadgen::run(&closed(target, N as usize, 1000), None).unwrap();
    assert_eq!(r.requests_ok, 0);
    // One error per connection that could not send its request, however often it retried.
    assert!(r.requests_err <= N + 1, "{:?}", r.errors);
    assert!(r.requests_err >= 1, "{:?}", r.errors);
    // Retries every 10 ms for a second: dozens of attempts per connection (a loaded machine
    // manages fewer, still far more than one).
    assert!(r.connect_attempts_failed >= 5 * N, "{} attempts failed", r.connect_attempts_failed);
    assert_eq!(r.connections.never_connected, N);
    assert_eq!(r.connections.used, N);
    assert_eq!(r.connections.starved, 0, "no connection got answers, so none was treated unfairly");
}

#[test]
fn server_closing_after_the_headers_is_closed_early() {
    let _serial = serial();
    let server = TestServer::start(
        None,
        Arc::new(|_: &Seen, s: &mut TcpStream| {
            s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly a part")?;
            Ok(Next::Close)
        }),
    );
    let r = loadgen::run(&closed(server.target(), 2, 700), None).unwrap();
    assert_eq!(r.requests_ok, 0);
    let closed = only(&r, |e| e.closed_early);
    assert!(closed >= 20, "{closed}");
    // Every failure cost a connection, re-established and counted.
    assert!(r.connections_opened >= closed, "{} opened, {closed} closed", r.connections_opened);
    assert!(r.connections_opened <= closed + 2);
    assert!(r.status_counts.is_empty(), "incomplete responses are not counted by status");
}

#[test]
fn server_resetting_with_a_request_in_flight_is_a_reset() {
    let _serial = serial();
    let server = TestServer::start(
        None,
        Arc::new(|_: &Seen, s: &mut TcpStream| {
            // Linger 0: closing sends RST instead of FIN.
            socket2::SockRef::from(&*s).set_linger(Some(Duration::ZERO))?;
            Ok(Next::Close)
        }),
    );
    let r = loadgen::run(&closed(server.target(), 2, 700), None).unwrap();
    assert_eq!(r.requests_ok, 0);
    let reset = only(&r, |e| e.reset);
    assert!(reset >= 20, "{reset}");
    // The connections themselves were made: a reset is not a failed connect.
    assert_eq!(r.connect_attempts_failed, 0);
}

#[test]
fn two_responses_to_one_request_are_malformed() {
    let _serial = serial();
    const TWICE: &[u8] =
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    let server = TestServer::fixed(TWICE);
    let r = loadgen::run(&closed(server.target(), 2, 500), None).unwrap();
    assert_eq!(r.requests_ok, 0, "an answer followed by another is not clean");
    assert!(only(&r, |e| e.malformed) >= 10);
}

#[test]
fn garbage_is_malformed() {
    let _serial = serial();
    let server = TestServer::start(
        None,
        Arc::new(|_: &Seen, s: &mut TcpStream| {
            s.write_all(b"Hello! This is not HTTP at all.\r\n\r\n")?;
            Ok(Next::KeepOpen)
        }),
    );
    let r = loadgen::run(&closed(server.target(), 2, 700), None).unwrap();
    assert_eq!(r.requests_ok, 0);
    let malformed = only(&r, |e| e.malformed);
    assert!(malformed >= 20, "{malformed}");
    assert!(r.connections_opened >= malformed);
}

#[test]
fn status_503_is_a_status_error_unless_declared_success() {
    let _serial = serial();
    const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy";
    let server = TestServer::fixed(BUSY);
    let r = loadgen::run(&closed(server.target(), 2, 500), None).unwrap();
    assert_eq!(r.requests_ok, 0);
    let status = only(&r, |e| e.status);
    assert!(status >= 100, "{status}");
    assert_eq!(r.status_counts.get(&503), Some(&status));
    assert_eq!(r.status_counts.len(), 1);
    assert_eq!(r.connections_opened, 2, "503 with keep-alive reuses the connection");
    assert_eq!(r.latency.max, 0.0, "failed responses are not in the latency histogram");

    let mut config = closed(server.target(), 2, 300);
    config.success = StatusSet::parse("200-399,503").unwrap();
    let r = loadgen::run(&config, None).unwrap();
    assert_eq!(r.requests_err, 0);
    assert_eq!(r.status_counts.get(&503), Some(&r.requests_ok));
}

#[test]
fn chunked_bodies_are_read_to_the_end() {
    let _serial = serial();
    let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    let chunks: [&[u8]; 3] = [b"5\r\nHello\r\n", b"8\r\n, World!\r\n", b"0\r\n\r\n"];
    let per_response = (head.len() + chunks.iter().map(|c| c.len()).sum::<usize>()) as u64;
    let server = TestServer::start(
        None,
        Arc::new(move |_: &Seen, s: &mut TcpStream| {
            // Separate writes, so the client sees the body arrive in pieces.
            s.write_all(head)?;
            for c in chunks {
                s.flush()?;
                s.write_all(c)?;
            }
            Ok(Next::KeepOpen)
        }),
    );
    let r = loadgen::run(&closed(server.target(), 2, 700), None).unwrap();
    assert_eq!(r.requests_err, 0, "{:?}", r.errors);
    assert!(r.requests_ok >= 100, "{}", r.requests_ok);
    assert_eq!(r.connections_opened, 2);
    assert_eq!(r.status_counts.get(&200), Some(&r.requests_ok));
    // Whole responses, plus at most a part of one per connection cut off by the end of the run.
    assert!(r.bytes_in >= r.requests_ok * per_response, "{} bytes", r.bytes_in);
    assert!(r.bytes_in < (r.requests_ok + 2) * per_response, "{} bytes", r.bytes_in);
}

#[test]
fn server_accepting_100_of_1000_connections() {
    let _serial = serial();
    const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    // A small backlog: past it the kernel drops SYNs, as a saturated server does.
    let server = TestServer::with_backlog(
        Some(100),
        16,
        Arc::new(|_: &Seen, s: &mut TcpStream| {
            s.write_all(OK)?;
            Ok(Next::KeepOpen)
        }),
    );
    let mut config = closed(server.target(), 1000, 2000);
    config.threads = 2;
    config.connect_timeout = Duration::from_millis(400);
    config.request_timeout = Duration::from_millis(400);
    let started = Instant::now();
    let r = loadgen::run(&config, None).unwrap();
    let took = started.elapsed();
    assert!(took < Duration::from_millis(2600), "took {took:?}");
    assert_eq!(server.accepted.load(std::sync::atomic::Ordering::SeqCst), 100);
    // The accepted 100 carry the load.
    assert!(r.requests_ok >= 1000, "{} ok", r.requests_ok);
    let e = r.errors;
    // The rest never get an answer: their connect times out (SYNs dropped once the backlog is
    // full), or the handshake completed into the backlog and the request times out.
    assert!(e.connect_timeout > 0, "{e:?}");
    assert_eq!(e.malformed + e.status + e.reset + e.closed_early + e.client_resource, 0, "{e:?}");
    assert_eq!(r.requests_err, e.connect_timeout + e.connect_refused + e.request_timeout);
    // Over 2 s with 400 ms timeouts, each of the ~900 waiting connections fails a few times.
    assert!(r.requests_err >= 900, "{e:?}");
    assert!(e.connect_timeout > e.request_timeout, "{e:?}");
}

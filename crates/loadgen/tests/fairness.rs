//! Per-connection fairness: a service that serves some connections and leaves others waiting
//! the whole run is caught, even when its mean throughput looks fine.

mod common;

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use common::{closed, serial, serve_connection, Next, Seen};
use loadgen::Target;

/// A blocking server with a fixed pool of `workers` threads, each taking one connection and
/// serving it until the client closes it (as a thread-per-connection server with a bounded
/// pool does). Connections beyond the pool complete their handshake in the backlog and wait.
/// `close_after_answer`: answer with `Connection: close` and close, so the pool rotates.
fn pooled_server(workers: usize, close_after_answer: bool) -> Target {
    let listener = Arc::new(TcpListener::bind("127.0.0.1:0").unwrap());
    let addr = listener.local_addr().unwrap();
    for _ in 0..workers {
        let listener = listener.clone();
        // Detached: blocked in accept() when the test ends, they end with the test process.
        std::thread::spawn(move || loop {
            let Ok((conn, _)) = listener.accept() else { return };
            serve_connection(conn, &move |_: &Seen, s: &mut TcpStream| {
                if close_after_answer {
                    s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")?;
                    Ok(Next::Close)
                } else {
                    s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")?;
                    Ok(Next::KeepOpen)
                }
            });
        });
    }
    Target { host: "127.0.0.1".into(), port: addr.port() }
}

/// Four connections for 2 s against `target`; every one of them is used and the run is served.
fn four_connections_for_2s(target: Target) -> loadgen::LoadReport {
    let mut config = closed(target, 4, 2000);
    // Longer than the run: the waiting requests must still be in flight at the end.
    config.request_timeout = Duration::from_secs(10);
    let r = loadgen::run(&config, None).unwrap();
    assert!(r.requests_ok >= 100, "{} ok", r.requests_ok);
    assert_eq!(r.connections.used, 4, "{:?}", r.connections);
    r
}

#[test]
fn a_worker_pool_pinned_to_keepalive_connections_starves_the_others() {
    let _serial = serial();
    let r = four_connections_for_2s(pooled_server(2, false));
    let c = r.connections;
    assert_eq!(c.starved, 2, "{c:?}");
    assert_eq!(c.never_connected, 0, "the kernel completed their handshakes: {c:?}");
    assert_eq!(c.answers_min, 0, "{c:?}");
    assert!(c.answers_max >= 50, "{c:?}");
    assert!(c.stalled >= 2, "{c:?}");
    assert!(c.oldest_unanswered_ms >= 1500.0, "{c:?}");
    let flags = r.flags();
    let starved = flags.iter().find(|f| f.code == loadgen::FlagCode::StarvedConnections).expect("flagged");
    assert!(starved.detail.starts_with("2 of 4 connections got no answer"), "{}", starved.detail);
}

#[test]
fn a_worker_pool_closing_after_each_answer_serves_everyone() {
    let _serial = serial();
    let r = four_connections_for_2s(pooled_server(2, true));
    let c = r.connections;
    assert_eq!(c.starved, 0, "{c:?}");
    assert!(c.answers_min >= 1, "{c:?}");
    assert_eq!(c.stalled, 0, "{c:?}");
    assert!(r.flags().iter().all(|f| f.code != loadgen::FlagCode::StarvedConnections), "{:?}", r.flags());
}

//! `svcbench upstream`: the mock third-party service of the `upstream` scenario (seed 004). `GET /`
//! answers a random integer after the current delay. It runs on tokio so that tens of thousands of
//! waiting requests cost only timers and sockets, never threads — it must not be the bottleneck.
//! Control endpoints for the harness: `PUT /_svcbench/delay?ms=N`, `GET /_svcbench/calls` (count of `GET /`
//! calls received so far, so the report can show that every request really reached the upstream). They
//! answer only a request carrying the start's token in [`TOKEN_HEADER`] (403 otherwise): the service under
//! test reaches the upstream too, and must not change its delay or its counter.
use anyhow::{Context, Result};
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

#[derive(clap::Args, Debug, Clone)]
pub struct UpstreamArgs {
    /// Address to listen on (loopback by default).
    #[arg(long, default_value = "127.0.0.1:9100")]
    pub listen: SocketAddr,
    /// Delay before each answer, in milliseconds.
    #[arg(long, default_value_t = 1000)]
    pub delay_ms: u64,
    /// Worker threads of the runtime (default: the CPUs it may use).
    #[arg(long)]
    pub threads: Option<usize>,
}

/// The header the control endpoints want the token in.
pub const TOKEN_HEADER: &str = "x-svcbench-token";
/// The variable svcbench hands the token in to the upstream it starts: its environment, which only its own
/// user can read (/proc/<pid>/environ), not its command line, which every user can.
pub const TOKEN_ENV: &str = "SVCBENCH_UPSTREAM_TOKEN";

/// A fresh token: 128 random bits, in hex.
pub fn new_token() -> String {
    format!("{:032x}", rand::random::<u128>())
}

struct State {
    delay_ms: AtomicU64,
    calls: AtomicU64,
    token: String,
}

pub fn run_cli(args: &UpstreamArgs) -> Result<i32> {
    let _ = loadgen::limits::raise_nofile_limit();
    // Printed only when made here (for whoever runs it by hand); a token svcbench gave stays out of the log.
    let (token, said) = match std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty()) {
        Some(t) => (t, format!("the token given in {TOKEN_ENV}")),
        None => {
            let t = new_token();
            let said = format!("header {TOKEN_HEADER}: {t}");
            (t, said)
        }
    };
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    if let Some(t) = args.threads {
        rt.worker_threads(t.max(1));
    }
    let rt = rt.enable_all().build()?;
    rt.block_on(async {
        let listener = listen(args.listen).with_context(|| format!("cannot listen on {}", args.listen))?;
        crate::errln!(
            "svcbench upstream: listening on {} (delay {} ms); the control endpoints /_svcbench/* want {said}",
            listener.local_addr()?,
            args.delay_ms
        );
        serve(listener, args.delay_ms, token).await
    })?;
    Ok(0)
}

async fn serve(listener: tokio::net::TcpListener, delay_ms: u64, token: String) -> Result<()> {
    let state = Arc::new(State { delay_ms: AtomicU64::new(delay_ms), calls: AtomicU64::new(0), token });
    // Both made once: a `ctrl_c()` made afresh on each turn of the loop misses a Ctrl-C that comes between two.
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut interrupt = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
    let mut told = false;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        crate::server_accept::pause_after_error("the mock upstream", &e, &mut told).await;
                        continue;
                    }
                };
                let _ = stream.set_nodelay(true);
                let state = state.clone();
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(move |req| handle(req, state.clone()));
                    let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), svc).await;
                });
            }
            _ = term.recv() => return Ok(()),
            _ = interrupt.recv() => return Ok(()),
        }
    }
}

/// Whether the request carries the token (compared in time independent of where it differs).
fn has_token(req: &Request<Incoming>, token: &str) -> bool {
    let Some(given) = req.headers().get(TOKEN_HEADER) else { return false };
    let (a, b) = (given.as_bytes(), token.as_bytes());
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The longest accept queue the kernel grants (it caps the asked length at net.core.somaxconn, 4,096
/// here). tokio's `bind` asks for the standard library's 128, and a service that called it in a burst
/// after a pause (seed 004's Node, after 20 s without answering at 1,600 req/s) overflowed that queue, its
/// calls then waiting a second or more for the kernel to send their SYN again.
fn listen(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = if addr.is_ipv4() { tokio::net::TcpSocket::new_v4()? } else { tokio::net::TcpSocket::new_v6()? };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(65_535)
}

async fn handle(req: Request<Incoming>, state: Arc<State>) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let text = |status: StatusCode, body: String| {
        let mut r = Response::new(Full::new(Bytes::from(body)));
        *r.status_mut() = status;
        r.headers_mut().insert("content-type", "text/plain".parse().unwrap());
        r
    };
    let path = req.uri().path();
    if path.starts_with("/_svcbench/") && !has_token(&req, &state.token) {
        return Ok(text(
            StatusCode::FORBIDDEN,
            format!("the control endpoints want the token of this upstream's start in the {TOKEN_HEADER} header"),
        ));
    }
    Ok(match (req.method().as_str(), path) {
        ("GET", "/") => {
            state.calls.fetch_add(1, Ordering::Relaxed);
            let d = state.delay_ms.load(Ordering::Relaxed);
            if d > 0 {
                tokio::time::sleep(Duration::from_millis(d)).await;
            }
            text(StatusCode::OK, rand::random::<u32>().to_string())
        }
        ("GET", "/_svcbench/calls") => text(StatusCode::OK, state.calls.load(Ordering::Relaxed).to_string()),
        ("PUT", "/_svcbench/delay") => {
            let ms = req.uri().query().and_then(|q| q.strip_prefix("ms=")).and_then(|v| v.parse::<u64>().ok());
            match ms {
                Some(ms) => {
                    state.delay_ms.store(ms, Ordering::Relaxed);
                    text(StatusCode::OK, ms.to_string())
                }
                None => text(StatusCode::BAD_REQUEST, "give the delay as ?ms=<milliseconds>".into()),
            }
        }
        _ => text(StatusCode::NOT_FOUND, format!("no route for {} {path}", req.method())),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    /// The mock on a free loopback port, on a runtime of its own for as long as the test runs.
    fn started(delay_ms: u64, token: &str) -> SocketAddr {
        let (tx, rx) = std::sync::mpsc::channel();
        let token = token.to_string();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let listener = listen("127.0.0.1:0".parse().unwrap()).unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                serve(listener, delay_ms, token).await.unwrap();
            });
        });
        rx.recv().unwrap()
    }

    fn answer_time(addr: SocketAddr) -> Duration {
        let t0 = Instant::now();
        crate::http_client::agent(Duration::from_secs(10)).get(&format!("http://{addr}/")).call().unwrap();
        t0.elapsed()
    }

    #[test]
    fn the_control_endpoints_refuse_a_request_without_the_token_and_change_nothing() {
        let token = new_token();
        let addr = started(0, &token);
        let agent = crate::http_client::agent(Duration::from_secs(10));
        let delay = format!("http://{addr}/_svcbench/delay?ms=3000");
        let calls = format!("http://{addr}/_svcbench/calls");
        for (req, what) in [
            (agent.put(&delay), "no token"),
            (agent.put(&delay).set(TOKEN_HEADER, &new_token()), "another token"),
            (agent.put(&delay).set(TOKEN_HEADER, &token[..31]), "part of it"),
            (agent.get(&calls), "the counter without a token"),
        ] {
            match req.call() {
                Err(ureq::Error::Status(403, _)) => {}
                other => panic!("{what}: {other:?}"),
            }
        }
        // The delay is still none: the refused 3 s were not applied.
        assert!(answer_time(addr) < Duration::from_millis(1000));
        // With the token both work, and the delay holds.
        agent.put(&format!("http://{addr}/_svcbench/delay?ms=300")).set(TOKEN_HEADER, &token).call().unwrap();
        assert!(answer_time(addr) >= Duration::from_millis(300));
        let n = agent.get(&calls).set(TOKEN_HEADER, &token).call().unwrap().into_string().unwrap();
        assert_eq!(n, "2");
        assert_ne!(new_token(), token, "each start its own");
    }
}

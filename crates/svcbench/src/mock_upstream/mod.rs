//! `svcbench upstream`: the mock third-party service of the `upstream` scenario (seed 004). `GET /`
//! answers a random integer after the current delay. It runs on tokio so that tens of thousands of
//! waiting requests cost only timers and sockets, never threads — it must not be the bottleneck.
//! Control endpoints for the harness: `PUT /_svcbench/delay?ms=N`, `GET /_svcbench/calls` (count of `GET /`
//! calls received so far, so the report can show that every request really reached the upstream).
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

#[derive(Default)]
struct State {
    delay_ms: AtomicU64,
    calls: AtomicU64,
}

pub fn run_cli(args: &UpstreamArgs) -> Result<i32> {
    let _ = loadgen::limits::raise_nofile_limit();
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    if let Some(t) = args.threads {
        rt.worker_threads(t.max(1));
    }
    let rt = rt.enable_all().build()?;
    rt.block_on(serve(args.listen, args.delay_ms))?;
    Ok(0)
}

async fn serve(addr: SocketAddr, delay_ms: u64) -> Result<()> {
    let listener = listen(addr).with_context(|| format!("cannot listen on {addr}"))?;
    let state = Arc::new(State::default());
    state.delay_ms.store(delay_ms, Ordering::Relaxed);
    crate::errln!("svcbench upstream: listening on {} (delay {delay_ms} ms)", listener.local_addr()?);
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

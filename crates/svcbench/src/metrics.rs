//! `svcbench run --metrics-listen ADDR`: the current step's figures in the Prometheus text format, for
//! people who already watch their services with Prometheus (seed 004 used cAdvisor + Prometheus + Grafana).
//! Served by hyper on a thread of its own: scrapes are answered side by side, a client gets
//! [`HEADER_READ_TIMEOUT`] to send its request and [`CONNECTION_TIMEOUT`] in all, and each answer is
//! rendered from the snapshot the runner last published, never under a lock the runner takes.
use crate::sandbox::Probe;
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// How long a client may take to send its request's head; a scraper sends it at once.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one connection may last in all, the answer's writing included (one request per connection).
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections served at once; one more is closed at once.
pub const MAX_CONNECTIONS: usize = 32;
/// The largest request head read (hyper's smallest buffer limit).
const MAX_REQUEST_HEAD: usize = 8192;

/// What the runner publishes while a step is under way.
#[derive(Clone, Default)]
pub struct Current {
    pub service: String,
    pub run: u32,
    pub step: String,
    pub live: Option<Arc<loadgen::LiveStats>>,
    pub probe: Option<Arc<dyn Probe>>,
}

/// Where the runner publishes [`Current`]: each publication replaces the snapshot scrapes render from.
#[derive(Clone)]
pub struct Shared(Arc<watch::Sender<Arc<Current>>>);

impl Shared {
    fn new() -> Shared {
        Shared(Arc::new(watch::Sender::new(Arc::default())))
    }

    /// From now on, scrapes show `c`.
    pub fn publish(&self, c: Current) {
        self.0.send_replace(Arc::new(c));
    }

    /// The step is over: its live counters are no longer shown.
    pub fn step_ended(&self) {
        let mut c = (**self.0.borrow()).clone();
        c.live = None;
        self.publish(c);
    }
}

pub fn serve(addr: SocketAddr) -> anyhow::Result<Shared> {
    let (shared, local) = start(addr)?;
    crate::errln!("svcbench: live metrics on http://{local}/metrics");
    Ok(shared)
}

/// Binds `addr` here (so that a taken address fails the run at once) and serves it from a thread.
fn start(addr: SocketAddr) -> anyhow::Result<(Shared, SocketAddr)> {
    let listener = std::net::TcpListener::bind(addr)
        .and_then(|l| l.set_nonblocking(true).map(|_| l))
        .map_err(|e| anyhow::anyhow!("--metrics-listen {addr}: cannot listen: {e}"))?;
    let local = listener.local_addr()?;
    let shared = Shared::new();
    let snapshots = shared.0.subscribe();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    std::thread::Builder::new().name("metrics".into()).spawn(move || {
        rt.block_on(async move {
            match tokio::net::TcpListener::from_std(listener) {
                Ok(l) => accept_loop(l, snapshots).await,
                Err(e) => crate::errln!("svcbench: WARNING: --metrics-listen {local}: {e}; no live metrics"),
            }
        })
    })?;
    Ok((shared, local))
}

async fn accept_loop(listener: tokio::net::TcpListener, snapshots: watch::Receiver<Arc<Current>>) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let mut told = false;
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                crate::server_accept::pause_after_error("--metrics-listen", &e, &mut told).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else { continue };
        let snapshots = snapshots.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req| answer(req, snapshots.clone()));
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .keep_alive(false)
                .max_buf_size(MAX_REQUEST_HEAD)
                .serve_connection(TokioIo::new(stream), svc);
            let _ = tokio::time::timeout(CONNECTION_TIMEOUT, conn).await;
            drop(slot);
        });
    }
}

async fn answer(
    req: Request<hyper::body::Incoming>,
    snapshots: watch::Receiver<Arc<Current>>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let (status, body) = if req.method() == hyper::Method::GET && req.uri().path() == "/metrics" {
        // The snapshot is copied out (an Arc) and rendered off the server's thread: the service's probe
        // reads files or asks another machine.
        let snapshot = snapshots.borrow().clone();
        match tokio::task::spawn_blocking(move || render(&snapshot)).await {
            Ok(body) => (StatusCode::OK, body),
            Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "rendering failed\n".to_string()),
        }
    } else {
        (StatusCode::NOT_FOUND, "try /metrics\n".to_string())
    };
    let resp = Response::builder()
        .status(status)
        .header("Content-Type", "text/plain; version=0.0.4")
        .body(Full::new(Bytes::from(body)))
        .expect("a valid response");
    Ok(resp)
}

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

pub fn render(c: &Current) -> String {
    let mut out = String::new();
    let labels = format!("service=\"{}\",run=\"{}\",step=\"{}\"", esc(&c.service), c.run, esc(&c.step));
    let mut gauge = |name: &str, help: &str, value: f64| {
        out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} gauge\n{name}{{{labels}}} {value}\n"));
    };
    gauge("svcbench_step_active", "1 while a load step is under way", if c.live.is_some() { 1.0 } else { 0.0 });
    if let Some(live) = &c.live {
        let s = live.snapshot();
        gauge("svcbench_requests_ok", "successful requests in the current step so far", s.requests_ok as f64);
        gauge("svcbench_requests_error", "failed requests in the current step so far", s.errors as f64);
        if let Some(sec) = s.last_second {
            gauge("svcbench_last_second_requests_ok", "successful requests in the last complete second", sec.ok as f64);
            gauge("svcbench_last_second_errors", "failed requests in the last complete second", sec.errors as f64);
            gauge("svcbench_latency_p50_seconds", "median latency in the last complete second", sec.p50_ms / 1e3);
            gauge(
                "svcbench_latency_p99_seconds",
                "99th percentile latency in the last complete second",
                sec.p99_ms / 1e3,
            );
        }
    }
    if let Some(p) = &c.probe {
        let s = p.sample();
        gauge("svcbench_service_cpu_seconds", "service CPU time since its start", s.cpu_s);
        gauge("svcbench_service_memory_bytes", "service memory (cgroup) now", s.mem_mib * 1048576.0);
        gauge("svcbench_service_rss_bytes", "service resident set size now", s.rss_mib * 1048576.0);
        gauge("svcbench_service_threads", "service threads now", s.threads as f64);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::time::Instant;

    fn scrape(addr: SocketAddr) -> String {
        let agent = crate::http_client::builder(Duration::from_secs(1)).timeout(Duration::from_secs(1)).build();
        agent.get(&format!("http://{addr}/metrics")).call().unwrap().into_string().unwrap()
    }

    #[test]
    fn a_silent_connection_does_not_stop_a_second_scrape_and_it_shows_what_was_last_published() {
        let (shared, addr) = start("127.0.0.1:0".parse().unwrap()).unwrap();
        let live = Arc::new(loadgen::LiveStats::default());
        live.requests_ok.store(41, std::sync::atomic::Ordering::Relaxed);
        shared.publish(Current { service: "hello".into(), run: 2, step: "c=8".into(), live: Some(live), probe: None });
        let _silent = TcpStream::connect(addr).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        let t0 = Instant::now();
        let body = scrape(addr);
        assert!(t0.elapsed() < Duration::from_secs(1), "answered after {:?}", t0.elapsed());
        assert!(body.contains("svcbench_requests_ok{service=\"hello\",run=\"2\",step=\"c=8\"} 41"), "{body}");
        shared.step_ended();
        assert!(scrape(addr).contains("svcbench_step_active{service=\"hello\",run=\"2\",step=\"c=8\"} 0"));
    }

    #[test]
    fn a_client_that_drips_its_request_head_is_closed_after_the_header_timeout() {
        let (_shared, addr) = start("127.0.0.1:0".parse().unwrap()).unwrap();
        let mut slow = TcpStream::connect(addr).unwrap();
        slow.set_read_timeout(Some(Duration::from_millis(250))).unwrap();
        slow.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n").unwrap();
        let t0 = Instant::now();
        let mut buf = [0u8; 1024];
        let closed_after = loop {
            assert!(t0.elapsed() < HEADER_READ_TIMEOUT + Duration::from_secs(3), "still open after {:?}", t0.elapsed());
            // One more header line every quarter second: the head never ends.
            if slow.write_all(b"X-Slow: 1\r\n").is_err() {
                break t0.elapsed();
            }
            match slow.read(&mut buf) {
                Ok(_) => break t0.elapsed(),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock || e.kind() == std::io::ErrorKind::TimedOut => {}
                Err(_) => break t0.elapsed(),
            }
        };
        assert!(closed_after >= HEADER_READ_TIMEOUT - Duration::from_millis(500), "closed after {closed_after:?}");
        let answer = String::from_utf8_lossy(&buf);
        assert!(!answer.contains("200 OK"), "{answer}");
    }
}

//! `svcbench run --metrics-listen ADDR`: the current step's figures in the Prometheus text format, for
//! people who already watch their services with Prometheus (seed 004 used cAdvisor + Prometheus + Grafana).
//! A tiny blocking server is enough: one scrape every few seconds.
use crate::sandbox::Probe;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};

/// What the runner publishes while a step is under way.
#[derive(Clone, Default)]
pub struct Current {
    pub service: String,
    pub run: u32,
    pub step: String,
    pub live: Option<Arc<loadgen::LiveStats>>,
    pub probe: Option<Arc<dyn Probe>>,
}

pub type Shared = Arc<Mutex<Current>>;

pub fn serve(addr: SocketAddr) -> anyhow::Result<Shared> {
    let listener =
        TcpListener::bind(addr).map_err(|e| anyhow::anyhow!("--metrics-listen {addr}: cannot listen: {e}"))?;
    eprintln!("svcbench: live metrics on http://{}/metrics", listener.local_addr()?);
    let shared: Shared = Arc::default();
    let s2 = shared.clone();
    std::thread::Builder::new().name("metrics".into()).spawn(move || {
        for conn in listener.incoming().flatten() {
            let mut reader = BufReader::new(&conn);
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            // Drain the request head.
            let mut h = String::new();
            while reader.read_line(&mut h).map(|n| n > 2).unwrap_or(false) {
                h.clear();
            }
            let (status, body) = if line.starts_with("GET /metrics") {
                ("200 OK", render(&s2.lock().unwrap().clone()))
            } else {
                ("404 Not Found", "try /metrics\n".to_string())
            };
            let mut w = &conn;
            let _ = write!(
                w,
                "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    })?;
    Ok(shared)
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

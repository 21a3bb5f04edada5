//! Readiness over HTTP: a free port, and the poll that times a service's startup (on loopback, or
//! at a part's address on the `--net` network).
use anyhow::{bail, Result};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

pub fn free_port() -> Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?.local_addr()?.port())
}

/// One GET; the status code of the answer, if one arrives within `timeout`.
pub fn get_status(addr: SocketAddr, path: &str, timeout: Duration) -> Option<u16> {
    let mut s = TcpStream::connect_timeout(&addr, timeout).ok()?;
    s.set_read_timeout(Some(timeout)).ok()?;
    s.set_nodelay(true).ok()?;
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes()).ok()?;
    let mut buf = [0u8; 64];
    let mut n = 0;
    while n < 12 {
        match s.read(&mut buf[n..]) {
            Ok(0) | Err(_) => return None,
            Ok(k) => n += k,
        }
    }
    let head = std::str::from_utf8(&buf[..n]).ok()?;
    head.strip_prefix("HTTP/1.")?.get(2..5)?.parse().ok()
}

pub enum Readiness {
    Ready { after: Duration },
    Exited,
    Interrupted,
    TimedOut,
}

/// Polls `path` about every 0.5 ms (the issue asks for at least every millisecond) until the first HTTP
/// answer of any status, measured from `since` (the spawn). `gone` says the process died; `stop` the user
/// pressed Ctrl-C.
pub fn wait_ready(
    addr: SocketAddr,
    path: &str,
    since: Instant,
    timeout: Duration,
    mut gone: impl FnMut() -> bool,
    stop: &std::sync::atomic::AtomicBool,
) -> Readiness {
    loop {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Readiness::Interrupted;
        }
        if gone() {
            return Readiness::Exited;
        }
        if since.elapsed() > timeout {
            return Readiness::TimedOut;
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok() {
            // Listening: now ask on a fresh connection and time the answer (an accepting socket is not yet
            // an answering service, e.g. a JVM still wiring its routes).
            if get_status(addr, path, Duration::from_millis(1000)).is_some() {
                return Readiness::Ready { after: since.elapsed() };
            }
        }
        std::thread::sleep(Duration::from_micros(500));
    }
}

/// Waits for an answer of any status (dependencies, test servers).
pub fn wait_http(addr: SocketAddr, path: &str, timeout: Duration) -> Result<()> {
    match crate::poll::until(timeout, Duration::from_millis(5), || get_status(addr, path, Duration::from_millis(500))) {
        Some(_) => Ok(()),
        None => bail!("no HTTP answer on {addr}{path} within {timeout:?}"),
    }
}

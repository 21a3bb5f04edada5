//! Readiness over HTTP: a free port, and the poll that times a service's startup (on loopback, or
//! at a part's address on the `--net` network).
use anyhow::{bail, Result};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
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

/// Polls `path` about every 0.5 ms (a startup is timed to the millisecond) until the first HTTP answer of
/// any status, measured from `since` (the spawn). `gone` says the process died; `stop` the user pressed
/// Ctrl-C.
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
        if answers(addr, path) {
            return Readiness::Ready { after: since.elapsed() };
        }
        std::thread::sleep(POLL);
    }
}

const POLL: Duration = Duration::from_micros(500);

/// Whether the service answers on `path` now.
fn answers(addr: SocketAddr, path: &str) -> bool {
    // Listening first, then asked on a fresh connection (an accepting socket is not yet an answering
    // service, e.g. a JVM still wiring its routes).
    TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok()
        && get_status(addr, path, Duration::from_millis(1000)).is_some()
}

/// The moment a service first answered, watched from a thread of its own from its spawn on, so that work
/// svcbench does meanwhile (reading a container's limits back while the runtime still sets them, up to
/// seconds) does not stretch the startup it times.
pub struct FirstAnswer {
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Option<Instant>>>,
}

impl FirstAnswer {
    pub fn watch(addr: SocketAddr, path: &str, timeout: Duration) -> FirstAnswer {
        let done = Arc::new(AtomicBool::new(false));
        let (d, path, t0) = (done.clone(), path.to_string(), Instant::now());
        let thread = std::thread::spawn(move || {
            while !d.load(Ordering::Relaxed) && t0.elapsed() < timeout {
                if answers(addr, &path) {
                    return Some(Instant::now());
                }
                std::thread::sleep(POLL);
            }
            None
        });
        FirstAnswer { done, thread: Some(thread) }
    }

    /// Ends the watch: when the service first answered, if it was seen to.
    pub fn finish(mut self) -> Option<Instant> {
        self.done.store(true, Ordering::Relaxed);
        self.thread.take().and_then(|t| t.join().ok().flatten())
    }
}

impl Drop for FirstAnswer {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
    }
}

/// Waits for an answer of any status (dependencies, test servers).
pub fn wait_http(addr: SocketAddr, path: &str, timeout: Duration) -> Result<()> {
    match crate::poll::until(timeout, Duration::from_millis(5), || get_status(addr, path, Duration::from_millis(500))) {
        Some(_) => Ok(()),
        None => bail!("no HTTP answer on {addr}{path} within {timeout:?}"),
    }
}

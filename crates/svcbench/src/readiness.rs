//! Readiness over HTTP: a free port, and the watch that times a service's startup (on loopback, or
//! at a part's address on the `--net` network).
use anyhow::{bail, Result};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
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

/// Waits until the service's first HTTP answer of any status, as its watch saw it, measured from `since`
/// (the spawn). `gone` says the process died; `stop` the user pressed Ctrl-C. The watch alone connects: one
/// poller per service, so the startup timed is not shared between two of them.
pub fn wait_ready(
    watch: &FirstAnswer,
    since: Instant,
    timeout: Duration,
    mut gone: impl FnMut() -> bool,
    stop: &AtomicBool,
) -> Readiness {
    loop {
        if stop.load(Ordering::Relaxed) {
            return Readiness::Interrupted;
        }
        // Before `gone`: a service that answered and then exited did start.
        if let Some(at) = watch.seen() {
            return Readiness::Ready { after: at.saturating_duration_since(since) };
        }
        if gone() {
            return Readiness::Exited;
        }
        if since.elapsed() > timeout {
            return Readiness::TimedOut;
        }
        std::thread::sleep(POLL);
    }
}

/// A startup is timed to the millisecond.
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
/// seconds) does not stretch the startup it times. The watch ends when it is dropped or after `timeout`.
pub struct FirstAnswer {
    done: Arc<AtomicBool>,
    seen: Arc<OnceLock<Instant>>,
}

impl FirstAnswer {
    pub fn watch(addr: SocketAddr, path: &str, timeout: Duration) -> FirstAnswer {
        let (done, seen) = (Arc::new(AtomicBool::new(false)), Arc::new(OnceLock::new()));
        let (d, s, path, t0) = (done.clone(), seen.clone(), path.to_string(), Instant::now());
        std::thread::spawn(move || {
            while !d.load(Ordering::Relaxed) && t0.elapsed() < timeout {
                if answers(addr, &path) {
                    let _ = s.set(Instant::now());
                    return;
                }
                std::thread::sleep(POLL);
            }
        });
        FirstAnswer { done, seen }
    }

    /// When the service first answered, once it has.
    pub fn seen(&self) -> Option<Instant> {
        self.seen.get().copied()
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// A server that answers its first request only, `after` from now, then stops listening.
    fn answers_once(after: Duration) -> SocketAddr {
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            std::thread::sleep(after);
            // The watch's connect probe, then its GET on a fresh connection.
            for (i, conn) in l.incoming().enumerate() {
                let mut s = conn.unwrap();
                if i == 0 {
                    continue;
                }
                let mut buf = [0u8; 512];
                let _ = s.read(&mut buf);
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
                return;
            }
        });
        addr
    }

    #[test]
    fn the_startup_is_the_watchs_first_answer_and_nothing_else_asks_the_service() {
        let since = Instant::now();
        let addr = answers_once(Duration::from_millis(200));
        let watch = FirstAnswer::watch(addr, "/", Duration::from_secs(10));
        let stop = AtomicBool::new(false);
        // A service answering once only is still seen ready: a second poller would wait for a second answer.
        match wait_ready(&watch, since, Duration::from_secs(5), || false, &stop) {
            Readiness::Ready { after } => {
                assert!(after >= Duration::from_millis(200) && after < Duration::from_secs(2), "{after:?}")
            }
            _ => panic!("not seen ready"),
        }
    }

    #[test]
    fn a_service_that_never_answers_is_gone_timed_out_or_interrupted() {
        let addr: SocketAddr = (Ipv4Addr::LOCALHOST, free_port().unwrap()).into();
        let watch = FirstAnswer::watch(addr, "/", Duration::from_secs(10));
        let stop = AtomicBool::new(false);
        let now = Instant::now();
        assert!(matches!(wait_ready(&watch, now, Duration::from_secs(5), || true, &stop), Readiness::Exited));
        assert!(matches!(wait_ready(&watch, now, Duration::from_millis(50), || false, &stop), Readiness::TimedOut));
        stop.store(true, Ordering::Relaxed);
        assert!(matches!(wait_ready(&watch, now, Duration::from_secs(5), || false, &stop), Readiness::Interrupted));
    }
}

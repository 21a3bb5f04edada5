//! Purpose-built loopback test servers: a thread per connection, blocking I/O, each answering
//! with whatever the test's handler writes.

#![allow(dead_code)]

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use loadgen::{LoadConfig, Model, RequestMix, Target};

/// Timing-sensitive tests run one at a time: the machine has few cores.
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub head: String,
    pub body: Vec<u8>,
}

/// What to do after answering: keep reading requests on this connection, or close it.
pub enum Next {
    KeepOpen,
    Close,
}

pub type Handler = dyn Fn(&Seen, &mut TcpStream) -> io::Result<Next> + Send + Sync;

pub struct TestServer {
    pub addr: SocketAddr,
    pub accepted: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl TestServer {
    /// Serves every connection with `handler`; `max_accept` stops accepting after that many
    /// connections (the listener stays open, so the rest wait in the backlog or time out).
    pub fn start(max_accept: Option<usize>, handler: Arc<Handler>) -> TestServer {
        TestServer::with_backlog(max_accept, 1024, handler)
    }

    /// Like [`TestServer::start`], with the listen backlog given (connections the kernel
    /// completes before they are accepted; beyond it, SYNs are dropped).
    pub fn with_backlog(max_accept: Option<usize>, backlog: i32, handler: Arc<Handler>) -> TestServer {
        let listener = listen(backlog);
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicUsize::new(0));
        let (stop2, accepted2) = (stop.clone(), accepted.clone());
        let acceptor = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let n = accepted2.fetch_add(1, Ordering::SeqCst) + 1;
                let handler = handler.clone();
                std::thread::spawn(move || serve_connection(conn, handler.as_ref()));
                if max_accept.is_some_and(|max| n >= max) {
                    // Keep the listener open but never accept again.
                    while !stop2.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    break;
                }
            }
        });
        TestServer { addr, accepted, stop, acceptor: Some(acceptor) }
    }

    /// Answers every request with `response`, keeping the connection open.
    pub fn fixed(response: &'static [u8]) -> TestServer {
        TestServer::start(
            None,
            Arc::new(move |_: &Seen, s: &mut TcpStream| {
                s.write_all(response)?;
                Ok(Next::KeepOpen)
            }),
        )
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn target(&self) -> Target {
        Target::parse(&self.url()).unwrap()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the acceptor if it is blocked in accept().
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_millis(100));
        if let Some(h) = self.acceptor.take() {
            let _ = h.join();
        }
    }
}

fn listen(backlog: i32) -> TcpListener {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).expect("socket");
    socket.set_reuse_address(true).unwrap();
    socket.bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into()).expect("bind test server");
    socket.listen(backlog).expect("listen");
    socket.into()
}

/// Serves requests on one connection with `handler` until it closes or the handler says so.
pub fn serve_connection(mut conn: TcpStream, handler: &Handler) {
    let _ = conn.set_nodelay(true);
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        // Read one request: head, then Content-Length bytes of body.
        let head_end = loop {
            if let Some(i) = find(&buf, b"\r\n\r\n") {
                break i + 4;
            }
            match conn.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
        let len = head
            .lines()
            .find_map(|l| {
                let (n, v) = l.split_once(':')?;
                n.eq_ignore_ascii_case("content-length").then(|| v.trim().parse::<usize>().ok())?
            })
            .unwrap_or(0);
        while buf.len() < head_end + len {
            match conn.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let seen = Seen { head, body: buf[head_end..head_end + len].to_vec() };
        buf.drain(..head_end + len);
        match handler(&seen, &mut conn) {
            Ok(Next::KeepOpen) => {}
            _ => return,
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// A closed-model config with test-friendly timeouts.
pub fn closed(target: Target, connections: usize, duration_ms: u64) -> LoadConfig {
    let mut c = LoadConfig::new(target, RequestMix::single("GET", "/"), Model::closed(connections));
    c.duration = Duration::from_millis(duration_ms);
    c.threads = 1;
    c.connect_timeout = Duration::from_millis(500);
    c.request_timeout = Duration::from_secs(2);
    c
}

/// An open-model config at a constant rate, on one thread (default timeouts).
pub fn open_model(target: Target, rate: f64, max_connections: usize, duration: Duration) -> LoadConfig {
    let mut c = LoadConfig::new(
        target,
        RequestMix::single("GET", "/"),
        Model::Open(loadgen::Open { rate: loadgen::RateRamp::constant(rate), max_connections }),
    );
    c.duration = duration;
    c.threads = 1;
    c
}

/// A port with nothing listening on it.
pub fn dead_port() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

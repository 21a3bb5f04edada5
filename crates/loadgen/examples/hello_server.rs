//! A tiny, fast HTTP/1.1 server for measuring the generator itself (bench/open-model-lag.sh):
//! one thread, mio, every request answered at once with a fixed "Hello, World!". It parses no
//! more than the end of each request head, so the target costs as little CPU as possible and
//! the generator's own lateness is what the bench sees. Loopback only.
//! `cargo run --release -p loadgen --example hello_server -- 127.0.0.1:18090`

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};

const RESPONSE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\nContent-Type: text/plain\r\n\r\nHello, World!";
const LISTENER: Token = Token(usize::MAX);

fn main() -> std::io::Result<()> {
    let addr: SocketAddr =
        std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:18090".into()).parse().map_err(|e| {
            std::io::Error::new(ErrorKind::InvalidInput, format!("give the address as 127.0.0.1:PORT: {e}"))
        })?;
    if !addr.ip().is_loopback() {
        return Err(std::io::Error::new(ErrorKind::InvalidInput, "the bench server listens on loopback only"));
    }
    let mut poll = Poll::new()?;
    let mut listener = TcpListener::bind(addr)?;
    poll.registry().register(&mut listener, LISTENER, Interest::READABLE)?;
    let mut conns: HashMap<usize, (TcpStream, Vec<u8>)> = HashMap::new();
    let mut next = 0usize;
    let mut events = Events::with_capacity(1024);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        poll.poll(&mut events, None)?;
        for event in events.iter() {
            if event.token() == LISTENER {
                while let Ok((mut s, _)) = listener.accept() {
                    let _ = s.set_nodelay(true);
                    poll.registry().register(&mut s, Token(next), Interest::READABLE)?;
                    conns.insert(next, (s, Vec::new()));
                    next += 1;
                }
                continue;
            }
            let id = event.token().0;
            let Some((s, pending)) = conns.get_mut(&id) else { continue };
            let mut done = false;
            loop {
                match s.read(&mut buf) {
                    Ok(0) => {
                        done = true;
                        break;
                    }
                    Ok(n) => pending.extend_from_slice(&buf[..n]),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(_) => {
                        done = true;
                        break;
                    }
                }
            }
            // One answer per complete request head (the bench sends GETs without a body).
            let mut out = Vec::new();
            while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                pending.drain(..end + 4);
                out.extend_from_slice(RESPONSE);
            }
            if !out.is_empty() && s.write_all(&out).is_err() {
                done = true;
            }
            if done {
                conns.remove(&id);
            }
        }
    }
}

//! One client connection: non-blocking connect, writing a pre-serialized request, reading and
//! parsing the response. It reports what happened; the worker decides what comes next.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Instant;

use mio::net::TcpStream;
use mio::{Interest, Registry, Token};

use crate::http::parser::{Parsed, ResponseParser};
use crate::request::template::{Prepared, RequestFactory};

/// Why a request (or connection attempt) failed; maps onto the report's error kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    ConnectRefused,
    ConnectTimeout,
    /// The generator's own limits (descriptors, local ports, memory), not the service's answer.
    ClientResource,
    /// Reset, or a read or write error, with a request in flight.
    Reset,
    /// Clean end of stream with a request in flight, before the response was complete.
    ClosedEarly,
    RequestTimeout,
    Malformed,
}

impl Failure {
    /// A failed socket()/connect(): the client's own limits, or the target refusing. Users
    /// must be able to tell them apart, since only the second says anything about the service.
    pub(crate) fn of_connect(e: &io::Error) -> Failure {
        match e.raw_os_error() {
            Some(libc::EMFILE | libc::ENFILE | libc::EADDRNOTAVAIL | libc::ENOBUFS | libc::ENOMEM) => {
                Failure::ClientResource
            }
            _ => Failure::ConnectRefused,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum State {
    /// No socket; the worker decides when to connect again.
    Closed,
    Connecting,
    /// Connected, no request in flight.
    Idle,
    /// Request partly written.
    Sending,
    /// Request written, waiting for (the rest of) the response.
    Awaiting,
}

/// What an I/O step produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Nothing,
    Connected,
    /// A complete response. `reusable`: the connection stays open for another request.
    Response {
        status: u16,
        reusable: bool,
    },
    /// The request in flight (or the connection attempt) failed; the socket is closed.
    Failed(Failure),
    /// The server closed (or wrote to) a connection with no request in flight; it is closed.
    ClosedIdle,
}

/// What a readiness event reported.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ready {
    pub readable: bool,
    pub writable: bool,
    /// The peer closed its side (or the socket failed): reading will reach the end.
    pub peer_closed: bool,
}

/// Bytes moved by an I/O step, for the report.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Traffic {
    pub bytes_in: u64,
    pub bytes_out: u64,
}

pub(crate) struct Connection {
    stream: Option<TcpStream>,
    /// False when requests carry `Connection: close`: one request per connection.
    keepalive: bool,
    pub(crate) state: State,
    /// When the connect or the request write started (for timeouts).
    pub(crate) since: Instant,
    /// Latency origin of the request in flight: its send time (closed model) or intended time.
    pub(crate) origin: Instant,
    fixed: Option<Rc<[u8]>>,
    rendered: Vec<u8>,
    written: usize,
    parser: ResponseParser,
    /// Unparsed response bytes carried to the next read (a head split across reads).
    carry: Vec<u8>,
    /// The slot's history over the run (a slot keeps it across reconnects), for the fairness
    /// figures: connects tried, ever connected, requests sent, complete responses.
    pub(crate) tried: bool,
    pub(crate) connected_once: bool,
    pub(crate) sent: u64,
    pub(crate) answers: u64,
    /// The last connect attempt failed and no connect has succeeded since.
    pub(crate) connect_failing: bool,
}

impl Connection {
    pub(crate) fn new(now: Instant, keepalive: bool) -> Connection {
        Connection {
            stream: None,
            keepalive,
            state: State::Closed,
            since: now,
            origin: now,
            fixed: None,
            rendered: Vec::new(),
            written: 0,
            parser: ResponseParser::default(),
            carry: Vec::new(),
            tried: false,
            connected_once: false,
            sent: 0,
            answers: 0,
            connect_failing: false,
        }
    }

    /// Starts a non-blocking connect. Loopback refusals often fail right here.
    pub(crate) fn connect(&mut self, addr: SocketAddr, registry: &Registry, token: Token, now: Instant) -> Outcome {
        self.close();
        self.since = now;
        self.tried = true;
        let mut stream = match TcpStream::connect(addr) {
            Ok(s) => s,
            Err(e) => return Outcome::Failed(Failure::of_connect(&e)),
        };
        // Readable and writable once, edge-triggered: no re-registration per request. Failing
        // to register is the generator's own limit (epoll's memory or watch count).
        if registry.register(&mut stream, token, Interest::READABLE | Interest::WRITABLE).is_err() {
            return Outcome::Failed(Failure::ClientResource);
        }
        // Requests are single small writes; don't let Nagle hold them back.
        let _ = stream.set_nodelay(true);
        self.stream = Some(stream);
        self.state = State::Connecting;
        Outcome::Nothing
    }

    pub(crate) fn close(&mut self) {
        // Dropping the socket closes it, which also removes it from epoll.
        self.stream = None;
        self.state = State::Closed;
        self.carry.clear();
    }

    fn fail(&mut self, why: Failure) -> Outcome {
        self.close();
        Outcome::Failed(why)
    }

    /// Called on any readiness event while connecting.
    pub(crate) fn finish_connect(&mut self) -> Outcome {
        let Some(stream) = &self.stream else {
            return Outcome::Nothing;
        };
        match stream.take_error() {
            Ok(None) => {}
            Ok(Some(e)) | Err(e) => return self.fail(Failure::of_connect(&e)),
        }
        match stream.peer_addr() {
            Ok(_) => {
                self.state = State::Idle;
                Outcome::Connected
            }
            // Spurious wake-up: still connecting.
            Err(e) if e.kind() == io::ErrorKind::NotConnected => Outcome::Nothing,
            Err(_) => self.fail(Failure::ConnectRefused),
        }
    }

    /// Takes the next request from `factory` and starts writing it.
    pub(crate) fn send(
        &mut self,
        factory: &mut RequestFactory,
        origin: Instant,
        now: Instant,
        traffic: &mut Traffic,
    ) -> Outcome {
        debug_assert_eq!(self.state, State::Idle);
        let (prepared, head) = factory.next(&mut self.rendered);
        self.fixed = match prepared {
            Prepared::Fixed(bytes) => Some(bytes),
            Prepared::Rendered => None,
        };
        self.written = 0;
        self.parser.start(head);
        self.origin = origin;
        self.since = now;
        self.sent += 1;
        self.state = State::Sending;
        self.write(traffic)
    }

    /// Writes what is left of the request.
    pub(crate) fn write(&mut self, traffic: &mut Traffic) -> Outcome {
        let Some(stream) = &mut self.stream else {
            return Outcome::Nothing;
        };
        let bytes: &[u8] = match &self.fixed {
            Some(b) => b,
            None => &self.rendered,
        };
        while self.written < bytes.len() {
            match stream.write(&bytes[self.written..]) {
                Ok(0) => return self.fail(Failure::Reset),
                Ok(n) => {
                    self.written += n;
                    traffic.bytes_out += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Outcome::Nothing,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return self.fail(Failure::Reset),
            }
        }
        self.state = State::Awaiting;
        Outcome::Nothing
    }

    /// Reads what arrived and parses it. `buf` is the worker's shared read buffer.
    /// `peer_closed`: the event said the peer shut down, so read on to the end of the stream.
    pub(crate) fn read(&mut self, buf: &mut [u8], peer_closed: bool, traffic: &mut Traffic) -> Outcome {
        let Some(stream) = &mut self.stream else {
            return Outcome::Nothing;
        };
        let mut filled = self.carry.len();
        buf[..filled].copy_from_slice(&self.carry);
        self.carry.clear();
        loop {
            let room = buf.len() - filled;
            if room == 0 {
                // The head does not fit the read buffer.
                return self.fail(Failure::Malformed);
            }
            let n = match stream.read(&mut buf[filled..]) {
                Ok(0) => return self.on_eof(),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return self.on_reset(),
            };
            traffic.bytes_in += n as u64;
            filled += n;
            if !matches!(self.state, State::Sending | State::Awaiting) {
                // Bytes nobody asked for (e.g. a 408 on an idle keep-alive connection).
                if self.state == State::Idle {
                    self.close();
                    return Outcome::ClosedIdle;
                }
                return self.fail(Failure::Malformed);
            }
            match self.parser.parse(&buf[..filled]) {
                Ok(Parsed::Complete { consumed }) => {
                    // Bytes after the answer to the only request in flight: a second response to one
                    // request is a protocol violation, not a clean answer.
                    if consumed < filled && self.state == State::Awaiting {
                        return self.fail(Failure::Malformed);
                    }
                    let status = self.parser.status();
                    // Not reusable: an early answer (before the request was fully written), a
                    // server that closed after answering (without saying so), extra bytes.
                    let reusable = self.keepalive
                        && self.parser.keep_alive()
                        && consumed == filled
                        && self.state == State::Awaiting
                        && !peer_closed;
                    if reusable {
                        self.state = State::Idle;
                    } else {
                        // The server said close, or sent more than the response: start afresh.
                        self.close();
                    }
                    return Outcome::Response { status, reusable };
                }
                Ok(Parsed::Partial { consumed }) => {
                    buf.copy_within(consumed..filled, 0);
                    filled -= consumed;
                }
                Err(_) => return self.fail(Failure::Malformed),
            }
            // A short read drained the socket; edge-triggered readiness fires again when more
            // arrives, so skip the read that would only return WouldBlock. Not so when the
            // peer's FIN came with this event: no new event will report it.
            if n < room && !peer_closed {
                break;
            }
        }
        self.carry.extend_from_slice(&buf[..filled]);
        Outcome::Nothing
    }

    fn on_eof(&mut self) -> Outcome {
        match self.state {
            State::Awaiting if self.parser.on_eof() => {
                let status = self.parser.status();
                self.close();
                Outcome::Response { status, reusable: false }
            }
            State::Awaiting | State::Sending => self.fail(Failure::ClosedEarly),
            _ => {
                self.close();
                Outcome::ClosedIdle
            }
        }
    }

    fn on_reset(&mut self) -> Outcome {
        match self.state {
            State::Awaiting | State::Sending => self.fail(Failure::Reset),
            _ => {
                self.close();
                Outcome::ClosedIdle
            }
        }
    }

    /// Handles a readiness event.
    pub(crate) fn on_event(&mut self, ready: Ready, buf: &mut [u8], traffic: &mut Traffic) -> Outcome {
        let Ready { readable, writable, peer_closed } = ready;
        match self.state {
            State::Closed => Outcome::Nothing,
            State::Connecting => self.finish_connect(),
            State::Sending => {
                if writable {
                    let out = self.write(traffic);
                    if out != Outcome::Nothing {
                        return out;
                    }
                }
                if readable {
                    self.read(buf, peer_closed, traffic)
                } else {
                    Outcome::Nothing
                }
            }
            State::Idle | State::Awaiting => {
                if readable {
                    self.read(buf, peer_closed, traffic)
                } else {
                    Outcome::Nothing
                }
            }
        }
    }

    pub(crate) fn is_busy(&self) -> bool {
        matches!(self.state, State::Sending | State::Awaiting)
    }

    /// When its connect or request in flight started (None: idle or closed).
    pub(crate) fn pending_since(&self) -> Option<Instant> {
        matches!(self.state, State::Connecting | State::Sending | State::Awaiting).then_some(self.since)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clients_own_limits_are_not_refusals() {
        for errno in [libc::EMFILE, libc::ENFILE, libc::EADDRNOTAVAIL, libc::ENOBUFS, libc::ENOMEM] {
            assert_eq!(Failure::of_connect(&io::Error::from_raw_os_error(errno)), Failure::ClientResource, "{errno}");
        }
        for errno in [libc::ECONNREFUSED, libc::ENETUNREACH, libc::EHOSTUNREACH] {
            assert_eq!(Failure::of_connect(&io::Error::from_raw_os_error(errno)), Failure::ConnectRefused, "{errno}");
        }
        assert_eq!(Failure::of_connect(&io::Error::other("no errno")), Failure::ConnectRefused);
    }
}

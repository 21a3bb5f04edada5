//! The one place svcbench's own HTTP calls (the store, the mock upstream, the conformance checks) get their
//! client: every agent has a connect, read and write timeout, so a peer that accepts a connection and never
//! answers ends the call with an error naming the wait instead of hanging the run.
use std::time::Duration;

/// How long a connection may take to open: a peer on a lab network answers a SYN in milliseconds.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a short question to the store or the upstream (a count, an index, a setting) may wait for
/// each read of its answer.
pub const READ_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest answer svcbench reads from the store (a bulk load's answer, a few MiB, is the largest it
/// needs): a peer that sends more gets an error, not svcbench's memory.
pub const MAX_ANSWER_BYTES: u64 = 32 << 20;
/// The longest answer to a short question (a count, the store's health, the mock upstream's counter).
pub const MAX_SHORT_ANSWER_BYTES: u64 = 64 << 10;

/// An agent whose reads and writes each wait at most `read_timeout` (connecting: [`CONNECT_TIMEOUT`]).
pub fn agent(read_timeout: Duration) -> ureq::Agent {
    builder(read_timeout).build()
}

/// The same, for callers that set more (redirects, an overall deadline) before building it.
pub fn builder(read_timeout: Duration) -> ureq::AgentBuilder {
    ureq::AgentBuilder::new().timeout_connect(CONNECT_TIMEOUT).timeout_read(read_timeout).timeout_write(read_timeout)
}

/// A failed call in one line: a wait that ran out says which wait and how long it was.
pub fn describe(e: &ureq::Error, read_timeout: Duration) -> String {
    match e {
        ureq::Error::Transport(t) if is_timeout(t) => format!(
            "{}: no answer within {} s (connect timeout {} s, read timeout {} s)",
            t.url().map(|u| u.as_str()).unwrap_or("the peer"),
            read_timeout.as_secs(),
            CONNECT_TIMEOUT.as_secs(),
            read_timeout.as_secs()
        ),
        other => other.to_string().replace('\n', " "),
    }
}

fn is_timeout(t: &ureq::Transport) -> bool {
    use std::error::Error;
    let mut source = t.source();
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            return matches!(io.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock);
        }
        source = s.source();
    }
    false
}

/// A peer that accepts connections and never says a word, for as long as the test runs.
#[cfg(test)]
pub(crate) fn silent_peer() -> std::net::SocketAddr {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in listener.incoming().flatten() {
            held.push(conn);
        }
    });
    addr
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn a_peer_that_never_answers_ends_the_call_at_the_read_timeout() {
        let addr = silent_peer();
        let within = Duration::from_secs(1);
        let t0 = Instant::now();
        let err = agent(within).get(&format!("http://{addr}/")).call().unwrap_err();
        let took = t0.elapsed();
        assert!(took >= within && took < within * 5, "ended after {took:?}");
        let line = describe(&err, within);
        assert!(line.contains(&addr.to_string()) && line.contains("no answer within 1 s"), "{line}");
        assert!(!line.contains('\n'));
    }
}

//! A bounded fuzz run of the generator's HTTP/1.1 response parser, inside the normal test suite: valid
//! responses of every framing (Content-Length, chunked with extensions and trailers, until close, HEAD,
//! interim 1xx) split into random chunks parse to what they parse to whole; the same responses cut, with
//! bytes flipped or inserted, with huge lengths and bad chunk sizes, and arbitrary bytes, never panic,
//! always return, and never leave more than a head's worth of bytes for the connection to buffer.
//! (The open-ended fuzzer, `cargo fuzz`, is in crates/loadgen/fuzz/.)
use loadgen::http::parser::{ParseError, Parsed, ResponseParser, MAX_HEAD};
use loadgen::limits::ThreadCpuClock;
use proptest::prelude::*;
use std::time::Duration;

/// What a response parses to: its status, whether the connection stays open, and the bytes it took
/// (None: the bytes were not a complete response, with the error if the parser found one).
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Complete { status: u16, keep_alive: bool, consumed: usize },
    Incomplete,
    Error(ParseError),
}

/// Feeds `parts` the way a connection does: the bytes left unconsumed stay at the front of the buffer and
/// the next read is appended; the server closes after the last part. Checks after every call that the
/// parser left at most a head's worth of bytes (what the connection must keep buffered).
fn feed(parts: &[&[u8]], head_request: bool) -> Outcome {
    let mut p = ResponseParser::default();
    p.start(head_request);
    let mut buf: Vec<u8> = Vec::new();
    let mut consumed_total = 0;
    for part in parts {
        buf.extend_from_slice(part);
        match p.parse(&buf) {
            Err(e) => return Outcome::Error(e),
            Ok(Parsed::Complete { consumed }) => {
                assert!(consumed <= buf.len());
                return Outcome::Complete {
                    status: p.status(),
                    keep_alive: p.keep_alive(),
                    consumed: consumed_total + consumed,
                };
            }
            Ok(Parsed::Partial { consumed }) => {
                assert!(consumed <= buf.len());
                consumed_total += consumed;
                buf.drain(..consumed);
                assert!(buf.len() <= MAX_HEAD, "{} bytes left buffered", buf.len());
            }
        }
    }
    if p.on_eof() {
        return Outcome::Complete {
            status: p.status(),
            keep_alive: p.keep_alive(),
            consumed: consumed_total + buf.len(),
        };
    }
    Outcome::Incomplete
}

/// `wire` cut at the given points (sorted, deduplicated, within the length).
fn split<'a>(wire: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (wire.len() + 1)).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut parts = Vec::new();
    let mut at = 0;
    for c in cuts {
        parts.push(&wire[at..c]);
        at = c;
    }
    parts.push(&wire[at..]);
    parts
}

#[derive(Debug, Clone)]
enum Framing {
    Length,
    Chunked { sizes: Vec<usize>, extension: bool, trailer: bool },
    UntilClose,
}

/// A valid response: optional interim 1xx heads, a status, headers, and a body framed one of three ways.
fn response() -> impl Strategy<Value = (Vec<u8>, bool)> {
    let framing = prop_oneof![
        Just(Framing::Length),
        (proptest::collection::vec(1usize..300, 0..6), any::<bool>(), any::<bool>())
            .prop_map(|(sizes, extension, trailer)| Framing::Chunked { sizes, extension, trailer }),
        Just(Framing::UntilClose),
    ];
    (
        prop_oneof![Just(200u16), Just(201), Just(204), Just(304), Just(404), Just(503)],
        any::<bool>(),                                            // HTTP/1.0
        prop_oneof![Just(""), Just("close"), Just("keep-alive")], // Connection header
        0usize..3,                                                // interim 100 Continue heads
        proptest::collection::vec("[A-Za-z-]{1,12}: [ -~]{0,30}", 0..5),
        proptest::collection::vec(any::<u8>(), 0..400),
        framing,
        any::<bool>(), // a HEAD request
    )
        .prop_map(|(status, http10, connection, interim, headers, body, framing, head)| {
            let version = if http10 { "HTTP/1.0" } else { "HTTP/1.1" };
            let mut w = Vec::new();
            for _ in 0..interim {
                w.extend_from_slice(format!("{version} 100 Continue\r\n\r\n").as_bytes());
            }
            w.extend_from_slice(format!("{version} {status} X\r\n").as_bytes());
            for h in &headers {
                // Generated headers never set the framing; the framing below does.
                if !h.to_ascii_lowercase().starts_with("content-length")
                    && !h.to_ascii_lowercase().starts_with("transfer-encoding")
                    && !h.to_ascii_lowercase().starts_with("connection")
                {
                    w.extend_from_slice(format!("{h}\r\n").as_bytes());
                }
            }
            if !connection.is_empty() {
                w.extend_from_slice(format!("Connection: {connection}\r\n").as_bytes());
            }
            let no_body = head || status == 204 || status == 304;
            match &framing {
                Framing::Length => {
                    w.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
                    if !no_body {
                        w.extend_from_slice(&body);
                    }
                }
                Framing::Chunked { sizes, extension, trailer } => {
                    w.extend_from_slice(b"Transfer-Encoding: chunked\r\n\r\n");
                    if !no_body {
                        for s in sizes {
                            let ext = if *extension { ";name=value" } else { "" };
                            w.extend_from_slice(format!("{s:x}{ext}\r\n").as_bytes());
                            w.extend(std::iter::repeat_n(b'z', *s));
                            w.extend_from_slice(b"\r\n");
                        }
                        w.extend_from_slice(b"0\r\n");
                        if *trailer {
                            w.extend_from_slice(b"X-Trailer: 1\r\n");
                        }
                        w.extend_from_slice(b"\r\n");
                    }
                }
                Framing::UntilClose => {
                    w.extend_from_slice(b"\r\n");
                    if !no_body {
                        w.extend_from_slice(&body);
                    }
                }
            }
            (w, head)
        })
}

/// Every case must end well within this much CPU time.
const CASE_LIMIT: Duration = Duration::from_secs(1);

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn a_valid_response_split_anywhere_parses_as_it_does_whole(
        (wire, head) in response(),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
    ) {
        let started = ThreadCpuClock::start();
        let whole = feed(&[&wire], head);
        let Outcome::Complete { consumed, .. } = whole else { panic!("a valid response did not parse: {whole:?}") };
        prop_assert_eq!(consumed, wire.len());
        prop_assert_eq!(feed(&split(&wire, &cuts), head), whole.clone());
        // Byte by byte, the most a connection could split it.
        let bytes: Vec<&[u8]> = wire.chunks(1).collect();
        prop_assert_eq!(feed(&bytes, head), whole);
        prop_assert!(started.elapsed() < CASE_LIMIT);
    }

    #[test]
    fn a_mangled_response_never_panics_nor_hangs_nor_buffers_without_bound(
        (wire, head) in response(),
        cut in any::<usize>(),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..6),
        inserts in proptest::collection::vec((any::<usize>(), proptest::collection::vec(any::<u8>(), 1..8)), 0..3),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
    ) {
        let started = ThreadCpuClock::start();
        let mut w = wire[..cut % (wire.len() + 1)].to_vec();
        for (at, byte) in flips {
            if !w.is_empty() {
                let i = at % w.len();
                w[i] ^= byte;
            }
        }
        for (at, bytes) in inserts {
            let i = at % (w.len() + 1);
            w.splice(i..i, bytes);
        }
        if let Outcome::Complete { consumed, .. } = feed(&split(&w, &cuts), head) {
            prop_assert!(consumed <= w.len());
        }
        prop_assert!(started.elapsed() < CASE_LIMIT);
    }

    #[test]
    fn huge_lengths_and_bad_chunk_sizes_are_counted_or_refused(
        length in prop_oneof![Just(u64::MAX), Just(u64::MAX - 1), Just(1u64 << 63), any::<u64>()],
        size in prop_oneof![
            Just("fffffffffffffffff".to_string()),
            Just("-1".to_string()),
            Just("".to_string()),
            Just("1 2".to_string()),
            "[0-9a-fA-FxX;+ -]{0,24}",
        ],
        tail in proptest::collection::vec(any::<u8>(), 0..2048),
        cuts in proptest::collection::vec(any::<usize>(), 0..6),
    ) {
        let started = ThreadCpuClock::start();
        let mut w = format!("HTTP/1.1 200 OK\r\nContent-Length: {length}\r\n\r\n").into_bytes();
        w.extend_from_slice(&tail);
        match feed(&split(&w, &cuts), false) {
            // A body that long is still being counted when the server closes.
            Outcome::Incomplete => prop_assert!(length > tail.len() as u64),
            Outcome::Complete { consumed, .. } => prop_assert!(consumed as u64 <= w.len() as u64),
            Outcome::Error(e) => panic!("a valid Content-Length {length} was refused: {e}"),
        }
        let mut w = format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{size}\r\n").into_bytes();
        w.extend_from_slice(&tail);
        let _ = feed(&split(&w, &cuts), false);
        prop_assert!(started.elapsed() < CASE_LIMIT);
    }

    #[test]
    fn arbitrary_bytes_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..4096),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
        head in any::<bool>(),
    ) {
        let started = ThreadCpuClock::start();
        let mut with_status = b"HTTP/1.1 200 OK\r\n".to_vec();
        with_status.extend_from_slice(&bytes);
        for w in [&bytes, &with_status] {
            let _ = feed(&split(w, &cuts), head);
        }
        prop_assert!(started.elapsed() < CASE_LIMIT);
    }
}

#[test]
fn a_head_that_never_ends_is_refused_at_its_bound() {
    // One header line that keeps growing, fed a kilobyte at a time: refused once past MAX_HEAD, never
    // buffered beyond it.
    let mut wire = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
    wire.extend(std::iter::repeat_n(b'a', 4 * MAX_HEAD));
    let parts: Vec<&[u8]> = wire.chunks(1024).collect();
    assert_eq!(feed(&parts, false), Outcome::Error(ParseError::HeadTooLarge));
}

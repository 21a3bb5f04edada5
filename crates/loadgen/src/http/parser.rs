//! Incremental HTTP/1.1 response parser. The head is parsed with `httparse` once it is complete;
//! bodies (Content-Length, chunked, or until close) are counted, never buffered.

use std::fmt;

/// Largest response head accepted; a longer one is a malformed response.
pub const MAX_HEAD: usize = 64 * 1024;
const MAX_HEADERS: usize = 96;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// Not HTTP/1.x, a bad header, a bad length or chunk size.
    Invalid(&'static str),
    /// The head grew past [`MAX_HEAD`].
    HeadTooLarge,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Invalid(why) => write!(f, "malformed response: {why}"),
            ParseError::HeadTooLarge => write!(f, "response head larger than {MAX_HEAD} bytes"),
        }
    }
}

impl std::error::Error for ParseError {}

/// Progress after feeding bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed {
    /// The response is not complete; `consumed` bytes may be dropped from the front of the
    /// buffer (the rest must be fed again with more bytes appended).
    Partial { consumed: usize },
    /// The response ended after `consumed` bytes (the rest belongs to what follows).
    Complete { consumed: usize },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    Size { value: u64, digits: u8 },
    Extension { value: u64 },
    SizeLf { value: u64 },
    Data { left: u64 },
    DataCr,
    DataLf,
    TrailerLineStart,
    TrailerLine,
    EndLf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    Length {
        left: u64,
    },
    Chunked(Chunk),
    /// No length: the body ends when the server closes the connection.
    UntilClose,
    Done,
}

/// Parses one response at a time; [`ResponseParser::start`] before each request.
#[derive(Debug, Clone)]
pub struct ResponseParser {
    state: State,
    status: u16,
    keep_alive: bool,
    head_request: bool,
}

impl Default for ResponseParser {
    fn default() -> Self {
        ResponseParser { state: State::Head, status: 0, keep_alive: true, head_request: false }
    }
}

impl ResponseParser {
    /// Expect a new response; a HEAD request's response has no body whatever its headers say.
    pub fn start(&mut self, head_request: bool) {
        *self = ResponseParser { head_request, ..ResponseParser::default() };
    }

    /// Status of the response (valid once the head is parsed).
    pub fn status(&self) -> u16 {
        self.status
    }

    /// Whether the connection may carry another request after this response.
    pub fn keep_alive(&self) -> bool {
        self.keep_alive
    }

    /// True once the head has been read (bytes of this response were seen and understood).
    pub fn head_done(&self) -> bool {
        self.state != State::Head
    }

    /// Feeds the unconsumed bytes received so far for this response.
    pub fn parse(&mut self, buf: &[u8]) -> Result<Parsed, ParseError> {
        let mut pos = 0;
        loop {
            match self.state {
                State::Head => {
                    let head_len = match self.parse_head(&buf[pos..])? {
                        Some(n) => n,
                        None => return Ok(Parsed::Partial { consumed: pos }),
                    };
                    pos += head_len;
                }
                State::Length { left } => {
                    let take = left.min((buf.len() - pos) as u64);
                    pos += take as usize;
                    if take == left {
                        self.state = State::Done;
                    } else {
                        self.state = State::Length { left: left - take };
                        return Ok(Parsed::Partial { consumed: pos });
                    }
                }
                State::Chunked(chunk) => {
                    let (next, used) = chunked_step(chunk, &buf[pos..])?;
                    pos += used;
                    self.state = match next {
                        Some(c) => State::Chunked(c),
                        None => State::Done,
                    };
                    if next.is_some() && pos == buf.len() {
                        return Ok(Parsed::Partial { consumed: pos });
                    }
                }
                State::UntilClose => return Ok(Parsed::Partial { consumed: buf.len() }),
                State::Done => return Ok(Parsed::Complete { consumed: pos }),
            }
        }
    }

    /// The server closed the connection: true if that ends the response (a body without length).
    pub fn on_eof(&mut self) -> bool {
        if self.state == State::UntilClose {
            self.state = State::Done;
            true
        } else {
            false
        }
    }

    /// Parses a complete head at the start of `buf`; None if it is not complete yet.
    fn parse_head(&mut self, buf: &[u8]) -> Result<Option<usize>, ParseError> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut response = httparse::Response::new(&mut headers);
        let head_len = match response.parse(buf) {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => {
                return if buf.len() > MAX_HEAD { Err(ParseError::HeadTooLarge) } else { Ok(None) };
            }
            Err(httparse::Error::TooManyHeaders) => return Err(ParseError::Invalid("too many headers")),
            Err(httparse::Error::Status) => return Err(ParseError::Invalid("bad status line")),
            Err(httparse::Error::Version) => return Err(ParseError::Invalid("not an HTTP/1.x response")),
            Err(_) => return Err(ParseError::Invalid("bad header")),
        };
        if head_len > MAX_HEAD {
            return Err(ParseError::HeadTooLarge);
        }
        let status = response.code.unwrap_or(0);
        let http10 = response.version == Some(0);
        let mut keep_alive = !http10;
        let mut length: Option<u64> = None;
        let mut chunked = false;
        for h in response.headers.iter() {
            let name = h.name.as_bytes();
            if name.eq_ignore_ascii_case(b"content-length") {
                let v = std::str::from_utf8(h.value)
                    .ok()
                    .and_then(|s| s.trim().parse::<u64>().ok())
                    .ok_or(ParseError::Invalid("bad Content-Length"))?;
                if length.is_some_and(|l| l != v) {
                    return Err(ParseError::Invalid("conflicting Content-Length headers"));
                }
                length = Some(v);
            } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
                // The last coding decides whether the body is chunked.
                let last = h.value.rsplit(|b| *b == b',').next().unwrap_or_default();
                chunked = trim(last).eq_ignore_ascii_case(b"chunked");
            } else if name.eq_ignore_ascii_case(b"connection") {
                for token in h.value.split(|b| *b == b',') {
                    let token = trim(token);
                    if token.eq_ignore_ascii_case(b"close") {
                        keep_alive = false;
                    } else if token.eq_ignore_ascii_case(b"keep-alive") && http10 {
                        keep_alive = true;
                    }
                }
            }
        }
        if (100..200).contains(&status) && status != 101 {
            // Interim response (100 Continue, 103 Early Hints): the real one follows.
            return Ok(Some(head_len));
        }
        self.status = status;
        self.keep_alive = keep_alive;
        self.state = if self.head_request || status == 204 || status == 304 || status == 101 {
            State::Done
        } else if chunked {
            State::Chunked(Chunk::Size { value: 0, digits: 0 })
        } else if let Some(len) = length {
            if len == 0 {
                State::Done
            } else {
                State::Length { left: len }
            }
        } else {
            self.keep_alive = false;
            State::UntilClose
        };
        Ok(Some(head_len))
    }
}

fn trim(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// Advances the chunked-body state machine over `buf`; returns the next state (None when the
/// body ended) and the bytes used. Stops early only at the end of the body.
fn chunked_step(mut state: Chunk, buf: &[u8]) -> Result<(Option<Chunk>, usize), ParseError> {
    let mut i = 0;
    while i < buf.len() {
        if let Chunk::Data { left } = state {
            let take = left.min((buf.len() - i) as u64);
            i += take as usize;
            state = if take == left { Chunk::DataCr } else { Chunk::Data { left: left - take } };
            continue;
        }
        let b = buf[i];
        i += 1;
        state = match state {
            Chunk::Size { value, digits } => match b {
                b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => {
                    if digits >= 15 {
                        return Err(ParseError::Invalid("chunk size too large"));
                    }
                    let d = (b as char).to_digit(16).expect("hex digit") as u64;
                    Chunk::Size { value: value * 16 + d, digits: digits + 1 }
                }
                b';' | b' ' | b'\t' if digits > 0 => Chunk::Extension { value },
                b'\r' if digits > 0 => Chunk::SizeLf { value },
                _ => return Err(ParseError::Invalid("bad chunk size")),
            },
            Chunk::Extension { value } => match b {
                b'\r' => Chunk::SizeLf { value },
                b'\n' => return Err(ParseError::Invalid("bare LF in chunk extension")),
                _ => Chunk::Extension { value },
            },
            Chunk::SizeLf { value } => match (b, value) {
                (b'\n', 0) => Chunk::TrailerLineStart,
                (b'\n', left) => Chunk::Data { left },
                _ => return Err(ParseError::Invalid("chunk size line not ended by CRLF")),
            },
            Chunk::Data { .. } => unreachable!("handled above"),
            Chunk::DataCr => match b {
                b'\r' => Chunk::DataLf,
                _ => return Err(ParseError::Invalid("chunk data longer than its size")),
            },
            Chunk::DataLf => match b {
                b'\n' => Chunk::Size { value: 0, digits: 0 },
                _ => return Err(ParseError::Invalid("chunk data not ended by CRLF")),
            },
            Chunk::TrailerLineStart => match b {
                b'\r' => Chunk::EndLf,
                _ => Chunk::TrailerLine,
            },
            Chunk::TrailerLine => match b {
                b'\n' => Chunk::TrailerLineStart,
                _ => Chunk::TrailerLine,
            },
            Chunk::EndLf => match b {
                b'\n' => return Ok((None, i)),
                _ => return Err(ParseError::Invalid("chunked body not ended by CRLF")),
            },
        };
    }
    Ok((Some(state), i))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `wire` in two parts split at `cut`, the way a connection accumulates bytes:
    /// unconsumed bytes stay in the buffer and more are appended.
    fn parse_split(wire: &[u8], cut: usize, head_request: bool) -> Result<(u16, bool, usize), ParseError> {
        let mut p = ResponseParser::default();
        p.start(head_request);
        let mut buf: Vec<u8> = Vec::new();
        let mut total = 0;
        for part in [&wire[..cut], &wire[cut..]] {
            buf.extend_from_slice(part);
            match p.parse(&buf)? {
                Parsed::Partial { consumed } => {
                    total += consumed;
                    buf.drain(..consumed);
                }
                Parsed::Complete { consumed } => return Ok((p.status(), p.keep_alive(), total + consumed)),
            }
        }
        if p.on_eof() {
            return Ok((p.status(), p.keep_alive(), total + buf.len()));
        }
        Err(ParseError::Invalid("incomplete"))
    }

    fn every_split(wire: &[u8], head_request: bool) -> (u16, bool, usize) {
        let whole = parse_split(wire, wire.len(), head_request).unwrap();
        for cut in 0..=wire.len() {
            assert_eq!(parse_split(wire, cut, head_request).unwrap(), whole, "split at {cut}");
        }
        // Byte by byte, too.
        let mut p = ResponseParser::default();
        p.start(head_request);
        let mut buf = Vec::new();
        for (i, b) in wire.iter().enumerate() {
            buf.push(*b);
            match p.parse(&buf).unwrap() {
                Parsed::Partial { consumed } => {
                    buf.drain(..consumed);
                }
                Parsed::Complete { consumed } => {
                    assert_eq!(consumed, buf.len(), "completed early at byte {i}");
                    assert_eq!(i + 1, wire.len());
                }
            }
        }
        whole
    }

    #[test]
    fn content_length() {
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\nContent-Type: text/plain\r\n\r\nHello, World!";
        assert_eq!(every_split(wire, false), (200, true, wire.len()));
    }

    #[test]
    fn chunked_with_extensions_and_trailers() {
        let wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nHello\r\n8\r\n, World!\r\n0\r\nX-Trailer: y\r\n\r\n";
        assert_eq!(every_split(wire, false), (200, true, wire.len()));
        let empty = b"HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked\r\n\r\n0\r\n\r\n";
        assert_eq!(every_split(empty, false), (200, true, empty.len()));
    }

    #[test]
    fn connection_close_and_http10() {
        let wire = b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 2\r\n\r\nno";
        assert_eq!(every_split(wire, false), (503, false, wire.len()));
        let wire = b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok";
        assert_eq!(every_split(wire, false), (200, false, wire.len()));
        let wire = b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok";
        assert_eq!(every_split(wire, false), (200, true, wire.len()));
    }

    #[test]
    fn body_until_close() {
        let wire = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nstreamed until the end";
        assert_eq!(every_split(wire, false), (200, false, wire.len()));
    }

    #[test]
    fn no_body_cases() {
        let wire = b"HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n";
        assert_eq!(every_split(wire, false), (204, true, wire.len()));
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n";
        assert_eq!(every_split(wire, true), (200, true, wire.len()));
        let wire = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n";
        assert_eq!(every_split(wire, false), (201, true, wire.len()));
    }

    #[test]
    fn stops_at_the_end_of_the_response() {
        let mut p = ResponseParser::default();
        let two = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\naHTTP/1.1 200 OK\r\n";
        assert_eq!(p.parse(two), Ok(Parsed::Complete { consumed: 39 }));
        let mut p = ResponseParser::default();
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\nextra";
        assert_eq!(p.parse(chunked), Ok(Parsed::Complete { consumed: chunked.len() - 5 }));
    }

    #[test]
    fn malformed() {
        let bad: [&[u8]; 8] = [
            b"garbage garbage\r\n\r\n",
            b"HTTP/2 200 OK\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n",
            b"HTTP/1.1 200 OK\r\nBad Header\r\n\r\n",
        ];
        for wire in bad {
            let mut p = ResponseParser::default();
            assert!(p.parse(wire).is_err(), "{}", String::from_utf8_lossy(wire));
        }
        let mut p = ResponseParser::default();
        let huge = [b"HTTP/1.1 200 OK\r\nX: ".as_slice(), &vec![b'a'; MAX_HEAD + 10]].concat();
        assert_eq!(p.parse(&huge), Err(ParseError::HeadTooLarge));
    }
}

//! Feeds arbitrary bytes to the response parser the way a connection does (split where the input's first
//! byte says, unconsumed bytes kept at the front of the buffer, the server closing at the end): the parser
//! must never panic, always return, and never leave more than a head's worth of bytes buffered.
#![no_main]
use libfuzzer_sys::fuzz_target;
use loadgen::http::parser::{Parsed, ResponseParser, MAX_HEAD};

fuzz_target!(|data: &[u8]| {
    let Some((&how, wire)) = data.split_first() else { return };
    let head_request = how & 0x80 != 0;
    // The rest arrives in reads of 1 to 128 bytes.
    let read = usize::from(how & 0x7f) + 1;
    let mut p = ResponseParser::default();
    p.start(head_request);
    let mut buf: Vec<u8> = Vec::new();
    for part in wire.chunks(read) {
        buf.extend_from_slice(part);
        match p.parse(&buf) {
            Err(_) => return,
            Ok(Parsed::Complete { consumed }) => {
                assert!(consumed <= buf.len());
                return;
            }
            Ok(Parsed::Partial { consumed }) => {
                assert!(consumed <= buf.len());
                buf.drain(..consumed);
                assert!(buf.len() <= MAX_HEAD);
            }
        }
    }
    let _ = p.on_eof();
});

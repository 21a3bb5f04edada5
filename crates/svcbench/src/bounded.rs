//! Reads of what svcbench does not control — a service's log, a build's log, an agent's log, a store's
//! answers, another machine's lines — each with a bound, so that a service writing gigabytes or a peer
//! sending a line without an end cannot grow svcbench's memory with it.
use std::io::{BufRead, Read, Seek, SeekFrom};
use std::path::Path;

/// How much of a log's end an error message reads: enough for its last lines, whatever their length.
pub const LOG_TAIL_BYTES: u64 = 64 * 1024;
/// The longest log line an error message quotes.
pub const MESSAGE_LINE_CHARS: usize = 500;

/// The last `max_bytes` of the file at `path`, as text (bytes that are not UTF-8 replaced). When the file
/// is longer, the first (cut) line is dropped. Empty when it cannot be read.
pub fn file_tail(path: &Path, max_bytes: u64) -> String {
    std::fs::File::open(path).map(|f| tail_of(&f, max_bytes)).unwrap_or_default()
}

/// [`file_tail`] of a file already open (one read through the handle made with it, never by name again).
pub fn tail_of(mut f: &std::fs::File, max_bytes: u64) -> String {
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let from = len.saturating_sub(max_bytes);
    if f.seek(SeekFrom::Start(from)).is_err() {
        return String::new();
    }
    let mut bytes = Vec::new();
    let _ = f.take(max_bytes).read_to_end(&mut bytes);
    let text = String::from_utf8_lossy(&bytes).into_owned();
    match (from > 0, text.find('\n')) {
        (true, Some(i)) => text[i + 1..].to_string(),
        _ => text,
    }
}

/// The last `n` non-empty lines of the file's last [`LOG_TAIL_BYTES`], each cut to `max_line` characters.
pub fn last_lines(path: &Path, n: usize, max_line: usize) -> Vec<String> {
    std::fs::File::open(path).map(|f| last_lines_of(&f, n, max_line)).unwrap_or_default()
}

/// [`last_lines`] of a file already open.
pub fn last_lines_of(f: &std::fs::File, n: usize, max_line: usize) -> Vec<String> {
    let text = tail_of(f, LOG_TAIL_BYTES);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].iter().map(|l| cut(l, max_line)).collect()
}

/// `s` cut to `max` characters, an ellipsis saying it was.
pub fn cut(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// Everything `r` gives, refused once it passes `max` bytes (an error naming the bound).
pub fn read_at_most(r: impl Read, max: u64) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    r.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("the answer is longer than {} KiB, svcbench's bound for it", max / 1024),
        ));
    }
    Ok(bytes)
}

/// An HTTP answer's body as JSON, refused beyond `max` bytes.
pub fn json_body(resp: ureq::Response, max: u64) -> anyhow::Result<serde_json::Value> {
    let bytes = read_at_most(resp.into_reader(), max)?;
    Ok(serde_json::from_slice(&bytes)?)
}

/// An HTTP answer's body as text, refused beyond `max` bytes.
pub fn text_body(resp: ureq::Response, max: u64) -> std::io::Result<String> {
    Ok(String::from_utf8_lossy(&read_at_most(resp.into_reader(), max)?).into_owned())
}

/// The lines of `r`, each at most `max` bytes: the rest of a longer line is read and dropped (never held),
/// and the line handed on ends with `…`. Ends at the end of `r` or at a read error.
pub fn lines(r: impl BufRead, max: usize) -> BoundedLines<impl BufRead> {
    BoundedLines { r, max }
}

pub struct BoundedLines<R> {
    r: R,
    max: usize,
}

impl<R: BufRead> Iterator for BoundedLines<R> {
    type Item = String;

    fn next(&mut self) -> Option<String> {
        let mut line = Vec::new();
        let (mut cut_short, mut any) = (false, false);
        loop {
            let buf = match self.r.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return None,
            };
            if buf.is_empty() {
                break;
            }
            any = true;
            let (chunk, found) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (&buf[..i], Some(i + 1)),
                None => (buf, None),
            };
            let room = self.max.saturating_sub(line.len());
            line.extend_from_slice(&chunk[..chunk.len().min(room)]);
            cut_short |= chunk.len() > room;
            let used = found.unwrap_or(buf.len());
            self.r.consume(used);
            if found.is_some() {
                break;
            }
        }
        if !any {
            return None;
        }
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        let mut text = String::from_utf8_lossy(&line).into_owned();
        if cut_short {
            text.push('…');
        }
        Some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_files_tail_is_its_last_bytes_from_a_whole_line_on() {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        for i in 0..10_000 {
            writeln!(f, "line {i}").unwrap();
        }
        let tail = file_tail(f.path(), 100);
        assert!(tail.len() <= 100 && tail.starts_with("line ") && tail.ends_with("line 9999\n"), "{tail:?}");
        assert_eq!(last_lines(f.path(), 2, 80), ["line 9998", "line 9999"]);
        // A file shorter than the bound is read whole, its first line kept.
        let short = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(short.path(), "only\n").unwrap();
        assert_eq!(file_tail(short.path(), 100), "only\n");
        assert_eq!(file_tail(Path::new("/nonexistent/log"), 100), "");
    }

    #[test]
    fn a_single_huge_line_is_cut_not_held() {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), "x".repeat(1 << 20)).unwrap();
        let lines = last_lines(f.path(), 3, 200);
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0].chars().count(), 201, "cut to 200 and an ellipsis");
    }

    #[test]
    fn a_body_past_its_bound_is_refused_and_one_within_is_read() {
        assert_eq!(read_at_most(&b"12345"[..], 5).unwrap(), b"12345");
        let e = read_at_most(std::io::repeat(b'a'), 4096).unwrap_err();
        assert!(e.to_string().contains("longer than 4 KiB"), "{e}");
    }

    #[test]
    fn lines_without_an_end_are_bounded_and_the_next_line_still_comes() {
        // A line of 10 MiB without a newline, then an ordinary one: read through a small buffer.
        let mut input = vec![b'y'; 10 << 20];
        input.extend_from_slice(b"\nready\r\nlast");
        let reader = std::io::BufReader::with_capacity(4096, &input[..]);
        let got: Vec<String> = lines(reader, 1000).collect();
        assert_eq!(got.len(), 3);
        assert_eq!(got[0].len(), 1000 + '…'.len_utf8());
        assert_eq!(&got[1..], ["ready", "last"]);
        assert_eq!(lines(&b""[..], 10).count(), 0);
        assert_eq!(lines(&b"\n\n"[..], 10).collect::<Vec<_>>(), ["", ""]);
    }
}

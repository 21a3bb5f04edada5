//! Pre-serialized requests. Each template is compiled once per worker into literal byte chunks
//! and variable slots, so producing a request is a few `extend_from_slice` calls; a template
//! without variables is one shared byte string that is written as is.

use std::rc::Rc;
use std::sync::Arc;

use anyhow::{bail, Result};

use super::{is_identifier, RequestMix, RequestTemplate, ValueList, ValueOrder};

#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Lit(Vec<u8>),
    Var(usize),
    Unique,
}

#[derive(Debug)]
pub(crate) struct CompiledTemplate {
    /// Request line and headers, without the blank line; includes `Content-Length` when static.
    head: Vec<Piece>,
    body: Vec<Piece>,
    /// The whole request, when it holds no variable.
    fixed: Option<Rc<[u8]>>,
    /// `Content-Length` must be computed per request (the body has variables).
    dynamic_length: bool,
    pub(crate) is_head: bool,
}

const METHODS_WITH_BODY: [&str; 3] = ["POST", "PUT", "PATCH"];

impl CompiledTemplate {
    pub(crate) fn compile(
        t: &RequestTemplate,
        lists: &[Arc<ValueList>],
        host_header: &str,
        keepalive: bool,
    ) -> Result<CompiledTemplate> {
        let method = t.method.trim();
        if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-' || b == b'_') {
            bail!("method '{}' is not an HTTP method (e.g. GET, POST)", t.method);
        }
        if !t.path.starts_with('/') {
            bail!("path '{}' must start with '/'", t.path);
        }
        if t.path.bytes().any(|b| b <= b' ' || b == 0x7f) {
            bail!("path '{}' contains spaces or control characters; percent-encode them", t.path);
        }
        let mut head = Vec::new();
        push_lit(&mut head, format!("{method} ").as_bytes());
        split_pieces(&t.path, lists, &mut head).map_err(|e| anyhow::anyhow!("path '{}': {e}", t.path))?;
        push_lit(&mut head, b" HTTP/1.1\r\n");
        let has = |name: &str| t.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
        if !has("host") {
            push_lit(&mut head, format!("Host: {host_header}\r\n").as_bytes());
        }
        for (name, value) in &t.headers {
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
                bail!("header name '{name}' is not valid: use letters, digits and '-'");
            }
            if name.eq_ignore_ascii_case("content-length") || name.eq_ignore_ascii_case("transfer-encoding") {
                bail!("header '{name}' is set by the generator from the body; leave it out");
            }
            if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                bail!("header '{name}': the value contains a line break");
            }
            push_lit(&mut head, format!("{name}: ").as_bytes());
            split_pieces(value, lists, &mut head).map_err(|e| anyhow::anyhow!("header '{name}': {e}"))?;
            push_lit(&mut head, b"\r\n");
        }
        if !keepalive && !has("connection") {
            push_lit(&mut head, b"Connection: close\r\n");
        }
        let mut body = Vec::new();
        // Bodies are often JSON: only `{identifier}` is a variable, other braces are text.
        let body_text = String::from_utf8_lossy(&t.body);
        if t.body.is_empty() {
        } else if std::str::from_utf8(&t.body).is_ok() {
            split_pieces(&body_text, lists, &mut body).map_err(|e| anyhow::anyhow!("body: {e}"))?;
        } else {
            body.push(Piece::Lit(t.body.clone()));
        }
        let dynamic_length = body.iter().any(|p| !matches!(p, Piece::Lit(_)));
        let wants_length = !t.body.is_empty() || METHODS_WITH_BODY.iter().any(|m| method.eq_ignore_ascii_case(m));
        if wants_length && !dynamic_length {
            push_lit(&mut head, format!("Content-Length: {}\r\n", t.body.len()).as_bytes());
        }
        let mut compiled =
            CompiledTemplate { head, body, fixed: None, dynamic_length, is_head: method.eq_ignore_ascii_case("HEAD") };
        if compiled.head.iter().chain(&compiled.body).all(|p| matches!(p, Piece::Lit(_))) {
            let mut bytes = Vec::new();
            compiled.render(&mut bytes, &mut |_, _| unreachable!(), 0);
            compiled.fixed = Some(bytes.into());
        }
        Ok(compiled)
    }

    /// Appends the request to `out`; `fill(list, out)` appends a value of list `list`.
    fn render(&self, out: &mut Vec<u8>, fill: &mut dyn FnMut(usize, &mut Vec<u8>), unique: u64) {
        let mut put = |p: &Piece, out: &mut Vec<u8>| match p {
            Piece::Lit(b) => out.extend_from_slice(b),
            Piece::Var(i) => fill(*i, out),
            Piece::Unique => {
                let mut buf = itoa::Buffer::new();
                out.extend_from_slice(buf.format(unique).as_bytes())
            }
        };
        for p in &self.head {
            put(p, out);
        }
        if self.dynamic_length {
            // Render the body first, then splice the header in front of it.
            let body_start = out.len();
            for p in &self.body {
                put(p, out);
            }
            let header = format!("Content-Length: {}\r\n\r\n", out.len() - body_start);
            out.splice(body_start..body_start, header.bytes());
        } else {
            out.extend_from_slice(b"\r\n");
            for p in &self.body {
                put(p, out);
            }
        }
    }
}

fn push_lit(pieces: &mut Vec<Piece>, bytes: &[u8]) {
    if bytes.is_empty() {
        return;
    }
    if let Some(Piece::Lit(last)) = pieces.last_mut() {
        last.extend_from_slice(bytes);
    } else {
        pieces.push(Piece::Lit(bytes.to_vec()));
    }
}

/// Splits `text` at `{name}` placeholders. `{` not followed by `identifier}` is plain text.
fn split_pieces(text: &str, lists: &[Arc<ValueList>], out: &mut Vec<Piece>) -> Result<()> {
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) if is_identifier(&after[..close]) => {
                let name = &after[..close];
                push_lit(out, &rest.as_bytes()[..open]);
                if name == "unique" {
                    out.push(Piece::Unique);
                } else if let Some(i) = lists.iter().position(|l| l.name == name) {
                    out.push(Piece::Var(i));
                } else {
                    bail!("uses {{{name}}} but there is no value list named '{name}' (add it to the mix's values, or --values {name}=FILE)");
                }
                rest = &after[close + 1..];
            }
            _ => {
                push_lit(out, &rest.as_bytes()[..=open]);
                rest = after;
            }
        }
    }
    push_lit(out, rest.as_bytes());
    Ok(())
}

/// The next request to write: shared fixed bytes, or bytes rendered into the caller's buffer.
pub(crate) enum Prepared {
    Fixed(Rc<[u8]>),
    Rendered,
}

struct ValueCursor {
    list: Arc<ValueList>,
    next: u64,
}

/// Per-worker source of requests: draws templates by weight and values by their order.
pub(crate) struct RequestFactory {
    templates: Vec<CompiledTemplate>,
    /// Cumulative weights, for a binary-search draw.
    cumulative: Vec<u64>,
    values: Vec<ValueCursor>,
    rng: fastrand::Rng,
    worker: u64,
    workers: u64,
    unique_next: u64,
}

impl RequestFactory {
    pub(crate) fn new(
        mix: &RequestMix,
        host_header: &str,
        keepalive: bool,
        worker: usize,
        workers: usize,
    ) -> Result<RequestFactory> {
        let lists: Vec<Arc<ValueList>> = mix.values.iter().cloned().map(Arc::new).collect();
        let mut templates = Vec::new();
        let mut cumulative = Vec::new();
        let mut total = 0u64;
        for t in &mix.templates {
            templates.push(CompiledTemplate::compile(t, &lists, host_header, keepalive)?);
            total += u64::from(t.weight);
            cumulative.push(total);
        }
        if total == 0 {
            bail!("every request in the mix has weight 0: give at least one a positive weight");
        }
        // Distinct, reproducible streams per worker.
        let seed = mix.seed ^ (worker as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        Ok(RequestFactory {
            templates,
            cumulative,
            values: lists.into_iter().map(|list| ValueCursor { list, next: 0 }).collect(),
            rng: fastrand::Rng::with_seed(seed),
            worker: worker as u64,
            workers: workers.max(1) as u64,
            unique_next: 0,
        })
    }

    /// Picks the next request; when it has variables it is rendered into `buf` (cleared first).
    /// Returns whether the request is a HEAD (its response has no body).
    pub(crate) fn next(&mut self, buf: &mut Vec<u8>) -> (Prepared, bool) {
        let idx = if self.templates.len() == 1 {
            0
        } else {
            let total = *self.cumulative.last().expect("at least one template");
            let r = self.rng.u64(..total);
            self.cumulative.partition_point(|&c| c <= r)
        };
        let t = &self.templates[idx];
        if let Some(fixed) = &t.fixed {
            return (Prepared::Fixed(fixed.clone()), t.is_head);
        }
        buf.clear();
        // Unique across the run's workers: worker w uses w, w + W, w + 2W, ...
        let unique = self.unique_next * self.workers + self.worker;
        self.unique_next += 1;
        let (values, rng, worker, workers) = (&mut self.values, &mut self.rng, self.worker, self.workers);
        t.render(
            buf,
            &mut |i, out| {
                let cursor = &mut values[i];
                let n = cursor.list.values.len() as u64;
                let pick = match cursor.list.order {
                    ValueOrder::Random => rng.u64(..n),
                    ValueOrder::RoundRobin => {
                        // Worker w takes positions w, w + W, ... of the shared round: together
                        // the workers walk the list in order.
                        let pos = cursor.next * workers + worker;
                        cursor.next += 1;
                        pos % n
                    }
                };
                out.extend_from_slice(cursor.list.values[pick as usize].as_bytes());
            },
            unique,
        );
        (Prepared::Rendered, t.is_head)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render_one(f: &mut RequestFactory) -> String {
        let mut buf = Vec::new();
        match f.next(&mut buf).0 {
            Prepared::Fixed(b) => String::from_utf8(b.to_vec()).unwrap(),
            Prepared::Rendered => String::from_utf8(buf).unwrap(),
        }
    }

    fn list(name: &str, values: &[&str], order: ValueOrder) -> ValueList {
        ValueList { name: name.into(), values: values.iter().map(|s| s.to_string()).collect(), order }
    }

    #[test]
    fn fixed_request_is_preserialized() {
        let mut t = RequestTemplate::new("POST", "/echo?x={");
        t.headers.push(("X-A".into(), "b".into()));
        t.body = b"{\"a\":1}".to_vec();
        let mix = RequestMix { templates: vec![t], values: vec![], seed: 1 };
        let mut f = RequestFactory::new(&mix, "h:1", true, 0, 1).unwrap();
        assert!(f.templates[0].fixed.is_some());
        assert_eq!(
            render_one(&mut f),
            "POST /echo?x={ HTTP/1.1\r\nHost: h:1\r\nX-A: b\r\nContent-Length: 7\r\n\r\n{\"a\":1}"
        );
    }

    #[test]
    fn variables_fill_path_headers_and_body() {
        let mut t = RequestTemplate::new("PUT", "/u/{id}/{unique}");
        t.headers.push(("X-Lang".into(), "{lang}".into()));
        t.body = b"{\"id\":\"{id}\"}".to_vec();
        let mix = RequestMix {
            templates: vec![t],
            values: vec![list("id", &["a", "bb"], ValueOrder::RoundRobin), list("lang", &["cs"], ValueOrder::Random)],
            seed: 1,
        };
        let mut f = RequestFactory::new(&mix, "h", false, 1, 2).unwrap();
        // Worker 1 of 2: round-robin positions 1, 3, ... -> bb, bb; unique 1, 3, ...
        assert_eq!(
            render_one(&mut f),
            "PUT /u/bb/1 HTTP/1.1\r\nHost: h\r\nX-Lang: cs\r\nConnection: close\r\nContent-Length: 11\r\n\r\n{\"id\":\"bb\"}"
        );
        assert!(render_one(&mut f).starts_with("PUT /u/bb/3 "));
    }

    #[test]
    fn round_robin_workers_cover_the_list_in_turn() {
        let mix = RequestMix {
            templates: vec![RequestTemplate::new("GET", "/{v}")],
            values: vec![list("v", &["0", "1", "2", "3", "4"], ValueOrder::RoundRobin)],
            seed: 1,
        };
        let mut a = RequestFactory::new(&mix, "h", true, 0, 2).unwrap();
        let mut b = RequestFactory::new(&mix, "h", true, 1, 2).unwrap();
        let mut seen = Vec::new();
        for _ in 0..5 {
            for f in [&mut a, &mut b] {
                let r = render_one(f);
                seen.push(r[5..6].to_string());
            }
        }
        assert_eq!(seen.concat(), "0123401234");
    }

    #[test]
    fn random_values_repeat_per_seed_and_cover_uniformly() {
        let mix = RequestMix {
            templates: vec![RequestTemplate::new("GET", "/{v}")],
            values: vec![list("v", &["a", "b", "c", "d"], ValueOrder::Random)],
            seed: 42,
        };
        let draw = || {
            let mut f = RequestFactory::new(&mix, "h", true, 0, 1).unwrap();
            (0..4000).map(|_| render_one(&mut f).as_bytes()[5]).collect::<Vec<u8>>()
        };
        let (x, y) = (draw(), draw());
        assert_eq!(x, y);
        for v in b"abcd" {
            let n = x.iter().filter(|b| *b == v).count();
            assert!((800..1200).contains(&n), "{} drawn {n} times", *v as char);
        }
    }

    #[test]
    fn weights_are_respected() {
        let mut a = RequestTemplate::new("GET", "/a");
        a.weight = 3;
        let b = RequestTemplate::new("GET", "/b");
        let mut never = RequestTemplate::new("GET", "/never");
        never.weight = 0;
        let mix = RequestMix { templates: vec![a, never, b], values: vec![], seed: 3 };
        let mut f = RequestFactory::new(&mix, "h", true, 0, 1).unwrap();
        let mut counts = [0; 3];
        for _ in 0..8000 {
            match &render_one(&mut f)[..6] {
                "GET /a" => counts[0] += 1,
                "GET /n" => counts[1] += 1,
                _ => counts[2] += 1,
            }
        }
        assert_eq!(counts[1], 0);
        assert!((5600..6400).contains(&counts[0]), "{counts:?}");
    }

    #[test]
    fn template_errors_name_the_problem() {
        let bad = |t: RequestTemplate| {
            let mix = RequestMix { templates: vec![t], values: vec![], seed: 0 };
            RequestFactory::new(&mix, "h", true, 0, 1).err().map(|e| e.to_string()).unwrap_or_default()
        };
        assert!(bad(RequestTemplate::new("GET", "/{city}")).contains("--values city=FILE"));
        assert!(bad(RequestTemplate::new("GET", "nope")).contains("must start with '/'"));
        assert!(bad(RequestTemplate::new("G ET", "/")).contains("not an HTTP method"));
        let mut t = RequestTemplate::new("GET", "/");
        t.headers.push(("Content-Length".into(), "3".into()));
        assert!(bad(t).contains("set by the generator"));
    }

    #[test]
    fn split_keeps_non_variable_braces() {
        let mut out = Vec::new();
        split_pieces("{ {}{1x} {a", &[], &mut out).unwrap();
        assert_eq!(out, vec![Piece::Lit(b"{ {}{1x} {a".to_vec())]);
    }
}

//! The human-readable summary, laid out like wrk's, plus error kinds, open-model lateness,
//! connection fairness and the validity flags.

use std::fmt::Write as _;

use crate::config::LoadConfig;
use crate::models::LoadModel;
use crate::report::LoadReport;

/// `12.34ms`, `850.00us`, `1.20s`.
pub fn fmt_ms(ms: f64) -> String {
    if ms < 1.0 {
        format!("{:.2}us", ms * 1000.0)
    } else if ms < 1000.0 {
        format!("{ms:.2}ms")
    } else {
        format!("{:.2}s", ms / 1000.0)
    }
}

/// `512B`, `12.30KB`, `4.56MB`, `1.20GB` (powers of 1024, as wrk prints them).
pub fn fmt_bytes(bytes: f64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if bytes < 1024.0 {
        return format!("{bytes:.0}B");
    }
    let mut v = bytes;
    let mut unit = "";
    for u in UNITS {
        if v < 1024.0 {
            break;
        }
        v /= 1024.0;
        unit = u;
    }
    format!("{v:.2}{unit}")
}

/// The line printed before the run starts.
pub fn header(config: &LoadConfig, url: &str) -> String {
    let duration = humantime::format_duration(config.duration);
    let mut s = format!("Running {duration} test @ {url}\n");
    let threads = config.threads;
    let _ = writeln!(s, "  {threads} threads{}", config.model.describe());
    if let Some(n) = config.max_requests {
        let _ = writeln!(s, "  stopping after {n} requests");
    }
    s
}

/// The summary after the run.
pub fn summary(r: &LoadReport) -> String {
    let mut s = String::new();
    latency(&mut s, r);
    let total = r.requests_ok + r.requests_err;
    let _ = writeln!(
        s,
        "  {total} requests in {:.2}s, {} read, {} written",
        r.duration_s,
        fmt_bytes(r.bytes_in as f64),
        fmt_bytes(r.bytes_out as f64)
    );
    let e = &r.errors;
    if e.total() == 0 {
        let _ = writeln!(s, "  Errors: none");
    } else {
        let kinds = [
            ("connect refused", e.connect_refused),
            ("connect timeout", e.connect_timeout),
            ("client resources", e.client_resource),
            ("reset", e.reset),
            ("closed early", e.closed_early),
            ("request timeout", e.request_timeout),
            ("malformed", e.malformed),
            ("status", e.status),
        ];
        let list: Vec<String> = kinds.iter().filter(|(_, n)| *n > 0).map(|(k, n)| format!("{k} {n}")).collect();
        let _ = writeln!(s, "  Errors: {} ({:.2}%): {}", e.total(), r.error_ratio() * 100.0, list.join(", "));
    }
    let statuses: Vec<String> = r.status_counts.iter().map(|(c, n)| format!("{c}: {n}")).collect();
    if !statuses.is_empty() {
        let _ = writeln!(s, "  Status codes: {}", statuses.join(", "));
    }
    if let Some(o) = &r.open {
        let _ = writeln!(
            s,
            "  Schedule: {} due, {} sent late (every allowed connection busy), {} unsent, max lateness {}",
            o.intended,
            o.sent_late,
            o.unsent,
            fmt_ms(o.max_lateness_ms)
        );
        let _ = writeln!(
            s,
            "  Send lag (actual - intended send time): p50 {}, p99 {}, max {}; sent {:.0} req/s",
            fmt_ms(o.lag_p50_ms),
            fmt_ms(o.lag_p99_ms),
            fmt_ms(o.lag_max_ms),
            o.achieved_rate
        );
    }
    let c = &r.connections;
    if c.answers_max == 0 && c.used > 0 && (c.stalled > 0 || r.requests_err > 0) {
        // `starved` counts connections left out while others were answered: here none was answered.
        let _ = writeln!(
            s,
            "  Connections: none of {} got an answer{}",
            c.used,
            match c.stalled {
                0 => String::new(),
                n =>
                    format!(", {} waiting over 1s at the end (oldest {})", requests(n), fmt_ms(c.oldest_unanswered_ms)),
            }
        );
    } else if c.starved > 0 || c.stalled > 0 {
        let _ = writeln!(
            s,
            "  Connections: {} of {} got no answer, {} waiting over 1s at the end (oldest {}); answers per connection min {}, median {}, max {}",
            c.starved,
            c.used,
            requests(c.stalled),
            fmt_ms(c.oldest_unanswered_ms),
            c.answers_min,
            c.answers_median,
            c.answers_max
        );
    }
    if r.in_flight_at_end > 0 {
        let _ = writeln!(s, "  Unanswered at the end: {} (sent, neither success nor error)", r.in_flight_at_end);
    }
    let _ = writeln!(s, "Requests/sec: {:>10.2}", r.success_rps());
    let _ = writeln!(s, "Transfer/sec: {:>10}", fmt_bytes(r.bytes_in as f64 / r.duration_s.max(1e-9)));
    let per_request = match r.requests_ok {
        0 => String::new(),
        _ => format!(" ({:.1}us per request)", r.client_cpu_us_per_request()),
    };
    let _ =
        writeln!(s, "Connections opened: {}, generator CPU {:.2}s{per_request}", r.connections_opened, r.client_cpu_s);
    if r.connect_attempts_failed > 0 {
        let _ = writeln!(s, "Failed connection attempts: {}", r.connect_attempts_failed);
    }
    if let Some(line) = not_valid(r) {
        let _ = writeln!(s, "{line}");
    }
    s
}

/// The latency table; with no successful response there is no latency to show, and zeros would read as
/// a fast service.
fn latency(s: &mut String, r: &LoadReport) {
    if r.requests_ok == 0 {
        let _ = writeln!(s, "  Latency of successful responses: none (no request succeeded)");
        return;
    }
    let l = &r.latency;
    let _ = writeln!(s, "  Latency of successful responses");
    let _ = writeln!(s, "    {:>10} {:>10} {:>10}", "Avg", "Stdev", "Max");
    let _ = writeln!(s, "    {:>10} {:>10} {:>10}", fmt_ms(l.mean), fmt_ms(l.stdev), fmt_ms(l.max));
    let _ = writeln!(s, "  Latency Distribution");
    for (label, v) in
        [("50%", l.p50), ("75%", l.p75), ("90%", l.p90), ("99%", l.p99), ("99.9%", l.p999), ("99.99%", l.p9999)]
    {
        let _ = writeln!(s, "    {label:>7} {:>10}", fmt_ms(v));
    }
}

/// `NOT VALID (codes): details` when the run raised validity flags, else None.
pub fn not_valid(r: &LoadReport) -> Option<String> {
    let flags = r.flags();
    if flags.is_empty() {
        return None;
    }
    let codes: Vec<&str> = flags.iter().map(|f| f.code.as_str()).collect();
    let details: Vec<&str> = flags.iter().map(|f| f.detail.as_str()).collect();
    Some(format!("NOT VALID ({}): {}", codes.join(", "), details.join(" ")))
}

/// "1 request", "2 requests".
fn requests(n: u64) -> String {
    if n == 1 {
        "1 request".into()
    } else {
        format!("{n} requests")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_error_kinds_fairness_lag_and_flags_are_printed() {
        let mut r = crate::validity::tests::healthy();
        let out = summary(&r);
        assert!(!out.contains("NOT VALID") && !out.contains("got no answer"), "{out}");
        r.errors = crate::report::ErrorCounts { client_resource: 2, reset: 3, closed_early: 4, ..Default::default() };
        r.requests_err = 9;
        r.connections.starved = 2;
        r.connections.used = 4;
        r.connections.stalled = 2;
        r.connections.oldest_unanswered_ms = 2_000.0;
        r.open = Some(crate::report::OpenStats {
            intended: 100_000,
            lag_p50_ms: 0.02,
            lag_p99_ms: 0.5,
            lag_max_ms: 3.0,
            achieved_rate: 10_000.0,
            ..Default::default()
        });
        let out = summary(&r);
        assert!(out.contains("client resources 2, reset 3, closed early 4"), "{out}");
        assert!(out.contains("Connections: 2 of 4 got no answer, 2 requests waiting over 1s"), "{out}");
        assert!(out.contains("p50 20.00us, p99 500.00us, max 3.00ms"), "{out}");
        let not_valid = out.lines().find(|l| l.starts_with("NOT VALID (")).expect(&out);
        assert!(not_valid.contains("(client_resource_errors, starved_connections): "), "{out}");
        assert!(not_valid.contains("client's own limits") && not_valid.contains("2 of 4 connections"), "{out}");
    }

    #[test]
    fn a_service_that_answers_nothing_is_not_shown_as_fast_or_fair() {
        let mut r = crate::validity::tests::healthy();
        r.requests_ok = 0;
        r.status_counts.clear();
        r.connections =
            crate::report::ConnectionStats { used: 4, stalled: 4, oldest_unanswered_ms: 2_000.0, ..Default::default() };
        let out = summary(&r);
        assert!(out.contains("Connections: none of 4 got an answer, 4 requests waiting over 1s"), "{out}");
        assert!(!out.contains("0 of 4 got no answer"), "{out}");
        assert!(out.contains("Latency of successful responses: none (no request succeeded)"), "{out}");
        assert!(!out.contains("0.00us") && !out.contains("per request"), "{out}");
        // Every connection reset: nothing waits at the end, and nothing is said to.
        r.requests_err = 40;
        r.connections.stalled = 0;
        let out = summary(&r);
        assert!(out.contains("Connections: none of 4 got an answer\n"), "{out}");
    }

    #[test]
    fn units() {
        assert_eq!((requests(1), requests(2)), ("1 request".to_string(), "2 requests".to_string()));
        assert_eq!(fmt_ms(0.138), "138.00us");
        assert_eq!(fmt_ms(2.6), "2.60ms");
        assert_eq!(fmt_ms(1500.0), "1.50s");
        assert_eq!(fmt_bytes(500.0), "500B");
        assert_eq!(fmt_bytes(2048.0), "2.00KB");
        assert_eq!(fmt_bytes(3.5 * 1024.0 * 1024.0), "3.50MB");
    }
}

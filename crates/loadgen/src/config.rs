//! What a run is asked to do: target, load model, limits, what counts as success.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

use crate::client::pacing::Pacing;
use crate::models::LoadModel;
use crate::request::{RequestMix, StatusSet};

/// The server under load: plain HTTP/1.1 over TCP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub host: String,
    pub port: u16,
}

impl Target {
    /// `http://host[:port][/path]`; the path, if any, is ignored (see [`split_url`]).
    pub fn parse(url: &str) -> Result<Target> {
        split_url(url).map(|(target, _)| target)
    }

    /// The `Host` header value: the port is left out when it is HTTP's default.
    pub fn host_header(&self) -> String {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        if self.port == 80 {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }

    /// Resolves the host once, before the run, so DNS never sits in the measured path.
    pub fn resolve(&self) -> Result<SocketAddr> {
        (self.host.as_str(), self.port)
            .to_socket_addrs()
            .with_context(|| {
                format!("cannot resolve host '{}' (check its name, or give an address such as 127.0.0.1)", self.host)
            })?
            .next()
            .ok_or_else(|| anyhow!("host '{}' resolves to no address", self.host))
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "http://{}", self.host_header())
    }
}

/// Splits `http://host[:port][/path?query]` into the target and the request path (`/` if none).
pub fn split_url(url: &str) -> Result<(Target, String)> {
    let rest = if let Some(rest) = url.strip_prefix("http://") {
        rest
    } else if url.starts_with("https://") {
        bail!("'{url}': https is not supported, the generator speaks plain HTTP/1.1 (use http://)");
    } else if url.contains("://") {
        bail!("'{url}': only http:// URLs are supported");
    } else {
        bail!("'{url}' is not a URL: write it as http://HOST:PORT/PATH");
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
        Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
        None => (rest, "/".to_string()),
    };
    if authority.contains('@') {
        bail!("'{url}': user info in the URL is not supported (send an Authorization header with -H)");
    }
    let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
        // IPv6 literal: [::1]:8080
        let end = bracketed.find(']').ok_or_else(|| anyhow!("'{url}': missing ']' after the IPv6 address"))?;
        let host = &bracketed[..end];
        let port = match &bracketed[end + 1..] {
            "" => None,
            p => Some(p.strip_prefix(':').ok_or_else(|| anyhow!("'{url}': expected ':PORT' after ']'"))?),
        };
        (host, port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        bail!("'{url}': the host is missing (e.g. http://127.0.0.1:8080/)");
    }
    let port = match port {
        None => 80,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|&p| p != 0)
            .ok_or_else(|| anyhow!("'{url}': port '{p}' is not a number between 1 and 65535"))?,
    };
    if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
        bail!("'{url}': the path contains spaces or control characters; percent-encode them");
    }
    Ok((Target { host: host.to_string(), port }, path))
}

/// Longest run: a day. Longer is a typo (soak tests run as several runs), and far beyond it the
/// run's deadline no longer fits the clock's arithmetic.
pub const MAX_DURATION: Duration = Duration::from_secs(86_400);
/// Longest connect or request timeout: an hour. A request unanswered that long is an error whatever
/// the service; beyond it a deadline could overflow the clock.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(3_600);
/// Furthest ahead a synchronised start (`--start-at`) may lie: an hour. Agents are told to start a
/// few seconds ahead; a start further off is a wrong clock or a typo, and would wait unattended.
pub const MAX_START_DELAY: Duration = Duration::from_secs(3_600);

pub use crate::models::Model;

/// Everything one run needs. Build it with [`LoadConfig::new`] and adjust the fields.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    pub target: Target,
    pub mix: RequestMix,
    pub model: Model,
    /// The run ends at this duration, or earlier at `max_requests` or when `stop` is set.
    pub duration: Duration,
    /// Total requests (successful or not) after which the run ends.
    pub max_requests: Option<u64>,
    /// Event-loop threads, each owning a share of the connections.
    pub threads: usize,
    /// `false`: `Connection: close` on every request, a new connection for each.
    pub keepalive: bool,
    pub connect_timeout: Duration,
    /// Counted from the moment the request was written.
    pub request_timeout: Duration,
    pub success: StatusSet,
    /// Set (e.g. on Ctrl-C) to end the run promptly; what was measured so far is reported.
    pub stop: Option<Arc<AtomicBool>>,
    /// Pin worker thread `i` to CPU `cpu_affinity[i % len]`.
    pub cpu_affinity: Option<Vec<usize>>,
    /// Open model: how a worker waits for its next send.
    pub pacing: Pacing,
    /// This generator's place among several that drive one load together (svcbench's agents,
    /// one per generator host): `(index, count)`, `(0, 1)` alone. Each agent's workers take
    /// their own share of the open model's schedule and of the `{unique}` numbers, so the
    /// agents together send the schedule once, with no number twice.
    pub agent: (usize, usize),
    /// Start at this wall-clock time (agents agree on one), not at once.
    pub start_at: Option<std::time::SystemTime>,
}

impl LoadConfig {
    /// Defaults: 10 s, one thread per CPU this process may use, keep-alive, connect timeout 3 s,
    /// request timeout 10 s, success 200-399.
    pub fn new(target: Target, mix: RequestMix, model: Model) -> LoadConfig {
        LoadConfig {
            target,
            mix,
            model,
            duration: Duration::from_secs(10),
            max_requests: None,
            threads: crate::limits::available_cpus(),
            keepalive: true,
            connect_timeout: Duration::from_secs(3),
            request_timeout: Duration::from_secs(10),
            success: StatusSet::default(),
            stop: None,
            cpu_affinity: None,
            pacing: Pacing::Timer,
            agent: (0, 1),
            start_at: None,
        }
    }

    /// Checks the numbers make sense; every message names the setting and how to fix it.
    /// (Rates above [`MAX_RATE`] are refused where they are parsed.)
    pub fn validate(&self) -> Result<()> {
        if self.duration.is_zero() {
            bail!("duration is zero: give a positive duration such as 10s");
        }
        if self.threads == 0 {
            bail!("threads is 0: use at least 1 thread");
        }
        let (index, count) = self.agent;
        if count == 0 || index >= count {
            bail!("agent {}/{count}: write the agent as I/N with 1 <= I <= N", index + 1);
        }
        if count > 1 && self.max_requests.is_some() {
            bail!("a request count cannot be split between agents: give a duration instead");
        }
        if self.max_requests == Some(0) {
            bail!("request count is 0: give at least 1 request, or leave it out to run for the duration");
        }
        if self.duration > MAX_DURATION {
            bail!("duration {:?} is longer than a day: give a duration of at most 24h", self.duration);
        }
        if self.connect_timeout.is_zero() || self.request_timeout.is_zero() {
            bail!("timeouts must be positive (e.g. 2s)");
        }
        if self.connect_timeout > MAX_TIMEOUT || self.request_timeout > MAX_TIMEOUT {
            bail!("timeouts must be at most an hour (e.g. 10s)");
        }
        self.model.validate()?;
        if let Some(cpus) = &self.cpu_affinity {
            if cpus.is_empty() {
                bail!("CPU affinity list is empty: name at least one CPU, or leave it out");
            }
        }
        self.mix.validate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::RateRamp;

    #[test]
    fn urls() {
        let (t, p) = split_url("http://127.0.0.1:8080/a/b?c=d").unwrap();
        assert_eq!((t.host.as_str(), t.port, p.as_str()), ("127.0.0.1", 8080, "/a/b?c=d"));
        let (t, p) = split_url("http://localhost").unwrap();
        assert_eq!((t.port, p.as_str(), t.host_header().as_str()), (80, "/", "localhost"));
        let (t, p) = split_url("http://[::1]:9000?x=1").unwrap();
        assert_eq!((t.host.as_str(), t.port, p.as_str()), ("::1", 9000, "/?x=1"));
        assert_eq!(t.host_header(), "[::1]:9000");
        for bad in ["https://x/", "127.0.0.1:80", "http://:80/", "http://h:99999/", "http://h:x/", "ftp://h/"] {
            assert!(split_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rates_and_connections_beyond_one_machine_are_refused() {
        assert!(RateRamp::parse("1e300").unwrap_err().to_string().contains("above 10000000"));
        assert!(RateRamp::parse("10:2e7").is_err());
        assert!(RateRamp::parse("1000").is_ok());
        let target = Target::parse("http://127.0.0.1:9").unwrap();
        let c = LoadConfig::new(target, RequestMix::single("GET", "/"), Model::closed(100_000_000));
        assert!(c.validate().unwrap_err().to_string().contains("local ports"));
    }

    #[test]
    fn status_sets() {
        let s = StatusSet::parse("200-399,404").unwrap();
        assert!(s.contains(200) && s.contains(399) && s.contains(404));
        assert!(!s.contains(400) && !s.contains(503) && !s.contains(199));
        assert!(StatusSet::default().contains(302));
        for bad in ["", "abc", "399-200", "200-", "1000", "42"] {
            assert!(StatusSet::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rates() {
        assert_eq!(RateRamp::parse("100").unwrap(), RateRamp::constant(100.0));
        let r = RateRamp::parse("100:2000").unwrap();
        assert_eq!((r.start, r.end), (100.0, 2000.0));
        for bad in ["", "x", "-5", "0", "0:0", "1:x"] {
            assert!(RateRamp::parse(bad).is_err(), "{bad}");
        }
    }
}

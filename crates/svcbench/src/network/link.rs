//! A link: the emulated network between two parts of a run (`client-service=delay:2ms,jitter:0.2ms,loss:0.1%`).
//! Its delay is added once to every round trip between them (half on the way there, half on the way back),
//! its jitter varies each packet's delay by up to ± half of it, and its loss drops packets on either way.
//! relay.rs carries the packets.
use anyhow::{bail, Context, Result};
use std::fmt;

/// Where a part of a run sits on the emulated network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// The load generator (and the conformance checks' client).
    Client,
    /// The service under test.
    Service,
    /// The scenario's dependencies (OpenSearch, the mock upstream).
    Store,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Client, Role::Service, Role::Store];

    pub fn name(self) -> &'static str {
        match self {
            Role::Client => "client",
            Role::Service => "service",
            Role::Store => "store",
        }
    }

    /// One letter for interface names (15 bytes at most).
    pub fn letter(self) -> char {
        match self {
            Role::Client => 'c',
            Role::Service => 's',
            Role::Store => 'd',
        }
    }

    fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.name() == s)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    pub from: Role,
    pub to: Role,
    pub delay_ms: f64,
    pub jitter_ms: f64,
    pub loss_pct: f64,
}

impl Link {
    /// Whether this link joins the parts `a` and `b`, in either order (one link per pair).
    pub fn joins(&self, (a, b): (Role, Role)) -> bool {
        (self.from, self.to) == (a, b) || (self.from, self.to) == (b, a)
    }

    /// Parses `from-to=key:value,…` (keys: delay, jitter, loss).
    pub fn parse(text: &str) -> Result<Link> {
        let how = "write it as client-service=delay:2ms,jitter:0.2ms,loss:0.1% (parts: client, service, store)";
        let (ends, spec) = text.split_once('=').with_context(|| format!("--link `{text}`: no `=`; {how}"))?;
        let (a, b) =
            ends.split_once('-').with_context(|| format!("--link `{text}`: no `-` between two parts; {how}"))?;
        let role =
            |s: &str| Role::parse(s.trim()).with_context(|| format!("--link `{text}`: unknown part `{s}`; {how}"));
        let (from, to) = (role(a)?, role(b)?);
        if from == to {
            bail!("--link `{text}`: a link joins two different parts; {how}");
        }
        let mut link = Link { from, to, delay_ms: 0.0, jitter_ms: 0.0, loss_pct: 0.0 };
        if spec.trim().is_empty() {
            bail!("--link `{text}`: no setting after `=`; {how}");
        }
        let mut seen: Vec<&str> = Vec::new();
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) =
                item.split_once(':').with_context(|| format!("--link `{text}`: `{item}` is not key:value; {how}"))?;
            let units = "a number with its unit: us, ms or s (0.5ms, 500us), up to 10 s";
            let bad = || format!("--link `{text}`: `{item}` is not a valid {k}: give {units}; {how}");
            if seen.contains(&k.trim()) {
                bail!("--link `{text}`: {} is given twice; give each setting once", k.trim());
            }
            seen.push(k.trim());
            match k.trim() {
                "delay" => link.delay_ms = millis(v).with_context(bad)?,
                "jitter" => link.jitter_ms = millis(v).with_context(bad)?,
                "loss" => {
                    // A bare number is refused: 0.1 could mean 0.1 % or a chance of 0.1 (10 %).
                    let bad = || {
                        format!("--link `{text}`: `{item}` is not a valid loss: give a percentage with its %, e.g. loss:0.1%; {how}")
                    };
                    let p: f64 = v.trim().strip_suffix('%').and_then(|n| n.trim().parse().ok()).with_context(bad)?;
                    if !(0.0..=100.0).contains(&p) {
                        bail!("--link `{text}`: loss {p} % is outside 0–100 %");
                    }
                    link.loss_pct = p;
                }
                other => bail!("--link `{text}`: unknown setting `{other}`; known: delay, jitter, loss"),
            }
        }
        if link.jitter_ms > 0.0 && link.delay_ms == 0.0 {
            bail!("--link `{text}`: jitter varies a delay; give a delay too (e.g. delay:2ms,jitter:0.2ms)");
        }
        Ok(link)
    }
}

/// Milliseconds from `2ms`, `0.2ms`, `500us` or `1s`.
fn millis(v: &str) -> Option<f64> {
    let v = v.trim();
    let (num, scale) = if let Some(n) = v.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = v.strip_suffix("us") {
        (n, 1e-3)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1e3)
    } else {
        return None;
    };
    let x: f64 = num.trim().parse().ok()?;
    (x.is_finite() && (0.0..=10_000.0).contains(&(x * scale))).then_some(x * scale)
}

impl fmt::Display for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}=delay:{}ms", self.from.name(), self.to.name(), self.delay_ms)?;
        if self.jitter_ms > 0.0 {
            write!(f, ",jitter:{}ms", self.jitter_ms)?;
        }
        if self.loss_pct > 0.0 {
            write!(f, ",loss:{}%", self.loss_pct)?;
        }
        Ok(())
    }
}

/// Refuses two links between the same two parts (which one would hold?).
pub fn check_distinct(links: &[Link]) -> Result<()> {
    for (i, a) in links.iter().enumerate() {
        if links[..i].iter().any(|b| b.joins((a.from, a.to))) {
            bail!("--link {}-{} is given twice; give each pair of parts one link", a.from.name(), a.to.name());
        }
    }
    Ok(())
}

/// Links as stored and shown: `client-service=delay:2ms; service-store=delay:0.5ms`, or `none`.
pub fn describe(links: &[Link]) -> String {
    if links.is_empty() {
        return "none".into();
    }
    links.iter().map(|l| l.to_string()).collect::<Vec<_>>().join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_reads_its_parts_and_settings_and_prints_them_back() {
        let l = Link::parse("service-store=delay:2ms,jitter:200us,loss:0.5%").unwrap();
        assert_eq!((l.from, l.to), (Role::Service, Role::Store));
        assert_eq!(l.to_string(), "service-store=delay:2ms,jitter:0.2ms,loss:0.5%");
        assert_eq!(Link::parse("client-service=delay:1s").unwrap().delay_ms, 1000.0);
    }

    #[test]
    fn bad_links_say_what_is_wrong_in_one_line() {
        for (bad, says) in [
            ("service-store", "no `=`"),
            ("service=delay:1ms", "no `-`"),
            ("service-db=delay:1ms", "unknown part `db`"),
            ("store-store=delay:1ms", "two different parts"),
            ("client-service=delay:2", "not a valid delay: give a number with its unit: us, ms or s"),
            ("client-service=delay:2sec", "us, ms or s"),
            ("client-service=delay:1h", "us, ms or s"),
            ("client-service=", "no setting after `=`"),
            ("client-service= ", "no setting after `=`"),
            ("client-service=delay:2ms,delay:5ms", "delay is given twice"),
            ("client-service=delay:2ms,loss:0.1", "with its %, e.g. loss:0.1%"),
            ("client-service=delay:-2ms", "not a valid delay"),
            ("client-service=loss:120%", "outside 0–100"),
            ("client-service=rate:1mbit", "unknown setting `rate`"),
            ("client-service=jitter:1ms", "give a delay too"),
        ] {
            let e = Link::parse(bad).unwrap_err().to_string();
            assert!(e.contains(says) && !e.contains('\n'), "{bad}: {e}");
        }
    }
}

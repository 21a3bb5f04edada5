//! Ramp model (like Gatling's rampUsersPerSec and k6's ramping-arrival-rate): an open-model step
//! whose rate rises linearly from `from` to `to` over the step, r(t) = from + (to − from)·t/d.
//! Request k is due when the integral of r reaches k; latency counts from that intended time, as
//! in the open model, whose schedule and driver it runs on.
//!
//! Profile step: `ramp = [1000, 20000]`, with `max_connections` and `pacing` as an open step.
//! `svcbench load --ramp 1000..20000`. Agents: each is given the whole ramp and sends its own share
//! of one schedule. Success: of the requests due. Its load value is `to`, the top of the ramp;
//! the report reads it second by second against the rate offered in each second, up to its knee.
//! Its rate is meant to outgrow the service, so no steady rate is expected to hold over the step.

use std::time::Duration;

use anyhow::{anyhow, bail, Result};

use super::open::{self, OpenDriver, Schedule};
use super::{keys, Kind, LoadAxis, LoadModel, Model, RunShare, StoredLoad};
use super::{share, RateRamp, MAX_RATE};
use crate::client::pacing::Pacing;
use crate::report::LoadReport;

/// Requests per second rising (or falling) linearly over the step, with a cap on connections.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ramp {
    pub from: f64,
    pub to: f64,
    pub max_connections: usize,
}

pub(super) const KIND: Kind = Kind {
    name: "ramp",
    family: "open-model",
    triggers: &["ramp"],
    options: &["max_connections", "pacing"],
    from_step,
    from_stored,
};

fn from_step(step: &toml::Table, default_max_connections: usize) -> Result<Vec<Model>> {
    let [from, to] = keys::numbers("ramp", &step["ramp"], "[from, to] requests/s, e.g. [1000, 20000]")?;
    let ramp = Ramp { from, to, max_connections: open::max_connections(step, default_max_connections)? };
    ramp.validate()?;
    Ok(vec![Model::Ramp(ramp)])
}

fn from_stored(s: &StoredLoad) -> Option<Model> {
    Some(Model::Ramp(Ramp { from: s.rate?, to: s.rate_end?, max_connections: 0 }))
}

impl Ramp {
    /// `FROM..TO` requests per second (the `--ramp` flag).
    pub fn parse(text: &str, max_connections: usize) -> Result<Ramp> {
        let bad = || anyhow!("'{text}' is not a ramp: write FROM..TO requests per second, e.g. 1000..20000");
        let (a, b) = text.split_once("..").ok_or_else(bad)?;
        let num = |x: &str| x.trim().parse::<f64>().map_err(|_| bad());
        let ramp = Ramp { from: num(a)?, to: num(b)?, max_connections };
        ramp.validate()?;
        Ok(ramp)
    }

    fn schedule(&self, duration: Duration) -> Schedule {
        Schedule::new(RateRamp { start: self.from, end: self.to, steps: None }, duration)
    }

    pub(super) fn driver(&self, run: &RunShare) -> OpenDriver {
        OpenDriver::new(
            self.schedule(run.duration),
            run.start,
            run.worker,
            run.workers,
            share(self.max_connections, run.threads, run.thread),
            run.max_requests,
        )
    }

    /// Requests due in [0, t] of a `d`-second step: the integral of r.
    fn due_by(&self, t: f64, d: f64) -> f64 {
        self.from * t + (self.to - self.from) * t * t / (2.0 * d)
    }
}

impl LoadModel for Ramp {
    fn name(&self) -> &'static str {
        "ramp"
    }
    fn label(&self) -> String {
        format!("ramp={}→{}/s", self.from, self.to)
    }
    fn load(&self) -> f64 {
        self.to
    }
    fn load_text(&self) -> String {
        format!("{}→{}/s", self.from, self.to)
    }
    fn axis(&self) -> LoadAxis {
        LoadAxis::OfferedRate
    }
    fn describe(&self) -> String {
        format!(
            ", ramp from {} to {} req/s, up to {} connections (open model: latency from the intended send time)",
            self.from, self.to, self.max_connections
        )
    }
    fn pool(&self) -> usize {
        self.max_connections
    }
    fn stored(&self) -> StoredLoad {
        StoredLoad { model: "ramp", connections: None, rate: Some(self.from), rate_end: Some(self.to) }
    }
    fn validate(&self) -> Result<()> {
        open::validate_cap(self.max_connections)?;
        let ok = |r: f64| r.is_finite() && (0.0..=MAX_RATE).contains(&r);
        if !ok(self.from) || !ok(self.to) || self.from.max(self.to) == 0.0 {
            bail!(
                "ramp {}..{}: rates must be between 0 and 10,000,000 requests/s, not both 0 (e.g. 1000..20000)",
                self.from,
                self.to
            );
        }
        Ok(())
    }
    fn check_agents(&self, _agents: usize) -> Result<()> {
        Ok(())
    }
    fn agent_threads(&self, threads: usize, _agents: usize) -> usize {
        threads
    }
    fn agent_args(&self, agents: usize, i: usize, threads: usize, pacing: Pacing) -> Vec<String> {
        // The whole ramp: agent i sends its own share of one schedule.
        let cap = share(self.max_connections, agents, i).max(threads);
        let ramp = format!("{}..{}", self.from, self.to);
        vec![
            "--ramp".into(),
            ramp,
            "--pacing".into(),
            pacing.name().into(),
            "--max-connections".into(),
            cap.to_string(),
        ]
    }
    fn offered(&self, report: &LoadReport) -> Option<u64> {
        report.open.as_ref().map(|o| o.intended)
    }
    fn held_rate(&self, _report: &LoadReport) -> Option<f64> {
        None
    }
    fn pacing(&self, pacing: Pacing) -> Option<Pacing> {
        Some(pacing)
    }
    fn drain(&self, request_timeout: Duration) -> Duration {
        request_timeout
    }
    fn offered_per_second(&self, duration_s: f64) -> Option<Vec<f64>> {
        // Whole seconds only: a last partial second would read as a low rate.
        let seconds = (duration_s + 1e-6).floor() as u64;
        let d = duration_s.max(1e-9);
        Some((0..seconds).map(|i| self.due_by((i + 1) as f64, d) - self.due_by(i as f64, d)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_second_sends_the_integral_of_its_rate() {
        let ramp = Ramp { from: 1000.0, to: 20000.0, max_connections: 10 };
        let d = 20;
        let schedule = ramp.schedule(Duration::from_secs(d));
        let offered = ramp.offered_per_second(d as f64).unwrap();
        assert_eq!(offered.len(), d as usize);
        // Intended sends in [i, i+1): due by just before i+1, less due by just before i.
        let due_before = |t: f64| if t <= 0.0 { 0 } else { schedule.due_by(t - 1e-9) };
        for (i, want) in offered.iter().enumerate() {
            let sent = due_before(i as f64 + 1.0) - due_before(i as f64);
            assert!((sent as f64 - want).abs() <= 1.0, "second {i}: {sent} sends, integral {want}");
        }
        // r rises by 950 req/s each second: the first second offers about 1475, the last about 19525.
        assert!((offered[0] - 1475.0).abs() < 1e-6 && (offered[19] - 19525.0).abs() < 1e-6, "{offered:?}");
        let total: f64 = offered.iter().sum();
        assert!((total - 210_000.0).abs() < 1e-6, "the whole step offers (from + to) / 2 · d");
    }

    #[test]
    fn the_whole_ramp_goes_to_every_agent_and_its_top_is_the_load() {
        let m = Ramp { from: 100.0, to: 300.0, max_connections: 9 };
        assert_eq!((m.load(), m.label()), (300.0, "ramp=100→300/s".to_string()));
        let a = m.agent_args(2, 1, 2, Pacing::Timer);
        assert_eq!(a, ["--ramp", "100..300", "--pacing", "timer", "--max-connections", "4"]);
        assert_eq!(m.agent_threads(3, 2), 3);
        assert_eq!(Model::from_stored(m.name(), m.stored()), Some(Model::Ramp(Ramp { max_connections: 0, ..m })));
    }

    #[test]
    fn steps_and_flags_read_a_ramp() {
        let t: toml::Table = toml::from_str("ramp = [1000, 20000]\nmax_connections = 50").unwrap();
        let want = Model::Ramp(Ramp { from: 1000.0, to: 20000.0, max_connections: 50 });
        assert_eq!(Model::from_step(&t, 7).unwrap(), [want]);
        let err = |text: &str| Model::from_step(&toml::from_str(text).unwrap(), 7).unwrap_err().to_string();
        assert!(err("ramp = [1000]").contains("[from, to]"));
        assert!(err("ramp = [0, 0]").contains("not both 0"));
        assert!(err("ramp = [1, 2]\nrate = 3").contains("exactly one of"));
        assert_eq!(Ramp::parse("10..20", 5).unwrap(), Ramp { from: 10.0, to: 20.0, max_connections: 5 });
        for bad in ["10:20", "10..", "x..2", "-1..5"] {
            assert!(Ramp::parse(bad, 5).is_err(), "{bad}");
        }
    }
}

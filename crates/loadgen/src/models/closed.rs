//! Closed model (like wrk): a fixed set of connections, each sending its next request as soon
//! as the previous answer arrived. Latency counts from the actual send.
//!
//! Profile step: `connections = 64` or `connections = [1, 2, 4]` (one step per value).
//! Agents: each gets its share of the connections. Success: of the requests sent.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use super::{keys, Budget, Kind, LoadAxis, LoadModel, Model, RunShare, StoredLoad};
use super::{share, MAX_CONNECTIONS};
use crate::client::connection::Failure;
use crate::client::driver::Driver;
use crate::client::pacing::Pacing;
use crate::client::worker::Core;
use crate::report::LoadReport;

/// Connections, each with one request in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed {
    pub connections: usize,
}

pub(super) const KIND: Kind =
    Kind { name: "closed", family: "closed-model", triggers: &["connections"], options: &[], from_step, from_stored };

fn from_step(step: &toml::Table, _default_max_connections: usize) -> Result<Vec<Model>> {
    let values = keys::list("connections", &step["connections"], keys::count)?;
    values
        .into_iter()
        .map(|c| {
            if c < 1 || c > MAX_CONNECTIONS as i64 {
                bail!("connections = {c}: must be between 1 and {MAX_CONNECTIONS}");
            }
            Ok(Model::closed(c as usize))
        })
        .collect()
}

fn from_stored(s: &StoredLoad) -> Option<Model> {
    s.connections.map(Model::closed)
}

impl Closed {
    pub(super) fn driver(&self, run: &RunShare) -> ClosedDriver {
        ClosedDriver::new(share(self.connections, run.threads, run.thread), run.budget.clone())
    }
}

impl LoadModel for Closed {
    fn name(&self) -> &'static str {
        "closed"
    }
    fn label(&self) -> String {
        format!("c={}", self.connections)
    }
    fn load(&self) -> f64 {
        self.connections as f64
    }
    fn load_text(&self) -> String {
        self.connections.to_string()
    }
    fn axis(&self) -> LoadAxis {
        LoadAxis::Connections
    }
    fn describe(&self) -> String {
        format!(" and {} connections (closed model)", self.connections)
    }
    fn pool(&self) -> usize {
        self.connections
    }
    fn stored(&self) -> StoredLoad {
        StoredLoad { model: "closed", connections: Some(self.connections), ..StoredLoad::default() }
    }
    fn validate(&self) -> Result<()> {
        if self.connections == 0 {
            bail!("connections is 0: use at least 1 connection")
        }
        if self.connections > MAX_CONNECTIONS {
            bail!(
                "{} connections: one machine has at most {MAX_CONNECTIONS} local ports to one target",
                self.connections
            )
        }
        Ok(())
    }
    fn check_agents(&self, agents: usize) -> Result<()> {
        // An agent without a connection would still open one: more connections than asked for.
        if agents > 1 && self.connections < agents {
            bail!(
                "{} connection(s) cannot be shared among {agents} generator agents: each needs one at least",
                self.connections
            );
        }
        Ok(())
    }
    fn agent_threads(&self, threads: usize, agents: usize) -> usize {
        // No more than the smallest agent's connections allow (`svcbench load` runs no thread
        // without a connection).
        threads.min(self.connections / agents).max(1)
    }
    fn agent_args(&self, agents: usize, i: usize, _threads: usize, _pacing: Pacing) -> Vec<String> {
        vec!["-c".into(), share(self.connections, agents, i).to_string()]
    }
    fn offered(&self, _report: &LoadReport) -> Option<u64> {
        None
    }
    fn held_rate(&self, _report: &LoadReport) -> Option<f64> {
        None
    }
    fn pacing(&self, _pacing: Pacing) -> Option<Pacing> {
        None
    }
    fn drain(&self, _request_timeout: Duration) -> Duration {
        // Like wrk, it stops at once.
        Duration::ZERO
    }
    fn offered_per_second(&self, _duration_s: f64) -> Option<Vec<f64>> {
        None
    }
}

/// Pause before reconnecting after a failed connect, so that a dead port does not turn the
/// generator into a busy loop of refused connects.
const CONNECT_RETRY: Duration = Duration::from_millis(10);

pub(crate) struct ClosedDriver {
    connections: usize,
    budget: Option<Arc<Budget>>,
    /// Budget spent: no new requests.
    spent: bool,
    /// Per connection: when to reconnect, if it is waiting to.
    retry_at: Vec<Option<Instant>>,
    waiting: usize,
}

impl ClosedDriver {
    pub(crate) fn new(connections: usize, budget: Option<Arc<Budget>>) -> ClosedDriver {
        ClosedDriver { connections, budget, spent: false, retry_at: vec![None; connections], waiting: 0 }
    }

    fn connect(&mut self, core: &mut Core, idx: usize, now: Instant) {
        if !core.connect(idx, now) {
            self.retry_later(idx, now);
        }
    }

    fn retry_later(&mut self, idx: usize, now: Instant) {
        if self.retry_at[idx].replace(now + CONNECT_RETRY).is_none() {
            self.waiting += 1;
        }
    }

    fn send(&mut self, core: &mut Core, idx: usize, now: Instant) {
        if self.spent {
            return;
        }
        if let Some(b) = &self.budget {
            if !b.take() {
                self.spent = true;
                return;
            }
        }
        if !core.send(idx, now, now) {
            // The write failed: the connection is closed; start a new one.
            self.connect(core, idx, now);
        }
    }
}

impl Driver for ClosedDriver {
    fn start(&mut self, core: &mut Core, now: Instant) {
        for _ in 0..self.connections {
            let idx = core.add_slot(now);
            self.connect(core, idx, now);
        }
    }

    fn on_idle(&mut self, core: &mut Core, idx: usize, now: Instant, _fresh: bool) {
        self.send(core, idx, now);
    }

    fn on_closed(&mut self, core: &mut Core, idx: usize, now: Instant, failure: Option<Failure>, was_connecting: bool) {
        if self.spent {
            return;
        }
        let connect_failed =
            was_connecting || matches!(failure, Some(Failure::ConnectRefused | Failure::ConnectTimeout));
        if connect_failed {
            self.retry_later(idx, now);
        } else {
            self.connect(core, idx, now);
        }
    }

    fn on_tick(&mut self, core: &mut Core, now: Instant) {
        if self.waiting == 0 {
            return;
        }
        for idx in 0..self.retry_at.len() {
            if self.retry_at[idx].is_some_and(|at| at <= now) {
                self.retry_at[idx] = None;
                self.waiting -= 1;
                self.connect(core, idx, now);
            }
        }
    }

    fn finished(&self, core: &Core) -> bool {
        self.spent && !core.any_busy()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelt_model_key_is_named_not_taken_for_a_missing_model() {
        let err = |text: &str| Model::from_step(&toml::from_str(text).unwrap(), 7).unwrap_err().to_string();
        assert!(err("conections = 4").starts_with("unknown key `conections`"), "{}", err("conections = 4"));
        assert!(err("conections = 4\nrate = 5").starts_with("unknown key `conections`"));
        assert!(Model::step_keys().contains(&"connections") && Model::step_keys().contains(&"pacing"));
    }

    #[test]
    fn connections_split_across_agents_and_are_the_load() {
        let m = Closed { connections: 5 };
        assert_eq!((m.load(), m.load_text(), m.label()), (5.0, "5".to_string(), "c=5".to_string()));
        let shares: Vec<Vec<String>> = (0..2).map(|i| m.agent_args(2, i, 4, Pacing::Timer)).collect();
        assert_eq!(shares, [["-c", "3"], ["-c", "2"]]);
        assert_eq!(m.agent_threads(4, 2), 2);
        assert!(m.check_agents(5).is_ok());
        assert!(m.check_agents(6).unwrap_err().to_string().contains("6 generator agents"));
        assert_eq!(Model::from_stored(m.name(), m.stored()), Some(Model::Closed(m)));
    }

    #[test]
    fn steps_read_one_value_or_a_list() {
        let t: toml::Table = toml::from_str("connections = [1, 4]").unwrap();
        assert_eq!(Model::from_step(&t, 10).unwrap(), [Model::closed(1), Model::closed(4)]);
        let t: toml::Table = toml::from_str("connections = -1").unwrap();
        assert!(Model::from_step(&t, 10).unwrap_err().to_string().contains("connections = -1"));
    }
}

//! Load models: how a step's load is given and driven. One module per model says everything that
//! depends on the model (like k6's one file per executor): its step shape in a profile, its
//! load value and chart axis, how it splits across generator agents, its success denominator,
//! its own validity flags and, for the worker's event loop, its driver (client/driver.rs). Everything outside
//! this folder asks a [`Model`] through [`LoadModel`] and never tests which model it is.
//!
//! The drivers never do I/O themselves, they ask the worker's core.

pub(crate) mod closed;
pub(crate) mod open;
pub(crate) mod ramp;
mod rate;

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use crate::client::driver::Driver;
use crate::client::pacing::Pacing;
use crate::report::LoadReport;

pub use closed::Closed;
pub use open::{rate_range, Open, MAX_RANGE_RATES};
pub use ramp::Ramp;
pub use rate::{RateRamp, MAX_RATE};

/// How load is offered: one variant per model module.
#[derive(Debug, Clone, PartialEq)]
pub enum Model {
    Closed(Closed),
    Open(Open),
    Ramp(Ramp),
}

/// What a step's load is counted in: the x axis of its charts and the unit of its load value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadAxis {
    /// Connections, each with one request in flight (doubling from step to step: a log₂ axis).
    Connections,
    /// Requests per second offered, whatever the service answers.
    OfferedRate,
}

impl LoadAxis {
    /// The axis title.
    pub fn name(self) -> &'static str {
        match self {
            LoadAxis::Connections => "connections",
            LoadAxis::OfferedRate => "offered rate",
        }
    }

    pub fn unit(self) -> &'static str {
        match self {
            LoadAxis::Connections => "",
            LoadAxis::OfferedRate => "req/s",
        }
    }

    /// The chart scale: connections double from step to step, rates rise in even steps.
    pub fn scale(self) -> &'static str {
        match self {
            LoadAxis::Connections => "log2",
            LoadAxis::OfferedRate => "linear",
        }
    }
}

/// A step's load as the store keeps it: the model's name and its numbers in the step table's columns.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StoredLoad {
    pub model: &'static str,
    pub connections: Option<usize>,
    pub rate: Option<f64>,
    pub rate_end: Option<f64>,
}

/// What every model says about itself.
pub trait LoadModel {
    /// Its name in the store (the step table's `model` column).
    fn name(&self) -> &'static str;
    /// Short label for progress lines and the store: `c=64`, `r=200/s`.
    fn label(&self) -> String;
    /// The number on the x axis and in tables (connections or req/s).
    fn load(&self) -> f64;
    /// That number as a category label: `64`, `200/s`.
    fn load_text(&self) -> String;
    fn axis(&self) -> LoadAxis;
    /// The run's header line after the thread count: "64 connections (closed model)".
    fn describe(&self) -> String;
    /// Connections the run may hold, shared among its worker threads.
    fn pool(&self) -> usize;
    /// The store's columns.
    fn stored(&self) -> StoredLoad;
    /// Checks the numbers; every message names the setting and how to fix it.
    fn validate(&self) -> Result<()>;
    /// Why `agents` generator agents cannot share this load, if they cannot.
    fn check_agents(&self, agents: usize) -> Result<()>;
    /// Threads each of `agents` agents runs: all run the same number, so that their shares of the
    /// `{unique}` numbers (and of a schedule) never overlap.
    fn agent_threads(&self, threads: usize, agents: usize) -> usize;
    /// `svcbench load` flags of agent `i` of `agents` for its share of this load.
    fn agent_args(&self, agents: usize, i: usize, threads: usize, pacing: Pacing) -> Vec<String>;
    /// The success ratio's denominator when it is not the requests sent: the requests offered
    /// (due), sent or not.
    fn offered(&self, report: &LoadReport) -> Option<u64>;
    /// The rate a steady step must keep up with, for the check that completions do not fall
    /// behind it while latency rises; None where no such rate holds over the step.
    fn held_rate(&self, report: &LoadReport) -> Option<f64>;
    /// How a worker waits for a due send (`pacing` as asked); None: it never waits for a time.
    fn pacing(&self, pacing: Pacing) -> Option<Pacing>;
    /// How long the run waits, after its window, for answers to requests sent in it.
    fn drain(&self, request_timeout: Duration) -> Duration;
    /// The rate offered in each whole second of a `duration_s` step, for a model whose rate changes
    /// within the step (read second by second: knee.rs); None where one figure is the step's.
    fn offered_per_second(&self, duration_s: f64) -> Option<Vec<f64>>;
}

impl Model {
    /// Closed model with `connections`.
    pub fn closed(connections: usize) -> Model {
        Model::Closed(Closed { connections })
    }

    /// The model itself, to ask.
    fn get(&self) -> &dyn LoadModel {
        match self {
            Model::Closed(m) => m,
            Model::Open(m) => m,
            Model::Ramp(m) => m,
        }
    }

    /// The model a stored step ran (`model`: the store's name for it, `s`: its columns); None for a
    /// name this build does not know. The open models' connection cap is not stored: 0 here.
    pub fn from_stored(model: &str, s: StoredLoad) -> Option<Model> {
        let kind = KINDS.iter().find(|k| k.name == model)?;
        (kind.from_stored)(&StoredLoad { model: kind.name, ..s })
    }

    /// The loads of one profile step (`[[step]]`, its keys other than the common ones: a list
    /// gives one load per value). `default_max_connections` caps an open step that sets none.
    pub fn from_step(keys: &toml::Table, default_max_connections: usize) -> Result<Vec<Model>> {
        let triggers = || KINDS.iter().flat_map(|k| k.triggers).map(|t| format!("`{t}`")).collect::<Vec<_>>();
        // A misspelt model key (`conections`) leaves no model key: name it, not the missing model.
        if let Some(key) = keys.keys().find(|k| !Model::step_keys().contains(&k.as_str())) {
            bail!("unknown key `{key}`: a step's load is one of {}", triggers().join(", "));
        }
        let given: Vec<&Kind> = KINDS.iter().filter(|k| k.triggers.iter().any(|t| keys.contains_key(*t))).collect();
        let given_triggers = given.iter().flat_map(|k| k.triggers).filter(|t| keys.contains_key(**t)).count();
        let [kind] = given.as_slice() else { bail!("give exactly one of {}", triggers().join(", ")) };
        if given_triggers > 1 {
            bail!("give exactly one of {}", triggers().join(", "))
        }
        for key in keys.keys() {
            if kind.triggers.contains(&key.as_str()) || kind.options.contains(&key.as_str()) {
                continue;
            }
            let takers: Vec<&Kind> = KINDS.iter().filter(|k| k.options.contains(&key.as_str())).collect();
            let family = takers[0].family;
            let names: Vec<String> = takers.iter().flat_map(|k| k.triggers).map(|t| format!("`{t}`")).collect();
            bail!("{key} is for {family} steps ({})", names.join(", "));
        }
        (kind.from_step)(keys, default_max_connections)
    }

    /// Every step key some model reads (its triggers and options), for messages naming a misspelt one.
    pub fn step_keys() -> Vec<&'static str> {
        let mut keys: Vec<&str> = KINDS.iter().flat_map(|k| k.triggers.iter().chain(k.options)).copied().collect();
        keys.sort_unstable();
        keys.dedup();
        keys
    }

    /// The driver of worker `worker` of `workers` (of all agents), with its share of the load.
    pub(crate) fn driver(&self, run: &RunShare) -> Box<dyn Driver> {
        match self {
            Model::Closed(m) => Box::new(m.driver(run)),
            Model::Open(m) => Box::new(m.driver(run)),
            Model::Ramp(m) => Box::new(m.driver(run)),
        }
    }

    /// A request budget shared by the workers (`max_requests`), for models that spend one.
    pub(crate) fn budget(&self, max_requests: Option<u64>) -> Option<Arc<Budget>> {
        match self {
            Model::Closed(_) => max_requests.map(|max| Arc::new(Budget::new(max))),
            Model::Open(_) | Model::Ramp(_) => None,
        }
    }
}

impl LoadModel for Model {
    fn name(&self) -> &'static str {
        self.get().name()
    }
    fn label(&self) -> String {
        self.get().label()
    }
    fn load(&self) -> f64 {
        self.get().load()
    }
    fn load_text(&self) -> String {
        self.get().load_text()
    }
    fn axis(&self) -> LoadAxis {
        self.get().axis()
    }
    fn describe(&self) -> String {
        self.get().describe()
    }
    fn pool(&self) -> usize {
        self.get().pool()
    }
    fn stored(&self) -> StoredLoad {
        self.get().stored()
    }
    fn validate(&self) -> Result<()> {
        self.get().validate()
    }
    fn check_agents(&self, agents: usize) -> Result<()> {
        self.get().check_agents(agents)
    }
    fn agent_threads(&self, threads: usize, agents: usize) -> usize {
        self.get().agent_threads(threads, agents)
    }
    fn agent_args(&self, agents: usize, i: usize, threads: usize, pacing: Pacing) -> Vec<String> {
        self.get().agent_args(agents, i, threads, pacing)
    }
    fn offered(&self, report: &LoadReport) -> Option<u64> {
        self.get().offered(report)
    }
    fn held_rate(&self, report: &LoadReport) -> Option<f64> {
        self.get().held_rate(report)
    }
    fn pacing(&self, pacing: Pacing) -> Option<Pacing> {
        self.get().pacing(pacing)
    }
    fn drain(&self, request_timeout: Duration) -> Duration {
        self.get().drain(request_timeout)
    }
    fn offered_per_second(&self, duration_s: f64) -> Option<Vec<f64>> {
        self.get().offered_per_second(duration_s)
    }
}

/// A model's entry in the registry: its names in profiles and in the store.
struct Kind {
    /// The store's `model` value.
    name: &'static str,
    /// "closed-model", "open-model": what its options are for, in messages.
    family: &'static str,
    /// The step keys that choose this model (one of them per step).
    triggers: &'static [&'static str],
    /// Other step keys it reads.
    options: &'static [&'static str],
    from_step: fn(&toml::Table, usize) -> Result<Vec<Model>>,
    from_stored: fn(&StoredLoad) -> Option<Model>,
}

/// Every model, in the order messages list them.
const KINDS: &[Kind] = &[closed::KIND, open::KIND, ramp::KIND];

/// What a worker's driver is given: the run's shape and this worker's place in it.
pub(crate) struct RunShare {
    pub(crate) start: Instant,
    pub(crate) duration: Duration,
    /// This worker among this generator's threads.
    pub(crate) thread: usize,
    pub(crate) threads: usize,
    /// This worker among all agents' workers (a schedule is shared by all of them).
    pub(crate) worker: usize,
    pub(crate) workers: usize,
    pub(crate) max_requests: Option<u64>,
    pub(crate) budget: Option<Arc<Budget>>,
}

/// Step keys as numbers, with the key named in every message.
pub(crate) mod keys {
    use anyhow::{bail, Result};

    pub(crate) fn number(key: &str, v: &toml::Value) -> Result<f64> {
        match v {
            toml::Value::Integer(i) => Ok(*i as f64),
            toml::Value::Float(f) => Ok(*f),
            other => bail!("{key} = {other}: give a number"),
        }
    }

    pub(crate) fn count(key: &str, v: &toml::Value) -> Result<i64> {
        match v {
            toml::Value::Integer(i) => Ok(*i),
            other => bail!("{key} = {other}: give a whole number"),
        }
    }

    /// A number or a list of numbers.
    pub(crate) fn list<T>(key: &str, v: &toml::Value, one: impl Fn(&str, &toml::Value) -> Result<T>) -> Result<Vec<T>> {
        match v {
            toml::Value::Array(a) => a.iter().map(|x| one(key, x)).collect(),
            x => Ok(vec![one(key, x)?]),
        }
    }

    /// `[a, b, …]` of exactly `n` numbers.
    pub(crate) fn numbers<const N: usize>(key: &str, v: &toml::Value, shape: &str) -> Result<[f64; N]> {
        let toml::Value::Array(a) = v else { bail!("{key} must be {shape}") };
        if a.len() != N {
            bail!("{key} must be {shape}");
        }
        let mut out = [0.0; N];
        for (o, x) in out.iter_mut().zip(a) {
            *o = number(key, x)?;
        }
        Ok(out)
    }
}

/// Shared request budget (`max_requests`) of the closed model's workers.
pub(crate) struct Budget {
    max: u64,
    issued: std::sync::atomic::AtomicU64,
}

impl Budget {
    pub(crate) fn new(max: u64) -> Budget {
        Budget { max, issued: std::sync::atomic::AtomicU64::new(0) }
    }

    /// Claims one request; false once the budget is spent.
    pub(crate) fn take(&self) -> bool {
        // Relaxed: only the count matters, not ordering with other memory.
        self.issued.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < self.max
    }
}

/// Most connections to one target (local ports).
pub const MAX_CONNECTIONS: usize = 65_000;
/// `total` shared out among `parts` (worker threads, or generator agents): part `i` gets its even
/// share, the first ones one more when it does not divide.
pub fn share(total: usize, parts: usize, i: usize) -> usize {
    total / parts + usize::from(i < total % parts)
}

//! svcbench's load generator: HTTP/1.1 over TCP, closed model (like wrk) and open model
//! (like wrk2, latency from the intended send time), weighted request mixes with value lists,
//! HDR latency histograms, errors counted by kind.
//!
//! ```no_run
//! use loadgen::{LoadConfig, Model, RequestMix, Target};
//! let target = Target::parse("http://127.0.0.1:8080")?;
//! let mut config = LoadConfig::new(target, RequestMix::single("GET", "/"), Model::closed(64));
//! config.duration = std::time::Duration::from_secs(5);
//! let report = loadgen::run(&config, None)?;
//! println!("{:.0} req/s, p99 {:.2} ms", report.success_rps(), report.latency.p99);
//! # anyhow::Ok(())
//! ```
//!
//! Layout (no two top-level modules import each other): `config` (what to run), `request` (what to
//! send: templates, value lists, the mix, the success statuses), `client` (connections, the per-thread
//! event loop, its pacing, its recorder, and the driver a load model gives it), `http` (response
//! parsing), `models` (one module per load model: closed, open, ramp), `timeline` + `histogram` (what is
//! measured), `knee` (a step read second by second), `report` (the result and merging), `printer` and
//! `cli` (the `svcbench load` command), `flag` + `validity` (flags saying when a figure
//! measured the generator rather than the service).

pub mod cli;
mod client;
mod config;
mod flag;
pub mod histogram;
pub mod http;
pub mod knee;
pub mod limits;
pub mod models;
mod preflight;
pub mod printer;
mod report;
mod request;
mod run;
mod timeline;
pub mod validity;

pub use client::pacing::Pacing;
pub use config::{split_url, LoadConfig, Target, MAX_DURATION, MAX_START_DELAY, MAX_TIMEOUT};
pub use hdrhistogram::Histogram;
pub use models::{share, Closed, LoadAxis, LoadModel, Model, Open, RateRamp, StoredLoad, MAX_RATE};
pub use report::{
    merge_reports, ConnectionStats, ErrorCounts, LoadReport, OpenStats, Percentiles, SecondStats, WorkerUsage,
};
pub use request::{
    MixSpec, RequestMix, RequestSpec, RequestTemplate, StatusSet, ValueList, ValueOrder, ValuesSpec, DEFAULT_SEED,
};
pub use run::run;
pub use timeline::{LiveSnapshot, LiveStats};
pub use validity::{Flag, FlagCode};

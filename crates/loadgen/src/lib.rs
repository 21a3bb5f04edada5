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
//! Layout: `config` (what to run), `request` + `template` (what to send), `client` (connections
//! and the per-thread event loop), `http` (response parsing), `models` (one module per load model: closed, open),
//! `stats` + `timeline` + `histogram` (what is measured), `knee` (a step read second by second), `report` (the result and merging),
//! `printer` and `cli` (the `svcbench load` command), `validity` (flags saying when a figure
//! measured the generator rather than the service).

pub mod cli;
mod client;
mod config;
pub mod histogram;
pub mod http;
pub mod knee;
pub mod limits;
pub mod models;
pub mod printer;
mod report;
mod request;
mod run;
mod stats;
mod template;
mod timeline;
pub mod validity;

pub use config::{
    share, split_url, LoadConfig, Pacing, RateRamp, StatusSet, Target, MAX_DURATION, MAX_RATE, MAX_START_DELAY,
    MAX_TIMEOUT,
};
pub use hdrhistogram::Histogram;
pub use models::{Closed, LoadAxis, LoadModel, Model, Open, StoredLoad};
pub use report::{
    merge_reports, ConnectionStats, ErrorCounts, LoadReport, OpenStats, Percentiles, SecondStats, WorkerUsage,
};
pub use request::{MixSpec, RequestMix, RequestSpec, RequestTemplate, ValueList, ValueOrder, ValuesSpec, DEFAULT_SEED};
pub use run::run;
pub use timeline::{LiveSnapshot, LiveStats};
pub use validity::{Flag, FlagCode};

//! svcbench: benchmark lab for HTTP microservices. Data flows one way:
//! cli → runner → (sandbox, loadgen, deps) → store → report.
pub mod alone;
pub mod bounded;
pub mod capabilities;
pub mod cell;
pub mod child;
pub mod cli;
pub mod commands;
pub mod cpus;
pub mod deps;
pub mod duet;
pub mod exit;
pub mod figures;
pub mod gate;
pub mod git;
pub mod guard;
pub mod history;
pub mod host;
pub mod http_client;
#[cfg(test)]
mod input_props;
pub mod manifest;
pub mod metrics;
pub mod mock_upstream;
pub mod network;
pub mod options;
pub mod paths;
pub mod poll;
pub mod profile;
pub mod readiness;
pub mod remote;
pub mod report;
pub mod revision;
pub mod runner;
pub mod safe_fs;
pub mod sandbox;
pub mod scenario;
pub mod server_accept;
pub mod service;
pub mod speed_probe;
pub mod store;
pub mod study;
pub mod teardown;
mod terminal;
pub mod toml_file;

/// svcbench's version and the commit it was built from, as every store records it: `0.1.0 (commit <sha>)`,
/// with `, uncommitted changes` when its sources differed from that commit (build.rs).
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), env!("SVCBENCH_COMMIT_SUFFIX"));

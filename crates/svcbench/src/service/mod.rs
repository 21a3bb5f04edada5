//! The service under test, one instance at a time: its build (with the stamp that skips an unchanged
//! one, and the lanes that build several ahead), its start under its limits on this machine or through a
//! far sandbox, its readiness wait and its address. The runner decides when; this module knows how.
pub mod build;
pub mod build_many;
pub mod build_stamp;
pub mod code_fingerprint;
pub mod container_start;
pub mod instance;
#[cfg(test)]
mod pod_spec_tests;
pub mod process_start;
pub mod service_sandbox;
pub mod start;
pub mod start_command;

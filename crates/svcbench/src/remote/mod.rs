//! Other machines: a hosts file places the generator agents, the store and the service on machines
//! reached over OpenSSH. This side starts far processes there (`svcbench serve-deps`, `serve-service`, load
//! agents) and talks to them one JSON line at a time; every far process ends when its ssh connection does.
//! The emulated network between namespaces of this machine is network/'s, not this module's.
pub mod deps_client;
pub mod host_checks;
pub mod hosts_file;
pub mod serve_deps;
pub mod serve_service;
pub mod service_client;
pub mod service_protocol;
pub mod ssh;

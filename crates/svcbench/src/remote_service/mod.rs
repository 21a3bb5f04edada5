//! The service on another machine (a hosts file's `[service] at = "ssh://…"`): svcbench there builds and
//! runs it from a checkout, in the ordinary sandbox (its limits, its cgroup), and answers this side's
//! questions about it over the ssh connection — one JSON request per line, one JSON reply per line. The
//! service ends when the connection does: at the end of the session, on Ctrl-C, on an error, and when this
//! svcbench is killed.
pub mod client;
pub mod protocol;
pub mod serve;

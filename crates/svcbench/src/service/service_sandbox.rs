//! What the runner asks of a service's sandbox, wherever it runs: on this machine (the ordinary sandbox)
//! or on the service's own machine (remote/service_client.rs answers the same questions over ssh). A trait,
//! so this module knows nothing of other machines.
use crate::sandbox::cgroup::Applied;
use crate::sandbox::process::Exit;
use crate::sandbox::sampler::Sample;
use crate::sandbox::{Limits, Probe, Sandbox, StopOutcome};
use std::sync::Arc;
use std::time::Duration;

pub trait ServiceSandbox: Send {
    /// The limits the service really runs under, and how they differ from `asked` (empty: as asked).
    fn limits_held(&self, asked: &Limits) -> (Applied, Vec<String>);
    fn cgroup_version(&self) -> &str;
    /// Limits that could not be applied, and why.
    fn warnings(&self) -> &[String];
    fn probe(&self) -> Arc<dyn Probe>;
    fn sample(&self) -> Sample;
    /// Restarts the kernel's memory high-water mark; false where only the sampler's maximum is available.
    fn reset_peak(&self) -> bool;
    fn kernel_peak_mib(&self) -> Option<f64>;
    /// The exit of the main process, once it has ended.
    fn try_exit(&mut self) -> Option<Exit>;
    /// Waits up to `timeout` for the main process to end by itself.
    fn wait_exit(&mut self, timeout: Duration) -> Option<Exit>;
    /// SIGTERM, up to `grace` for it to end, then SIGKILL to everything.
    fn stop(&mut self, grace: Duration) -> StopOutcome;
    /// The service's processes on this machine (None: it runs on another, where they are not read).
    fn pids(&self) -> Option<Vec<i32>> {
        None
    }
    /// The last lines of the service's log where the sandbox keeps it (None: in the instance's log file).
    fn log_tail(&self, _lines: usize) -> Option<String> {
        None
    }
    /// Why the service must not be measured because its sandbox does not confine it as asked (a container
    /// whose capabilities, privileges, root filesystem or pids limit are not held); None: confined.
    fn confinement_refusal(&self) -> Option<String> {
        None
    }
    /// When the engine says it started the service (a container); None for a process.
    fn started_by_engine(&self) -> Option<std::time::SystemTime> {
        None
    }
    /// Forks and new threads refused so far at its cgroup's process limit (None: not counted there).
    fn pids_refused(&self) -> Option<u64> {
        None
    }
}

impl ServiceSandbox for Sandbox {
    fn limits_held(&self, asked: &Limits) -> (Applied, Vec<String>) {
        Sandbox::limits_held(self, asked)
    }
    fn pids_refused(&self) -> Option<u64> {
        Sandbox::pids_refused(self)
    }
    fn cgroup_version(&self) -> &str {
        Sandbox::cgroup_version(self)
    }
    fn warnings(&self) -> &[String] {
        &self.warnings
    }
    fn probe(&self) -> Arc<dyn Probe> {
        Sandbox::probe(self)
    }
    fn sample(&self) -> Sample {
        Sandbox::sample(self)
    }
    fn reset_peak(&self) -> bool {
        Sandbox::reset_peak(self)
    }
    fn kernel_peak_mib(&self) -> Option<f64> {
        Sandbox::kernel_peak_mib(self)
    }
    fn try_exit(&mut self) -> Option<Exit> {
        Sandbox::try_exit(self)
    }
    fn wait_exit(&mut self, timeout: Duration) -> Option<Exit> {
        Sandbox::wait_exit(self, timeout)
    }
    fn stop(&mut self, grace: Duration) -> StopOutcome {
        Sandbox::stop(self, grace)
    }
    fn pids(&self) -> Option<Vec<i32>> {
        Some(Sandbox::pids(self))
    }
}

//! A service's sandbox, on this machine or on the service's own (a hosts file's `[service] at`): the runner
//! asks both the same questions.
use crate::remote_service::client::RemoteSandbox;
use crate::sandbox::cgroup::Applied;
use crate::sandbox::process::Exit;
use crate::sandbox::sampler::Sample;
use crate::sandbox::{Limits, Probe, Sandbox, StopOutcome};
use std::sync::Arc;
use std::time::Duration;

pub enum ServiceSandbox {
    Here(Sandbox),
    There(RemoteSandbox),
}

impl ServiceSandbox {
    /// The limits the service really runs under, and how they differ from `asked` (empty: as asked).
    pub fn limits_held(&self, asked: &Limits) -> (Applied, Vec<String>) {
        match self {
            ServiceSandbox::Here(s) => s.limits_held(asked),
            ServiceSandbox::There(s) => s.limits_held(asked),
        }
    }

    pub fn cgroup_version(&self) -> &str {
        match self {
            ServiceSandbox::Here(s) => s.cgroup_version(),
            ServiceSandbox::There(s) => s.cgroup_version(),
        }
    }

    /// Limits that could not be applied, and why.
    pub fn warnings(&self) -> &[String] {
        match self {
            ServiceSandbox::Here(s) => &s.warnings,
            ServiceSandbox::There(s) => &s.warnings,
        }
    }

    pub fn probe(&self) -> Arc<dyn Probe> {
        match self {
            ServiceSandbox::Here(s) => s.probe(),
            ServiceSandbox::There(s) => s.probe(),
        }
    }

    pub fn sample(&self) -> Sample {
        match self {
            ServiceSandbox::Here(s) => s.sample(),
            ServiceSandbox::There(s) => s.sample(),
        }
    }

    /// Restarts the kernel's memory high-water mark; false where only the sampler's maximum is available.
    pub fn reset_peak(&self) -> bool {
        match self {
            ServiceSandbox::Here(s) => s.reset_peak(),
            ServiceSandbox::There(s) => s.reset_peak(),
        }
    }

    pub fn kernel_peak_mib(&self) -> Option<f64> {
        match self {
            ServiceSandbox::Here(s) => s.kernel_peak_mib(),
            ServiceSandbox::There(s) => s.kernel_peak_mib(),
        }
    }

    /// The exit of the main process, once it has ended.
    pub fn try_exit(&mut self) -> Option<Exit> {
        match self {
            ServiceSandbox::Here(s) => s.try_exit(),
            ServiceSandbox::There(s) => s.try_exit(),
        }
    }

    /// Waits up to `timeout` for the main process to end by itself.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<Exit> {
        match self {
            ServiceSandbox::Here(s) => s.wait_exit(timeout),
            ServiceSandbox::There(s) => s.wait_exit(timeout),
        }
    }

    /// SIGTERM, up to `grace` for it to end, then SIGKILL to everything.
    pub fn stop(&mut self, grace: Duration) -> StopOutcome {
        match self {
            ServiceSandbox::Here(s) => s.stop(grace),
            ServiceSandbox::There(s) => s.stop(grace),
        }
    }
}

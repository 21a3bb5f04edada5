//! A measuring session's options: the arguments `run` and `study` share, and the one place the runner's
//! options are built from them.
use super::{DepArgs, GeneratorArgs, NetworkArgs};
use crate::runner::RunOptions;
pub use crate::runner::SessionPlan;
use crate::sandbox::CgroupChoice;
use anyhow::{bail, Result};

/// Arguments every measuring session takes (`svcbench run`, `svcbench study`).
#[derive(clap::Args, Debug, Clone)]
pub struct SessionArgs {
    /// Use the services as they are built (skip build commands).
    #[arg(long)]
    pub no_build: bool,
    /// Which cgroup version to use (auto detects).
    #[arg(long, value_enum, default_value = "auto")]
    pub cgroup: CgroupChoice,
    /// Machine-speed drift, in percent, beyond which a step is flagged (the probe is a fixed CPU-bound loop
    /// timed on the step's CPUs before and after its load, against the session's median).
    #[arg(long, default_value_t = 10.0, value_name = "PCT", value_parser = super::parse_probe_tolerance)]
    pub probe_tolerance: f64,
    /// Measure even where the limits cannot be applied here; every run is then marked unlimited and left
    /// out of quoted figures.
    #[arg(long)]
    pub allow_unlimited: bool,
    /// Wait for another svcbench measuring on this machine to finish instead of refusing.
    #[arg(long)]
    pub wait_lock: bool,
    #[command(flatten)]
    pub network: NetworkArgs,
    #[command(flatten)]
    pub generators: GeneratorArgs,
    #[command(flatten)]
    pub given: DepArgs,
}

impl SessionArgs {
    /// Checks what can be checked before anything is read or built.
    pub fn check(&self) -> Result<()> {
        if !(self.probe_tolerance > 0.0 && self.probe_tolerance.is_finite()) {
            bail!("--probe-tolerance {}: must be a percentage above zero, e.g. 10", self.probe_tolerance);
        }
        Ok(())
    }
}

/// The runner's options, from the shared arguments and the command's plan.
pub fn run_options(shared: &SessionArgs, plan: SessionPlan) -> Result<RunOptions> {
    shared.check()?;
    let hosts_plan = shared.generators.plan(&shared.network)?;
    Ok(RunOptions {
        plan,
        cgroup: shared.cgroup,
        skip_build: shared.no_build,
        stop_grace: crate::runner::STOP_GRACE,
        command_line: std::env::args().collect::<Vec<_>>().join(" "),
        probe_tolerance: shared.probe_tolerance / 100.0,
        allow_unlimited: shared.allow_unlimited,
        wait_lock: shared.wait_lock,
        generators: shared.generators.count(hosts_plan.as_ref()),
        hosts_plan,
        given_deps: shared.given.given()?,
    })
}

//! A measuring session's options: the arguments `run` and `study` share, and the one place the runner's
//! options are built from them.
use super::{DepArgs, GeneratorArgs, NetworkArgs};
use crate::cell::AxisCell;
use crate::runner::RunOptions;
use crate::sandbox::CgroupChoice;
use crate::sandbox::Limits;
use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

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

/// What one session measures: the parts a command decides itself.
pub struct SessionPlan {
    pub services: Vec<PathBuf>,
    pub scenario: Option<String>,
    pub profile: String,
    pub runs: u32,
    pub limits: Limits,
    pub loadgen_cpuset: Option<String>,
    pub db: PathBuf,
    pub label: Option<String>,
    pub step_duration: Option<Duration>,
    pub mix: Option<String>,
    pub startup_timeout: Duration,
    pub seed: u64,
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// A study's cells (empty: `limits` alone), its name and the runs its store already holds.
    pub cells: Vec<AxisCell>,
    pub study: Option<String>,
    pub completed: BTreeMap<(String, String), u32>,
    /// The links of the emulated network (None: loopback), as the command resolved them.
    pub net: Option<Vec<crate::network::Link>>,
    /// How container services start (`run --runtime`).
    pub runtime: crate::sandbox::container::Runtime,
}

/// The runner's options, from the shared arguments and the command's plan.
pub fn run_options(shared: &SessionArgs, plan: SessionPlan) -> Result<RunOptions> {
    shared.check()?;
    let hosts_plan = shared.generators.plan(&shared.network)?;
    Ok(RunOptions {
        services: plan.services,
        scenario: plan.scenario,
        profile: plan.profile,
        runs: plan.runs,
        limits: plan.limits,
        loadgen_cpuset: plan.loadgen_cpuset,
        db: plan.db,
        label: plan.label,
        cgroup: shared.cgroup,
        step_duration: plan.step_duration,
        mix: plan.mix,
        skip_build: shared.no_build,
        startup_timeout: plan.startup_timeout,
        stop_grace: crate::runner::STOP_GRACE,
        seed: plan.seed,
        command_line: std::env::args().collect::<Vec<_>>().join(" "),
        metrics_listen: plan.metrics_listen,
        probe_tolerance: shared.probe_tolerance / 100.0,
        allow_unlimited: shared.allow_unlimited,
        wait_lock: shared.wait_lock,
        cells: plan.cells,
        study: plan.study,
        completed: plan.completed,
        net: plan.net,
        runtime: plan.runtime,
        generators: shared.generators.count(hosts_plan.as_ref()),
        hosts_plan,
        given_deps: shared.given.given()?,
    })
}

//! What every pair of a duet shares, and the generator's configuration it gives each side in a step: the
//! same for both sides but their targets.
use super::slices::StoreCpus;
use crate::manifest::Service;
use crate::profile::{Profile, Step};
use crate::sandbox::{CgroupChoice, Limits, Probe};
use crate::scenario::Scenario;
use crate::service::instance::Instance;
use crate::store::DuetMode;
use anyhow::Result;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// What every pair of a duet shares.
pub struct DuetSetup<'a> {
    /// A and B, in the duet's order.
    pub services: [&'a Service; 2],
    pub scenario: &'a Scenario,
    pub profile: &'a Profile,
    pub limits: &'a Limits,
    pub cgroup: CgroupChoice,
    pub gen_cpus: &'a [usize],
    pub work_dir: &'a Path,
    pub mix: Option<&'a str>,
    pub seed: u64,
    /// Both sides at once, or in turns (alternate.rs).
    pub mode: DuetMode,
    /// Readers of the shared store's CPU, read with the sides' counters (none: no store).
    pub store: &'a [Arc<dyn Probe>],
    pub store_cpus: Option<StoreCpus>,
}

/// The generator's configuration for one side in a step, the same for both sides but their targets.
pub(super) fn load_config(
    setup: &DuetSetup,
    inst: &Instance,
    step: &Step,
    seq: u32,
    stop: &Arc<AtomicBool>,
) -> Result<loadgen::LoadConfig> {
    let (mut cfg, _, _) = crate::runner::step::load_config(
        setup.scenario,
        setup.mix,
        setup.seed,
        step,
        seq,
        inst.target(),
        setup.gen_cpus,
        setup.profile.request_timeout,
    )?;
    cfg.stop = Some(stop.clone());
    Ok(cfg)
}

//! A duet's dependencies, started as a run's are (deps/): a server (OpenSearch, the mock upstream) once for
//! the whole duet and shared by both sides, since both must see the same store; a file beside the service
//! (SQLite) once per side, made afresh for every pair and owned by that side's user, since a side must
//! neither see the other's writes nor reach its files.
use super::slices::StoreCpus;
use crate::deps::{is_per_service, DepContext, Dependencies, GivenDeps};
use crate::sandbox::service_user::Account;
use crate::sandbox::{CgroupChoice, Probe};
use crate::scenario::Scenario;
use anyhow::Result;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

pub struct DuetDeps {
    /// The servers both sides use.
    shared: Dependencies,
    /// A's and B's own files.
    sides: [Dependencies; 2],
}

impl DuetDeps {
    /// Starts the shared servers on the generators' CPUs (where a run places them) and each side's files.
    pub fn start(scenario: &Scenario, work_dir: &Path, gen_cpus: &[usize], cgroup: CgroupChoice) -> Result<DuetDeps> {
        let given = GivenDeps::default();
        let ctx = |account: Account, tag: &str| DepContext {
            work_dir,
            scenario_dir: &scenario.dir,
            cpuset: Some(crate::cpus::format(gen_cpus)),
            cgroup,
            session_tag: format!("{}-duet-{tag}", std::process::id()),
            for_load: true,
            host: crate::network::Host::local(),
            given: &given,
            account,
        };
        let (own, servers): (Vec<_>, Vec<_>) =
            scenario.file.dependency.iter().cloned().partition(|d| is_per_service(&d.kind));
        let mut shared = Dependencies::start(&servers, &ctx(Account::Main, "store"))?;
        shared.before_run("duet")?;
        let sides = [
            Dependencies::start(&own, &ctx(Account::Main, "a"))?,
            Dependencies::start(&own, &ctx(Account::Peer, "b"))?,
        ];
        Ok(DuetDeps { shared, sides })
    }

    /// Fresh files for each side, as before a run; the placeholders each side starts with.
    pub fn before_pair(&mut self, pair: u32) -> Result<[BTreeMap<String, String>; 2]> {
        for (side, letter) in self.sides.iter_mut().zip(["a", "b"]) {
            side.before_run(&format!("pair{}-{letter}", pair + 1))?;
        }
        let shared = self.shared.placeholders();
        Ok([0, 1].map(|i| {
            let mut p = shared.clone();
            p.extend(self.sides[i].placeholders());
            p
        }))
    }

    /// The files made for one side (`dep.sqlite.path`), as the progress names them.
    pub fn own_files(&self, side: usize) -> Vec<String> {
        self.sides[side].placeholders().into_iter().filter(|(k, _)| k.ends_with(".path")).map(|(_, v)| v).collect()
    }

    /// Each side's figures after a pair (SQLite: its database's size), and what the pair changed in the
    /// shared store it must leave as it was.
    pub fn after_pair(&mut self) -> ([Vec<(String, f64)>; 2], Vec<String>) {
        let figures = [self.sides[0].after_run(), self.sides[1].after_run()];
        (figures, self.shared.changed_by_run())
    }

    /// Readers of the shared servers' CPU (none: nothing to guard).
    pub fn store_probes(&self) -> Vec<Arc<dyn Probe>> {
        self.shared.items.iter().filter_map(|d| d.probe()).collect()
    }

    /// The store's CPUs, None when no shared server is measured.
    pub fn store_cpus(&self, gen_cpus: usize) -> Option<StoreCpus> {
        (!self.store_probes().is_empty()).then(|| StoreCpus {
            cpus: self.shared.cpus(),
            with_generators: self.shared.share_generator_cpus().then_some(gen_cpus.max(1)),
        })
    }

    /// A profile step's upstream delay, on the shared mock upstream; false when there is none.
    pub fn set_delay_ms(&mut self, ms: u64) -> Result<bool> {
        self.shared.set_delay_ms(ms)
    }
}

/// The combined CPU seconds of the store's processes now (None: none, or one unreadable).
pub fn store_cpu_s(probes: &[Arc<dyn Probe>]) -> Option<f64> {
    let total: f64 = probes.iter().map(|p| p.sample().cpu_s).sum();
    (!probes.is_empty() && total.is_finite()).then_some(total)
}

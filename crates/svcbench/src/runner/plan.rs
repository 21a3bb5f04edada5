//! What a session runs: its services (loaded and checked together) and the order of their runs.
use crate::manifest::Service;
use crate::scenario::Scenario;
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// One run to do: which service, under which limits, its index among that cell's runs.
#[derive(Debug, Clone)]
pub struct PlannedRun {
    pub service: usize,
    pub cell: usize,
    pub run_index: u32,
}

/// Every run of a session, interleaved (A1 B1 A2 B2 …, the cells within each round), so that a drift of the
/// machine over time spreads over every service and limit instead of landing on one. Runs already
/// completed (a resumed study) are left out.
pub fn plan(
    services: &[String],
    cells: &[String],
    runs: u32,
    completed: &BTreeMap<(String, String), u32>,
) -> Vec<PlannedRun> {
    let mut out = Vec::new();
    for run_index in 1..=runs {
        for (c, cell) in cells.iter().enumerate() {
            for (s, svc) in services.iter().enumerate() {
                if completed.get(&(svc.clone(), cell.clone())).copied().unwrap_or(0) >= run_index {
                    continue;
                }
                out.push(PlannedRun { service: s, cell: c, run_index });
            }
        }
    }
    out
}

/// Loads the services and finds their (single) scenario.
pub fn load_services(paths: &[PathBuf], scenario: Option<&str>) -> Result<(Vec<Service>, Scenario)> {
    if paths.is_empty() {
        bail!("no service given; pass service folders, e.g. services/hello/go-nethttp");
    }
    let mut picked = Vec::new();
    for p in paths {
        let spec = p.to_string_lossy().into_owned();
        picked.extend(Service::load_spec(&spec)?.into_iter().map(|s| (spec.clone(), s)));
    }
    super::unique_names::refuse_repeated_names(&picked.iter().map(|(p, s)| (p.as_str(), s)).collect::<Vec<_>>())?;
    let services: Vec<Service> = picked.into_iter().map(|(_, s)| s).collect();
    // A service folder outside the checkout still finds the bundled scenarios (SVCBENCH_HOME, or the checkout
    // the binary was built in).
    let bundled = crate::paths::project_dir("scenarios").ok();
    let wanted = scenario.map(String::from).unwrap_or_else(|| services[0].manifest.scenario.clone());
    let find = |s: &Service, name: &str| Scenario::find(name, &s.dir, bundled.as_deref());
    // A scenario a manifest names and no folder holds is told with that manifest.
    let named_by = |s: &Service, name: &str| {
        find(s, name).with_context(|| format!("{} ({})", s.name(), s.dir.join("svcbench.toml").display()))
    };
    if scenario.is_none() {
        if let Some(other) = services.iter().find(|s| s.manifest.scenario != wanted) {
            // A misspelt scenario is told as such, not as two services of different scenarios.
            named_by(&services[0], &wanted)?;
            named_by(other, &other.manifest.scenario)?;
            bail!(
                "services of different scenarios ({} is `{}`, {} is `{}`); run one scenario at a time",
                services[0].name(),
                wanted,
                other.name(),
                other.manifest.scenario
            );
        }
    }
    let sc = if scenario.is_none() { named_by(&services[0], &wanted)? } else { find(&services[0], &wanted)? };
    if scenario.is_none() {
        for s in &services[1..] {
            refuse_a_namesake(&services[0], &sc, s, &named_by(s, &wanted)?)?;
        }
    }
    let kinds: Vec<&str> = sc.file.dependency.iter().map(|d| d.kind.as_str()).collect();
    services.iter().try_for_each(|s| s.check_placeholders(&kinds))?;
    Ok((services, sc))
}

/// A scenario of one's own beside a service wins over a bundled namesake, so two services naming one
/// scenario may find two: each would be checked and loaded by the first one's, and the store would hold
/// both under one name.
fn refuse_a_namesake(first: &Service, found: &Scenario, other: &Service, theirs: &Scenario) -> Result<()> {
    let text = |s: &Scenario| std::fs::read(s.dir.join("scenario.toml")).ok();
    if theirs.dir == found.dir || text(theirs) == text(found) {
        return Ok(());
    }
    bail!(
        "two scenarios named `{}`: {} finds {}, {} finds {}; give a scenario of your own a name of its own (its folder and `scenario` in the manifest), or pass --scenario (a study: its `scenario` key) to measure both by one",
        other.manifest.scenario,
        first.name(),
        found.dir.display(),
        other.name(),
        theirs.dir.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// `root/scenarios/<scenario>/scenario.toml` named `description`, and `root/<service>/svcbench.toml`.
    fn service_beside_its_scenario(root: &Path, service: &str, description: &str) -> PathBuf {
        let sc = root.join("scenarios/shop");
        std::fs::create_dir_all(&sc).unwrap();
        let check = "[[check]]\nname = \"root\"\npath = \"/\"\n";
        std::fs::write(sc.join("scenario.toml"), format!("name = \"shop\"\ndescription = \"{description}\"\n{check}"))
            .unwrap();
        let dir = root.join(service);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("svcbench.toml"),
            crate::manifest::test_manifest(service, "shop", "run = \"./x\"\nreadiness = \"/\"\n"),
        )
        .unwrap();
        dir
    }

    #[test]
    fn two_services_whose_scenarios_share_a_name_but_not_their_contents_are_refused() {
        let t = tempfile::tempdir().unwrap();
        let a = service_beside_its_scenario(&t.path().join("mine"), "a", "mine");
        let b = service_beside_its_scenario(&t.path().join("theirs"), "b", "theirs");
        let e = format!("{:#}", load_services(&[a.clone(), b], None).unwrap_err());
        assert!(e.starts_with("two scenarios named `shop`: a finds ") && e.contains("b finds "), "{e}");
        // The same scenario in two folders (another checkout) is one scenario.
        let c = service_beside_its_scenario(&t.path().join("copy"), "c", "mine");
        load_services(&[a.clone(), c.clone()], None).unwrap();
        // --scenario picks one for both on purpose.
        let b = t.path().join("theirs/b");
        load_services(&[a, b], Some("shop")).unwrap();
    }

    #[test]
    fn runs_interleave_by_round_and_skip_what_a_resumed_study_holds() {
        let names = ["a".to_string(), "b".into()];
        let cells = ["c1".to_string(), "c2".into()];
        let order = |done: &BTreeMap<(String, String), u32>| -> Vec<(usize, usize, u32)> {
            plan(&names, &cells, 2, done).iter().map(|p| (p.service, p.cell, p.run_index)).collect()
        };
        assert_eq!(
            order(&BTreeMap::new()),
            [(0, 0, 1), (1, 0, 1), (0, 1, 1), (1, 1, 1), (0, 0, 2), (1, 0, 2), (0, 1, 2), (1, 1, 2)]
        );
        let done = BTreeMap::from([(("a".to_string(), "c1".to_string()), 1), (("b".into(), "c2".into()), 2)]);
        assert_eq!(order(&done), [(1, 0, 1), (0, 1, 1), (0, 0, 2), (1, 0, 2), (0, 1, 2)]);
    }
}

//! The study file `studies/<name>.toml` (docs/study.md): the question, the services and variants, the limits
//! axis, the profile, runs per cell, an optional SLO, and the shorter `--quick` form.
use crate::cell::AxisCell;
use crate::network::Link;
use crate::sandbox::Limits;
use anyhow::{bail, Context, Result};
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudyFile {
    pub title: String,
    /// The question the study answers, shown at the top of its report.
    pub question: String,
    /// What the seed found, for the README's side-by-side table (optional).
    #[serde(default)]
    pub seed: Option<String>,
    #[serde(default)]
    pub scenario: Option<String>,
    /// Service folders, `folder@variant` or `folder@*`, relative to the project folder.
    pub services: Vec<String>,
    pub profile: String,
    #[serde(default)]
    pub mix: Option<String>,
    #[serde(default = "three")]
    pub runs: u32,
    #[serde(default)]
    pub limits: LimitsAxis,
    #[serde(default)]
    pub network: NetworkAxis,
    #[serde(default)]
    pub slo: Option<Slo>,
    #[serde(default)]
    pub quick: Quick,
    /// After the runs, the study's two services measured side by side by `svcbench duet` (docs/duet.md).
    #[serde(default)]
    pub duet: Option<DuetPlan>,
}

/// `[duet]`: the two services of the study as one duet, labelled with the study's name, after its runs.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DuetPlan {
    /// Fresh pairs of instances (the quick form runs `quick_pairs`, default 3).
    #[serde(default = "six")]
    pub pairs: u32,
    #[serde(default)]
    pub quick_pairs: Option<u32>,
    /// The duet's profile: steps below what each side's quota serves (a side at its quota is not compared).
    #[serde(default = "duet_profile")]
    pub profile: String,
    /// Each side's quota (default: the duet's own).
    #[serde(default)]
    pub cpus: Option<f64>,
    #[serde(default)]
    pub cpuset: Option<String>,
    /// The sides in turns instead of at once (`svcbench duet --alternate`).
    #[serde(default)]
    pub alternate: bool,
    /// Stop early once every interval is within ± this (e.g. "2%").
    #[serde(default)]
    pub precision: Option<String>,
}

fn six() -> u32 {
    6
}

fn duet_profile() -> String {
    "duet".into()
}

impl DuetPlan {
    /// The pairs of the study's form: `pairs`, or with --quick `quick_pairs` (default 3).
    pub fn pairs_for(&self, quick: bool) -> u32 {
        if quick {
            self.quick_pairs.unwrap_or(3)
        } else {
            self.pairs
        }
    }

    /// `precision` as a share (checked when the study is loaded).
    pub fn precision_share(&self) -> Result<Option<f64>, String> {
        self.precision.as_deref().map(crate::options::parse_precision).transpose()
    }

    fn check(&self, at: &str, services: &[String]) -> Result<()> {
        if services.len() != 2 || services.iter().any(|s| s.ends_with("@*")) {
            bail!("{at}: [duet] compares two services; list exactly two in `services` (dir or dir@variant), not {services:?}");
        }
        let max = crate::options::MAX_PAIRS;
        for (key, n) in [("pairs", Some(self.pairs)), ("quick_pairs", self.quick_pairs)] {
            if let Some(n) = n.filter(|n| *n == 0 || *n > max) {
                bail!("{at}: duet.{key} = {n}: must be between 1 and {max} (3 is the fewest a verdict needs)");
            }
        }
        if let Some(c) = self.cpus.filter(|c| !(c.is_finite() && *c > 0.0)) {
            bail!("{at}: duet.cpus {c}: a quota in CPUs above zero, e.g. 0.45");
        }
        if let Some(c) = self.cpus {
            let keys = crate::cpus::CpuKeys { cpus: "[duet] cpus".into(), ..crate::cpus::CpuKeys::flags() };
            crate::cpus::check_quota_floor(c, &keys).map_err(|e| anyhow::anyhow!("{at}: {e}"))?;
        }
        self.precision_share().map_err(|e| anyhow::anyhow!("{at}: duet.precision: {e}"))?;
        Ok(())
    }
}

/// Most runs per cell: `svcbench run`'s own bound.
pub const MAX_RUNS: u32 = crate::options::MAX_RUNS;
/// Most cells (limits × links) in a study: a thousand cells of even one short run each are a day's work.
pub const MAX_CELLS: usize = 1_000;

fn three() -> u32 {
    3
}

/// Every service runs under each combination of `cpus` × `memory`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsAxis {
    /// CPU quotas in CPUs; empty: no quota.
    #[serde(default)]
    pub cpus: Vec<f64>,
    /// Memory caps ("256M", "1G", "none"); empty: `svcbench run`'s default, 512M.
    #[serde(default)]
    pub memory: Vec<String>,
    #[serde(default)]
    pub cpuset: Option<String>,
    #[serde(default)]
    pub loadgen_cpuset: Option<String>,
}

/// The link axis: every limits cell runs once under each entry's links, on svcbench's emulated network
/// (as `--net`). An entry is one cell's links, `;` between two links: `"service-store=delay:2ms"`,
/// `"client-service=delay:1ms; service-store=delay:0.5ms"`, or `""` for no delay.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkAxis {
    #[serde(default)]
    pub links: Vec<String>,
}

/// One entry of the link axis, each link checked as `--link` checks it.
fn parse_links(entry: &str) -> Result<Vec<Link>> {
    let links =
        entry.split(';').map(str::trim).filter(|l| !l.is_empty()).map(Link::parse).collect::<Result<Vec<_>>>()?;
    crate::network::link::check_distinct(&links)?;
    Ok(links)
}

/// A service level objective: at `at_rps` requests/s, p99 at most `p99_ms` and at least `success` answered
/// successfully. The study's report names the smallest limits at which each service holds it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slo {
    pub at_rps: f64,
    #[serde(default)]
    pub p99_ms: Option<f64>,
    #[serde(default)]
    pub success: Option<f64>,
}

impl Slo {
    /// Whether a step offering `rate` req/s is at the SLO's rate: within 1 %, so that a rate the profile
    /// writes as the SLO's, held a little short, still counts.
    pub fn reached_by_offered(&self, rate: f64) -> bool {
        rate >= self.at_rps * 0.99
    }
}

/// `--quick`: a shorter form CI can afford (fewer runs, shorter steps, another profile).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quick {
    #[serde(default)]
    pub profile: Option<String>,
    #[serde(default)]
    pub step_duration: Option<String>,
    #[serde(default)]
    pub runs: Option<u32>,
    /// The services of the short form, when it cannot afford them all (e.g. one build fewer).
    #[serde(default)]
    pub services: Option<Vec<String>>,
    /// The limits axis of the short form, in place of `[limits]` (e.g. none: JVMs start slowly under a
    /// quarter of a CPU, which a smoke test need not pay for).
    #[serde(default)]
    pub limits: Option<LimitsAxis>,
}

/// A study as it will run: the file, its name (the file's stem; `:quick` for the quick form) and the
/// resolved settings.
#[derive(Debug, Clone)]
pub struct Study {
    pub path: PathBuf,
    /// The key its sessions are stored under (and labelled with).
    pub name: String,
    pub file: StudyFile,
    pub quick: bool,
    pub services: Vec<PathBuf>,
    pub profile: String,
    pub step_duration: Option<Duration>,
    pub runs: u32,
    /// Limits × links, in the order the plan visits them within a round.
    pub cells: Vec<AxisCell>,
    /// The services whose folder is in none of the places looked, with those places (check_folders).
    missing: Vec<(String, Vec<PathBuf>)>,
}

impl Study {
    /// Refuses, naming the study's keys, a CPU split its session would refuse (`cpus::cpu_split`): a CPU set
    /// this machine lacks, sets that share a CPU, a quota of the limits axis above the service's CPUs or
    /// below the kernel's smallest.
    /// `allowed`: this machine's CPUs (`cpus::allowed`).
    pub fn check_cpus(&self, allowed: &[usize]) -> Result<()> {
        let widest = self.cells.iter().filter_map(|c| c.limits.cpus).reduce(f64::max);
        let narrowest = self.cells.iter().filter_map(|c| c.limits.cpus).reduce(f64::min);
        let table = if self.quick && self.file.quick.limits.is_some() { "quick.limits" } else { "limits" };
        if let Some(q) = narrowest {
            crate::cpus::check_quota_floor(q, &crate::cpus::CpuKeys::table(table))
                .with_context(|| self.path.display().to_string())?;
        }
        let limits = &self.file.limits;
        crate::cpus::split_cpus(
            &mut limits.cpuset.clone(),
            widest,
            limits.loadgen_cpuset.as_deref(),
            allowed,
            &crate::cpus::CpuKeys::table(table),
        )
        .with_context(|| self.path.display().to_string())?;
        Ok(())
    }

    /// Whether the study has a link axis (and so runs on the emulated network).
    pub fn has_link_axis(&self) -> bool {
        self.cells.iter().any(|c| c.links.is_some())
    }

    /// Reads and checks a study file: every error names the file and what to fix, before anything runs.
    pub fn load(path: &Path, quick: bool) -> Result<Study> {
        if !path.is_file() {
            bail!(
                "{}: no such study file; bundled studies are in studies/ (e.g. studies/sizing-hello.toml)",
                path.display()
            );
        }
        let mut file: StudyFile = crate::toml_file::read(path)?;
        if let (true, Some(limits)) = (quick, file.quick.limits.clone()) {
            file.limits = limits;
        }
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("study").to_string();
        let at = path.display();
        if file.services.is_empty() {
            bail!("{at}: `services` is empty; list service folders, e.g. [\"services/hello/go-nethttp\"]");
        }
        if file.runs == 0 || file.runs > MAX_RUNS {
            bail!(
                "{at}: `runs` = {}: must be between 1 and {MAX_RUNS} (3 is the fewest compare decides on)",
                file.runs
            );
        }
        if let Some(c) = file.limits.cpus.iter().find(|c| !(c.is_finite() && **c > 0.0)) {
            bail!("{at}: limits.cpus holds {c}; quotas are CPUs above zero, e.g. [0.5, 1, 1.5]");
        }
        let mut memories = Vec::new();
        let table = if quick && file.quick.limits.is_some() { "quick.limits" } else { "limits" };
        for m in &file.limits.memory {
            memories.push(
                crate::options::parse_memory_of(&format!("[{table}] memory"), m).with_context(|| at.to_string())?,
            );
        }
        if memories.is_empty() {
            memories.push(crate::options::parse_memory(crate::options::DEFAULT_MEMORY)?);
        }
        if let Some(slo) = &file.slo {
            if !(slo.at_rps.is_finite() && slo.at_rps > 0.0) {
                bail!("{at}: slo.at_rps must be a rate above zero, e.g. 1000");
            }
            if let Some(p) = slo.p99_ms.filter(|p| !(p.is_finite() && *p > 0.0)) {
                bail!("{at}: slo.p99_ms {p} must be above zero, e.g. 100");
            }
            if let Some(s) = slo.success.filter(|s| !(*s > 0.0 && *s <= 1.0)) {
                bail!("{at}: slo.success {s} must be a ratio in (0, 1], e.g. 0.999");
            }
            if slo.p99_ms.is_none() && slo.success.is_none() {
                bail!("{at}: the slo names no objective; give p99_ms, success or both");
            }
        }
        let step_duration = match (&file.quick.step_duration, quick) {
            (Some(t), true) => Some(
                humantime::parse_duration(t)
                    .map_err(|e| anyhow::anyhow!("{at}: quick.step_duration {t:?}: {e} (write e.g. \"2s\")"))?,
            ),
            _ => None,
        };
        if let Some(r) = file.quick.runs.filter(|r| *r == 0 || *r > MAX_RUNS) {
            bail!("{at}: quick.runs = {r}: must be between 1 and {MAX_RUNS}");
        }
        let cpus: Vec<Option<f64>> =
            if file.limits.cpus.is_empty() { vec![None] } else { file.limits.cpus.iter().map(|c| Some(*c)).collect() };
        let count = cpus.len().max(1) * memories.len().max(1) * file.network.links.len().max(1);
        if count > MAX_CELLS {
            bail!(
                "{at}: the limits and links axes make {count} cells; a study holds at most {MAX_CELLS}: fewer values \
                 on an axis, or split the study"
            );
        }
        let mut link_axis: Vec<Option<Vec<Link>>> = Vec::new();
        for entry in &file.network.links {
            link_axis.push(Some(parse_links(entry).with_context(|| format!("{at}: network.links entry {entry:?}"))?));
        }
        if link_axis.is_empty() {
            link_axis.push(None);
        }
        let mut cells = Vec::new();
        for c in &cpus {
            for m in &memories {
                for links in &link_axis {
                    let limits = Limits { cpus: *c, memory_bytes: *m, cpuset: file.limits.cpuset.clone(), pids: None };
                    cells.push(AxisCell { limits, links: links.clone() });
                }
            }
        }
        if let Some(twice) = cells.iter().enumerate().find(|(i, c)| cells[..*i].contains(c)) {
            bail!("{at}: the cell {} comes twice; give each limit and each links entry once", twice.1.key());
        }
        let root = crate::paths::project_dir("services").ok().and_then(|p| p.parent().map(Path::to_path_buf));
        let listed = match (&file.quick.services, quick) {
            (Some(q), true) => q.clone(),
            _ => file.services.clone(),
        };
        if listed.is_empty() {
            bail!("{at}: quick.services is empty; leave it out to run every service in the quick form");
        }
        let cwd = std::env::current_dir().unwrap_or_default();
        let mut services = Vec::new();
        let mut missing = Vec::new();
        for spec in &listed {
            let (path, looked) = locate(spec, &cwd, root.as_deref());
            services.push(path);
            if let Some(looked) = looked {
                missing.push((spec.clone(), looked));
            }
        }
        if let Some(d) = &file.duet {
            d.check(&at.to_string(), &listed)?;
        }
        let profile =
            if quick { file.quick.profile.clone().unwrap_or(file.profile.clone()) } else { file.profile.clone() };
        Ok(Study {
            path: path.to_path_buf(),
            name: if quick { format!("{stem}:quick") } else { stem },
            quick,
            services,
            step_duration,
            runs: if quick { file.quick.runs.unwrap_or(1) } else { file.runs },
            profile,
            cells,
            file,
            missing,
        })
    }

    /// Refuses, in one line naming every place looked, a service folder that is in none of them (before
    /// anything is built; a study's report is rendered without its folders).
    pub fn check_folders(&self) -> Result<()> {
        let Some((spec, looked)) = self.missing.first() else { return Ok(()) };
        let (folder, _) = crate::manifest::split_spec(spec);
        if let [only] = &looked[..] {
            bail!("{}: service folder {}: no such folder", self.path.display(), only.display());
        }
        let places: Vec<String> = looked
            .iter()
            .zip(["the current folder", "the checkout"])
            .map(|(p, w)| format!("{w} ({})", p.display()))
            .collect();
        bail!(
            "{}: service folder `{folder}` is in neither {}: a relative folder in `services` is looked up in the \
             current folder, then in the checkout (docs/study.md)",
            self.path.display(),
            places.join(" nor ")
        )
    }
}

/// Where a study's service (`folder`, `folder@variant`, `folder@*`) is: an absolute folder as it is; a
/// relative one in the current folder `cwd`, else in the checkout `root` (where the bundled studies' paths,
/// `services/hello/…`, are from). With the places looked when the folder is in none of them (the path is
/// then the checkout's, or the one given).
fn locate(spec: &str, cwd: &Path, root: Option<&Path>) -> (PathBuf, Option<Vec<PathBuf>>) {
    let (folder, _) = crate::manifest::split_spec(spec);
    if Path::new(folder).is_absolute() {
        let missing = !Path::new(folder).exists();
        return (PathBuf::from(spec), missing.then(|| vec![PathBuf::from(folder)]));
    }
    let mut looked = vec![cwd.join(folder)];
    looked.extend(root.map(|r| r.join(folder)).filter(|r| *r != looked[0]));
    if looked[0].exists() {
        return (PathBuf::from(spec), None);
    }
    match root {
        Some(r) if r.join(folder).exists() => (r.join(spec), None),
        Some(r) => (r.join(spec), Some(looked)),
        None => (PathBuf::from(spec), Some(looked)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(body: &str) -> Result<Study> {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("s.toml");
        std::fs::write(&f, format!("title = \"t\"\nquestion = \"q\"\nservices = [\"a\"]\nprofile = \"quick\"\n{body}"))
            .unwrap();
        Study::load(&f, false)
    }

    #[test]
    fn the_link_axis_multiplies_the_limits_cells() {
        let s = load("[limits]\ncpus = [0.5, 1]\n[network]\nlinks = [\"\", \"service-store=delay:2ms; client-service=delay:1ms\"]\n")
            .unwrap();
        let keys: Vec<String> = s.cells.iter().map(crate::cell::AxisCell::key).collect();
        assert_eq!(
            keys,
            [
                "cpus=0.5 memory=512M links=none",
                "cpus=0.5 memory=512M links=service-store=delay:2ms;client-service=delay:1ms",
                "cpus=1 memory=512M links=none",
                "cpus=1 memory=512M links=service-store=delay:2ms;client-service=delay:1ms",
            ]
        );
        assert!(s.has_link_axis());
        assert!(!load("").unwrap().has_link_axis());
        assert_eq!(load("").unwrap().cells[0].key(), "cpus=none memory=512M");
    }

    #[test]
    fn the_quick_form_may_have_its_own_limits_axis() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("s.toml");
        let body = "[limits]\ncpus = [0.25]\n[quick]\nruns = 1\n[quick.limits]\nmemory = [\"1G\"]\n";
        std::fs::write(&f, format!("title = \"t\"\nquestion = \"q\"\nservices = [\"a\"]\nprofile = \"quick\"\n{body}"))
            .unwrap();
        let keys = |quick| {
            Study::load(&f, quick).unwrap().cells.iter().map(crate::cell::AxisCell::key).collect::<Vec<String>>()
        };
        assert_eq!(keys(false), ["cpus=0.25 memory=512M"]);
        assert_eq!(keys(true), ["cpus=none memory=1G"]);
    }

    #[test]
    fn a_quota_above_the_services_cpus_is_refused_naming_the_studys_keys() {
        let two = [0, 1];
        let s = load("[limits]\ncpus = [0.5, 2]\n").unwrap();
        let e = format!("{:#}", s.check_cpus(&two).unwrap_err());
        assert!(e.contains("s.toml: [limits] cpus 2 is more than the 1 CPU(s) of the service's cpuset (1)"), "{e}");
        assert!(e.contains("lower [limits] cpus or widen [limits] cpuset") && !e.contains("--"), "{e}");
        assert!(s.check_cpus(&[0, 1, 2, 3]).is_ok(), "two CPUs of four are the service's");
        assert!(load("[limits]\ncpus = [1]\n").unwrap().check_cpus(&two).is_ok());
        assert!(load("").unwrap().check_cpus(&two).is_ok());
        let e = format!(
            "{:#}",
            load("[limits]\ncpuset = \"1\"\nloadgen_cpuset = \"1\"\n").unwrap().check_cpus(&two).unwrap_err()
        );
        assert!(e.contains("[limits] cpuset 1 and [limits] loadgen_cpuset 1 share CPU 1"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("q.toml");
        let body =
            "title = \"t\"\nquestion = \"q\"\nservices = [\"a\"]\nprofile = \"quick\"\n[quick.limits]\ncpus = [3]\n";
        std::fs::write(&f, body).unwrap();
        let e = format!("{:#}", Study::load(&f, true).unwrap().check_cpus(&two).unwrap_err());
        assert!(e.contains("[quick.limits] cpus 3 is more"), "{e}");
        assert!(Study::load(&f, false).unwrap().check_cpus(&two).is_ok());
    }

    #[test]
    fn a_quota_below_the_kernels_smallest_is_refused_naming_the_studys_key_even_in_a_plan() {
        let two = [0, 1];
        let e = format!("{:#}", load("[limits]\ncpus = [0.005, 0.5]\n").unwrap().check_cpus(&two).unwrap_err());
        assert!(e.ends_with("s.toml: [limits] cpus 0.005 is below 0.01, the smallest CPU quota the kernel holds (1 ms of every 100 ms); raise [limits] cpus to 0.01 or more"), "{e}");
        assert!(load("[limits]\ncpus = [0.01, 0.5]\n").unwrap().check_cpus(&two).is_ok());
    }

    #[test]
    fn a_memory_cap_that_is_no_size_is_refused_naming_the_studys_key() {
        let e = format!("{:#}", load("[limits]\nmemory = [\"512\"]\n").unwrap_err());
        assert!(e.ends_with("s.toml: [limits] memory \"512\": below 1M, which no service starts under; write a size like 512M or 1G, or none"), "{e}");
        assert!(!e.contains("--memory"), "{e}");
    }

    #[test]
    fn a_service_folder_is_looked_up_in_the_current_folder_then_the_checkout_and_the_error_names_both() {
        let tmp = tempfile::tempdir().unwrap();
        let (cwd, root) = (tmp.path().join("here"), tmp.path().join("checkout"));
        for d in [cwd.join("services/x"), root.join("services/x"), root.join("services/y")] {
            std::fs::create_dir_all(d).unwrap();
        }
        // The checkout's, as the bundled studies' paths are (the test's own folder holds neither).
        assert_eq!(locate("services/y@*", &cwd, Some(&root)), (root.join("services/y@*"), None));
        let (path, looked) = locate("mine", &cwd, Some(&root));
        assert_eq!((path, looked), (root.join("mine"), Some(vec![cwd.join("mine"), root.join("mine")])));
        assert_eq!(locate("mine", &cwd, None).1, Some(vec![cwd.join("mine")]));
        let abs = root.join("services/x").display().to_string();
        assert_eq!(locate(&abs, &cwd, Some(&root)), (PathBuf::from(&abs), None));
        assert_eq!(locate("/no/such", &cwd, Some(&root)).1, Some(vec![PathBuf::from("/no/such")]));

        let s = load("").unwrap();
        assert!(s.check_folders().unwrap_err().to_string().contains("`a` is in neither the current folder ("));
        let study = |missing| Study { missing, ..s.clone() };
        let e = study(vec![("mine@fast".into(), vec![cwd.join("mine"), root.join("mine")])]).check_folders();
        let e = e.unwrap_err().to_string();
        let both = format!(
            "service folder `mine` is in neither the current folder ({}) nor the checkout ({}): a relative folder",
            cwd.join("mine").display(),
            root.join("mine").display()
        );
        assert!(e.contains(&both) && e.contains("current folder, then in the checkout"), "{e}");
        let e = study(vec![("/no/such".into(), vec!["/no/such".into()])]).check_folders().unwrap_err().to_string();
        assert!(e.ends_with("s.toml: service folder /no/such: no such folder"), "{e}");
    }

    #[test]
    fn a_duet_needs_two_services_and_bounded_pairs() {
        let two = |body: &str| {
            let dir = tempfile::tempdir().unwrap();
            let f = dir.path().join("s.toml");
            std::fs::write(
                &f,
                format!("title = \"t\"\nquestion = \"q\"\nservices = [\"a\", \"b\"]\nprofile = \"quick\"\n{body}"),
            )
            .unwrap();
            Study::load(&f, false).map(|s| s.file.duet.unwrap())
        };
        let d = two("[duet]\n").unwrap();
        assert_eq!((d.pairs, d.profile.as_str(), d.alternate), (6, "duet", false));
        let e = format!("{:#}", load("[duet]\n").unwrap_err());
        assert!(e.contains("exactly two"), "{e}");
        let e = format!("{:#}", two("[duet]\npairs = 0\n").unwrap_err());
        assert!(e.contains("duet.pairs = 0"), "{e}");
        let e = format!("{:#}", two("[duet]\nprecision = \"200%\"\n").unwrap_err());
        assert!(e.contains("duet.precision"), "{e}");
        let e = format!("{:#}", two("[duet]\npairz = 3\n").unwrap_err());
        assert!(e.contains("pairz"), "{e}");
        // A quota the kernel would not hold, refused before the study's runs, not after them.
        let e = format!("{:#}", two("[duet]\ncpus = 0.005\n").unwrap_err());
        assert!(e.contains("[duet] cpus 0.005 is below 0.01"), "{e}");
    }

    #[test]
    fn a_bad_or_repeated_links_entry_is_refused_with_the_entry_named() {
        let e = format!("{:#}", load("[network]\nlinks = [\"client-service=delay:1ms, loss:x\"]\n").unwrap_err());
        assert!(e.contains("network.links entry") && e.contains("loss"), "{e}");
        let e = format!(
            "{:#}",
            load("[network]\nlinks = [\"client-service=delay:1ms; service-client=delay:2ms\"]\n").unwrap_err()
        );
        assert!(e.contains("given twice"), "{e}");
        let e = format!("{:#}", load("[network]\nlinks = [\"\", \"\"]\n").unwrap_err());
        assert!(e.contains("comes twice"), "{e}");
    }
}

//! A history's series: from one or several stores, each service's figures session by session, laid along
//! the commits its sessions measured in git order. A session is one point (the median of its counted runs,
//! the figure `report` and `compare` quote); several sessions at one commit are each a point, in the order
//! they started, so a commit measured twice weighs twice and its sessions' spread is the noise the test sees.
use crate::report::{run_figures, Metric, RunFigures, METRICS, STEP_METRICS};
use crate::store::read::{Run, Session};
use crate::store::{Reader, StepRow};
use anyhow::{bail, Result};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

/// The metrics a history shows when none is asked: the whole-run figures a change in the code moves.
pub const DEFAULT_METRICS: &[&str] = &["cpu_per_req", "peak_rps", "p99_ms", "startup_ms", "peak_mem"];

/// One of compare's metrics: a run's figure, or one step's (a series per step position).
#[derive(Clone, Copy)]
pub enum Figure {
    Run(&'static Metric<RunFigures>),
    Step(&'static Metric<StepRow>),
}

impl Figure {
    pub fn key(&self) -> &'static str {
        match self {
            Figure::Run(m) => m.key,
            Figure::Step(m) => m.key,
        }
    }
    pub fn title(&self) -> &'static str {
        match self {
            Figure::Run(m) => m.title,
            Figure::Step(m) => m.title,
        }
    }
    pub fn unit(&self) -> &'static str {
        match self {
            Figure::Run(m) => m.unit,
            Figure::Step(m) => m.unit,
        }
    }
    pub fn higher_is_better(&self) -> bool {
        match self {
            Figure::Run(m) => m.higher_is_better,
            Figure::Step(m) => m.higher_is_better,
        }
    }
}

/// `--metric` terms (comma-separated, repeatable) as figures; the defaults when none; `all`: every one.
/// Refuses a name compare does not know.
pub fn parse_metrics(terms: &[String]) -> Result<Vec<Figure>> {
    let all = || METRICS.iter().map(Figure::Run).chain(STEP_METRICS.iter().map(Figure::Step));
    let names: Vec<&str> = terms.iter().flat_map(|t| t.split(',')).map(str::trim).filter(|t| !t.is_empty()).collect();
    if names.contains(&"all") {
        return Ok(all().collect());
    }
    let names = if names.is_empty() { DEFAULT_METRICS.to_vec() } else { names };
    let mut out: Vec<Figure> = Vec::new();
    for name in names {
        let Some(f) = all().find(|f| f.key() == name) else {
            let keys: Vec<&str> = all().map(|f| f.key()).collect();
            bail!("--metric {name:?}: unknown metric; metrics are {} (or all)", keys.join(", "));
        };
        if !out.iter().any(|o| o.key() == f.key()) {
            out.push(f);
        }
    }
    Ok(out)
}

/// What a session was measured with besides the service's code: a change of any of these at a change
/// point may be its cause.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Environment {
    pub svcbench: String,
    pub host: Option<String>,
    pub kernel: Option<String>,
    pub cpu_model: Option<String>,
    pub scenario: String,
    pub profile: String,
    pub limit_cpus: Option<f64>,
    pub limit_memory_mib: Option<f64>,
}

impl Environment {
    fn of(s: &Session) -> Environment {
        Environment {
            svcbench: s.svcbench_version.clone(),
            host: s.host_name.clone(),
            kernel: s.kernel.clone(),
            cpu_model: s.cpu_model.clone(),
            scenario: s.scenario.clone(),
            profile: s.profile.clone(),
            limit_cpus: s.limit_cpus,
            limit_memory_mib: s.limit_memory_mib,
        }
    }

    /// What differs from `before`: "svcbench from 0.1.0 (commit a) to 0.1.0 (commit b)", one per part.
    pub fn changes_since(&self, before: &Environment) -> Vec<String> {
        let text = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".into());
        let num = |v: &Option<f64>| v.map_or_else(|| "none".into(), |x| format!("{x}"));
        let mut out = Vec::new();
        let mut differs = |what: &str, a: String, b: String| {
            if a != b {
                out.push(format!("{what} from {a} to {b}"));
            }
        };
        differs("svcbench", before.svcbench.clone(), self.svcbench.clone());
        differs("host", text(&before.host), text(&self.host));
        differs("kernel", text(&before.kernel), text(&self.kernel));
        differs("CPU model", text(&before.cpu_model), text(&self.cpu_model));
        differs("scenario", before.scenario.clone(), self.scenario.clone());
        differs("profile", before.profile.clone(), self.profile.clone());
        differs("--cpus", num(&before.limit_cpus), num(&self.limit_cpus));
        differs("--memory (MiB)", num(&before.limit_memory_mib), num(&self.limit_memory_mib));
        out
    }
}

/// One session's figure.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// The commit the service's folder was at (full SHA).
    pub commit: String,
    /// Its position in the repository's history (0: the oldest).
    pub commit_index: usize,
    pub store: String,
    pub session: i64,
    pub started_at: String,
    /// The median over the session's counted runs, and how many runs that is.
    pub value: f64,
    pub runs: usize,
    pub environment: Environment,
}

/// One service's figure along its commits.
#[derive(Clone)]
pub struct Series {
    pub service: String,
    pub figure: Figure,
    /// A per-step figure's step: its position and load (`#2 c=64`).
    pub step: Option<String>,
    /// In git order, then by start.
    pub points: Vec<Point>,
}

/// Everything a history reads: its series, and what was left out with why.
pub struct Assembled {
    pub series: Vec<Series>,
    pub warnings: Vec<String>,
}

/// The service's name without its `#commit` mark (`svc#1a2b3c4d@v` is `svc@v`): the sessions of every
/// revision are one service.
pub fn base_name(name: &str) -> String {
    match name.split_once('#') {
        Some((head, rest)) => match rest.split_once('@') {
            Some((_, variant)) => format!("{head}@{variant}"),
            None => head.to_string(),
        },
        None => name.to_string(),
    }
}

/// A store opened, with the name it is shown by.
pub struct Source {
    pub name: String,
    pub reader: Reader,
}

/// Opens every store before anything is read: one that cannot be opened is refused by name.
pub fn open_stores(paths: &[PathBuf]) -> Result<Vec<Source>> {
    if paths.is_empty() {
        bail!("no store given; pass --db STORE (once per store, e.g. one per CI run)");
    }
    paths
        .iter()
        .map(|p| {
            let reader = Reader::open(p).map_err(|e| anyhow::anyhow!("--db {}: {e:#}", p.display()))?;
            Ok(Source { name: p.display().to_string(), reader })
        })
        .collect()
}

/// A session's runs of one service, with their steps.
struct Measured {
    store: String,
    session: Session,
    service: String,
    commit: String,
    runs: Vec<Run>,
}

/// Builds the series of `figures` for the services named `services` (every one when empty), ordered by
/// `history` (commits oldest first, as `git rev-list --topo-order --reverse`).
pub fn assemble(sources: &[Source], history: &[String], services: &[String], figures: &[Figure]) -> Result<Assembled> {
    let position: HashMap<&str, usize> = history.iter().enumerate().map(|(i, c)| (c.as_str(), i)).collect();
    let mut warnings = Vec::new();
    let mut unknown: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut measured: Vec<Measured> = Vec::new();
    for src in sources {
        for session in src.reader.sessions()? {
            let stored = src.reader.services(session.id)?;
            let mut runs = src.reader.runs(session.id)?;
            let mut names: Vec<String> = Vec::new();
            for r in &runs {
                if !names.contains(&r.service) {
                    names.push(r.service.clone());
                }
            }
            for name in names {
                let base = base_name(&name);
                if !services.is_empty() && !services.iter().any(|s| *s == base || *s == name) {
                    continue;
                }
                let at = format!("{} session {} ({name})", src.name, session.id);
                let svc = stored.iter().find(|s| s.name == name);
                let Some(commit) = svc.and_then(|s| s.git_commit.clone()) else {
                    warnings
                        .push(format!("{at}: no commit recorded (not in a repository, or an older store); skipped"));
                    continue;
                };
                if svc.and_then(|s| s.git_dirty) == Some(true) {
                    warnings.push(format!(
                        "{at}: measured with uncommitted changes on {}; skipped (it is not that commit's code)",
                        short(&commit)
                    ));
                    continue;
                }
                if !position.contains_key(commit.as_str()) {
                    unknown.entry(commit).or_default().push(at);
                    continue;
                }
                let mut mine: Vec<Run> = Vec::new();
                for mut r in std::mem::take(&mut runs) {
                    if r.service == name {
                        src.reader.fill(&mut r)?;
                        mine.push(r);
                    } else {
                        runs.push(r);
                    }
                }
                measured.push(Measured {
                    store: src.name.clone(),
                    session: session.clone(),
                    service: base.clone(),
                    commit,
                    runs: mine,
                });
            }
        }
    }
    for (commit, at) in unknown {
        warnings.push(format!(
            "commit {} is not in the repository's history (--repo); skipped: {}",
            short(&commit),
            at.join(", ")
        ));
    }
    measured.sort_by(|a, b| {
        (position[a.commit.as_str()], &a.session.started_at).cmp(&(position[b.commit.as_str()], &b.session.started_at))
    });

    let mut series: Vec<Series> = Vec::new();
    for f in figures {
        let mut order: Vec<(String, StepKey)> = Vec::new();
        let mut points: BTreeMap<usize, Vec<Point>> = BTreeMap::new();
        for m in &measured {
            for (step, value, runs) in values(m, f) {
                let key = (m.service.clone(), step);
                let k = order.iter().position(|o| *o == key).unwrap_or_else(|| {
                    order.push(key);
                    order.len() - 1
                });
                points.entry(k).or_default().push(Point {
                    commit: m.commit.clone(),
                    commit_index: position[m.commit.as_str()],
                    store: m.store.clone(),
                    session: m.session.id,
                    started_at: m.session.started_at.clone(),
                    value,
                    runs,
                    environment: Environment::of(&m.session),
                });
            }
        }
        let mut keyed: Vec<(String, StepKey, Vec<Point>)> = order
            .into_iter()
            .enumerate()
            .map(|(k, (svc, step))| (svc, step, points.remove(&k).unwrap_or_default()))
            .collect();
        keyed.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        series.extend(keyed.into_iter().map(|(service, step, points)| Series {
            service,
            figure: *f,
            step: step.map(|(seq, label)| format!("#{seq} {label}")),
            points,
        }));
    }
    Ok(Assembled { series, warnings })
}

/// A per-step figure's step: its position in the profile and its label (`(2, "c=64")`).
type StepKey = Option<(i64, String)>;

/// One session's values of a figure: (step position, median over its counted runs, how many runs).
fn values(m: &Measured, f: &Figure) -> Vec<(StepKey, f64, usize)> {
    let counted: Vec<&Run> = m.runs.iter().filter(|r| r.enters_figures()).collect();
    let median = |v: Vec<f64>| {
        let n = v.len();
        crate::figures::median(v).map(|x| (x, n))
    };
    match f {
        Figure::Run(metric) => {
            let v: Vec<f64> = counted
                .iter()
                .filter_map(|r| (metric.value)(&run_figures(r, 0.0, false)))
                .filter(|x| x.is_finite())
                .collect();
            median(v).map(|(x, n)| vec![(None, x, n)]).unwrap_or_default()
        }
        Figure::Step(metric) => {
            let mut at: BTreeMap<(i64, String), Vec<f64>> = BTreeMap::new();
            for r in &counted {
                for s in r.steps.iter().filter(|s| s.validity().valid()) {
                    if let Some(x) = (metric.value)(s).filter(|x| x.is_finite()) {
                        at.entry((s.seq, s.label.clone())).or_default().push(x);
                    }
                }
            }
            at.into_iter().filter_map(|(k, v)| median(v).map(|(x, n)| (Some(k), x, n))).collect()
        }
    }
}

/// A commit as people write it: its first seven hex digits.
pub fn short(commit: &str) -> &str {
    &commit[..commit.len().min(7)]
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_revision_mark_leaves_the_service_and_its_variant() {
        assert_eq!(super::base_name("svc#1a2b3c4d"), "svc");
        assert_eq!(super::base_name("svc#1a2b3c4d@extra4us"), "svc@extra4us");
        assert_eq!(super::base_name("svc@extra4us"), "svc@extra4us");
    }
}

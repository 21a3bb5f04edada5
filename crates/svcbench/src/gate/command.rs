//! `svcbench gate SERVICE --base REV`: the service at BASE (A) against the working tree or `--head` (B) by
//! duet, pairs until the gate decides or its time is spent; exit 0 no regression, 1 regression, 3 not
//! decided or not measured (docs/ci.md).
use crate::duet::command::{measure, DuetArgs, WORK_DIR};
use crate::duet::slices::Metric;
use crate::gate::decision::{decide, Decision};
use crate::gate::summary::{markdown, Summary};
use crate::options::{parse_precision, LimitsArgs, MAX_PAIRS};
use crate::sandbox::CgroupChoice;
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

#[derive(clap::Args, Debug)]
pub struct GateArgs {
    /// The service folder (`dir` or `dir@variant`), in a git repository.
    pub service: String,
    /// The revision the change is measured against (a branch, tag, SHA, e.g. origin/main).
    #[arg(long)]
    pub base: String,
    /// The change's revision (default: the working tree as it is).
    #[arg(long)]
    pub head: Option<String>,
    /// The worst B/A allowed on the metric before it is a regression (2% = 1.02 for CPU per request).
    #[arg(long, default_value = "2%", value_parser = parse_precision)]
    pub threshold: f64,
    /// The metric judged: cpu (CPU µs per request), rps (successful req/s), p50 or p99 (latency).
    #[arg(long, default_value = "cpu", value_parser = parse_metric)]
    pub metric: Metric,
    /// Machine time after which a gate that has not decided stops, undecided (exit 3).
    #[arg(long, default_value = "300s", value_parser = humantime::parse_duration)]
    pub max_time: std::time::Duration,
    /// The most pairs of instances.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u32).range(1..=MAX_PAIRS as i64))]
    pub max_pairs: u32,
    /// Write the Markdown summary (for a pull-request comment) here.
    #[arg(long)]
    pub summary: Option<PathBuf>,
    /// Write the result as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Scenario name or folder (default: the service's manifest).
    #[arg(long)]
    pub scenario: Option<String>,
    /// Load profile of the duet (a name from profiles/ or a .toml path).
    #[arg(long, default_value = "duet")]
    pub profile: String,
    /// Override every step's duration (whole seconds).
    #[arg(long, value_parser = crate::options::parse_step_duration)]
    pub step_duration: Option<std::time::Duration>,
    /// Drive the sides in turns instead of side by side (docs/duet.md).
    #[arg(long)]
    pub alternate: bool,
    #[command(flatten)]
    pub limits: LimitsArgs,
    /// CPUs of the generators (default: the CPUs the services do not get).
    #[arg(long)]
    pub loadgen_cpuset: Option<String>,
    /// Cgroup version to use.
    #[arg(long, value_enum, default_value = "auto")]
    pub cgroup: CgroupChoice,
    /// The store (SQLite) the duet is kept in.
    #[arg(long, default_value = "results/gate.db")]
    pub db: PathBuf,
    /// Wait for another measurement on this machine to end instead of refusing.
    #[arg(long)]
    pub wait_lock: bool,
    /// Where logs go.
    #[arg(long, default_value = WORK_DIR)]
    pub work_dir: PathBuf,
}

fn parse_metric(s: &str) -> Result<Metric, String> {
    match s {
        "cpu" => Ok(Metric::CpuUsPerReq),
        "rps" => Ok(Metric::OkRps),
        "p50" => Ok(Metric::P50Ms),
        "p99" => Ok(Metric::P99Ms),
        _ => Err(format!("`{s}`: give cpu, rps, p50 or p99")),
    }
}

/// `folder#rev` with the variant, if any, after it (`dir#main@v`).
fn at(service: &str, rev: &str) -> String {
    match crate::manifest::split_spec(service) {
        (folder, Some(v)) => format!("{folder}#{rev}@{v}"),
        (folder, None) => format!("{folder}#{rev}"),
    }
}

pub fn run(g: GateArgs, stop: Arc<AtomicBool>) -> Result<i32> {
    let head = g.head.as_ref().map_or_else(|| g.service.clone(), |h| at(&g.service, h));
    let duet = DuetArgs {
        a: at(&g.service, &g.base).into(),
        b: head.into(),
        scenario: g.scenario.clone(),
        profile: g.profile.clone(),
        step_duration: g.step_duration,
        pairs: g.max_pairs,
        alternate: g.alternate,
        precision: None,
        limits: g.limits.clone(),
        loadgen_cpuset: g.loadgen_cpuset.clone(),
        cgroup: g.cgroup,
        db: g.db.clone(),
        label: Some(format!("gate {} --base {}", g.service, g.base)),
        mix: None,
        seed: crate::runner::SEED,
        no_build: false,
        wait_lock: g.wait_lock,
        work_dir: g.work_dir.clone(),
    };
    let (metric, threshold, max_s) = (g.metric, g.threshold, g.max_time.as_secs_f64());
    let rule = |lines: &crate::duet::command::Lines, elapsed: f64| match decide(lines, &[], metric, threshold).0 {
        Decision::NotDecided if elapsed >= max_s => Some(format!("{max_s:.0} s spent without a decision")),
        Decision::NotDecided => None,
        d => Some(format!("decided: {}", d.describe())),
    };
    // The commits the two sides are, for the summary (the duet refuses a revision that names none).
    let folder = std::path::Path::new(crate::manifest::split_spec(&g.service).0);
    let commit = |rev: &str| crate::revision::locate(folder, rev).ok().map(|l| l.commit);
    let mut summary = Summary {
        decision: Decision::NotDecided,
        exit_code: crate::exit::NOT_JUDGED,
        service: g.service.clone(),
        base: g.base.clone(),
        base_commit: commit(&g.base),
        head: g.head.clone().unwrap_or_else(|| "the working tree".into()),
        head_commit: g.head.as_deref().and_then(commit),
        metric: metric.name().into(),
        threshold,
        steps: Vec::new(),
        machine_s: 0.0,
        reason: None,
        duet: None,
        store: g.db.display().to_string(),
    };
    match measure(&duet, stop, &rule) {
        Ok(o) => {
            let (decision, steps) = decide(&o.lines, &o.labels, metric, threshold);
            summary.decision = decision;
            summary.steps = steps;
            summary.machine_s = o.machine_s;
            summary.duet = Some(o.duet);
            if o.code == crate::exit::INTERRUPTED {
                summary.reason = Some("interrupted before it decided".into());
            } else if decision == Decision::NotDecided {
                summary.reason = Some(format!(
                    "not decided after {} pair(s) and {:.0} s: the interval still straddles {:.3}; give it more time \
                     (--max-time) or a quieter machine",
                    steps_pairs(&summary),
                    o.machine_s,
                    crate::gate::decision::limit(metric, threshold)
                ));
            }
            summary.exit_code = match (o.code, decision) {
                (crate::exit::INTERRUPTED, _) => crate::exit::INTERRUPTED,
                (_, Decision::Regression) => crate::exit::FAILED,
                (_, Decision::NoRegression) => crate::exit::DONE,
                (_, Decision::NotDecided) => crate::exit::NOT_JUDGED,
            };
        }
        // Refused before anything started (a revision that names no commit, bad limits): exit 2.
        Err(e) if e.downcast_ref::<crate::exit::Failed>().is_none() => return Err(e),
        Err(e) => summary.reason = Some(format!("not measured: {e:#}")),
    }
    let md = markdown(&summary);
    crate::outln!("{md}");
    if let Some(p) = &g.summary {
        crate::safe_fs::write_file(p, &md).with_context(|| format!("--summary {}", p.display()))?;
    }
    if let Some(p) = &g.json {
        crate::safe_fs::write_file(p, serde_json::to_string_pretty(&summary)?)
            .with_context(|| format!("--json {}", p.display()))?;
    }
    crate::errln!(
        "svcbench: gate {}: {}",
        summary.decision.describe(),
        summary.reason.clone().unwrap_or_else(|| format!(
            "{} B/A against the threshold {:.1} %",
            metric.name(),
            threshold * 100.0
        ))
    );
    Ok(summary.exit_code)
}

fn steps_pairs(s: &Summary) -> usize {
    s.steps.iter().map(|f| f.pairs).max().unwrap_or(0)
}

//! `svcbench report` and `svcbench compare`: what a person reads, made from the store alone
//! (docs/report.md). One file per concern:
//!   filter (which sessions), data (store → structs), stats (median, spread, verdict), summary (per-run and
//!   per-service figures), charts (chart specifications), tables + levels (tables), table (the table model
//!   and number format), html + markdown (the two outputs), compare (NEW vs BASE), study (a study's page).
mod charts;
mod compare;
mod data;
mod duets;
mod filter;
mod html;
mod levels;
mod markdown;
mod quality;
mod seconds;
mod sections;
mod sizing;
pub mod stats;
pub mod study;
mod summary;
mod table;
#[cfg(test)]
mod tests;

/// What `svcbench history` lays along commits: the per-run figures and the metrics compare judges, drawn
/// as the report draws its charts, on a page of the report's style.
pub use charts::{color, Axis, Chart, Point, Series};
pub use compare::{Metric, METRICS, STEP_METRICS};
pub use html::{chart_box, escape, footer, standalone_page};
pub use summary::{run_figures, RunFigures};
/// The report's number format, for figures printed on the terminal too (a duet's table).
pub use table::num_fractional;

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportFormat {
    Html,
    Markdown,
    /// The summary figures (per service: median, min, max, n; what was left out and why), for scripts.
    Json,
}

#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// The store (SQLite) to read.
    #[arg(long, default_value = "results/svcbench.db")]
    pub db: PathBuf,
    /// Which sessions and services, e.g. `label=nightly`, `session=3-5`, `service=go-*` (docs/report.md).
    /// Default: every session of the newest scenario.
    #[arg(long, value_name = "TERM[,TERM…]")]
    pub filter: Vec<String>,
    /// Price of one vCPU-hour in USD, for the cost per billion requests.
    #[arg(long, default_value_t = 0.0275)]
    pub vcpu_hour_price: f64,
    /// Quote invalid steps and runs too (saturated dependencies or generator, starved connections,
    /// interrupted runs, ...); they stay flagged.
    #[arg(long)]
    pub include_invalid: bool,
    /// Output format (default: markdown for a .md file, otherwise html).
    #[arg(long, value_enum)]
    pub format: Option<ReportFormat>,
    /// Where to write the report ("-" for standard output).
    #[arg(short = 'o', long)]
    pub output: PathBuf,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareFormat {
    Markdown,
    Json,
}

#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// BASE and NEW stores. Without them, --db with --base and --new filters compares two selections of one store.
    #[arg(value_name = "STORE", num_args = 0..=2)]
    pub stores: Vec<PathBuf>,
    /// The store, when BASE and NEW are two filters on it.
    #[arg(long, default_value = "results/svcbench.db")]
    pub db: PathBuf,
    /// Filter of the BASE side (same syntax as `report --filter`).
    #[arg(long, value_name = "TERM[,TERM…]")]
    pub base: Vec<String>,
    /// Filter of the NEW side.
    #[arg(long, value_name = "TERM[,TERM…]")]
    pub new: Vec<String>,
    /// Exit 1 when METRIC regressed (verdict slower/larger) by more than PCT, or the service failed in NEW
    /// where it gave figures in BASE; repeatable; METRIC `all` for any. Lines without a verdict (too few runs,
    /// NEW's measurement left out) never fail it; BASE and NEW measured differently are not judged (exit 3).
    /// Metrics: peak_rps, cpu_per_req, p50_ms, p99_ms, startup_ms, idle_mem, peak_mem; per step: step_rps, step_p99_ms.
    #[arg(long, value_name = "METRIC[:PCT%]")]
    pub fail_on: Vec<String>,
    /// Let --fail-on judge BASE and NEW measured differently (another profile, limits, scenario or load
    /// generator settings): a difference may then be the measurement's; the warnings still say how they differ.
    #[arg(long)]
    pub allow_different_settings: bool,
    /// Family-wise false-positive rate of the verdicts: the chance that any line of this comparison says
    /// faster/slower/smaller/larger when nothing changed (Holm–Bonferroni over all lines).
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// Compare only these metrics (repeatable or comma-separated; default all): fewer lines to correct for
    /// means each needs fewer runs to decide.
    #[arg(long, value_name = "METRIC[,METRIC…]")]
    pub metric: Vec<String>,
    #[arg(long, value_enum, default_value = "markdown")]
    pub format: CompareFormat,
    /// Write to this file instead of standard output.
    #[arg(short = 'o', long)]
    pub output: Option<PathBuf>,
}

/// Everything a report shows, computed once and rendered as HTML or Markdown.
pub struct Report {
    pub data: data::Dataset,
    pub generated_at: String,
    pub setup: table::Table,
    pub summary: table::Table,
    pub services: table::Table,
    pub conformance: table::Table,
    /// Validity, errors by kind, open-model schedule: how far the figures can be trusted.
    pub quality: Vec<table::Table>,
    pub runs: table::Table,
    pub levels: Vec<table::Table>,
    pub charts: Vec<charts::Chart>,
    /// A study's own section (its question, round tables, sizing), above the rest.
    pub study: Option<study::StudySection>,
    /// The store's duets the filter selects (`svcbench duet`), after the runs' charts.
    pub duets: Vec<duets::DuetSection>,
}

impl Report {
    /// What the page holds, for its header; a store of duets alone counts its duets (no runs, no services).
    pub fn holds(&self) -> String {
        if self.data.runs.is_empty() && !self.duets.is_empty() {
            return format!("{} duet(s)", self.duets.len());
        }
        format!("{} service(s), {} run(s)", self.data.groups.len(), self.data.runs.len())
    }
}

fn build(d: data::Dataset, vcpu_hour_price: f64) -> Report {
    let (summary, _) = sections::summary(&d, vcpu_hour_price);
    let mut quality = vec![quality::validity(&d)];
    quality.extend(quality::errors(&d));
    quality.extend(quality::schedule(&d));
    Report {
        quality,
        generated_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        setup: sections::setup(&d),
        summary,
        services: sections::services(&d),
        conformance: sections::conformance(&d),
        runs: sections::runs(&d),
        levels: levels::tables(&d),
        charts: charts::charts(&d),
        study: None,
        duets: Vec::new(),
        data: d,
    }
}

/// A report of duets alone: the store holds duets and no session of runs.
fn duets_only(source: &str, filter: &filter::Filter, duets: Vec<duets::DuetSection>) -> Report {
    Report {
        data: data::Dataset {
            source: source.to_string(),
            filter: filter.describe(),
            sessions: Vec::new(),
            groups: Vec::new(),
            runs: Vec::new(),
            include_invalid: false,
        },
        generated_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        setup: Default::default(),
        summary: Default::default(),
        services: Default::default(),
        conformance: Default::default(),
        quality: Vec::new(),
        runs: Default::default(),
        levels: Vec::new(),
        charts: Vec::new(),
        study: None,
        duets,
    }
}

fn write_output(path: &Path, text: &str) -> Result<()> {
    if path.as_os_str() == "-" {
        crate::out!("{text}");
        return Ok(());
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

pub fn run_report(a: &ReportArgs) -> Result<i32> {
    if a.vcpu_hour_price.is_nan() || a.vcpu_hour_price < 0.0 {
        bail!("--vcpu-hour-price {}: must be 0 or more (USD per vCPU-hour, e.g. 0.0275)", a.vcpu_hour_price);
    }
    let f = filter::Filter::parse(&a.filter)?;
    let conn = data::open(&a.db)?;
    let source = a.db.display().to_string();
    let duets = duets::sections(&conn, &f)?;
    let only_duets = !duets.is_empty() && conn.sessions()?.is_empty();
    let format = a.format.unwrap_or(match a.output.extension().and_then(|e| e.to_str()) {
        Some("md" | "markdown") => ReportFormat::Markdown,
        Some("json") => ReportFormat::Json,
        _ => ReportFormat::Html,
    });
    let r = if only_duets {
        duets_only(&source, &f, duets)
    } else {
        let mut d = data::load(&conn, &source, &f, false)?;
        d.include_invalid = a.include_invalid;
        Report { duets, ..build(d, a.vcpu_hour_price) }
    };
    let text = match format {
        ReportFormat::Html => html::render(&r),
        ReportFormat::Markdown => markdown::render(&r),
        ReportFormat::Json => {
            let (_, sums) = sections::summary(&r.data, a.vcpu_hour_price);
            serde_json::to_string_pretty(&serde_json::json!({
                "source": r.data.source,
                "filter": r.data.filter,
                "include_invalid": r.data.include_invalid,
                "summary": sums,
            }))? + "\n"
        }
    };
    write_output(&a.output, &text)?;
    if a.output.as_os_str() != "-" {
        crate::errln!(
            "svcbench: report of {} service(s), {} run(s){} written to {}",
            r.data.groups.len(),
            r.data.runs.len(),
            if r.duets.is_empty() { String::new() } else { format!(", {} duet(s)", r.duets.len()) },
            a.output.display()
        );
    }
    Ok(0)
}

pub fn run_compare(a: &CompareArgs) -> Result<i32> {
    let rules = a.fail_on.iter().map(|s| compare::parse_fail_on(s)).collect::<Result<Vec<_>>>()?;
    if !(a.alpha > 0.0 && a.alpha < 1.0) {
        bail!("--alpha {}: must be between 0 and 1 (e.g. 0.05)", a.alpha);
    }
    let metrics = compare::parse_metrics(&a.metric)?;
    if let Some(r) = rules.iter().find(|r| r.metric != "all" && !metrics.is_empty() && !metrics.contains(&r.metric)) {
        bail!("--fail-on {}: that metric is not compared (--metric {})", r.metric, metrics.join(","));
    }
    let (base_db, new_db) = match a.stores.as_slice() {
        [b, n] => (b.clone(), n.clone()),
        [] => {
            if a.base.is_empty() || a.new.is_empty() {
                bail!("give two stores (svcbench compare BASE.db NEW.db), or --base and --new filters on --db");
            }
            (a.db.clone(), a.db.clone())
        }
        _ => bail!("give two stores (BASE and NEW), not one; or no store and --base/--new filters on --db"),
    };
    let load = |db: &Path, terms: &[String]| -> Result<data::Dataset> {
        let f = filter::Filter::parse(terms)?;
        data::load(&data::open(db)?, &db.display().to_string(), &f, true)
    };
    let base = load(&base_db, &a.base).context("BASE")?;
    let new = load(&new_db, &a.new).context("NEW")?;
    let c = compare::compare(&base, &new, a.alpha, &metrics);
    let gate = compare::gate(&c, &rules, a.allow_different_settings);
    let text = match a.format {
        CompareFormat::Markdown => compare::markdown(&base, &new, &c, gate.as_ref()),
        CompareFormat::Json => {
            let mut v = serde_json::to_value(&c)?;
            v["fail_on"] = serde_json::to_value(&rules)?;
            v["failures"] = serde_json::to_value(gate.as_ref().map_or(&[][..], |g| &g.failures[..]))?;
            v["gate"] = serde_json::to_value(&gate)?;
            serde_json::to_string_pretty(&v)? + "\n"
        }
    };
    for w in &c.warnings {
        crate::errln!("svcbench: compare: warning: {w}");
    }
    match &a.output {
        Some(p) => write_output(p, &text)?,
        None => crate::out!("{text}"),
    }
    let Some(gate) = gate else { return Ok(0) };
    for f in &gate.failures {
        crate::errln!("svcbench: compare: regression: {f}");
    }
    for n in &gate.not_judged {
        crate::errln!("svcbench: compare: not judged: {n}");
    }
    crate::errln!("svcbench: compare: {}", gate.summary);
    Ok(gate.exit_code())
}

//! `svcbench report` and `svcbench compare`: what a person reads, made from the store alone
//! (docs/report.md). One file per concern:
//!   filter (which sessions), data (store → structs), stats (median, spread, verdict), summary (per-run and
//!   per-service figures), charts (chart specifications), tables + levels (tables), table (the table model
//!   and number format), html + markdown (the two outputs), compare (NEW vs BASE).
mod charts;
mod compare;
mod data;
mod filter;
mod html;
mod levels;
mod markdown;
mod stats;
mod summary;
mod table;
mod tables;
#[cfg(test)]
mod tests;

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportFormat {
    Html,
    Markdown,
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
    /// Exit 1 when METRIC regressed (verdict slower/larger) by more than PCT; repeatable; METRIC `all` for any.
    /// Metrics: peak_rps, cpu_per_req, p50_ms, p99_ms, startup_ms, idle_mem, peak_mem; per step: step_rps, step_p99_ms.
    #[arg(long, value_name = "METRIC[:PCT%]")]
    pub fail_on: Vec<String>,
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
    pub runs: table::Table,
    pub levels: Vec<table::Table>,
    pub charts: Vec<charts::Chart>,
}

fn build(d: data::Dataset, vcpu_hour_price: f64) -> Report {
    let (summary, _) = tables::summary(&d, vcpu_hour_price);
    Report {
        generated_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        setup: tables::setup(&d),
        summary,
        services: tables::services(&d),
        conformance: tables::conformance(&d),
        runs: tables::runs(&d),
        levels: levels::tables(&d),
        charts: charts::charts(&d),
        data: d,
    }
}

fn write_output(path: &Path, text: &str) -> Result<()> {
    if path.as_os_str() == "-" {
        print!("{text}");
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
    let d = data::load(&conn, &a.db.display().to_string(), &f, false)?;
    let format = a.format.unwrap_or(match a.output.extension().and_then(|e| e.to_str()) {
        Some("md" | "markdown") => ReportFormat::Markdown,
        _ => ReportFormat::Html,
    });
    let r = build(d, a.vcpu_hour_price);
    let text = match format {
        ReportFormat::Html => html::render(&r),
        ReportFormat::Markdown => markdown::render(&r),
    };
    write_output(&a.output, &text)?;
    if a.output.as_os_str() != "-" {
        eprintln!(
            "svcbench: report of {} service(s), {} run(s) written to {}",
            r.data.groups.len(),
            r.data.runs.len(),
            a.output.display()
        );
    }
    Ok(0)
}

pub fn run_compare(a: &CompareArgs) -> Result<i32> {
    let rules = a.fail_on.iter().map(|s| compare::parse_fail_on(s)).collect::<Result<Vec<_>>>()?;
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
    let lines = compare::compare(&base, &new);
    let failed = compare::failures(&lines, &rules);
    let text = match a.format {
        CompareFormat::Markdown => compare::markdown(&base, &new, &lines, &failed),
        CompareFormat::Json => {
            serde_json::to_string_pretty(&serde_json::json!({ "lines": lines, "fail_on": rules, "failures": failed }))?
                + "\n"
        }
    };
    match &a.output {
        Some(p) => write_output(p, &text)?,
        None => print!("{text}"),
    }
    for f in &failed {
        eprintln!("svcbench: compare: regression: {f}");
    }
    Ok(if failed.is_empty() { 0 } else { 1 })
}

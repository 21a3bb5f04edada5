//! `svcbench compare BASE NEW`: per service and metric, the ratio NEW/BASE of the medians over runs and a
//! verdict (faster/slower, smaller/larger, or within noise; the statistic is in stats.rs and docs/report.md),
//! and `--fail-on` to turn a regression into exit code 1 for CI. Besides the whole-run metrics, every step
//! both sides ran (same position, same load) gets its own verdict: the three identical attempts of seed 003
//! show whether a JIT-compiled service caught up attempt by attempt.
use super::data::{Dataset, Step};
use super::stats::{verdict, Change, Spread};
use super::summary::{run_figures, RunFigures};
use super::table::{num, spread};
use anyhow::{bail, Result};
use serde::Serialize;
use std::fmt::Write;

/// A compared figure of `T`: a run's figures (`RunFigures`) or one step (`Step`).
pub struct Metric<T> {
    pub key: &'static str,
    pub title: &'static str,
    pub unit: &'static str,
    pub higher_is_better: bool,
    /// Speed metrics say faster/slower; size metrics smaller/larger.
    pub speed: bool,
    pub value: fn(&T) -> Option<f64>,
}

pub const METRICS: &[Metric<RunFigures>] = &[
    Metric {
        key: "peak_rps",
        title: "peak success req/s",
        unit: "req/s",
        higher_is_better: true,
        speed: true,
        value: |f| f.peak_rps,
    },
    Metric {
        key: "cpu_per_req",
        title: "CPU time per request (whole run)",
        unit: "µs",
        higher_is_better: false,
        speed: true,
        value: |f| f.cpu_us_per_req,
    },
    Metric {
        key: "p50_ms",
        title: "p50 latency at the peak step",
        unit: "ms",
        higher_is_better: false,
        speed: true,
        value: |f| f.p50_at_peak_ms,
    },
    Metric {
        key: "p99_ms",
        title: "p99 latency at the peak step",
        unit: "ms",
        higher_is_better: false,
        speed: true,
        value: |f| f.p99_at_peak_ms,
    },
    Metric {
        key: "startup_ms",
        title: "startup time",
        unit: "ms",
        higher_is_better: false,
        speed: true,
        value: |f| f.startup_ms,
    },
    Metric {
        key: "idle_mem",
        title: "idle memory",
        unit: "MiB",
        higher_is_better: false,
        speed: false,
        value: |f| f.idle_mem_mib,
    },
    Metric {
        key: "peak_mem",
        title: "peak memory",
        unit: "MiB",
        higher_is_better: false,
        speed: false,
        value: |f| f.peak_mem_mib,
    },
];

/// Per-step metrics: one verdict per step both sides ran.
pub const STEP_METRICS: &[Metric<Step>] = &[
    Metric {
        key: "step_rps",
        title: "success req/s",
        unit: "req/s",
        higher_is_better: true,
        speed: true,
        value: |s| Some(s.success_rps),
    },
    Metric {
        key: "step_p99_ms",
        title: "p99 latency",
        unit: "ms",
        higher_is_better: false,
        speed: true,
        value: |s| s.p99,
    },
];

/// Every metric key, whole-run and per step (what `--fail-on` accepts).
fn metric_keys() -> impl Iterator<Item = &'static str> {
    METRICS.iter().map(|m| m.key).chain(STEP_METRICS.iter().map(|m| m.key))
}

#[derive(Debug, Clone, Serialize)]
pub struct Line {
    pub service: String,
    /// For per-step metrics: the step's position in the profile and its load, e.g. `#2 c=100`.
    pub step: Option<String>,
    pub metric: &'static str,
    pub unit: &'static str,
    pub base: Option<Spread>,
    pub new: Option<Spread>,
    pub ratio: Option<f64>,
    pub verdict: String,
    /// How much worse NEW is, in percent, when the verdict is a regression (or no data in NEW).
    pub regression_pct: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FailRule {
    pub metric: String,
    pub threshold_pct: f64,
}

/// `metric[:threshold%]`, metric `all` for every one; threshold 0 when omitted (any regression fails).
pub fn parse_fail_on(s: &str) -> Result<FailRule> {
    let (metric, pct) = match s.split_once(':') {
        Some((m, p)) => {
            let p = p.trim().trim_end_matches('%');
            let v: f64 = p.parse().map_err(|_| anyhow::anyhow!("--fail-on {s:?}: write a threshold like 10%"))?;
            if v.is_nan() || v < 0.0 {
                bail!("--fail-on {s:?}: the threshold must be 0 % or more");
            }
            (m.trim(), v)
        }
        None => (s.trim(), 0.0),
    };
    if metric != "all" && !metric_keys().any(|k| k == metric) {
        let keys: Vec<&str> = metric_keys().collect();
        bail!("--fail-on {s:?}: unknown metric {metric:?}; metrics are {} (or all)", keys.join(", "));
    }
    Ok(FailRule { metric: metric.to_string(), threshold_pct: pct })
}

fn figures(d: &Dataset, g: usize, vcpu_hour_price: f64) -> Vec<RunFigures> {
    d.group_runs(g).map(|r| run_figures(r, vcpu_hour_price)).collect()
}

/// Who is compared with whom: services of the same name; or, when each side selects exactly one service
/// and their names differ (`--base service=scala-spray --new service=scala-akka-http`), those two.
fn pairs(base: &Dataset, new: &Dataset) -> Vec<(String, Option<usize>, Option<usize>)> {
    if let ([b], [n]) = (base.groups.as_slice(), new.groups.as_slice()) {
        if b.name != n.name {
            return vec![(format!("{} → {}", b.name, n.name), Some(0), Some(0))];
        }
    }
    let mut names: Vec<&str> = base.groups.iter().map(|g| g.name.as_str()).collect();
    for g in &new.groups {
        if !names.contains(&g.name.as_str()) {
            names.push(&g.name);
        }
    }
    names
        .into_iter()
        .map(|name| {
            let find = |d: &Dataset| d.groups.iter().position(|g| g.name == name);
            (name.to_string(), find(base), find(new))
        })
        .collect()
}

/// One side's values of a metric, over its runs: None when the side lacks the service.
type Side = Option<Vec<f64>>;

fn line<T>(service: &str, step: Option<String>, m: &Metric<T>, b: &Side, n: &Side) -> Line {
    let bs = b.as_ref().and_then(|v| Spread::of(v.iter().copied()));
    let ns = n.as_ref().and_then(|v| Spread::of(v.iter().copied()));
    let (ratio, verdict_text, regression) = match (b, n, bs, ns) {
        (None, ..) => (None, "only in NEW".to_string(), None),
        (_, None, ..) => (None, "only in BASE".to_string(), None),
        (_, _, None, None) => (None, "no data".to_string(), None),
        (_, _, None, Some(_)) => (None, "no data in BASE".to_string(), None),
        (_, _, Some(_), None) => (None, "no data in NEW".to_string(), Some(100.0)),
        (_, _, Some(bs), Some(ns)) => {
            let (ratio, change) = verdict(&bs, &ns, m.higher_is_better);
            let word = match (change, m.speed) {
                (Change::WithinNoise, _) => "within noise",
                (Change::Better, true) => "faster",
                (Change::Worse, true) => "slower",
                (Change::Better, false) => "smaller",
                (Change::Worse, false) => "larger",
            };
            let worse_by = if m.higher_is_better { (1.0 - ratio) * 100.0 } else { (ratio - 1.0) * 100.0 };
            (Some(ratio), word.to_string(), (change == Change::Worse).then_some(worse_by))
        }
    };
    Line {
        service: service.to_string(),
        step,
        metric: m.key,
        unit: m.unit,
        base: bs,
        new: ns,
        ratio,
        verdict: verdict_text,
        regression_pct: regression,
    }
}

/// The steps of a group's runs by position: label and the steps at that position, one per run.
fn steps_by_position(d: &Dataset, g: usize) -> Vec<(i64, String, Vec<&Step>)> {
    let mut out: Vec<(i64, String, Vec<&Step>)> = Vec::new();
    for r in d.group_runs(g) {
        for s in &r.steps {
            match out.iter_mut().find(|(seq, label, _)| *seq == s.seq && *label == s.label) {
                Some(e) => e.2.push(s),
                None => out.push((s.seq, s.label.clone(), vec![s])),
            }
        }
    }
    out.sort_by_key(|e| e.0);
    out
}

pub fn compare(base: &Dataset, new: &Dataset) -> Vec<Line> {
    // The price cancels out in ratios; any value will do.
    let price = 1.0;
    let mut out = Vec::new();
    for (name, bg, ng) in pairs(base, new) {
        let b = bg.map(|g| figures(base, g, price));
        let n = ng.map(|g| figures(new, g, price));
        for m in METRICS {
            let values = |f: &Option<Vec<RunFigures>>| f.as_ref().map(|f| f.iter().filter_map(m.value).collect());
            out.push(line(&name, None, m, &values(&b), &values(&n)));
        }
        // Per step: only positions both sides ran with the same load.
        let (Some(bg), Some(ng)) = (bg, ng) else { continue };
        let new_steps = steps_by_position(new, ng);
        for (seq, label, bsteps) in steps_by_position(base, bg) {
            let Some((_, _, nsteps)) = new_steps.iter().find(|(s, l, _)| *s == seq && *l == label) else { continue };
            for m in STEP_METRICS {
                let values = |v: &[&Step]| Some(v.iter().filter_map(|s| (m.value)(s)).collect());
                out.push(line(&name, Some(format!("#{seq} {label}")), m, &values(&bsteps), &values(nsteps)));
            }
        }
    }
    out
}

/// The lines that break a `--fail-on` rule, as messages.
pub fn failures(lines: &[Line], rules: &[FailRule]) -> Vec<String> {
    let mut out = Vec::new();
    for l in lines {
        let Some(pct) = l.regression_pct else { continue };
        for r in rules {
            if (r.metric == "all" || r.metric == l.metric) && pct > r.threshold_pct {
                out.push(format!(
                    "{}{} {}: {} by {:.1} % (NEW/BASE {}; --fail-on threshold {} %)",
                    l.service,
                    l.step.as_ref().map(|s| format!(" step {s}")).unwrap_or_default(),
                    l.metric,
                    l.verdict,
                    pct,
                    l.ratio.map(|r| format!("{r:.3}")).unwrap_or_else(|| "–".into()),
                    r.threshold_pct
                ));
                break;
            }
        }
    }
    out
}

/// BASE, NEW, ratio and verdict cells of a Markdown row.
fn cells(l: &Line) -> String {
    let fmt = |x: &Option<Spread>| x.as_ref().map(|v| format!("{} {}", spread(v), l.unit)).unwrap_or_else(|| "–".into());
    let verdict = if l.regression_pct.is_some() { format!("**{}**", l.verdict) } else { l.verdict.clone() };
    let ratio = l.ratio.map(|r| format!("{}×", num(r))).unwrap_or_else(|| "–".into());
    format!("{} | {} | {} | {}", fmt(&l.base), fmt(&l.new), ratio, verdict)
}

fn side(d: &Dataset) -> String {
    let ids: Vec<String> = d.sessions.iter().map(|s| s.id.to_string()).collect();
    format!("`{}` sessions {} (filter: {})", d.source, ids.join(", "), d.filter)
}

pub fn markdown(base: &Dataset, new: &Dataset, lines: &[Line], failed: &[String]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "## svcbench compare\n");
    let _ = writeln!(s, "- BASE: {}", side(base));
    let _ = writeln!(s, "- NEW: {}\n", side(new));
    let _ = writeln!(s, "| service | metric | BASE median (min–max) | NEW median (min–max) | NEW/BASE | verdict |");
    let _ = writeln!(s, "|---|---|--:|--:|--:|---|");
    for l in lines.iter().filter(|l| l.step.is_none()) {
        let title = METRICS.iter().find(|m| m.key == l.metric).map(|m| m.title).unwrap_or(l.metric);
        let _ = writeln!(s, "| {} | {} (`{}`) | {} |", l.service, title, l.metric, cells(l));
    }
    if lines.iter().any(|l| l.step.is_some()) {
        let _ = writeln!(s, "\n### Per step\n");
        let _ = writeln!(s, "| service | step | metric | BASE median (min–max) | NEW median (min–max) | NEW/BASE | verdict |");
        let _ = writeln!(s, "|---|---|---|--:|--:|--:|---|");
        for l in lines.iter().filter(|l| l.step.is_some()) {
            let title = STEP_METRICS.iter().find(|m| m.key == l.metric).map(|m| m.title).unwrap_or(l.metric);
            let step = l.step.as_deref().unwrap_or("");
            let _ = writeln!(s, "| {} | {} | {} (`{}`) | {} |", l.service, step, title, l.metric, cells(l));
        }
    }
    let count = |w: &[&str]| lines.iter().filter(|l| w.contains(&l.verdict.as_str())).count();
    let _ = writeln!(
        s,
        "\n{} better, {} worse, {} within noise. A verdict needs the two sides' min–max ranges over runs not to \
         overlap and the ratio of medians to move further than the larger relative spread of either side and at \
         least {:.0} % (docs/report.md).",
        count(&["faster", "smaller"]),
        count(&["slower", "larger"]),
        count(&["within noise"]),
        super::stats::NOISE_FLOOR * 100.0
    );
    if !failed.is_empty() {
        let _ = writeln!(s, "\n**--fail-on: regression beyond the threshold**\n");
        for f in failed {
            let _ = writeln!(s, "- {f}");
        }
    }
    s
}

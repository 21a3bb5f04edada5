//! `svcbench compare BASE NEW`: per service and metric, the ratio NEW/BASE of the geometric means over runs
//! with its confidence interval, and a verdict (faster/slower, smaller/larger, within noise, or too few runs)
//! from Welch's t-test on the logs, corrected by Holm–Bonferroni over every line of the comparison (the
//! statistic is in stats.rs and docs/report.md); how many runs a side the measured noise calls for; and
//! `--fail-on` to turn a regression into exit code 1 for CI. Besides the whole-run metrics, every step both
//! sides ran (same position, same load) gets its own verdict: the three identical attempts of seed 003 show
//! whether a JIT-compiled service caught up attempt by attempt. Only counted runs enter (completed, or ended by
//! the service, under the limits asked); the others are listed apart, and BASE and NEW recorded on other hosts
//! or far apart in time get a warning.
use super::data::{Dataset, StepRow};
use super::quality::steps_by_position;
use super::stats::Spread;
use super::summary::{run_figures, RunFigures};
use chrono::DateTime;
use serde::Serialize;

mod absence;
mod gate;
mod judge;
mod metrics;
mod output;
mod settings;

#[cfg(test)]
pub(super) use gate::failures;
pub use gate::{gate, parse_fail_on, Gate};
pub use judge::{judge, Advice, Values};
pub use metrics::{parse_metrics, Metric, METRICS, STEP_METRICS};
pub use output::markdown;
pub(super) use output::ratio_with_interval;

/// Sessions of BASE and NEW further apart than this get a warning: on a shared machine the speed of the
/// host drifts over hours, so runs of different days are not interchangeable.
pub const SESSION_GAP_HOURS: f64 = 12.0;

#[derive(Debug, Clone, Serialize)]
pub struct Line {
    pub service: String,
    /// For per-step metrics: the step's position in the profile and its load, e.g. `#2 c=100`.
    pub step: Option<String>,
    pub metric: &'static str,
    pub unit: &'static str,
    /// Median and range over the counted runs of each side (completed, or ended by the service under its limits).
    pub base: Option<Spread>,
    pub new: Option<Spread>,
    /// NEW/BASE, the ratio of the geometric means over runs (also where there are too few runs to test).
    pub ratio: Option<f64>,
    /// The ratio's confidence interval at 1 − α, for this line alone (not corrected for the others).
    pub ci: Option<[f64; 2]>,
    /// Welch's two-sided p on the logs, and the same after Holm–Bonferroni over every line tested in this
    /// comparison: the verdict is a change when `p_adjusted` ≤ α.
    pub p: Option<f64>,
    pub p_adjusted: Option<f64>,
    pub verdict: String,
    /// Why there is no verdict, when there is none.
    pub note: Option<String>,
    pub advice: Option<Advice>,
    /// How much worse NEW is, in percent, when the verdict is a regression (slower or larger).
    pub regression_pct: Option<f64>,
}

/// The verdict of a line BASE has figures for and NEW none, because its service failed there (OOM-killed,
/// crashed, starved connections, its checks or its build failed): a regression for `--fail-on`, whatever its
/// threshold. The line's note says what failed.
pub const FAILED_IN_NEW: &str = "failed in NEW";

/// The verdict of a line BASE has figures for and NEW none, because NEW's measurement could not be made (its
/// steps or runs left out for the generator's, the machine's or the run's reasons, not the service's): nothing
/// is said of the service, and `--fail-on` does not judge it. The line's note says why.
pub const NOT_JUDGED: &str = "not judged";

impl Line {
    /// Whether NEW got worse: a corrected slower/larger verdict, or its service failed where BASE's did not.
    pub fn regressed(&self) -> bool {
        self.regression_pct.is_some() || self.verdict == FAILED_IN_NEW
    }

    /// "go step #4 c=64 step_rps".
    fn name(&self) -> String {
        let step = self.step.as_ref().map(|s| format!(" step {s}")).unwrap_or_default();
        format!("{}{step} {}", self.service, self.metric)
    }
}

/// Runs that did not complete: they never enter a comparison (a run cut short has a lower peak and fewer
/// requests for its CPU time, which would read as a slowdown).
#[derive(Debug, Clone, Serialize)]
pub struct LeftOut {
    pub side: &'static str,
    pub service: String,
    /// The run's status: interrupted, failed, …
    pub status: String,
    pub runs: Vec<String>,
}

/// Everything `svcbench compare` prints, as Markdown or JSON.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// Family-wise error rate of the verdicts.
    pub alpha: f64,
    /// Lines with a p value: the family Holm–Bonferroni corrects over.
    pub tested: usize,
    /// BASE and NEW measured differently (profile, limits, …), on different hosts or far apart in time:
    /// reasons to doubt any verdict.
    pub warnings: Vec<String>,
    /// The settings BASE and NEW were measured with differently (`--fail-on` does not judge them unless told).
    pub differences: Vec<settings::Difference>,
    pub left_out: Vec<LeftOut>,
    pub lines: Vec<Line>,
}

fn figures(d: &Dataset, g: usize, vcpu_hour_price: f64) -> Vec<RunFigures> {
    d.counted_runs(g).map(|r| run_figures(r, vcpu_hour_price, d.include_invalid)).collect()
}

/// Who is compared with whom: services of the same name; or, when each side selects exactly one service
/// and their names differ (`--base service=scala-spray --new service=scala-akka-http`, or two variants of
/// one service), those two, cell by cell where a study's limits axis gives several.
fn pairs(base: &Dataset, new: &Dataset) -> Vec<(String, Option<usize>, Option<usize>)> {
    let only_service = |d: &Dataset| {
        let name = &d.groups.first()?.service.name;
        d.groups.iter().all(|g| &g.service.name == name).then(|| name.clone())
    };
    if let (Some(b), Some(n)) = (only_service(base), only_service(new)) {
        if b != n {
            let title = |cell: &Option<String>| match cell {
                Some(c) => format!("{b} → {n} [{c}]"),
                None => format!("{b} → {n}"),
            };
            let mut out: Vec<_> = (base.groups.iter().enumerate())
                .map(|(i, g)| (title(&g.cell), Some(i), new.groups.iter().position(|h| h.cell == g.cell)))
                .collect();
            for (j, h) in new.groups.iter().enumerate() {
                if !base.groups.iter().any(|g| g.cell == h.cell) {
                    out.push((title(&h.cell), None, Some(j)));
                }
            }
            return out;
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

fn left_out(d: &Dataset, side: &'static str) -> Vec<LeftOut> {
    let mut out: Vec<LeftOut> = Vec::new();
    for (g, group) in d.groups.iter().enumerate() {
        for r in d.group_runs(g).filter(|r| !r.enters_figures()) {
            match out.iter_mut().find(|o| o.service == group.name && o.status == r.status) {
                Some(o) => o.runs.push(r.label.clone()),
                None => out.push(LeftOut {
                    side,
                    service: group.name.clone(),
                    status: r.status.clone(),
                    runs: vec![r.label.clone()],
                }),
            }
        }
    }
    out
}

/// Hosts of a side, as "host (CPU model)", sorted and without repeats.
fn hosts(d: &Dataset) -> Vec<String> {
    let mut v: Vec<String> = d
        .sessions
        .iter()
        .map(|s| {
            let host = s.host_name.as_deref().unwrap_or("unknown host");
            format!("{host} ({})", s.cpu_model.as_deref().unwrap_or("unknown CPU"))
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

/// Reasons the two sides may differ for other causes than the code: other hosts, other times.
fn host_and_time_warnings(base: &Dataset, new: &Dataset) -> Vec<String> {
    let mut out = Vec::new();
    let (hb, hn) = (hosts(base), hosts(new));
    if hb != hn {
        out.push(format!(
            "BASE and NEW were recorded on different hosts (BASE: {}; NEW: {}): a difference may be the machine's, \
             not the code's.",
            hb.join(", "),
            hn.join(", ")
        ));
    }
    let starts = |d: &Dataset| -> Vec<i64> {
        d.sessions
            .iter()
            .filter_map(|s| DateTime::parse_from_rfc3339(&s.started_at).ok())
            .map(|t| t.timestamp())
            .collect()
    };
    let (sb, sn) = (starts(base), starts(new));
    let gap = sb.iter().flat_map(|b| sn.iter().map(move |n| (n - b).abs())).max().unwrap_or(0) as f64 / 3600.0;
    if gap > SESSION_GAP_HOURS {
        let apart = if gap < 48.0 { format!("{gap:.0} hours") } else { format!("{:.1} days", gap / 24.0) };
        out.push(format!(
            "BASE and NEW sessions started up to {apart} apart: the speed of a shared machine drifts over hours, so \
             a difference may be the time's, not the code's; compare sessions recorded together (interleaved runs)."
        ));
    }
    out
}

/// Where a line's figures come from: BASE's and NEW's groups (None: that side lacks the service), and for a
/// per-step line the step's position and load.
type Origin = (Option<usize>, Option<usize>, Option<(i64, String)>);

/// Compares the counted runs of BASE and NEW (store::read::Run::enters_figures): every service both sides name,
/// every metric in `metrics` (all when empty), with verdicts at family-wise `alpha`.
pub fn compare(base: &Dataset, new: &Dataset, alpha: f64, metrics: &[String]) -> Comparison {
    let wanted = |key: &str| metrics.is_empty() || metrics.iter().any(|m| m == key);
    // The price cancels out in ratios; any value will do.
    let price = 1.0;
    let mut values = Vec::new();
    // Where each line's NEW figures come from, to say why it has none.
    let mut origins: Vec<Origin> = Vec::new();
    let mut both = Vec::new();
    for (name, bg, ng) in pairs(base, new) {
        let b = bg.map(|g| figures(base, g, price));
        let n = ng.map(|g| figures(new, g, price));
        for m in METRICS.iter().filter(|m| wanted(m.key)) {
            let side = |f: &Option<Vec<RunFigures>>| f.as_ref().map(|f| f.iter().filter_map(m.value).collect());
            values.push(Values::of(&name, None, m, side(&b), side(&n)));
            origins.push((bg, ng, None));
        }
        // Per step: only positions both sides ran with the same load.
        let (Some(bg), Some(ng)) = (bg, ng) else { continue };
        both.push((name.clone(), bg, ng));
        let new_steps = steps_by_position(new, ng);
        for (seq, label, bsteps) in steps_by_position(base, bg) {
            let Some((_, _, nsteps)) = new_steps.iter().find(|(s, l, _)| *s == seq && *l == label) else { continue };
            for m in STEP_METRICS.iter().filter(|m| wanted(m.key)) {
                let side =
                    |v: &[&StepRow]| Some(v.iter().filter(|s| base.quotable(s)).filter_map(|s| (m.value)(s)).collect());
                values.push(Values::of(&name, Some(format!("#{seq} {label}")), m, side(&bsteps), side(nsteps)));
                origins.push((Some(bg), Some(ng), Some((seq, label.clone()))));
            }
        }
    }
    let (mut lines, tested) = judge(&values, alpha);
    for ((l, v), (bg, ng, step)) in lines.iter_mut().zip(&values).zip(&origins) {
        if let (Some(bg), Some(ng), "no data") = (bg, ng, l.verdict.as_str()) {
            let from_steps = FROM_PEAK_STEP.contains(&l.metric);
            l.note = Some(absence::on_both_sides((base, *bg), (new, *ng), step.as_ref(), from_steps));
            continue;
        }
        let Some(g) = ng else { continue };
        if let Some(a) = absence(l, v, new, *g, step.as_ref()) {
            l.verdict = if a.service { FAILED_IN_NEW } else { NOT_JUDGED }.to_string();
            l.note = Some(a.why);
        }
    }
    let mut out = left_out(base, "BASE");
    out.extend(left_out(new, "NEW"));
    let differences = settings::differences(base, new, &both);
    let mut warnings: Vec<String> =
        differences.iter().map(|d| settings::warning(d, d.services.len() == both.len())).collect();
    warnings.extend(host_and_time_warnings(base, new));
    Comparison { alpha, tested, warnings, differences, left_out: out, lines }
}

/// Whole-run metrics read from the run's peak step: a run without a valid step has none.
const FROM_PEAK_STEP: [&str; 3] = ["peak_rps", "p50_ms", "p99_ms"];

/// Why NEW has no figure to judge on a line BASE has one for: "no data in NEW", or a figure where higher is
/// better that is zero in every NEW run (no request succeeded) against BASE's positive ones.
fn absence(l: &Line, v: &Values, new: &Dataset, g: usize, step: Option<&(i64, String)>) -> Option<absence::Absence> {
    let all =
        |x: &Option<Vec<f64>>, f: fn(f64) -> bool| x.as_ref().is_some_and(|x| !x.is_empty() && x.iter().all(|&v| f(v)));
    let zero_in_new =
        l.verdict == "not tested" && v.higher_is_better && all(&v.new, |x| x == 0.0) && all(&v.base, |x| x > 0.0);
    if l.verdict != "no data in NEW" && !zero_in_new {
        return None;
    }
    let from_steps = FROM_PEAK_STEP.contains(&l.metric);
    let mut a = match step {
        Some((seq, label)) => absence::at_step(new, g, *seq, label),
        None => absence::of_runs(new, g, from_steps),
    };
    if zero_in_new {
        a = absence::Absence { service: true, why: "no request succeeded in any NEW run".into() };
    }
    Some(a)
}

#[cfg(test)]
mod tests;

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
use super::stats::{self, Change, LogTest, Spread, Untestable, MIN_RUNS, POWER};
use super::summary::{run_figures, RunFigures};
use super::table::{num, spread, Cell, Row, Table};
use super::{compare_absence, compare_settings};
use anyhow::{bail, Result};
use chrono::DateTime;
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
pub const STEP_METRICS: &[Metric<StepRow>] = &[
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

/// Every metric key, whole-run and per step (what `--fail-on` and `--metric` accept).
fn metric_keys() -> impl Iterator<Item = &'static str> {
    METRICS.iter().map(|m| m.key).chain(STEP_METRICS.iter().map(|m| m.key))
}

fn check_metric(option: &str, given: &str, metric: &str) -> Result<()> {
    if metric != "all" && !metric_keys().any(|k| k == metric) {
        let keys: Vec<&str> = metric_keys().collect();
        bail!("{option} {given:?}: unknown metric {metric:?}; metrics are {} (or all)", keys.join(", "));
    }
    Ok(())
}

/// `--metric` terms: the metrics to compare (every one when empty). Fewer lines make a smaller family to
/// correct for, so each line needs less evidence: a CI gate on peak_rps alone decides with fewer runs.
pub fn parse_metrics(terms: &[String]) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for t in terms.iter().flat_map(|t| t.split(',')).map(str::trim).filter(|t| !t.is_empty()) {
        check_metric("--metric", t, t)?;
        if t == "all" {
            return Ok(Vec::new());
        }
        out.push(t.to_string());
    }
    Ok(out)
}

/// Sessions of BASE and NEW further apart than this get a warning: on a shared machine the speed of the
/// host drifts over hours, so runs of different days are not interchangeable.
pub const SESSION_GAP_HOURS: f64 = 12.0;

/// How many runs the measured noise calls for (see `stats::runs_needed`).
#[derive(Debug, Clone, Serialize)]
pub struct Advice {
    /// Standard deviation of the logs of the runs, pooled over both sides: their noise, about their CV.
    pub log_sd: f64,
    /// Runs a side that would call a change of 5 % (10 %) with 80 % power at `alpha_per_line`.
    pub runs_for_5pct: Option<usize>,
    pub runs_for_10pct: Option<usize>,
    /// The runs at hand (the smaller side) call NEW/BASE beyond this factor either way (above it, or below its
    /// inverse) with 80 % power; None below the minimum, where nothing is called. Cautious at 3–5 runs (see
    /// `stats::detectable_change`).
    pub detectable_ratio: Option<f64>,
    /// α over the number of lines tested (the family Holm–Bonferroni corrects over; when none could be tested,
    /// the lines with values on both sides): Holm's strictest step in this comparison.
    pub alpha_per_line: f64,
}

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
    pub differences: Vec<compare_settings::Difference>,
    pub left_out: Vec<LeftOut>,
    pub lines: Vec<Line>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FailRule {
    pub metric: String,
    pub threshold_pct: f64,
}

/// `metric[:threshold%]`, metric `all` for every one; threshold 0 when omitted (any regression fails). A
/// threshold that is not a finite number is refused. One of 100 % or more on a metric where higher is better
/// still fails where the service failed in NEW (whatever the threshold): the way to gate on that alone.
pub fn parse_fail_on(s: &str) -> Result<FailRule> {
    let (metric, pct) = match s.split_once(':') {
        Some((m, p)) => {
            let p = p.trim().trim_end_matches('%');
            let v: f64 = p.parse().map_err(|_| anyhow::anyhow!("--fail-on {s:?}: write a threshold like 10%"))?;
            if !v.is_finite() {
                bail!("--fail-on {s:?}: the threshold must be a finite percentage, like 10%");
            }
            if v < 0.0 {
                bail!("--fail-on {s:?}: the threshold must be 0 % or more");
            }
            (m.trim(), v)
        }
        None => (s.trim(), 0.0),
    };
    check_metric("--fail-on", s, metric)?;
    Ok(FailRule { metric: metric.to_string(), threshold_pct: pct })
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

/// One line's values before the family is known: a metric over each side's counted runs.
#[derive(Debug, Clone)]
pub struct Values {
    pub service: String,
    pub step: Option<String>,
    pub metric: &'static str,
    pub unit: &'static str,
    pub higher_is_better: bool,
    pub speed: bool,
    /// None when the side lacks the service.
    pub base: Option<Vec<f64>>,
    pub new: Option<Vec<f64>>,
}

impl Values {
    fn of<T>(
        service: &str,
        step: Option<String>,
        m: &Metric<T>,
        base: Option<Vec<f64>>,
        new: Option<Vec<f64>>,
    ) -> Self {
        Values {
            service: service.to_string(),
            step,
            metric: m.key,
            unit: m.unit,
            higher_is_better: m.higher_is_better,
            speed: m.speed,
            base,
            new,
        }
    }
}

fn verdict_word(change: Change, speed: bool) -> &'static str {
    match (change, speed) {
        (Change::WithinNoise, _) => "within noise",
        (Change::Better, true) => "faster",
        (Change::Worse, true) => "slower",
        (Change::Better, false) => "smaller",
        (Change::Worse, false) => "larger",
    }
}

/// Tests every line, corrects over all of them together (Holm–Bonferroni at family-wise `alpha`) and words
/// the verdicts. Returns the lines and the number tested.
pub fn judge(values: &[Values], alpha: f64) -> (Vec<Line>, usize) {
    let spreads: Vec<(Option<Spread>, Option<Spread>)> = values
        .iter()
        .map(|v| {
            let s = |x: &Option<Vec<f64>>| x.as_ref().and_then(|x| Spread::of(x.iter().copied()));
            (s(&v.base), s(&v.new))
        })
        .collect();
    let tests: Vec<Option<Result<LogTest, Untestable>>> = values
        .iter()
        .zip(&spreads)
        .map(|(v, s)| match (&v.base, &v.new, s) {
            (Some(b), Some(n), (Some(_), Some(_))) => Some(stats::log_welch(b, n, 1.0 - alpha)),
            _ => None,
        })
        .collect();
    let (tested, raw): (Vec<usize>, Vec<f64>) = tests
        .iter()
        .enumerate()
        .filter_map(|(i, t)| match t {
            Some(Ok(t)) => Some((i, t.p)),
            _ => None,
        })
        .unzip();
    let mut adjusted: Vec<Option<f64>> = vec![None; values.len()];
    for (&i, a) in tested.iter().zip(stats::holm(&raw)) {
        adjusted[i] = Some(a);
    }
    // The advice is sized at Holm's strictest step over the family the verdicts were corrected over (the lines
    // tested); when none could be tested, over the lines with values on both sides, which enough runs would test.
    let family = match tested.len() {
        0 => tests.iter().filter(|t| t.is_some()).count().max(1),
        n => n,
    };
    let alpha_per_line = alpha / family as f64;

    let mut lines = Vec::with_capacity(values.len());
    for (i, v) in values.iter().enumerate() {
        let (bs, ns) = spreads[i];
        let mut l = Line {
            service: v.service.clone(),
            step: v.step.clone(),
            metric: v.metric,
            unit: v.unit,
            base: bs,
            new: ns,
            ratio: None,
            ci: None,
            p: None,
            p_adjusted: adjusted[i],
            verdict: String::new(),
            note: None,
            advice: None,
            regression_pct: None,
        };
        let (b, n) = match (&v.base, &v.new, bs, ns) {
            (None, ..) => ("only in NEW", None),
            (_, None, ..) => ("only in BASE", None),
            (_, _, None, None) => ("no data", None),
            (_, _, None, Some(_)) => ("no data in BASE", None),
            // compare() says why, from the runs (FAILED_IN_NEW or NOT_JUDGED).
            (_, _, Some(_), None) => ("no data in NEW", None),
            (Some(b), Some(n), Some(_), Some(_)) => ("", Some((b, n))),
        };
        l.verdict = b.to_string();
        if let Some((b, n)) = n {
            l.ratio = stats::geometric_ratio(b, n);
            l.advice = stats::pooled_log_sd(b, n).map(|sd| {
                let runs = bs.map_or(0, |s| s.n).min(ns.map_or(0, |s| s.n));
                let needed = |change: f64| stats::runs_needed(sd, change, alpha_per_line, POWER);
                Advice {
                    log_sd: sd,
                    runs_for_5pct: needed(0.05),
                    runs_for_10pct: needed(0.10),
                    detectable_ratio: (runs >= MIN_RUNS)
                        .then(|| stats::detectable_change(sd, runs, alpha_per_line, POWER))
                        .flatten()
                        .map(|d| 1.0 + d),
                    alpha_per_line,
                }
            });
            match tests[i] {
                Some(Ok(t)) => {
                    let change = Change::of(t.ratio, adjusted[i].is_some_and(|a| a <= alpha), v.higher_is_better);
                    l.verdict = verdict_word(change, v.speed).to_string();
                    l.ci = Some(t.ci);
                    l.p = Some(t.p);
                    let worse_by = if v.higher_is_better { 1.0 - t.ratio } else { t.ratio - 1.0 } * 100.0;
                    l.regression_pct = (change == Change::Worse).then_some(worse_by);
                }
                Some(Err(Untestable::TooFewRuns)) => {
                    l.verdict = "too few runs".into();
                    let count = |s: Option<Spread>| s.map_or(0, |s| s.n);
                    l.note = Some(format!(
                        "{} run(s) in BASE, {} in NEW; the test needs {MIN_RUNS} a side",
                        count(bs),
                        count(ns)
                    ));
                }
                Some(Err(Untestable::NoSpread)) => {
                    l.verdict = "no spread".into();
                    l.note = Some("every run of each side gave the same value and the sides differ".into());
                }
                Some(Err(Untestable::NotPositive)) => {
                    l.verdict = "not tested".into();
                    l.note = Some("a zero or negative value has no logarithm".into());
                }
                None => {}
            }
        }
        lines.push(l);
    }
    (lines, tested.len())
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
            l.note = Some(compare_absence::on_both_sides((base, *bg), (new, *ng), step.as_ref(), from_steps));
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
    let differences = compare_settings::differences(base, new, &both);
    let mut warnings: Vec<String> =
        differences.iter().map(|d| compare_settings::warning(d, d.services.len() == both.len())).collect();
    warnings.extend(host_and_time_warnings(base, new));
    Comparison { alpha, tested, warnings, differences, left_out: out, lines }
}

/// Whole-run metrics read from the run's peak step: a run without a valid step has none.
const FROM_PEAK_STEP: [&str; 3] = ["peak_rps", "p50_ms", "p99_ms"];

/// Why NEW has no figure to judge on a line BASE has one for: "no data in NEW", or a figure where higher is
/// better that is zero in every NEW run (no request succeeded) against BASE's positive ones.
fn absence(
    l: &Line,
    v: &Values,
    new: &Dataset,
    g: usize,
    step: Option<&(i64, String)>,
) -> Option<compare_absence::Absence> {
    let all =
        |x: &Option<Vec<f64>>, f: fn(f64) -> bool| x.as_ref().is_some_and(|x| !x.is_empty() && x.iter().all(|&v| f(v)));
    let zero_in_new =
        l.verdict == "not tested" && v.higher_is_better && all(&v.new, |x| x == 0.0) && all(&v.base, |x| x > 0.0);
    if l.verdict != "no data in NEW" && !zero_in_new {
        return None;
    }
    let from_steps = FROM_PEAK_STEP.contains(&l.metric);
    let mut a = match step {
        Some((seq, label)) => compare_absence::at_step(new, g, *seq, label),
        None => compare_absence::of_runs(new, g, from_steps),
    };
    if zero_in_new {
        a = compare_absence::Absence { service: true, why: "no request succeeded in any NEW run".into() };
    }
    Some(a)
}

/// The lines that break a `--fail-on` rule, as messages: a corrected slower/larger verdict whose ratio of
/// geometric means is worse than the threshold, or a service that failed in NEW where BASE's gave figures.
pub fn failures(lines: &[Line], rules: &[FailRule]) -> Vec<String> {
    let mut out = Vec::new();
    for l in lines.iter().filter(|l| gated(l, rules)) {
        if l.verdict == FAILED_IN_NEW {
            out.push(format!("{}: the service failed in NEW: {}", l.name(), l.note.as_deref().unwrap_or("no figure")));
            continue;
        }
        let Some(pct) = l.regression_pct else { continue };
        if let Some(r) = rules.iter().find(|r| applies(r, l) && pct > r.threshold_pct) {
            out.push(format!(
                "{}: {} by {:.1} % (NEW/BASE {}{}; --fail-on threshold {} %)",
                l.name(),
                l.verdict,
                pct,
                l.ratio.map(|r| format!("{r:.3}")).unwrap_or_else(|| "–".into()),
                l.p_adjusted.map(|p| format!(", Holm p {}", p_value(p))).unwrap_or_default(),
                r.threshold_pct
            ));
        }
    }
    out
}

fn applies(r: &FailRule, l: &Line) -> bool {
    r.metric == "all" || r.metric == l.metric
}

fn gated(l: &Line, rules: &[FailRule]) -> bool {
    rules.iter().any(|r| applies(r, l))
}

/// Verdicts that judge a line: a test's, or a service that failed in NEW.
const JUDGED: [&str; 6] = ["faster", "slower", "smaller", "larger", "within noise", FAILED_IN_NEW];

/// What `--fail-on` made of the comparison, for the output's last lines and the exit code.
#[derive(Debug, Clone, Serialize)]
pub struct Gate {
    /// `passed` (exit 0), `failed` (exit 1) or `refused` (exit 3: BASE and NEW were measured differently).
    pub result: &'static str,
    /// Gated lines with a verdict (a test's, or the service failed in NEW).
    pub judged: usize,
    pub failures: Vec<String>,
    /// Gated lines NEW's measurement could not give a figure for, with why.
    pub not_judged: Vec<String>,
    /// One line: what was gated, at which threshold, over how many lines, and the result.
    pub summary: String,
}

impl Gate {
    pub fn exit_code(&self) -> i32 {
        match self.result {
            "passed" => 0,
            "failed" => 1,
            _ => 3,
        }
    }
}

/// "peak_rps (worse by more than 10 %), cpu_per_req (any regression)".
fn rules_text(rules: &[FailRule]) -> String {
    let each: Vec<String> = rules
        .iter()
        .map(|r| match r.threshold_pct {
            0.0 => format!("{} (any regression)", r.metric),
            t => format!("{} (worse by more than {t} %)", r.metric),
        })
        .collect();
    each.join(", ")
}

/// The gate over `rules` (None without any): every gated line judged, a failure for each regression beyond its
/// threshold and each service that failed in NEW; lines without a verdict (too few runs, NEW's measurement left
/// out) never fail it, and are counted. A comparison of sides measured differently is refused unless
/// `allow_different` (`--allow-different-settings`).
pub fn gate(c: &Comparison, rules: &[FailRule], allow_different: bool) -> Option<Gate> {
    if rules.is_empty() {
        return None;
    }
    let gated_rules = format!("--fail-on {}", rules_text(rules));
    if !c.differences.is_empty() && !allow_different {
        let what: Vec<&str> = c.differences.iter().map(|d| d.setting).collect();
        return Some(Gate {
            result: "refused",
            judged: 0,
            failures: Vec::new(),
            not_judged: Vec::new(),
            summary: format!(
                "{gated_rules}: not judged: BASE and NEW were measured differently ({}; the warnings above say how), so \
                 a difference may be the measurement's, not the code's; measure both alike, or add \
                 --allow-different-settings to judge them anyway (exit 3)",
                what.join(", ")
            ),
        });
    }
    let lines: Vec<&Line> = c.lines.iter().filter(|l| gated(l, rules)).collect();
    let judged = lines.iter().filter(|l| JUDGED.contains(&l.verdict.as_str())).count();
    let not_judged: Vec<String> = (lines.iter().filter(|l| l.verdict == NOT_JUDGED))
        .map(|l| format!("{}: {}", l.name(), l.note.as_deref().unwrap_or("no figure in NEW")))
        .collect();
    // The lines without a verdict, by why.
    let mut unjudged: Vec<(String, usize)> = Vec::new();
    for l in lines.iter().filter(|l| !JUDGED.contains(&l.verdict.as_str())) {
        let why = match l.verdict.as_str() {
            NOT_JUDGED => "left out in NEW for the measurement's reasons".to_string(),
            "too few runs" => "with too few runs".to_string(),
            "no spread" => "without spread".to_string(),
            w => w.to_string(),
        };
        compare_absence::tally(&mut unjudged, why);
    }
    let rest = match unjudged.is_empty() {
        true => String::new(),
        false => {
            let each: Vec<String> = unjudged.iter().map(|(why, n)| format!("{n} {why}")).collect();
            format!("; not judged: {}", each.join(", "))
        }
    };
    let failures = failures(&c.lines, rules);
    let (result, summary) = if !failures.is_empty() {
        let n = failures.len();
        let what = if n == 1 { "regression" } else { "regressions" };
        ("failed", format!("{gated_rules}: failed: {n} {what} in the {} judged{rest}", n_lines(judged)))
    } else if judged == 0 {
        ("passed", format!("{gated_rules}: passed, but no line could be judged{rest}"))
    } else {
        ("passed", format!("{gated_rules}: passed: no regression in the {} judged{rest}", n_lines(judged)))
    };
    Some(Gate { result, judged, failures, not_judged, summary })
}

fn p_value(p: f64) -> String {
    if p < 0.001 {
        "< 0.001".into()
    } else {
        format!("{p:.3}")
    }
}

fn ratio_text(r: f64) -> String {
    if r >= 10.0 {
        num(r)
    } else {
        format!("{r:.2}")
    }
}

/// A line's ratio NEW/BASE with its confidence interval where one was worked out: "0.70× [0.62, 0.79]".
pub(super) fn ratio_with_interval(l: &Line) -> Option<String> {
    match (l.ratio, l.ci) {
        (Some(r), Some([lo, hi])) => Some(format!("{}× [{}, {}]", ratio_text(r), ratio_text(lo), ratio_text(hi))),
        (Some(r), None) => Some(format!("{}×", ratio_text(r))),
        _ => None,
    }
}

/// Runs, BASE, NEW, ratio, p, verdict and advice cells of a row.
fn cells(l: &Line) -> Vec<Cell> {
    let fmt =
        |x: &Option<Spread>| x.as_ref().map(|v| format!("{} {}", spread(v), l.unit)).unwrap_or_else(|| "–".into());
    let count = |x: &Option<Spread>| x.map_or("–".to_string(), |s| s.n.to_string());
    let ratio = ratio_with_interval(l).unwrap_or_else(|| "–".into());
    let p = match (l.p, l.p_adjusted) {
        (Some(p), Some(a)) => format!("{} ({})", p_value(p), p_value(a)),
        _ => "–".into(),
    };
    let advice = l
        .advice
        .as_ref()
        .map(|a| {
            let n = |x: Option<usize>| x.map_or("–".to_string(), |n| n.to_string());
            format!("{} / {}", n(a.runs_for_5pct), n(a.runs_for_10pct))
        })
        .unwrap_or_else(|| "–".into());
    let num = |t: String| Cell { text: t, class: "num", ..Cell::default() };
    // A regression stands out (bold in Markdown); a line without a figure says why.
    let text = match (&l.note, l.verdict.as_str()) {
        (Some(why), FAILED_IN_NEW | NOT_JUDGED | "no data") => format!("{}: {why}", l.verdict),
        _ => l.verdict.clone(),
    };
    let verdict = Cell { text, class: if l.regressed() { "fail" } else { "" }, ..Cell::default() };
    vec![
        num(format!("{} / {}", count(&l.base), count(&l.new))),
        num(fmt(&l.base)),
        num(fmt(&l.new)),
        num(ratio),
        num(p),
        verdict,
        num(advice),
    ]
}

/// The lines of one table: the whole-run metrics, or the per-step ones (with the step's column).
fn lines_table(lines: &[&Line], per_step: bool, level: &str) -> Table {
    let mut head: Vec<String> = vec!["service".into()];
    if per_step {
        head.push("step".into());
    }
    head.extend(
        [
            "metric",
            "runs B / N",
            "BASE median (min–max)",
            "NEW median (min–max)",
            &format!("NEW/BASE [{level} CI]"),
            "p (Holm)",
            "verdict",
            "runs a side for 5 % / 10 %",
        ]
        .map(String::from),
    );
    let rows = lines
        .iter()
        .map(|l| {
            let title = if per_step {
                STEP_METRICS.iter().find(|m| m.key == l.metric).map(|m| m.title)
            } else {
                METRICS.iter().find(|m| m.key == l.metric).map(|m| m.title)
            };
            let title = title.unwrap_or(l.metric);
            let mut cells = vec![Cell::text(l.service.clone())];
            if per_step {
                cells.push(Cell::text(l.step.clone().unwrap_or_default()));
            }
            cells.push(Cell::text(format!("{title} (`{}`)", l.metric)));
            cells.extend(self::cells(l));
            Row { cells, data: Vec::new() }
        })
        .collect();
    Table { id: "compare".into(), head, rows, ..Table::default() }
}

fn side(d: &Dataset) -> String {
    let ids: Vec<String> = d.sessions.iter().map(|s| s.id.to_string()).collect();
    format!("`{}` sessions {} (filter: {})", d.source, ids.join(", "), d.filter)
}

/// "1 interrupted run of go-nethttp in NEW (go-nethttp #3)".
fn left_out_text(o: &LeftOut) -> String {
    let runs = if o.runs.len() == 1 { "run" } else { "runs" };
    format!("{} {} {runs} of {} in {} ({})", o.runs.len(), o.status, o.service, o.side, o.runs.join(", "))
}

/// One sentence of advice: can the runs at hand decide, and how many runs would.
fn advice_text(l: &Line, a: &Advice) -> Option<String> {
    let runs = l.base?.n.min(l.new?.n);
    let (n5, n10) = (a.runs_for_5pct?, a.runs_for_10pct?);
    let now = match a.detectable_ratio {
        Some(r) => format!(" ({runs} a side are 80 % sure to call only changes beyond ×/÷ {})", ratio_text(r)),
        _ => String::new(),
    };
    let text = if runs < MIN_RUNS {
        format!("too few runs to decide ({runs} a side); about {n5} needed for 5 %, {n10} for 10 %")
    } else if runs >= n5 {
        format!("{runs} runs a side are enough for 5 %")
    } else if runs >= n10 {
        format!("{runs} runs a side are enough for 10 %; about {n5} needed for 5 %")
    } else {
        format!(
            "too noisy to call a 5 % or 10 % change with {runs} runs a side; about {n5} needed for 5 %, {n10} for 10 %"
        )
    };
    Some(format!("noise {:.1} % (log SD): {text}{now}", a.log_sd * 100.0))
}

pub fn markdown(base: &Dataset, new: &Dataset, c: &Comparison, gate: Option<&Gate>) -> String {
    let lines = &c.lines;
    let mut s = String::new();
    let _ = writeln!(s, "## svcbench compare\n");
    for w in &c.warnings {
        let _ = writeln!(s, "> **Warning:** {w}\n");
    }
    let _ = writeln!(s, "- BASE: {}", side(base));
    let _ = writeln!(s, "- NEW: {}", side(new));
    for o in &c.left_out {
        let _ = writeln!(s, "- left out (did not complete): {}", left_out_text(o));
    }
    let level = format!("{:.0} %", (1.0 - c.alpha) * 100.0);
    let whole: Vec<&Line> = lines.iter().filter(|l| l.step.is_none()).collect();
    let per_step: Vec<&Line> = lines.iter().filter(|l| l.step.is_some()).collect();
    // `--metric step_rps` leaves no whole-run line: no empty table for it.
    if !whole.is_empty() || per_step.is_empty() {
        let _ = write!(s, "\n{}", super::markdown::table(&lines_table(&whole, false, &level)));
    }
    if !per_step.is_empty() {
        let _ = write!(s, "\n### Per step\n\n{}", super::markdown::table(&lines_table(&per_step, true, &level)));
    }
    let count = |w: &[&str]| lines.iter().filter(|l| w.contains(&l.verdict.as_str())).count();
    // A blank line first: a line right after a table reads as one more row of it.
    let _ = writeln!(
        s,
        "\n{} better, {} worse, {} within noise, {} with too few runs. Verdicts: Welch's t-test on the logs of the \
         per-run values (NEW/BASE is the ratio of geometric means), Holm–Bonferroni over the {} tested at \
         family-wise α = {}; fewer than {MIN_RUNS} counted runs a side is too few (docs/report.md).",
        count(&["faster", "smaller"]),
        count(&["slower", "larger"]),
        count(&["within noise"]),
        count(&["too few runs"]),
        n_lines(c.tested),
        c.alpha
    );
    let advice: Vec<String> = lines
        .iter()
        .filter(|l| l.step.is_none() && ["peak_rps", "cpu_per_req"].contains(&l.metric))
        .filter_map(|l| {
            let a = l.advice.as_ref()?;
            let title = METRICS.iter().find(|m| m.key == l.metric).map(|m| m.title).unwrap_or(l.metric);
            Some(format!("- {}, {title}: {}", l.service, advice_text(l, a)?))
        })
        .collect();
    if !advice.is_empty() {
        let alpha_per_line = lines.iter().find_map(|l| l.advice.as_ref()).map_or(c.alpha, |a| a.alpha_per_line);
        let family = (c.alpha / alpha_per_line).round() as usize;
        let which = if c.tested > 0 {
            format!("Holm's strictest step over the {} tested", n_lines(family))
        } else {
            format!(
                "no line could be tested: Holm's strictest step over the {} with values on both sides",
                n_lines(family)
            )
        };
        let _ = writeln!(s, "\n### Runs needed\n");
        let _ = writeln!(
            s,
            "From the runs' spread on both sides: runs a side to call a change with {:.0} % power at α = {} / {family} \
             per line, {which} (`--metric` narrows them).\n",
            POWER * 100.0,
            c.alpha,
        );
        for a in advice {
            let _ = writeln!(s, "{a}");
        }
    }
    if let Some(g) = gate {
        let _ = writeln!(s, "\n**{}**", g.summary);
        if !g.failures.is_empty() || !g.not_judged.is_empty() {
            let _ = writeln!(s);
        }
        for f in &g.failures {
            let _ = writeln!(s, "- regression: {f}");
        }
        for n in &g.not_judged {
            let _ = writeln!(s, "- not judged: {n}");
        }
    }
    s
}

/// "1 line", "7 lines".
fn n_lines(n: usize) -> String {
    format!("{n} line{}", if n == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::stats::tests::{lognormal_runs, rng};
    use rand::rngs::StdRng;

    /// The lines of one service in a compare of a three-step profile: 7 whole-run and 3 × 2 per-step
    /// metrics, 13 in all, each drawn from a log-normal with coefficient of variation `cv`; NEW's first
    /// line (peak req/s, higher is better) is `shift` times BASE's.
    fn family(r: &mut StdRng, runs: usize, cv: f64, shift: f64) -> Vec<Values> {
        let mut out = Vec::new();
        for (i, m) in METRICS.iter().enumerate() {
            let base = lognormal_runs(r, runs, 1000.0, cv);
            let new = lognormal_runs(r, runs, if i == 0 { 1000.0 * shift } else { 1000.0 }, cv);
            out.push(Values::of("svc", None, m, Some(base), Some(new)));
        }
        for step in 1..=3 {
            for m in STEP_METRICS {
                let (base, new) = (lognormal_runs(r, runs, 50.0, cv), lognormal_runs(r, runs, 50.0, cv));
                out.push(Values::of("svc", Some(format!("#{step}")), m, Some(base), Some(new)));
            }
        }
        out
    }

    fn called(l: &Line) -> bool {
        ["faster", "slower", "smaller", "larger"].contains(&l.verdict.as_str())
    }

    #[test]
    fn calibration_a_a_family_wise_false_verdicts_stay_within_alpha() {
        let (alpha, reps) = (0.05, 2000);
        for runs in [3, 5, 10] {
            let mut r = rng(100 + runs as u64);
            let (mut families, mut lines, mut total) = (0, 0, 0);
            for _ in 0..reps {
                let (judged, tested) = judge(&family(&mut r, runs, 0.10, 1.0), alpha);
                assert_eq!(tested, judged.len());
                let false_calls = judged.iter().filter(|l| called(l)).count();
                families += usize::from(false_calls > 0);
                lines += false_calls;
                total += judged.len();
            }
            let fwer = families as f64 / reps as f64;
            let per_line = lines as f64 / total as f64;
            eprintln!(
                "A/A, {runs} runs a side, CV 10 %, 13 lines with Holm: {:.2} % of comparisons and {:.3} % of lines \
                 with a false verdict",
                fwer * 100.0,
                per_line * 100.0
            );
            assert!(fwer <= alpha, "{runs} runs a side: family-wise {fwer}");
            assert!(per_line <= alpha / 13.0, "{runs} runs a side: per line {per_line}");
            // It still says "changed" sometimes: the correction is not a switch that turns verdicts off.
            assert!(fwer >= alpha / 2.0, "{runs} runs a side: family-wise {fwer}");
        }
    }

    #[test]
    fn calibration_a_b_detects_a_shift_at_the_advised_run_count() {
        let (alpha, reps, cv) = (0.05, 2000, 0.05f64);
        let log_sd = (1.0 + cv * cv).ln().sqrt();
        for (shift, seed) in [(0.20, 7), (0.10, 8)] {
            let runs = stats::runs_needed(log_sd, shift, alpha / 13.0, POWER).unwrap();
            let mut r = rng(seed);
            let mut hits = 0;
            for _ in 0..reps {
                let (judged, _) = judge(&family(&mut r, runs, cv, 1.0 + shift), alpha);
                hits += usize::from(judged[0].verdict == "faster");
                // The advice read from the runs themselves asks for about as many.
                assert!(judged[0].advice.as_ref().unwrap().alpha_per_line == alpha / 13.0);
            }
            let power = hits as f64 / reps as f64;
            eprintln!(
                "A/B, +{:.0} % at CV 5 %, {runs} runs a side (the advice), 13 lines with Holm: detected {:.1} %",
                shift * 100.0,
                power * 100.0
            );
            assert!(power >= POWER, "+{shift}: {power} at {runs} runs a side");
            // Nor is it padded wholesale: half as many runs fall well short.
            let half = (runs / 2).max(MIN_RUNS);
            let hits = (0..reps)
                .filter(|_| judge(&family(&mut r, half, cv, 1.0 + shift), alpha).0[0].verdict == "faster")
                .count();
            assert!((hits as f64 / reps as f64) < POWER, "+{shift}: {half} runs a side did as well");
        }
    }

    #[test]
    fn below_the_minimum_the_verdict_is_too_few_runs() {
        let mut r = rng(3);
        // A 50 % drop with 2 runs a side: a ratio and advice, but no verdict, no p, and not in the family.
        let mut values = family(&mut r, 2, 0.05, 0.5);
        let (lines, tested) = judge(&values, 0.05);
        assert_eq!(tested, 0);
        for l in &lines {
            assert_eq!(l.verdict, "too few runs", "{l:?}");
            assert!(l.p.is_none() && l.p_adjusted.is_none() && l.regression_pct.is_none());
            assert!(l.note.as_deref().unwrap().contains("2 run(s) in BASE, 2 in NEW"));
        }
        assert!((lines[0].ratio.unwrap() - 0.5).abs() < 0.15, "{:?}", lines[0].ratio);
        let advice = lines[0].advice.as_ref().unwrap();
        assert!(advice.runs_for_5pct.unwrap() >= advice.runs_for_10pct.unwrap());
        assert!(advice_text(&lines[0], advice).unwrap().contains("too few runs to decide (2 a side)"));
        // Three a side on one line only: that line alone is tested, against a family of one.
        values[0].base.as_mut().unwrap().push(1000.0);
        values[0].new.as_mut().unwrap().push(500.0);
        let (lines, tested) = judge(&values, 0.05);
        assert_eq!(tested, 1);
        assert_eq!(lines[0].p, lines[0].p_adjusted);
        assert_eq!(lines[0].verdict, "slower");
        // One side missing, or without values: no test either.
        values[1].new = None;
        values[2].new = Some(vec![]);
        let (lines, _) = judge(&values, 0.05);
        assert_eq!((lines[1].verdict.as_str(), lines[2].verdict.as_str()), ("only in BASE", "no data in NEW"));
        // compare() says why from the runs; no ratio, so no percentage worse.
        assert_eq!(lines[2].regression_pct, None);
    }

    #[test]
    fn fail_on_needs_a_corrected_regression_beyond_the_threshold() {
        let mut r = rng(11);
        // Peak req/s down 30 % with little noise: a corrected "slower" by about 30 %.
        let (lines, _) = judge(&family(&mut r, 5, 0.02, 0.7), 0.05);
        assert_eq!(lines[0].verdict, "slower");
        let worse = lines[0].regression_pct.unwrap();
        assert!((worse - 30.0).abs() < 5.0, "{worse}");
        let rule = |s: &str| vec![parse_fail_on(s).unwrap()];
        assert_eq!(failures(&lines, &rule("peak_rps:10%")).len(), 1);
        assert!(failures(&lines, &rule(&format!("peak_rps:{}%", worse.ceil()))).is_empty());
        assert!(failures(&lines, &rule("cpu_per_req")).is_empty(), "no verdict on the unchanged lines");
        // The same drop under heavy noise with 3 runs: no corrected verdict, so no failure, whatever the ratio.
        let (lines, _) = judge(&family(&mut r, 3, 0.30, 0.7), 0.05);
        assert_eq!(lines[0].verdict, "within noise", "{:?}", lines[0]);
        assert!(failures(&lines, &rule("all")).is_empty());
        assert!(parse_metrics(&["peak_rps,cpu_per_req".into()]).unwrap().len() == 2);
        assert!(parse_metrics(&["all".into()]).unwrap().is_empty());
        assert!(parse_metrics(&["speed".into()]).is_err());
    }

    fn empty_side() -> Dataset {
        Dataset {
            source: "t.db".into(),
            filter: "all".into(),
            sessions: Vec::new(),
            groups: Vec::new(),
            runs: Vec::new(),
            include_invalid: false,
        }
    }

    #[test]
    fn the_advice_is_sized_for_the_family_the_verdicts_were_corrected_over() {
        let mut r = rng(5);
        // 13 lines; 3 runs a side on the first 9, 2 in BASE on the other 4: those 4 have too few runs.
        let mut values = family(&mut r, 3, 0.05, 1.0);
        for v in values.iter_mut().skip(9) {
            v.base.as_mut().unwrap().pop();
        }
        let (lines, tested) = judge(&values, 0.05);
        assert_eq!(tested, 9);
        assert!(lines.iter().all(|l| l.advice.as_ref().unwrap().alpha_per_line == 0.05 / 9.0));
        let c = Comparison { alpha: 0.05, tested, warnings: vec![], differences: vec![], left_out: vec![], lines };
        let md = markdown(&empty_side(), &empty_side(), &c, None);
        assert!(md.contains("Holm–Bonferroni over the 9 lines tested at family-wise α = 0.05"), "{md}");
        assert!(md.contains("at α = 0.05 / 9 per line, Holm's strictest step over the 9 lines tested"), "{md}");
        // None tested (2 runs a side everywhere): sized for the lines enough runs would test.
        let (lines, tested) = judge(&family(&mut r, 2, 0.05, 1.0), 0.05);
        assert_eq!(tested, 0);
        assert!(lines.iter().all(|l| l.advice.as_ref().unwrap().alpha_per_line == 0.05 / 13.0));
        let c = Comparison { alpha: 0.05, tested, warnings: vec![], differences: vec![], left_out: vec![], lines };
        let md = markdown(&empty_side(), &empty_side(), &c, None);
        assert!(
            md.contains("α = 0.05 / 13 per line, no line could be tested: Holm's strictest step over the 13 lines with values on both sides"),
            "{md}"
        );
    }

    #[test]
    fn a_threshold_that_is_not_a_number_is_refused() {
        let err = |s: &str| parse_fail_on(s).unwrap_err().to_string();
        // Not a finite number: one line saying so (not "must be 0 % or more").
        for s in ["peak_rps:inf%", "peak_rps:1e400%", "cpu_per_req:nan%", "all:-inf%"] {
            assert!(err(s).contains("must be a finite percentage"), "{s}: {}", err(s));
        }
        assert!(err("peak_rps:-5%").contains("must be 0 % or more"));
        assert_eq!(parse_fail_on("peak_rps:99.5%").unwrap().threshold_pct, 99.5);
        // Lower is better: NEW can be 3 times BASE, 200 % worse; higher is better: 100 % or more gates only a
        // service that failed in NEW.
        assert_eq!(parse_fail_on("cpu_per_req:150%").unwrap().threshold_pct, 150.0);
        assert_eq!(parse_fail_on("peak_rps:100%").unwrap().threshold_pct, 100.0);
    }
}

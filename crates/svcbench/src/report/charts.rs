//! Chart specifications: what each chart shows, as plain data (axes, one series per run, points with the
//! step and any saturation flag). assets/report.js turns them into Apache ECharts options; no plotting
//! math happens here beyond choosing the load axis and accumulating the "bang for the buck" curve.
use super::data::{Dataset, Run, StepRow};
use super::seconds;
use loadgen::knee::Slice;
use loadgen::{LoadAxis as Measure, LoadModel};
use serde::Serialize;

/// Tableau 10: distinct hues that stay apart for common colour-vision deficiencies.
pub const PALETTE: [&str; 10] =
    ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];

pub fn color(group: usize) -> String {
    PALETTE[group % PALETTE.len()].to_string()
}

/// A group's colour. Where several services share the charts, a service's variants are one colour family
/// (the base in its hue, the variants lighter shades of it); a round of one service's variants gives every
/// variant its own hue.
pub fn group_color(d: &Dataset, g: usize) -> String {
    let mut bases: Vec<&str> = Vec::new();
    for grp in &d.groups {
        if !bases.contains(&grp.service.base_name.as_str()) {
            bases.push(&grp.service.base_name);
        }
    }
    let base = d.groups[g].service.base_name.as_str();
    let family: Vec<usize> = (0..d.groups.len()).filter(|&i| d.groups[i].service.base_name == base).collect();
    if bases.len() <= 1 || family.len() <= 1 {
        return color(g);
    }
    let hue = PALETTE[bases.iter().position(|b| *b == base).unwrap_or(0) % PALETTE.len()];
    let k = family.iter().position(|&i| i == g).unwrap_or(0);
    lighten(hue, 0.65 * k as f64 / family.len() as f64)
}

/// `#rrggbb` mixed with white by `t` (0: the colour, 1: white).
fn lighten(hex: &str, t: f64) -> String {
    let c = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).unwrap_or(0) as f64;
    let mix = |v: f64| (v + (255.0 - v) * t).round() as u8;
    format!("#{:02x}{:02x}{:02x}", mix(c(1)), mix(c(3)), mix(c(5)))
}

#[derive(Debug, Clone, Serialize)]
pub struct Chart {
    pub id: String,
    pub title: String,
    /// One sentence under the title: what is plotted and how to read it.
    pub note: String,
    /// "line" or "bar".
    pub kind: &'static str,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Axis {
    pub name: String,
    /// "log2" (connections), "log" (latency, base 10), "linear", or "category" (x is an index into `categories`).
    pub scale: &'static str,
    pub unit: String,
    pub categories: Vec<String>,
}

impl Axis {
    pub(super) fn new(name: &str, scale: &'static str, unit: &str) -> Axis {
        Axis { name: name.into(), scale, unit: unit.into(), categories: Vec::new() }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Series {
    /// The service (legend entry and colour); every run of it shares both.
    pub group: String,
    pub run: String,
    pub color: String,
    pub points: Vec<Point>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub step: String,
    /// Why this point deserves a marker: the load generator or the dependencies were saturated, or the
    /// service was OOM-killed or crashed in this step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flag: Option<String>,
}

fn flag(s: &StepRow) -> Option<String> {
    let v = s.validity();
    (!v.valid()).then(|| v.summary())
}

/// The x axis of step charts for the steps counted in one measure (connections or offered rate).
enum LoadAxis {
    /// Each run's load strictly increases (and, for a rate, varies): the model's own axis (log2 for
    /// connections, linear for a rate).
    Load(Measure),
    /// The steps differ by the upstream's delay (seed 004's slow dependency).
    UpstreamDelay,
    /// Repeated levels (warm-up steps at 1 connection, three "attempts"): one position per step,
    /// labelled by its load, so every step stays visible.
    Steps(Vec<(i64, String)>),
}

impl LoadAxis {
    fn choose(runs: &[(&Run, Vec<&StepRow>)], measure: Measure) -> LoadAxis {
        let strictly_increasing = |f: &dyn Fn(&StepRow) -> Option<f64>| {
            runs.iter().all(|(_, steps)| {
                let xs: Vec<Option<f64>> = steps.iter().map(|s| f(s)).collect();
                xs.iter().all(|x| x.is_some()) && xs.windows(2).all(|w| w[0] < w[1])
            })
        };
        let varies = |f: &dyn Fn(&StepRow) -> Option<f64>| {
            let mut v: Vec<f64> = runs.iter().flat_map(|(_, s)| s.iter().filter_map(|s| f(s))).collect();
            v.sort_by(|a, b| a.total_cmp(b));
            v.dedup();
            v.len() > 1
        };
        let load = |s: &StepRow| s.load().map(|m| m.load());
        let delay = |s: &StepRow| s.upstream_delay_ms.map(|d| d as f64);
        // A single rate is no axis (nothing to compare); a single connection count still is.
        let enough = measure == Measure::Connections || varies(&load);
        if enough && strictly_increasing(&load) {
            return LoadAxis::Load(measure);
        }
        if varies(&delay) && strictly_increasing(&delay) {
            return LoadAxis::UpstreamDelay;
        }
        let mut cats: Vec<(i64, String)> = Vec::new();
        for (_, steps) in runs {
            for s in steps {
                if !cats.iter().any(|(seq, _)| *seq == s.seq) {
                    let load = s.load().map_or_else(|| s.label.clone(), |m| m.load_text());
                    cats.push((s.seq, load));
                }
            }
        }
        cats.sort_by_key(|(seq, _)| *seq);
        LoadAxis::Steps(cats)
    }

    fn axis(&self, measure: Measure) -> Axis {
        match self {
            LoadAxis::Load(m) => Axis::new(m.name(), m.scale(), m.unit()),
            LoadAxis::UpstreamDelay => Axis::new("upstream delay", "linear", "ms"),
            LoadAxis::Steps(cats) => Axis {
                name: format!("step ({})", measure.name()),
                scale: "category",
                unit: String::new(),
                categories: cats.iter().map(|(_, l)| l.clone()).collect(),
            },
        }
    }

    fn x(&self, s: &StepRow) -> Option<f64> {
        match self {
            LoadAxis::Load(_) => s.load().map(|m| m.load()),
            LoadAxis::UpstreamDelay => s.upstream_delay_ms.map(|d| d as f64),
            LoadAxis::Steps(cats) => cats.iter().position(|(seq, _)| *seq == s.seq).map(|i| i as f64),
        }
    }
}

/// A step metric drawn against the load axis.
struct StepMetric {
    id: &'static str,
    title: &'static str,
    note: &'static str,
    unit: &'static str,
    scale: YScale,
    value: fn(&StepRow) -> Option<f64>,
}

/// How a step metric's y axis is scaled.
#[derive(Clone, Copy, PartialEq)]
enum YScale {
    Linear,
    Log,
    /// Log where the plotted values span tenfold or more: a Go or Rust service's CPU per request or memory
    /// beside a JVM's is otherwise a line on the zero.
    LogWhenWide,
}

/// Whether the positive values of the series span tenfold or more.
fn spans_tenfold(series: &[Series]) -> bool {
    let ys = || series.iter().flat_map(|s| s.points.iter().map(|p| p.y)).filter(|y| *y > 0.0);
    let (min, max) = (ys().fold(f64::INFINITY, f64::min), ys().fold(0.0, f64::max));
    min.is_finite() && max >= 10.0 * min
}

const CLOSED_METRICS: &[StepMetric] = &[
    StepMetric {
        id: "errors",
        title: "Error ratio",
        note: "Failed requests (connect, timeout, read, 4xx/5xx, malformed) as a share of all.",
        unit: "%",
        scale: YScale::Linear,
        value: |s| Some(s.error_ratio * 100.0),
    },
    StepMetric {
        id: "rps",
        title: "Successful requests per second",
        note: "The high-water mark of each service as connections grow.",
        unit: "req/s",
        scale: YScale::Linear,
        value: |s| Some(s.success_rps),
    },
    StepMetric {
        id: "p50",
        title: "Latency p50",
        note: "Median latency of the step's requests (log scale).",
        unit: "ms",
        scale: YScale::Log,
        value: |s| s.p50,
    },
    StepMetric {
        id: "p90",
        title: "Latency p90",
        note: "90th percentile latency (log scale).",
        unit: "ms",
        scale: YScale::Log,
        value: |s| s.p90,
    },
    StepMetric {
        id: "p99",
        title: "Latency p99",
        note: "99th percentile latency (log scale); the noisiest of the three.",
        unit: "ms",
        scale: YScale::Log,
        value: |s| s.p99,
    },
    StepMetric {
        id: "mem",
        title: "Peak memory",
        note: "High-water mark of the service's cgroup memory from its start to the end of each step.",
        unit: "MiB",
        scale: YScale::LogWhenWide,
        value: |s| s.mem_peak_mib,
    },
    StepMetric {
        id: "mem-per-rps",
        title: "Peak memory per successful request/s",
        note: "Peak memory divided by successful requests/s (MiB·s per request); lower is leaner.",
        unit: "MiB·s",
        scale: YScale::LogWhenWide,
        value: |s| s.mem_mib_s_per_req,
    },
    StepMetric {
        id: "cpu",
        title: "CPU time per step",
        note: "CPU-seconds the service used during each step (the quota caps it at CPUs × duration).",
        unit: "s",
        scale: YScale::Linear,
        value: |s| s.cpu_s,
    },
    StepMetric {
        id: "cpu-per-req",
        title: "CPU time per successful request",
        note: "CPU efficiency: CPU time of the step divided by its successful requests.",
        unit: "ms",
        scale: YScale::LogWhenWide,
        value: |s| s.cpu_ms_per_req,
    },
];

const OPEN_METRICS: &[StepMetric] = &[
    StepMetric {
        id: "open-success",
        title: "Success ratio vs offered rate",
        note: "Share of the intended requests that succeeded (unsent ones count as failed).",
        unit: "%",
        scale: YScale::Linear,
        value: |s| Some(s.success_ratio() * 100.0),
    },
    StepMetric {
        id: "open-rps",
        title: "Successful requests per second vs offered rate",
        note: "Achieved throughput; it follows the offered rate while the service keeps up.",
        unit: "req/s",
        scale: YScale::Linear,
        value: |s| Some(s.success_rps),
    },
    StepMetric {
        id: "open-p50",
        title: "Latency p50 vs offered rate",
        note: "Measured from each request's intended send time, so queueing counts (log scale).",
        unit: "ms",
        scale: YScale::Log,
        value: |s| s.p50,
    },
    StepMetric {
        id: "open-p90",
        title: "Latency p90 vs offered rate",
        note: "90th percentile from the intended send time (log scale).",
        unit: "ms",
        scale: YScale::Log,
        value: |s| s.p90,
    },
    StepMetric {
        id: "open-p99",
        title: "Latency p99 vs offered rate",
        note: "99th percentile from the intended send time (log scale).",
        unit: "ms",
        scale: YScale::Log,
        value: |s| s.p99,
    },
    StepMetric {
        id: "open-mem",
        title: "Peak memory vs offered rate",
        note: "High-water mark of the service's cgroup memory up to the end of each step.",
        unit: "MiB",
        scale: YScale::LogWhenWide,
        value: |s| s.mem_peak_mib,
    },
    StepMetric {
        id: "open-cpu",
        title: "CPU time per step vs offered rate",
        note: "CPU-seconds the service used during each step.",
        unit: "s",
        scale: YScale::Linear,
        value: |s| s.cpu_s,
    },
    StepMetric {
        id: "open-cpu-per-req",
        title: "CPU time per successful request vs offered rate",
        note: "CPU time of the step divided by its successful requests.",
        unit: "ms",
        scale: YScale::LogWhenWide,
        value: |s| s.cpu_ms_per_req,
    },
];

/// Every chart of the report, in reading order.
pub fn charts(d: &Dataset) -> Vec<Chart> {
    let mut out = vec![startup_chart(d)];
    out.extend(errors_chart(d));
    for (measure, metrics) in [(Measure::Connections, CLOSED_METRICS), (Measure::OfferedRate, OPEN_METRICS)] {
        let runs: Vec<(&Run, Vec<&StepRow>)> = d
            .groups
            .iter()
            .enumerate()
            .flat_map(|(g, _)| d.group_runs(g))
            .map(|r| (r, r.steps.iter().filter(|s| s.load().map(|m| m.axis()) == Some(measure)).collect::<Vec<_>>()))
            .collect();
        if runs.iter().all(|(_, s)| s.is_empty()) {
            continue;
        }
        let axis = LoadAxis::choose(&runs, measure);
        for m in metrics {
            let series = runs
                .iter()
                // A run without steps of this model (another session's profile) has no line here.
                .filter(|(_, steps)| !steps.is_empty())
                .map(|(run, steps)| Series {
                    group: d.groups[run.group].name.clone(),
                    run: run.label.clone(),
                    color: group_color(d, run.group),
                    points: steps
                        .iter()
                        .filter_map(|s| {
                            let (x, y) = (axis.x(s)?, (m.value)(s)?);
                            y.is_finite().then(|| Point { x, y, step: s.label.clone(), flag: flag(s) })
                        })
                        .collect(),
                })
                .collect();
            out.push(step_chart(m, axis.axis(measure), series));
        }
    }
    out.extend(per_second_charts(d));
    out.push(bang_for_the_buck(d));
    out
}

/// A step metric's chart, on the y scale its values call for.
fn step_chart(m: &StepMetric, x: Axis, mut series: Vec<Series>) -> Chart {
    let wide = m.scale == YScale::LogWhenWide && spans_tenfold(&series);
    let log = m.scale == YScale::Log || wide;
    if log {
        // A log axis has no place for zero (e.g. no latency recorded).
        series.iter_mut().for_each(|s| s.points.retain(|p| p.y > 0.0));
    }
    let note = if wide { format!("{} Log scale: the values span tenfold or more.", m.note) } else { m.note.into() };
    Chart {
        id: m.id.into(),
        title: m.title.into(),
        note,
        kind: "line",
        x,
        y: Axis::new(m.unit, if log { "log" } else { "linear" }, m.unit),
        series,
    }
}

/// A figure of one second of a step read second by second.
struct SecondMetric {
    id: &'static str,
    title: &'static str,
    note: &'static str,
    unit: &'static str,
    log: bool,
    value: fn(&Slice) -> Option<f64>,
}

const SECOND_METRICS: &[SecondMetric] = &[
    SecondMetric {
        id: "ramp-success",
        title: "Success per second vs offered rate (ramp steps)",
        note: "Each second of a step whose rate rises within it: its successful answers as a share of its answers, \
               against the rate offered in that second (0 when nothing was answered). The knee (summary) is the rate of the last \
               second before the first one below 99 % or with its p99 over the limit.",
        unit: "%",
        log: false,
        value: |s| Some(s.success * 100.0),
    },
    SecondMetric {
        id: "ramp-p99",
        title: "p99 latency per second vs offered rate (ramp steps)",
        note: "Each second of a step whose rate rises within it: the p99 of the successful answers in that second \
               (latency from the intended send time), against the rate offered in it.",
        unit: "ms",
        log: true,
        value: |s| Some(s.p99_ms).filter(|p| *p > 0.0),
    },
];

/// Steps whose model reads them second by second (a ramp): one line per run and step, a point per second.
fn per_second_charts(d: &Dataset) -> Vec<Chart> {
    let lines: Vec<(&Run, &StepRow, Vec<Slice>)> = all_runs(d)
        .into_iter()
        .flat_map(|r| r.steps.iter().filter_map(move |s| Some((r, s, seconds::slices(s)?))))
        .collect();
    if lines.is_empty() {
        return Vec::new();
    }
    SECOND_METRICS
        .iter()
        .map(|m| Chart {
            id: m.id.into(),
            title: m.title.into(),
            note: m.note.into(),
            kind: "line",
            x: Axis::new(Measure::OfferedRate.name(), Measure::OfferedRate.scale(), Measure::OfferedRate.unit()),
            y: Axis::new(m.unit, if m.log { "log" } else { "linear" }, m.unit),
            series: lines
                .iter()
                .map(|(run, step, slices)| Series {
                    group: d.groups[run.group].name.clone(),
                    run: format!("{} #{} {}", run.label, step.seq, step.label),
                    color: group_color(d, run.group),
                    points: slices
                        .iter()
                        .filter_map(|sl| {
                            let y = (m.value)(sl)?;
                            Some(Point {
                                x: sl.offered,
                                y,
                                step: format!("{}, second {}", step.label, sl.second + 1),
                                flag: flag(step),
                            })
                        })
                        .collect(),
                })
                .collect(),
        })
        .collect()
}

fn all_runs(d: &Dataset) -> Vec<&Run> {
    (0..d.groups.len()).flat_map(|g| d.group_runs(g)).collect()
}

fn startup_chart(d: &Dataset) -> Chart {
    let runs = all_runs(d);
    let mut x = Axis::new("run", "category", "");
    x.categories = runs.iter().map(|r| r.label.clone()).collect();
    Chart {
        id: "startup".into(),
        title: "Startup time per run".into(),
        note: "From spawning the service to its first HTTP answer on the readiness path.".into(),
        kind: "bar",
        x,
        y: Axis::new("ms", "linear", "ms"),
        series: runs
            .iter()
            .enumerate()
            .map(|(i, r)| Series {
                group: d.groups[r.group].name.clone(),
                run: r.label.clone(),
                color: group_color(d, r.group),
                points: r
                    .startup_ms
                    .map(|ms| Point { x: i as f64, y: ms, step: "startup".into(), flag: None })
                    .into_iter()
                    .collect(),
            })
            .collect(),
    }
}

/// Failed requests by kind (refused, reset, closed early, timeout, malformed, status, the generator's own
/// client resources, ...): per service, the median over its runs of each run's count over all its steps.
/// Only kinds that occurred get a bar; no chart when nothing failed.
fn errors_chart(d: &Dataset) -> Option<Chart> {
    let mut kinds: Vec<&'static str> = Vec::new();
    for s in d.runs.iter().flat_map(|r| &r.steps) {
        for (k, n) in s.errors_by_kind() {
            if n > 0 && !kinds.contains(&k) {
                kinds.push(k);
            }
        }
    }
    if kinds.is_empty() {
        return None;
    }
    let mut x = Axis::new("kind", "category", "");
    x.categories = kinds.iter().map(|k| k.to_string()).collect();
    let series = (0..d.groups.len())
        .map(|g| {
            let points = kinds
                .iter()
                .enumerate()
                .filter_map(|(i, k)| {
                    let per_run = d.group_runs(g).map(|r| {
                        r.steps
                            .iter()
                            .flat_map(|s| s.errors_by_kind())
                            .filter(|(x, _)| x == k)
                            .map(|(_, n)| n)
                            .sum::<i64>() as f64
                    });
                    let y = crate::figures::median(per_run)?;
                    Some(Point { x: i as f64, y, step: k.to_string(), flag: None })
                })
                .collect();
            Series { group: d.groups[g].name.clone(), run: d.groups[g].name.clone(), color: group_color(d, g), points }
        })
        .collect();
    Some(Chart {
        id: "errors-by-kind".into(),
        title: "Failed requests by kind".into(),
        note: "Median per run over all its steps. Client resources (the generator out of sockets or files) are the \
               generator's failure; the Validity section has them per step."
            .into(),
        kind: "bar",
        x,
        y: Axis::new("requests", "linear", ""),
        series,
    })
}

/// Seed 000's favourite: cumulative successful requests over cumulative CPU seconds. The line starts at
/// the CPU the service spent before and between steps (startup, idle settling, checks), so its last point
/// is (total CPU, total requests) and the slope from the origin is the whole-run CPU time per request.
fn bang_for_the_buck(d: &Dataset) -> Chart {
    let series = all_runs(d)
        .into_iter()
        .map(|r| {
            let steps_cpu: f64 = r.steps.iter().filter_map(|s| s.cpu_s).sum();
            let mut cpu = r.total_cpu_s.map(|t| (t - steps_cpu).max(0.0)).unwrap_or(0.0);
            let mut ok = 0.0;
            let mut points = vec![Point {
                x: cpu,
                y: 0.0,
                step: "before the first step (startup, idle, checks)".into(),
                flag: None,
            }];
            for s in &r.steps {
                cpu += s.cpu_s.unwrap_or(0.0);
                ok += s.requests_ok as f64;
                points.push(Point { x: cpu, y: ok, step: s.label.clone(), flag: flag(s) });
            }
            Series {
                group: d.groups[r.group].name.clone(),
                run: r.label.clone(),
                color: group_color(d, r.group),
                points,
            }
        })
        .collect();
    Chart {
        id: "bang".into(),
        title: "Bang for the buck".into(),
        note: "Running total of successful requests over the running total of CPU time; the slope is CPU efficiency."
            .into(),
        kind: "line",
        x: Axis::new("cumulative CPU time", "linear", "s"),
        y: Axis::new("cumulative successful requests", "linear", "requests"),
        series,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn variants_are_lighter_shades_of_their_base() {
        assert_eq!(super::lighten("#4e79a7", 0.0), "#4e79a7");
        assert_eq!(super::lighten("#000000", 0.5), "#808080");
        assert_eq!(super::lighten("#4e79a7", 1.0), "#ffffff");
    }
}

//! The report's duets (`svcbench duet`): per duet its verdict table (B/A per step and metric, the interval
//! over pairs, the verdict) and, per step, a chart of CPU per request B/A slice by slice over the duet's time,
//! one line per pair, with the answer and its interval across it. The figures are the ones the duet stored;
//! nothing is recomputed here but each valid slice's own ratio.
use super::charts::{color, Axis, Chart, Point, Series};
use super::filter::Filter;
use super::table::{Cell, Row, Table};
use crate::store::{DuetMetric as Metric, DuetMode, DuetVerdict, Reader, StoredDuet};
use anyhow::Result;

pub struct DuetSection {
    pub title: String,
    /// What was measured, how, and how long it took.
    pub about: String,
    pub table: Table,
    pub charts: Vec<Chart>,
}

/// The store's duets that the filter's label and service terms select, oldest first.
pub fn sections(store: &Reader, filter: &Filter) -> Result<Vec<DuetSection>> {
    Ok(store.duets()?.iter().filter(|d| filter.duet_matches(d)).map(section).collect())
}

fn metric_of(key: &str) -> Option<Metric> {
    Metric::ALL.into_iter().find(|m| m.key() == key)
}

/// A stored verdict in words; a key this svcbench does not know, as it is.
fn verdict_text(key: &str) -> String {
    DuetVerdict::of_key(key).map_or_else(|| key.to_string(), |v| v.text().to_string())
}

fn section(d: &StoredDuet) -> DuetSection {
    let [a, b] = &d.services;
    let mode = d.mode.describe();
    let limits = [
        d.limit_cpus.map(|c| format!("--cpus {c}")),
        d.limit_memory_mib.map(|m| format!("--memory {m:.0}M")),
        d.service_cpuset.as_ref().map(|c| format!("CPUs {c}")),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(", ");
    let invalid = d.slices.iter().filter(|s| s.invalid.is_some()).count();
    let about = format!(
        "B = {b}, A = {a}, {mode}, each {limits}; {} of {} pairs, {} slices ({invalid} not valid); profile {}; \
         {}; machine time {}; started {}.",
        d.pairs_done,
        d.pairs_asked,
        d.slices.len(),
        d.profile,
        d.status,
        d.machine_s.map_or("–".into(), |s| format!("{s:.0} s")),
        d.started_at
    );
    let mut table = Table {
        id: format!("duet-{}", d.id),
        caption: format!("Duet {}: B/A per step and metric", d.id),
        note: "A and B: each side's median over the step's valid slices, for scale. B/A: the mean over pairs of each \
               pair's median slice ratio, B's figure over A's in the same second (not B's median over A's, which \
               machine noise moves); its 95 % interval from the pairs (Student's t); verdicts Holm-corrected over the duet's lines; pairs ranged: the lowest and highest \
               pair's own ratio (docs/duet.md)."
            .into(),
        head: ["step", "metric", "A", "B", "B/A", "95 % interval", "verdict", "pairs", "slices", "pairs ranged"]
            .map(String::from)
            .to_vec(),
        rows: Vec::new(),
    };
    for l in &d.lines {
        let metric = metric_of(&l.metric);
        let name = metric.map_or(l.metric.clone(), |m| m.name().to_string());
        let valid = d.slices.iter().filter(|s| s.step == l.step && s.invalid.is_none());
        let medians = metric.and_then(|m| m.side_medians(valid.map(|s| (&s.a, &s.b, s.seconds))));
        let mut cells = vec![
            Cell::text(&l.step_label),
            Cell::text(name),
            measured(medians.map(|m| m[0])),
            measured(medians.map(|m| m[1])),
        ];
        cells.extend(match &l.result {
            Some(r) => vec![
                Cell { text: format!("{:.3}", r.ratio), class: "num", ..Cell::default() },
                Cell { text: format!("{:.3}–{:.3}", r.ci[0], r.ci[1]), class: "num", ..Cell::default() },
                verdict_cell(&l.verdict),
                Cell::num(Some(r.pairs as f64)),
                Cell::num(Some(r.slices as f64)),
                Cell { text: format!("{:.3}–{:.3}", r.pair_min, r.pair_max), class: "num", ..Cell::default() },
            ],
            None => vec![
                Cell::num(None),
                Cell::num(None),
                verdict_cell(&l.verdict),
                Cell::num(None),
                Cell::num(None),
                Cell::num(None),
            ],
        });
        table.rows.push(Row { cells, data: Vec::new() });
    }
    let steps: std::collections::BTreeSet<u32> = d.slices.iter().map(|s| s.step).collect();
    let charts = steps.into_iter().filter_map(|step| cpu_chart(d, step)).collect();
    DuetSection { title: format!("Duet {}: {b} against {a}", d.id), about, table, charts }
}

/// A measured figure, in the report's precision even where it happens to be whole.
fn measured(x: Option<f64>) -> Cell {
    Cell { text: x.map_or("–".into(), super::table::num_fractional), class: "num", ..Cell::default() }
}

fn verdict_cell(key: &str) -> Cell {
    let class = match key {
        "faster" => "ok",
        "slower" => "fail",
        _ => "",
    };
    Cell { text: verdict_text(key), class, ..Cell::default() }
}

/// Up to this many pairs, each pair has its own legend entry in a duet's chart.
const MAX_PAIR_LEGENDS: u32 = 12;

/// CPU per request B/A of every valid slice of a step, in the order they were measured (x: the slice's
/// place in the duet), one series per pair; the duet's answer and its interval as flat lines across.
fn cpu_chart(d: &StoredDuet, step: u32) -> Option<Chart> {
    let metric = Metric::CpuUsPerReq;
    let label = d.slices.iter().find(|s| s.step == step).map(|s| s.step_label.clone()).unwrap_or_default();
    let mut series: Vec<Series> = Vec::new();
    let mut x = 0.0;
    for pair in 0..d.pairs_done {
        let mut points = Vec::new();
        for s in d.slices.iter().filter(|s| s.pair == pair && s.step == step) {
            x += 1.0;
            if let (None, Some(y)) = (&s.invalid, metric.ratio(&s.a, &s.b, s.seconds)) {
                points.push(Point { x, y, step: label.clone(), flag: None });
            }
        }
        if !points.is_empty() {
            let first = d.slices.iter().find(|s| s.pair == pair).is_some_and(|s| s.a_first);
            let order = if d.mode == DuetMode::Alternating {
                ""
            } else if first {
                ", A first"
            } else {
                ", B first"
            };
            // Many short pairs (150 of 2 s decide a 5 % difference here) would make a legend of 150 entries:
            // past a dozen, the pairs share two, by which side started first.
            let (group, colour) = if d.pairs_done > MAX_PAIR_LEGENDS {
                (format!("pairs{order}"), color(usize::from(!first)))
            } else {
                (format!("pair {}{order}", pair + 1), color(pair as usize))
            };
            series.push(Series { group, run: format!("pair {}", pair + 1), color: colour, points });
        }
    }
    if series.is_empty() {
        return None;
    }
    let line = d.lines.iter().find(|l| l.step == step && l.metric == metric.key());
    if let Some(r) = line.and_then(|l| l.result.as_ref()) {
        let flat = |y: f64| {
            vec![Point { x: 1.0, y, step: label.clone(), flag: None }, Point { x, y, step: label.clone(), flag: None }]
        };
        series.push(Series {
            group: "B/A over pairs".into(),
            run: "B/A".into(),
            color: "#1f2328".into(),
            points: flat(r.ratio),
        });
        for (name, y) in [("95 % low", r.ci[0]), ("95 % high", r.ci[1])] {
            series.push(Series {
                group: "95 % interval".into(),
                run: name.into(),
                color: "#8c959f".into(),
                points: flat(y),
            });
        }
    }
    Some(Chart {
        id: format!("duet-{}-step{step}-cpu", d.id),
        title: format!("Duet {}, step {label}: CPU per request, B/A slice by slice", d.id),
        note: "Each point one valid slice (B's figure over A's in the same second, or the same round of turns); \
               one line per fresh pair of instances; the flat lines are the duet's answer and its 95 % interval."
            .into(),
        kind: "line",
        x: Axis::new("slice", "linear", "slices"),
        y: Axis::new("B/A", "linear", "× A"),
        series,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::duet::fixture;
    use crate::store::{DuetInterval, DuetLineRow, Store};

    /// A stored side-by-side duet of `pairs` pairs of two valid slices each, read back.
    fn stored(pairs: u32) -> StoredDuet {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.db");
        let s = Store::open(&path).unwrap();
        let id = s.create_duet(&fixture::record(pairs, DuetMode::SideBySide)).unwrap();
        let side = |cpu_s: f64| fixture::side(1500, 0, cpu_s);
        let labels = ["r=1500".to_string()];
        for pair in 0..pairs {
            let slice = |second: u32| fixture::slice(pair, pair % 2 == 0, second, [side(0.15), side(0.16)]);
            s.add_duet_pair(id, &labels, &[slice(0), slice(1)]).unwrap();
        }
        let result = Some(DuetInterval {
            ratio: 1.07,
            ci: [1.05, 1.09],
            p: 0.001,
            pairs: pairs as usize,
            slices: 2 * pairs as usize,
            pair_min: 1.07,
            pair_max: 1.07,
        });
        let line = DuetLineRow { step: 0, step_label: "r=1500", metric: "cpu_us_per_req", result, verdict: "slower" };
        s.end_duet(id, "done", 10.0, None, &[line]).unwrap();
        drop(s);
        Reader::open(&path).unwrap().duets().unwrap().remove(0)
    }

    fn legend(chart: &Chart) -> Vec<String> {
        let mut groups: Vec<String> = chart.series.iter().map(|s| s.group.clone()).collect();
        groups.dedup();
        groups
    }

    #[test]
    fn a_few_pairs_have_a_legend_entry_each_and_many_share_two_by_start_order() {
        let few = cpu_chart(&stored(4), 0).expect("a chart of valid slices");
        assert_eq!(
            legend(&few),
            [
                "pair 1, A first",
                "pair 2, B first",
                "pair 3, A first",
                "pair 4, B first",
                "B/A over pairs",
                "95 % interval"
            ]
        );
        let many = cpu_chart(&stored(150), 0).expect("a chart of valid slices");
        assert_eq!(many.series.len(), 150 + 3, "still one line per pair, and the answer's three");
        let mut groups = legend(&many);
        groups.sort();
        groups.dedup();
        assert_eq!(groups, ["95 % interval", "B/A over pairs", "pairs, A first", "pairs, B first"]);
    }
}

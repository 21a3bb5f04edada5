//! A duet's rows: the duet, its slices as each pair ends, its verdict lines at the end (duet.sql); and the
//! same rows read back (`Reader::duets`).
use super::{now, Reader, Store};
use anyhow::Result;
use rusqlite::{params, Row};
use serde::{Deserialize, Serialize};

/// What a duet was asked to do, written when it starts.
pub struct DuetRecord<'a> {
    pub label: Option<&'a str>,
    pub command: &'a str,
    pub scenario: &'a str,
    pub profile: &'a str,
    pub services: [&'a str; 2],
    pub limit_cpus: Option<f64>,
    pub limit_memory_mib: Option<f64>,
    pub service_cpuset: Option<&'a str>,
    pub loadgen_cpuset: &'a str,
    pub cgroup_version: &'a str,
    pub pairs_asked: u32,
    pub precision: Option<f64>,
    pub mode: DuetMode,
}

/// How a duet drives its two sides, and its key in `duet.mode` (NULL in a duet before version 13: side by side).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DuetMode {
    /// Both at the same moment, each at its share of the service CPUs (duet/pair.rs).
    SideBySide,
    /// In turns, 1 s slots in a drawn order per round (duet/alternate.rs).
    Alternating,
}

impl DuetMode {
    pub fn key(self) -> &'static str {
        match self {
            DuetMode::SideBySide => "side_by_side",
            DuetMode::Alternating => "alternating",
        }
    }

    /// The mode in words, for progress lines and the report.
    pub fn describe(self) -> &'static str {
        match self {
            DuetMode::SideBySide => "side by side",
            DuetMode::Alternating => "in turns (1 s slots in random order)",
        }
    }

    /// The mode of a stored key; NULL (or an unknown key) is side by side, the only mode before version 13.
    pub fn of_key(key: Option<&str>) -> DuetMode {
        if key == Some(DuetMode::Alternating.key()) {
            DuetMode::Alternating
        } else {
            DuetMode::SideBySide
        }
    }
}

/// What a line of a duet says about B against A, and its key in `duet_line.verdict`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DuetVerdict {
    /// B is better than A beyond noise (more req/s, less CPU per request, lower latency).
    Faster,
    Slower,
    NoSignificantDifference,
    TooFewPairs,
    NoSpread,
}

impl DuetVerdict {
    const ALL: [DuetVerdict; 5] = [
        DuetVerdict::Faster,
        DuetVerdict::Slower,
        DuetVerdict::NoSignificantDifference,
        DuetVerdict::TooFewPairs,
        DuetVerdict::NoSpread,
    ];

    pub fn key(self) -> &'static str {
        match self {
            DuetVerdict::Faster => "faster",
            DuetVerdict::Slower => "slower",
            DuetVerdict::NoSignificantDifference => "no_significant_difference",
            DuetVerdict::TooFewPairs => "too_few_pairs",
            DuetVerdict::NoSpread => "no_spread",
        }
    }

    pub fn text(self) -> &'static str {
        match self {
            DuetVerdict::Faster => "faster",
            DuetVerdict::Slower => "slower",
            DuetVerdict::NoSignificantDifference => "no significant difference",
            DuetVerdict::TooFewPairs => "too few pairs",
            DuetVerdict::NoSpread => "no spread",
        }
    }

    /// The verdict of a stored key (None: a key this svcbench does not know).
    pub fn of_key(key: &str) -> Option<DuetVerdict> {
        DuetVerdict::ALL.into_iter().find(|v| v.key() == key)
    }
}

/// One side's figures in one slice (the duet's own type too: duet/slices.rs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct DuetSideRow {
    /// Successful answers completed in the slice.
    pub ok: u64,
    pub errors: u64,
    /// CPU seconds of the side's cgroup in the slice.
    pub cpu_s: f64,
    /// Seconds the side's cgroup was throttled at its quota in the slice.
    pub throttled_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
}

/// The figures a duet compares (duet/slices.rs calls it `Metric`), and their keys in `duet_line.metric`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DuetMetric {
    OkRps,
    CpuUsPerReq,
    P50Ms,
    P99Ms,
}

impl DuetMetric {
    pub const ALL: [DuetMetric; 4] = [DuetMetric::OkRps, DuetMetric::CpuUsPerReq, DuetMetric::P50Ms, DuetMetric::P99Ms];

    pub fn name(self) -> &'static str {
        match self {
            DuetMetric::OkRps => "ok req/s",
            DuetMetric::CpuUsPerReq => "CPU µs/req",
            DuetMetric::P50Ms => "p50 ms",
            DuetMetric::P99Ms => "p99 ms",
        }
    }

    /// The metric's key in `duet_line.metric`.
    pub fn key(self) -> &'static str {
        match self {
            DuetMetric::OkRps => "ok_rps",
            DuetMetric::CpuUsPerReq => "cpu_us_per_req",
            DuetMetric::P50Ms => "p50_ms",
            DuetMetric::P99Ms => "p99_ms",
        }
    }

    pub fn higher_is_better(self) -> bool {
        self == DuetMetric::OkRps
    }

    /// The side's figure in a slice; None where it has none (no answer, no latency recorded).
    pub fn of(self, side: &DuetSideRow, seconds: f64) -> Option<f64> {
        let v = match self {
            DuetMetric::OkRps => side.ok as f64 / seconds,
            DuetMetric::CpuUsPerReq => side.cpu_s * 1e6 / side.ok as f64,
            DuetMetric::P50Ms => side.p50_ms,
            DuetMetric::P99Ms => side.p99_ms,
        };
        (v.is_finite() && v > 0.0).then_some(v)
    }

    /// B's figure over A's in one slice, None when either side has none.
    pub fn ratio(self, a: &DuetSideRow, b: &DuetSideRow, seconds: f64) -> Option<f64> {
        Some(self.of(b, seconds)? / self.of(a, seconds)?)
    }

    /// A's and B's median figure over the slices given (the valid ones of a step), from the slices where both
    /// have one; None when there are none. Printed beside B/A so that a ratio comes with what it relates; B/A
    /// itself is not their quotient but the mean over pairs (duet/verdict.rs).
    pub fn side_medians<'a>(
        self,
        slices: impl Iterator<Item = (&'a DuetSideRow, &'a DuetSideRow, f64)>,
    ) -> Option<[f64; 2]> {
        let (a, b): (Vec<f64>, Vec<f64>) =
            slices.filter_map(|(a, b, seconds)| Some((self.of(a, seconds)?, self.of(b, seconds)?))).unzip();
        Some([crate::figures::median(a)?, crate::figures::median(b)?])
    }
}

/// One slice as stored: `a` is the duet's first service whatever its place in the pair.
pub struct DuetSliceRow<'a> {
    pub pair: u32,
    pub a_first: bool,
    pub step: u32,
    pub second: u32,
    pub seconds: f64,
    pub a: DuetSideRow,
    pub b: DuetSideRow,
    pub generator_busy: f64,
    pub invalid: Option<&'a str>,
}

/// The interval of B/A over pairs (the duet's own type too: duet/verdict.rs).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DuetInterval {
    /// B/A: exp of the mean over pairs of each pair's median slice log-ratio.
    pub ratio: f64,
    /// Confidence interval of `ratio` at the level asked (per line, not corrected for multiplicity).
    pub ci: [f64; 2],
    /// Two-sided p value of "B/A is 1".
    pub p: f64,
    /// Pairs used and valid slices in them.
    pub pairs: usize,
    pub slices: usize,
    /// The lowest and highest pair's ratio: how far the pairs disagreed.
    pub pair_min: f64,
    pub pair_max: f64,
}

/// One verdict line as stored.
pub struct DuetLineRow<'a> {
    pub step: u32,
    pub step_label: &'a str,
    pub metric: &'a str,
    pub result: Option<DuetInterval>,
    pub verdict: &'a str,
}

impl Store {
    pub fn create_duet(&self, d: &DuetRecord) -> Result<i64> {
        self.conn.execute(
            "INSERT INTO duet (started_at, status, label, command, svcbench_version, scenario, profile, service_a,
               service_b, limit_cpus, limit_memory_mib, service_cpuset, loadgen_cpuset, cgroup_version, pairs_asked,
               precision, mode)
             VALUES (?1,'running',?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16)",
            params![
                now(),
                d.label,
                d.command,
                crate::VERSION,
                d.scenario,
                d.profile,
                d.services[0],
                d.services[1],
                d.limit_cpus,
                d.limit_memory_mib,
                d.service_cpuset,
                d.loadgen_cpuset,
                d.cgroup_version,
                d.pairs_asked,
                d.precision,
                d.mode.key()
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// A pair's slices, in one transaction, as soon as the pair ends.
    pub fn add_duet_pair(&self, duet: i64, labels: &[String], slices: &[DuetSliceRow]) -> Result<()> {
        let tx = self.conn.unchecked_transaction()?;
        for s in slices {
            tx.execute(
                "INSERT INTO duet_slice (duet_id, pair, a_first, step, step_label, second, seconds,
                   a_ok, a_errors, a_cpu_s, a_throttled_s, a_p50_ms, a_p99_ms,
                   b_ok, b_errors, b_cpu_s, b_throttled_s, b_p50_ms, b_p99_ms, generator_busy, invalid)
                 VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21)",
                params![
                    duet,
                    s.pair,
                    s.a_first,
                    s.step,
                    labels.get(s.step as usize).map(String::as_str).unwrap_or(""),
                    s.second,
                    s.seconds,
                    s.a.ok as i64,
                    s.a.errors as i64,
                    s.a.cpu_s,
                    s.a.throttled_s,
                    s.a.p50_ms,
                    s.a.p99_ms,
                    s.b.ok as i64,
                    s.b.errors as i64,
                    s.b.cpu_s,
                    s.b.throttled_s,
                    s.b.p50_ms,
                    s.b.p99_ms,
                    s.generator_busy,
                    s.invalid
                ],
            )?;
        }
        tx.execute("UPDATE duet SET pairs_done = pairs_done + 1 WHERE id = ?1", [duet])?;
        tx.commit()?;
        Ok(())
    }

    /// The verdict lines and how the duet ended.
    pub fn end_duet(
        &self,
        duet: i64,
        status: &str,
        machine_s: f64,
        error: Option<&str>,
        lines: &[DuetLineRow],
    ) -> Result<()> {
        let tx = self.conn.unchecked_transaction()?;
        tx.execute("DELETE FROM duet_line WHERE duet_id = ?1", [duet])?;
        for l in lines {
            let r = l.result.as_ref();
            tx.execute(
                "INSERT INTO duet_line (duet_id, step, step_label, metric, ratio, ci_low, ci_high, p, verdict, pairs,
                   slices, pair_min, pair_max)
                 VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)",
                params![
                    duet,
                    l.step,
                    l.step_label,
                    l.metric,
                    r.map(|r| r.ratio),
                    r.map(|r| r.ci[0]),
                    r.map(|r| r.ci[1]),
                    r.map(|r| r.p),
                    l.verdict,
                    r.map(|r| r.pairs as i64),
                    r.map(|r| r.slices as i64),
                    r.map(|r| r.pair_min),
                    r.map(|r| r.pair_max)
                ],
            )?;
        }
        tx.execute(
            "UPDATE duet SET status = ?2, ended_at = ?3, machine_s = ?4, error = ?5 WHERE id = ?1",
            params![duet, status, now(), machine_s, error],
        )?;
        tx.commit()?;
        Ok(())
    }
}

/// A duet as stored, with its slices and its verdict lines.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredDuet {
    pub id: i64,
    pub started_at: String,
    pub ended_at: Option<String>,
    /// running, done, interrupted or failed.
    pub status: String,
    pub label: Option<String>,
    pub command: String,
    pub svcbench_version: String,
    pub scenario: String,
    pub profile: String,
    /// The duet's first and second service (`service@variant`).
    pub services: [String; 2],
    pub limit_cpus: Option<f64>,
    pub limit_memory_mib: Option<f64>,
    pub service_cpuset: Option<String>,
    pub loadgen_cpuset: Option<String>,
    pub cgroup_version: String,
    pub pairs_asked: u32,
    pub pairs_done: u32,
    pub mode: DuetMode,
    pub precision: Option<f64>,
    pub machine_s: Option<f64>,
    pub error: Option<String>,
    /// By pair, step and second.
    pub slices: Vec<StoredDuetSlice>,
    /// By step and metric.
    pub lines: Vec<StoredDuetLine>,
}

/// One slice as stored: `a` is the duet's first service whatever its place in the pair.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredDuetSlice {
    pub pair: u32,
    /// A was started and driven first (side by side: in this pair; alternating: in this round).
    pub a_first: bool,
    pub step: u32,
    pub step_label: String,
    pub second: u32,
    pub seconds: f64,
    pub a: DuetSideRow,
    pub b: DuetSideRow,
    pub generator_busy: f64,
    /// Why the slice is not compared; None: valid.
    pub invalid: Option<String>,
}

/// One verdict line as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredDuetLine {
    pub step: u32,
    pub step_label: String,
    /// ok_rps, cpu_us_per_req, p50_ms or p99_ms.
    pub metric: String,
    /// None when the line got no interval (too few pairs, no spread).
    pub result: Option<DuetInterval>,
    /// faster, slower, no_significant_difference, too_few_pairs or no_spread.
    pub verdict: String,
}

fn duet_of(r: &Row) -> rusqlite::Result<StoredDuet> {
    Ok(StoredDuet {
        id: r.get("id")?,
        started_at: r.get("started_at")?,
        ended_at: r.get("ended_at")?,
        status: r.get("status")?,
        label: r.get("label")?,
        command: r.get("command")?,
        svcbench_version: r.get("svcbench_version")?,
        scenario: r.get("scenario")?,
        profile: r.get("profile")?,
        services: [r.get("service_a")?, r.get("service_b")?],
        limit_cpus: r.get("limit_cpus")?,
        limit_memory_mib: r.get("limit_memory_mib")?,
        service_cpuset: r.get("service_cpuset")?,
        loadgen_cpuset: r.get("loadgen_cpuset")?,
        cgroup_version: r.get("cgroup_version")?,
        pairs_asked: r.get("pairs_asked")?,
        pairs_done: r.get("pairs_done")?,
        mode: DuetMode::of_key(r.get::<_, Option<String>>("mode")?.as_deref()),
        precision: r.get("precision")?,
        machine_s: r.get("machine_s")?,
        error: r.get("error")?,
        slices: Vec::new(),
        lines: Vec::new(),
    })
}

fn side_of(r: &Row, side: &str) -> rusqlite::Result<DuetSideRow> {
    let col = |name: &str| format!("{side}_{name}");
    Ok(DuetSideRow {
        ok: r.get(col("ok").as_str())?,
        errors: r.get(col("errors").as_str())?,
        cpu_s: r.get(col("cpu_s").as_str())?,
        throttled_s: r.get(col("throttled_s").as_str())?,
        p50_ms: r.get(col("p50_ms").as_str())?,
        p99_ms: r.get(col("p99_ms").as_str())?,
    })
}

fn slice_of(r: &Row) -> rusqlite::Result<StoredDuetSlice> {
    Ok(StoredDuetSlice {
        pair: r.get("pair")?,
        a_first: r.get::<_, i64>("a_first")? != 0,
        step: r.get("step")?,
        step_label: r.get("step_label")?,
        second: r.get("second")?,
        seconds: r.get("seconds")?,
        a: side_of(r, "a")?,
        b: side_of(r, "b")?,
        generator_busy: r.get("generator_busy")?,
        invalid: r.get("invalid")?,
    })
}

fn line_of(r: &Row) -> rusqlite::Result<StoredDuetLine> {
    // `end_duet` writes an interval's columns all or none.
    let interval = || -> rusqlite::Result<Option<DuetInterval>> {
        let (Some(ratio), Some(lo), Some(hi), Some(p), Some(pairs), Some(slices), Some(pair_min), Some(pair_max)) = (
            r.get("ratio")?,
            r.get("ci_low")?,
            r.get("ci_high")?,
            r.get("p")?,
            r.get("pairs")?,
            r.get("slices")?,
            r.get("pair_min")?,
            r.get("pair_max")?,
        ) else {
            return Ok(None);
        };
        Ok(Some(DuetInterval { ratio, ci: [lo, hi], p, pairs, slices, pair_min, pair_max }))
    };
    Ok(StoredDuetLine {
        step: r.get("step")?,
        step_label: r.get("step_label")?,
        metric: r.get("metric")?,
        result: interval()?,
        verdict: r.get("verdict")?,
    })
}

impl Reader {
    /// Every duet, oldest first, with its slices and verdict lines; none in a store that predates the duet
    /// tables (read only, never upgraded).
    pub fn duets(&self) -> Result<Vec<StoredDuet>> {
        if !self.has_table("duet")? {
            return Ok(Vec::new());
        }
        let mut duets: Vec<StoredDuet> = self
            .conn
            .prepare("SELECT * FROM duet ORDER BY id")?
            .query_map([], duet_of)?
            .collect::<rusqlite::Result<_>>()?;
        for d in &mut duets {
            d.slices = self
                .conn
                .prepare("SELECT * FROM duet_slice WHERE duet_id = ?1 ORDER BY pair, step, second")?
                .query_map([d.id], slice_of)?
                .collect::<rusqlite::Result<_>>()?;
            d.lines = self
                .conn
                .prepare("SELECT * FROM duet_line WHERE duet_id = ?1 ORDER BY step, metric")?
                .query_map([d.id], line_of)?
                .collect::<rusqlite::Result<_>>()?;
        }
        Ok(duets)
    }
}

/// A duet's record, one side's figures and one slice as the tests write them (the store's round trip, the
/// report's duet chart).
#[cfg(test)]
pub(crate) mod fixture {
    use super::*;

    /// A duet of services `a` and `b` on the hello scenario, under 0.45 CPU on CPU 1.
    pub fn record(pairs_asked: u32, mode: DuetMode) -> DuetRecord<'static> {
        DuetRecord {
            label: None,
            command: "svcbench duet a b",
            scenario: "hello",
            profile: "duet",
            services: ["a", "b"],
            limit_cpus: Some(0.45),
            limit_memory_mib: None,
            service_cpuset: Some("1"),
            loadgen_cpuset: "0",
            cgroup_version: "v1",
            pairs_asked,
            precision: None,
            mode,
        }
    }

    pub fn side(ok: u64, errors: u64, cpu_s: f64) -> DuetSideRow {
        DuetSideRow { ok, errors, cpu_s, throttled_s: 0.0, p50_ms: 0.5, p99_ms: 2.0 }
    }

    /// A one-second slice of the first step (`r=1500`), the generator 30 % busy.
    pub fn slice(pair: u32, a_first: bool, second: u32, sides: [DuetSideRow; 2]) -> DuetSliceRow<'static> {
        let [a, b] = sides;
        DuetSliceRow { pair, a_first, step: 0, second, seconds: 1.0, a, b, generator_busy: 0.3, invalid: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_verdict_reads_back_from_its_key_and_an_unknown_key_is_none() {
        for v in DuetVerdict::ALL {
            assert_eq!(DuetVerdict::of_key(v.key()), Some(v));
        }
        assert_eq!(DuetVerdict::of_key("no significant difference"), None, "words are not keys");
    }

    #[test]
    fn a_duet_written_is_the_duet_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("d.db");
        let s = Store::open(&path).unwrap();
        let record = fixture::record(3, DuetMode::Alternating);
        let id = s.create_duet(&DuetRecord { label: Some("aa"), services: ["a", "a@extra"], ..record }).unwrap();
        let side = |ok: u64, cpu_s: f64| fixture::side(ok, 1, cpu_s);
        let slice = |pair: u32, second: u32, invalid: Option<&'static str>| DuetSliceRow {
            invalid,
            ..fixture::slice(pair, pair == 0, second, [side(1500, 0.1), side(1490, 0.12)])
        };
        let labels = ["r=1500".to_string()];
        s.add_duet_pair(id, &labels, &[slice(0, 1, None), slice(0, 0, Some("late reading"))]).unwrap();
        s.add_duet_pair(id, &labels, &[slice(1, 0, None)]).unwrap();
        let interval =
            DuetInterval { ratio: 1.2, ci: [1.1, 1.3], p: 0.01, pairs: 2, slices: 3, pair_min: 1.15, pair_max: 1.25 };
        let lines = [
            DuetLineRow { step: 0, step_label: "r=1500", metric: "ok_rps", result: None, verdict: "too_few_pairs" },
            DuetLineRow {
                step: 0,
                step_label: "r=1500",
                metric: "cpu_us_per_req",
                result: Some(interval.clone()),
                verdict: "slower",
            },
        ];
        s.end_duet(id, "done", 12.5, None, &lines).unwrap();
        drop(s);

        let duets = Reader::open(&path).unwrap().duets().unwrap();
        assert_eq!(duets.len(), 1);
        let d = &duets[0];
        assert_eq!((d.id, d.status.as_str(), d.label.as_deref()), (id, "done", Some("aa")));
        assert_eq!(d.services, ["a".to_string(), "a@extra".to_string()]);
        assert_eq!((d.limit_cpus, d.limit_memory_mib, d.service_cpuset.as_deref()), (Some(0.45), None, Some("1")));
        assert_eq!((d.pairs_asked, d.pairs_done, d.machine_s, d.error.as_deref()), (3, 2, Some(12.5), None));
        assert_eq!(d.mode.key(), "alternating");
        assert!(d.ended_at.is_some());
        // Slices by pair, step and second, each side as written.
        let order: Vec<(u32, u32, bool)> = d.slices.iter().map(|s| (s.pair, s.second, s.a_first)).collect();
        assert_eq!(order, [(0, 0, true), (0, 1, true), (1, 0, false)]);
        assert_eq!(d.slices[0].invalid.as_deref(), Some("late reading"));
        assert_eq!((d.slices[1].a, d.slices[1].b), (side(1500, 0.1), side(1490, 0.12)));
        assert_eq!(d.slices[1].step_label, "r=1500");
        // Lines by step and metric; an untested line has no interval.
        let metrics: Vec<&str> = d.lines.iter().map(|l| l.metric.as_str()).collect();
        assert_eq!(metrics, ["cpu_us_per_req", "ok_rps"]);
        assert_eq!((d.lines[0].result.as_ref(), d.lines[0].verdict.as_str()), (Some(&interval), "slower"));
        assert_eq!((d.lines[1].result.as_ref(), d.lines[1].verdict.as_str()), (None, "too_few_pairs"));
    }

    #[test]
    fn a_store_without_the_duet_tables_has_no_duets() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        drop(Store::open(&path).unwrap());
        // A store made before the duet tables, read without upgrading it.
        let c = rusqlite::Connection::open(&path).unwrap();
        c.execute_batch("DROP TABLE duet_line; DROP TABLE duet_slice; DROP TABLE duet;").unwrap();
        drop(c);
        assert!(Reader::open(&path).unwrap().duets().unwrap().is_empty());
    }
}

//! A duet's rows: the duet, its slices as each pair ends, its verdict lines at the end (duet.sql).
use super::{now, Store};
use anyhow::Result;
use rusqlite::params;
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

/// One slice as stored: `a` is the duet's first service whatever its place in the pair.
pub struct DuetSliceRow<'a> {
    pub pair: u32,
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
               precision)
             VALUES (?1,'running',?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15)",
            params![
                now(),
                d.label,
                d.command,
                env!("CARGO_PKG_VERSION"),
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
                d.precision
            ],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// A pair's slices, in one transaction, as soon as the pair ends.
    pub fn add_duet_pair(&self, duet: i64, a_first: bool, labels: &[String], slices: &[DuetSliceRow]) -> Result<()> {
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
                    a_first,
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

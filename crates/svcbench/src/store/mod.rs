//! The store: an SQLite database of every session, service, run, check, step and sample
//! (schema in schema.sql, documented in docs/store.md). Rows are written as soon as their figures exist.
pub mod export;

use anyhow::{Context, Result};
use rusqlite::{params, Connection};
use serde::Serialize;
use std::path::Path;

pub const SCHEMA_VERSION: &str = "2";
/// Older versions this one reads after an additive upgrade (see `upgrade`).
pub const READABLE_VERSIONS: &[&str] = &["1", "2"];

pub struct Store {
    pub conn: Connection,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct SessionRecord {
    pub label: Option<String>,
    pub command: String,
    pub scenario: String,
    pub profile: String,
    pub runs_per_service: u32,
    pub host: crate::host::HostFacts,
    pub cgroup_version: String,
    pub limit_cpus: Option<f64>,
    pub limit_memory_mib: Option<f64>,
    pub service_cpuset: Option<String>,
    pub loadgen_cpuset: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct StepRecord {
    pub seq: u32,
    pub label: String,
    pub model: &'static str,
    pub connections: Option<u64>,
    pub rate: Option<f64>,
    pub rate_end: Option<f64>,
    pub mix: String,
    pub upstream_delay_ms: Option<u64>,
    pub cpu_s: Option<f64>,
    pub mem_peak_mib: Option<f64>,
    pub rss_peak_mib: Option<f64>,
    pub threads_max: Option<u64>,
    pub throttled_s: Option<f64>,
    pub client_cpus: u32,
    pub client_saturated: bool,
    pub dep_cpu_s: Option<f64>,
    pub dep_saturated: bool,
    pub oom_killed: bool,
    pub crashed: bool,
    pub dependency_calls: Option<u64>,
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Brings a store of an older schema up to this one; every change so far only added columns.
fn upgrade(conn: &Connection) -> Result<()> {
    let version: String = conn.query_row("SELECT value FROM meta WHERE key = 'schema_version'", [], |r| r.get(0))?;
    if version == SCHEMA_VERSION {
        return Ok(());
    }
    if !READABLE_VERSIONS.contains(&version.as_str()) {
        anyhow::bail!("its schema version {version} is not one this svcbench knows ({SCHEMA_VERSION}); use a newer svcbench");
    }
    // 1 → 2: requests unanswered at the end of a step.
    let has = |col: &str| -> Result<bool> {
        let mut st = conn.prepare("SELECT 1 FROM pragma_table_info('step') WHERE name = ?1")?;
        Ok(st.exists([col])?)
    };
    if !has("in_flight_at_end")? {
        conn.execute("ALTER TABLE step ADD COLUMN in_flight_at_end INTEGER", [])?;
    }
    conn.execute("UPDATE meta SET value = ?1 WHERE key = 'schema_version'", [SCHEMA_VERSION])?;
    Ok(())
}

impl Store {
    pub fn open(path: &Path) -> Result<Store> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let conn = Connection::open(path).with_context(|| format!("cannot open store {}", path.display()))?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.execute_batch(include_str!("schema.sql"))
            .with_context(|| format!("cannot create the schema in {}", path.display()))?;
        conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?1)", [SCHEMA_VERSION])?;
        upgrade(&conn).with_context(|| format!("cannot upgrade store {}", path.display()))?;
        Ok(Store { conn })
    }

    /// Opens an existing store for reading; a missing file is an error rather than a new empty store.
    pub fn open_existing(path: &Path) -> Result<Store> {
        if !path.exists() {
            anyhow::bail!("store {} does not exist; run `svcbench run …` first or pass --db", path.display());
        }
        Store::open(path)
    }

    pub fn create_session(&self, s: &SessionRecord) -> Result<i64> {
        let h = &s.host;
        self.conn.execute(
            "INSERT INTO session (started_at, label, command, svcbench_version, scenario, profile, runs_per_service,
               host_name, cpu_model, cpu_cores, memory_mib, kernel, cgroup_version, limit_cpus, limit_memory_mib,
               service_cpuset, loadgen_cpuset)
             VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17)",
            params![now(), s.label, s.command, env!("CARGO_PKG_VERSION"), s.scenario, s.profile, s.runs_per_service,
                h.host_name, h.cpu_model, h.cpu_cores, h.memory_mib, h.kernel, s.cgroup_version, s.limit_cpus,
                s.limit_memory_mib, s.service_cpuset, s.loadgen_cpuset],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    pub fn add_session_warning(&self, session: i64, warning: &str) -> Result<()> {
        self.conn.execute(
            "UPDATE session SET warnings = json_insert(warnings, '$[#]', ?2) WHERE id = ?1 AND
               NOT EXISTS (SELECT 1 FROM json_each(warnings) WHERE value = ?2)",
            params![session, warning],
        )?;
        Ok(())
    }

    pub fn finish_session(&self, session: i64, status: &str) -> Result<()> {
        self.conn.execute("UPDATE session SET ended_at = ?2, status = ?3 WHERE id = ?1", params![session, now(), status])?;
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    pub fn add_service(
        &self,
        session: i64,
        svc: &crate::manifest::Service,
        build_ok: bool,
        build_s: Option<f64>,
        build_error: Option<&str>,
        artifact_bytes: Option<u64>,
    ) -> Result<()> {
        let m = &svc.manifest;
        self.conn.execute(
            "INSERT OR REPLACE INTO service (session_id, name, scenario, language, framework, framework_version, model, dir,
               build_ok, build_s, build_error, artifact_bytes) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)",
            params![session, m.name, m.scenario, m.language, m.framework, m.framework_version, m.model.as_str(),
                svc.dir.display().to_string(), build_ok, build_s, build_error, artifact_bytes],
        )?;
        Ok(())
    }

    pub fn set_refusal(&self, session: i64, service: &str, refused: bool, detail: &str) -> Result<()> {
        self.conn.execute(
            "UPDATE service SET refuses_bad_dependency = ?3, refuse_detail = ?4 WHERE session_id = ?1 AND name = ?2",
            params![session, service, refused, detail],
        )?;
        Ok(())
    }

    pub fn start_run(&self, session: i64, service: &str, run_index: u32) -> Result<i64> {
        self.conn.execute(
            "INSERT INTO run (session_id, service, run_index, started_at) VALUES (?1, ?2, ?3, ?4)",
            params![session, service, run_index, now()],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Sets one column of a run (the runner fills them as they are measured).
    pub fn set_run<T: rusqlite::ToSql>(&self, run: i64, column: &str, value: T) -> Result<()> {
        debug_assert!(column.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        self.conn.execute(&format!("UPDATE run SET {column} = ?2 WHERE id = ?1"), params![run, value])?;
        Ok(())
    }

    pub fn add_run_warnings(&self, run: i64, warnings: &[String]) -> Result<()> {
        for w in warnings {
            self.conn.execute(
                "UPDATE run SET warnings = json_insert(warnings, '$[#]', ?2) WHERE id = ?1",
                params![run, w],
            )?;
        }
        Ok(())
    }

    pub fn add_run_figure(&self, run: i64, name: &str, value: f64) -> Result<()> {
        self.conn.execute("INSERT OR REPLACE INTO run_figure (run_id, name, value) VALUES (?1,?2,?3)", params![run, name, value])?;
        Ok(())
    }

    pub fn finish_run(&self, run: i64, status: &str, error: Option<&str>) -> Result<()> {
        self.conn.execute(
            "UPDATE run SET ended_at = ?2, status = ?3, error = COALESCE(?4, error) WHERE id = ?1",
            params![run, now(), status, error],
        )?;
        Ok(())
    }

    pub fn add_checks(&self, run: i64, results: &[crate::scenario::checks::CheckResult]) -> Result<()> {
        let tx = self.conn.unchecked_transaction()?;
        for (i, r) in results.iter().enumerate() {
            tx.execute(
                "INSERT INTO check_result (run_id, seq, name, passed, reason) VALUES (?1,?2,?3,?4,?5)",
                params![run, i as i64 + 1, r.name, r.passed, r.reason],
            )?;
        }
        let passed = results.iter().filter(|r| r.passed).count();
        tx.execute(
            "UPDATE run SET checks_passed = ?2, checks_failed = ?3 WHERE id = ?1",
            params![run, passed, results.len() - passed],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Writes one step with its load report and samples, in one transaction.
    pub fn add_step(
        &self,
        run: i64,
        s: &StepRecord,
        load: &loadgen::LoadReport,
        samples: &[crate::sandbox::sampler::Sample],
    ) -> Result<i64> {
        let tx = self.conn.unchecked_transaction()?;
        let e = &load.errors;
        let l = &load.latency;
        let ok = load.requests_ok;
        let rps = load.success_rps();
        let cpu_ms_per_req = s.cpu_s.filter(|_| ok > 0).map(|c| c * 1000.0 / ok as f64);
        let mem_mib_s_per_req = s.mem_peak_mib.filter(|_| rps > 0.0).map(|m| m / rps);
        let open = load.open.as_ref();
        tx.execute(
            "INSERT INTO step (run_id, seq, label, model, connections, rate, rate_end, mix, upstream_delay_ms, duration_s,
               requests_ok, requests_err, err_connect, err_timeout, err_read, err_status, err_malformed, status_counts,
               success_rps, error_ratio, p50, p75, p90, p99, p999, p9999, max_ms, mean_ms, latency_hdr,
               open_intended, open_late, open_unsent, open_max_lateness_ms, cpu_s, cpu_ms_per_req, mem_peak_mib,
               mem_mib_s_per_req, rss_peak_mib, threads_max, throttled_s, client_cpu_s, client_cpus, client_saturated,
               dep_cpu_s, dep_saturated, oom_killed, crashed, samples, timeline, dependency_calls, in_flight_at_end)
             VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24,?25,?26,?27,
               ?28,?29,?30,?31,?32,?33,?34,?35,?36,?37,?38,?39,?40,?41,?42,?43,?44,?45,?46,?47,?48,?49,?50,?51)",
            params![
                run, s.seq, s.label, s.model, s.connections, s.rate, s.rate_end, s.mix, s.upstream_delay_ms,
                load.duration_s, ok, load.requests_err, e.connect_refused + e.connect_timeout, e.request_timeout,
                e.read_closed, e.status, e.malformed, serde_json::to_string(&load.status_counts)?,
                rps, load.error_ratio(), l.p50, l.p75, l.p90, l.p99, l.p999, l.p9999, l.max, l.mean, load.latency_hdr,
                open.map(|o| o.intended), open.map(|o| o.sent_late), open.map(|o| o.unsent),
                open.map(|o| o.max_lateness_ms), s.cpu_s, cpu_ms_per_req, s.mem_peak_mib, mem_mib_s_per_req,
                s.rss_peak_mib, s.threads_max, s.throttled_s, load.client_cpu_s, s.client_cpus, s.client_saturated,
                s.dep_cpu_s, s.dep_saturated, s.oom_killed, s.crashed, samples.len(),
                serde_json::to_string(&load.timeline)?, s.dependency_calls, load.in_flight_at_end,
            ],
        )?;
        let step_id = tx.last_insert_rowid();
        {
            let mut ins = tx.prepare_cached(
                "INSERT INTO sample (step_id, t_s, cpu_s, mem_mib, rss_mib, threads, throttled_s) VALUES (?1,?2,?3,?4,?5,?6,?7)",
            )?;
            for x in samples {
                ins.execute(params![step_id, x.t_s, x.cpu_s, x.mem_mib, x.rss_mib, x.threads, x.throttled_s])?;
            }
        }
        tx.commit()?;
        Ok(step_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_1_store_is_upgraded_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        {
            // A version-1 store: today's schema without the step column added in version 2.
            let c = Connection::open(&path).unwrap();
            let v1 = include_str!("schema.sql").replace("  in_flight_at_end INTEGER,", "");
            c.execute_batch(&v1).unwrap();
            c.execute("INSERT INTO meta (key, value) VALUES ('schema_version', '1')", []).unwrap();
        }
        let s = Store::open(&path).unwrap();
        let v: String = s.conn.query_row("SELECT value FROM meta WHERE key = 'schema_version'", [], |r| r.get(0)).unwrap();
        assert_eq!(v, SCHEMA_VERSION);
        let has: bool =
            s.conn.prepare("SELECT 1 FROM pragma_table_info('step') WHERE name = 'in_flight_at_end'").unwrap().exists([]).unwrap();
        assert!(has);
        drop(s);
        // Opening again is a no-op; a version from the future is refused with a clear message.
        Store::open(&path).unwrap().conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'", []).unwrap();
        let err = Store::open(&path).err().unwrap();
        assert!(format!("{err:#}").contains("schema version 99"), "{err:#}");
    }
}

//! The store: an SQLite database of every session, service, run, check, step and sample (schema.sql plus
//! upgrade.rs, documented in docs/store.md). It owns its schema: its connection is private, writes go
//! through typed records (records.rs) and readers use the read-only API (read.rs). Rows are written as soon
//! as their figures exist, so nothing measured is lost when a later step, run or service fails.
pub mod duet;
pub mod export;
pub mod read;
pub mod records;
mod study_fingerprint;
mod upgrade;

use crate::figures::Flag;
use anyhow::{Context, Result};
use rusqlite::{params, Connection};
use std::path::Path;

pub use duet::{
    DuetInterval, DuetLineRow, DuetMetric, DuetMode, DuetRecord, DuetSideRow, DuetSliceRow, DuetVerdict, StoredDuet,
    StoredDuetLine, StoredDuetSlice,
};
pub use read::Reader;
pub use records::{DeathCause, RunCell, RunDeath, RunEnd, RunLimits, RunStartup, SessionRecord, StepRow};
pub use study_fingerprint::{RecordedStudy, StudyFingerprint};
pub use upgrade::SCHEMA_VERSION;

pub struct Store {
    conn: Connection,
}

pub(crate) fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Creates the tables where missing and brings the schema up to date.
fn prepare(conn: &Connection, path: &Path) -> Result<()> {
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    conn.execute_batch(include_str!("schema.sql"))
        .with_context(|| format!("cannot create the schema in {}", path.display()))?;
    // Tables added after version 1, whole; a column added to them later is in duet.sql and upgrade.rs both.
    conn.execute_batch(include_str!("duet.sql"))
        .with_context(|| format!("cannot create the duet tables in {}", path.display()))?;
    // A new store starts as version 1 (schema.sql) and is brought up like any older one.
    conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', '1')", [])?;
    upgrade::upgrade(conn).with_context(|| format!("cannot upgrade store {}", path.display()))
}

impl Store {
    pub fn open(path: &Path) -> Result<Store> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
            crate::safe_fs::Folder::make(dir)?;
        }
        // Another user must not be able to swap the store, or plant its journal beside it (safe_fs.rs).
        crate::safe_fs::check_store(path)?;
        let flags = rusqlite::OpenFlags::default() | rusqlite::OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let conn = Connection::open_with_flags(path, flags)
            .with_context(|| format!("cannot open store {}", path.display()))?;
        prepare(&conn, path)?;
        Ok(Store { conn })
    }

    /// Raw access for tests that build hand-made stores.
    #[cfg(test)]
    pub fn raw(&self) -> &Connection {
        &self.conn
    }

    pub fn create_session(&self, s: &SessionRecord) -> Result<i64> {
        let h = &s.host;
        self.conn.execute(
            "INSERT INTO session (started_at, label, command, svcbench_version, scenario, profile, runs_per_service,
               host_name, cpu_model, cpu_cores, memory_mib, kernel, cgroup_version, limit_cpus, limit_memory_mib,
               service_cpuset, loadgen_cpuset, probe_tolerance, study)
             VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19)",
            params![
                now(),
                s.label,
                s.command,
                crate::VERSION,
                s.scenario,
                s.profile,
                s.runs_per_service,
                h.host_name,
                h.cpu_model,
                h.cpu_cores,
                h.memory_mib,
                h.kernel,
                s.cgroup_version,
                s.limit_cpus,
                s.limit_memory_mib,
                s.service_cpuset,
                s.loadgen_cpuset,
                s.probe_tolerance,
                s.study
            ],
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

    /// Marks a session whose svcbench was killed, and its unfinished runs, `aborted` with the flags given
    /// (figures::validity::run_flags; guard/leftovers.rs). Returns how many runs were marked.
    pub fn abort_session(&self, session: i64, why: &str, flags: &[Flag]) -> Result<usize> {
        let runs = self.conn.execute(
            "UPDATE run SET status = 'aborted', ended_at = ?2, error = ?3, valid = 0, flags = ?4
             WHERE session_id = ?1 AND status = 'running'",
            params![session, now(), why, serde_json::to_string(flags)?],
        )?;
        self.conn.execute(
            "UPDATE session SET status = 'aborted', ended_at = ?2 WHERE id = ?1 AND status = 'running'",
            params![session, now()],
        )?;
        self.add_session_warning(session, why)?;
        Ok(runs)
    }

    /// The dependencies' warm-up before the first run (runner/warmup.rs), as JSON.
    pub fn record_warmup(&self, session: i64, json: &str) -> Result<()> {
        self.conn.execute("UPDATE session SET warmup = ?2 WHERE id = ?1", params![session, json])?;
        Ok(())
    }

    /// The `--net` network: the parts' addresses and the links between them.
    pub fn record_network(&self, session: i64, network: &str) -> Result<()> {
        self.conn.execute("UPDATE session SET network = ?2 WHERE id = ?1", params![session, network])?;
        Ok(())
    }

    pub fn record_other_hosts(&self, session: i64, hosts: &[crate::host::OtherHost]) -> Result<()> {
        let json = serde_json::to_string(hosts)?;
        self.conn.execute("UPDATE session SET other_hosts = ?2 WHERE id = ?1", params![session, json])?;
        Ok(())
    }

    /// What a study's session ran (its file, step plan, each service's code, the scenario's parts, svcbench's
    /// build, the images), for `--resume` to check.
    pub fn record_study_fingerprint(&self, session: i64, f: &StudyFingerprint) -> Result<()> {
        self.conn.execute(
            "UPDATE session SET study_file = ?2, plan_hash = ?3, service_code = ?4, scenario_parts = ?5,
             svcbench_build = ?6, image_ids = ?7 WHERE id = ?1",
            params![
                session,
                f.study_file,
                f.plan,
                serde_json::to_string(&f.services)?,
                serde_json::to_string(&f.scenario)?,
                f.svcbench,
                serde_json::to_string(&f.images)?
            ],
        )?;
        Ok(())
    }

    pub fn finish_session(&self, session: i64, status: &str) -> Result<()> {
        self.conn
            .execute("UPDATE session SET ended_at = ?2, status = ?3 WHERE id = ?1", params![session, now(), status])?;
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
        // The code measured, as git says it is (a study recorded by commit reads back which one); a service
        // at a revision is that commit's clean tree.
        let git = match &svc.revision {
            Some(r) => Some(crate::git::State { commit: r.commit.clone(), dirty: false }),
            None => crate::git::state(&svc.dir),
        };
        self.conn.execute(
            "INSERT OR REPLACE INTO service (session_id, name, scenario, language, framework, framework_version, model, dir,
               build_ok, build_s, build_error, artifact_bytes, base_name, variant, git_commit, git_dirty, git_revision)
             VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17)",
            params![
                session,
                m.name,
                m.scenario,
                m.language,
                m.framework,
                m.framework_version,
                m.programming_model.as_str(),
                svc.dir.display().to_string(),
                build_ok,
                build_s,
                build_error,
                artifact_bytes,
                svc.base_name,
                svc.variant,
                git.as_ref().map(|g| g.commit.clone()),
                git.as_ref().map(|g| g.dirty),
                svc.revision.as_ref().map(|r| r.given.clone())
            ],
        )?;
        Ok(())
    }

    /// How the service ran in this session (`container_start::runtime_of`).
    pub fn set_runtime(&self, session: i64, service: &str, runtime: &str) -> Result<()> {
        self.conn.execute(
            "UPDATE service SET runtime = ?3 WHERE session_id = ?1 AND name = ?2",
            params![session, service, runtime],
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

    pub fn record_limits(&self, run: i64, l: &RunLimits) -> Result<()> {
        self.conn.execute(
            "UPDATE run SET cgroup_version = ?2, applied_cpus = ?3, applied_memory_mib = ?4, applied_cpuset = ?5
             WHERE id = ?1",
            params![run, l.cgroup_version, l.cpus, l.memory_mib, l.cpuset],
        )?;
        Ok(())
    }

    /// The user the service of this run ran as (docs/security.md).
    pub fn record_service_user(&self, run: i64, user: &str) -> Result<()> {
        self.conn.execute("UPDATE run SET service_user = ?2 WHERE id = ?1", params![run, user])?;
        Ok(())
    }

    pub fn record_cell(&self, run: i64, c: &RunCell) -> Result<()> {
        self.conn.execute(
            "UPDATE run SET cell = ?2, asked_cpus = ?3, asked_memory_mib = ?4 WHERE id = ?1",
            params![run, c.key, c.cpus, c.memory_mib],
        )?;
        Ok(())
    }

    pub fn record_startup(&self, run: i64, s: &RunStartup) -> Result<()> {
        self.conn.execute(
            "UPDATE run SET startup_ms = ?2, idle_mem_mib = ?3, idle_rss_mib = ?4, idle_threads = ?5, \
             startup_engine_ms = ?6 WHERE id = ?1",
            params![run, s.startup_ms, s.idle_mem_mib, s.idle_rss_mib, s.idle_threads as i64, s.startup_engine_ms],
        )?;
        Ok(())
    }

    /// Where the service listened after startup (`addrs`, as printed) and the warning when that was not
    /// only its `{host}`.
    pub fn record_listening(&self, run: i64, addrs: &str, warning: Option<&str>) -> Result<()> {
        self.conn.execute(
            "UPDATE run SET listen_addrs = ?2, listen_warning = ?3 WHERE id = ?1",
            params![run, addrs, warning],
        )?;
        Ok(())
    }

    pub fn record_death(&self, run: i64, d: &RunDeath) -> Result<()> {
        let col = d.cause.column();
        self.conn
            .execute(&format!("UPDATE run SET {col} = 1, failed_stage = ?2 WHERE id = ?1"), params![run, d.stage])?;
        Ok(())
    }

    pub fn record_end(&self, run: i64, e: &RunEnd) -> Result<()> {
        self.conn.execute(
            "UPDATE run SET total_requests_ok = ?2, total_cpu_s = ?3, shutdown_ms = ?4, stopped_gracefully = ?5,
               exit_code = ?6, exit_signal = ?7 WHERE id = ?1",
            params![
                run,
                e.total_requests_ok as i64,
                e.total_cpu_s,
                e.shutdown_ms,
                e.stopped_gracefully,
                e.exit_code,
                e.exit_signal
            ],
        )?;
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
        self.conn.execute(
            "INSERT OR REPLACE INTO run_figure (run_id, name, value) VALUES (?1,?2,?3)",
            params![run, name, value],
        )?;
        Ok(())
    }

    /// Ends a run: its status, error and validity flags (figures::validity::run_flags).
    pub fn finish_run(&self, run: i64, status: &str, error: Option<&str>, flags: &[Flag]) -> Result<()> {
        self.conn.execute(
            "UPDATE run SET ended_at = ?2, status = ?3, error = COALESCE(?4, error), valid = ?5, flags = ?6 WHERE id = ?1",
            params![run, now(), status, error, flags.is_empty(), serde_json::to_string(flags)?],
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

    /// Writes one step and its samples, in one transaction. The columns are `StepRow`'s fields.
    pub fn add_step(&self, run: i64, s: &StepRow, samples: &[crate::sandbox::sampler::Sample]) -> Result<i64> {
        let tx = self.conn.unchecked_transaction()?;
        let named = serde_rusqlite::to_params_named(s)?;
        let slice = named.to_slice();
        let cols: Vec<&str> = slice.iter().map(|(n, _)| n.trim_start_matches(':')).collect();
        let sql = format!(
            "INSERT INTO step (run_id, {}) VALUES ({}, {})",
            cols.join(", "),
            run,
            slice.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
        );
        tx.execute(&sql, slice.as_slice())?;
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

    /// The steps of a session that timed the machine-speed probe: (step, probe ms, its flags so far).
    pub fn probed_steps(&self, session: i64) -> Result<Vec<(i64, f64, crate::figures::Validity)>> {
        let mut st = self.conn.prepare(
            "SELECT s.id, s.probe_ms, s.flags FROM step s JOIN run r ON r.id = s.run_id
             WHERE r.session_id = ?1 AND s.probe_ms IS NOT NULL",
        )?;
        let rows: Vec<(i64, f64, Option<String>)> =
            st.query_map([session], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?.collect::<rusqlite::Result<_>>()?;
        Ok(rows
            .into_iter()
            .map(|(id, probe, flags)| {
                (id, probe, crate::figures::Validity::from_json(flags.as_deref().unwrap_or("[]")))
            })
            .collect())
    }

    /// A session's steps: how many are stored as not valid, and how many there are.
    pub fn step_validity_counts(&self, session: i64) -> Result<(usize, usize)> {
        let (invalid, all): (i64, i64) = self.conn.query_row(
            "SELECT COALESCE(SUM(s.valid = 0), 0), COUNT(*) FROM step s JOIN run r ON r.id = s.run_id
             WHERE r.session_id = ?1",
            [session],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        Ok((invalid as usize, all as usize))
    }

    /// Writes a step's flags as given (a step with flags is not valid).
    pub fn set_step_validity(&self, step: i64, v: &crate::figures::Validity) -> Result<()> {
        self.conn
            .execute("UPDATE step SET flags = ?2, valid = ?3 WHERE id = ?1", params![step, v.to_json(), v.valid()])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_older_store_is_upgraded_in_place_and_a_newer_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        {
            // A version-1 store: schema.sql alone.
            let c = Connection::open(&path).unwrap();
            c.execute_batch(include_str!("schema.sql")).unwrap();
            c.execute("INSERT INTO meta (key, value) VALUES ('schema_version', '1')", []).unwrap();
            c.execute(
                "INSERT INTO session (started_at, command, svcbench_version, scenario, profile, runs_per_service,
                   cgroup_version, status)
                 VALUES ('t', 'svcbench run', '0.1.0', 'hello', 'quick', 2, 'v1', 'completed')",
                [],
            )
            .unwrap();
            for (i, error) in
                ["akka sat at its memory cap (64 MiB) for 10 s without answering /", "build failed"].iter().enumerate()
            {
                c.execute(
                    "INSERT INTO run (session_id, service, run_index, started_at, status, error)
                     VALUES (1, 'akka', ?1, 't', 'failed', ?2)",
                    rusqlite::params![i as i64 + 1, error],
                )
                .unwrap();
            }
        }
        let s = Store::open(&path).unwrap();
        // The older store's run ended at its memory cap is known as such; the other failure is not.
        let stuck: Vec<i64> = s
            .conn
            .prepare("SELECT stuck_at_memory_cap FROM run ORDER BY run_index")
            .unwrap()
            .query_map([], |r| r.get::<_, Option<i64>>(0).map(|v| v.unwrap_or(0)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(stuck, [1, 0]);
        let v: String =
            s.conn.query_row("SELECT value FROM meta WHERE key = 'schema_version'", [], |r| r.get(0)).unwrap();
        assert_eq!(v, SCHEMA_VERSION.to_string());
        for (table, col, ..) in upgrade::ADDED_COLUMNS {
            let has: bool = s
                .conn
                .prepare("SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2")
                .unwrap()
                .exists([table, col])
                .unwrap();
            assert!(has, "{table}.{col} missing after the upgrade");
        }
        drop(s);
        Store::open(&path)
            .unwrap()
            .conn
            .execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'", [])
            .unwrap();
        let err = Store::open(&path).err().unwrap();
        assert!(format!("{err:#}").contains("schema version 99"), "{err:#}");
    }

    #[test]
    fn a_session_records_svcbenchs_commit_and_each_services() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, path) = (dir.path().join("repo"), dir.path().join("s.db"));
        let svc_dir = repo.join("svc");
        std::fs::create_dir_all(&svc_dir).unwrap();
        std::fs::write(
            svc_dir.join("svcbench.toml"),
            crate::manifest::test_manifest("s", "hello", "run = \"./s\"\nreadiness = \"/\"\n"),
        )
        .unwrap();
        let git = |args: &[&str]| {
            let ok = std::process::Command::new("git")
                .arg("-C")
                .arg(&repo)
                .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"])
                .args(args)
                .stdout(std::process::Stdio::null())
                .status()
                .unwrap()
                .success();
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q"]);
        git(&["add", "."]);
        git(&["commit", "-qm", "one"]);
        let svc = crate::manifest::Service::load(&svc_dir).unwrap();
        let s = Store::open(&path).unwrap();
        let session = s.create_session(&SessionRecord { command: "t".into(), ..Default::default() }).unwrap();
        s.add_service(session, &svc, true, Some(0.0), None, None).unwrap();
        std::fs::write(svc_dir.join("main.sh"), "edited").unwrap();
        let other = session + 1;
        assert_eq!(s.create_session(&SessionRecord { command: "t".into(), ..Default::default() }).unwrap(), other);
        s.add_service(other, &svc, true, Some(0.0), None, None).unwrap();
        drop(s);
        let r = Reader::open(&path).unwrap();
        let (clean, dirty) = (&r.services(session).unwrap()[0], &r.services(other).unwrap()[0]);
        let commit = clean.git_commit.clone().expect("the service's commit");
        assert!(commit.len() == 40 && clean.git_dirty == Some(false), "{clean:?}");
        assert_eq!((dirty.git_commit.as_deref(), dirty.git_dirty), (Some(commit.as_str()), Some(true)));
        let version = &r.sessions().unwrap()[0].svcbench_version;
        assert!(version.starts_with(env!("CARGO_PKG_VERSION")) && version == crate::VERSION, "{version}");
        // This checkout's svcbench is built from a commit; a source archive would leave the version bare.
        assert!(
            crate::VERSION.contains("(commit ") || crate::git::state(Path::new(env!("CARGO_MANIFEST_DIR"))).is_none()
        );
    }

    #[test]
    fn a_step_row_written_is_the_step_row_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let s = Store::open(&path).unwrap();
        let session = s.create_session(&SessionRecord { command: "t".into(), ..Default::default() }).unwrap();
        let run = s.start_run(session, "svc", 1).unwrap();
        let row = StepRow {
            seq: 1,
            label: "c=8".into(),
            model: "closed".into(),
            connections: Some(8),
            mix: "default".into(),
            duration_s: 4.0,
            requests_ok: 1000,
            requests_ok_in_window: Some(1000),
            conn_starved: Some(4),
            err_reset: Some(3),
            err_connect_refused: Some(0),
            status_counts: "{}".into(),
            timeline: "[]".into(),
            success_rps: 250.0,
            valid: Some(false),
            flags: Some(r#"[{"code":"starved_connections","detail":"4 of 8"}]"#.into()),
            ..Default::default()
        };
        s.add_step(run, &row, &[]).unwrap();
        drop(s);
        let r = Reader::open(&path).unwrap();
        let back = r.steps(run).unwrap();
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].conn_starved, Some(4));
        assert_eq!(back[0].err_reset, Some(3));
        assert!(back[0].validity().has(crate::figures::validity::FlagCode::StarvedConnections));
        assert_eq!(back[0].errors_by_kind().iter().find(|(k, _)| *k == "reset").unwrap().1, 3);
    }

    #[test]
    fn reading_a_store_leaves_no_files_beside_it_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        drop(Store::open(&path).unwrap());
        let beside = || {
            let mut v: Vec<String> = std::fs::read_dir(dir.path())
                .unwrap()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into())
                .collect();
            v.sort();
            v
        };
        assert_eq!(beside(), ["s.db"]);
        let r = Reader::open(&path).unwrap();
        assert!(r.sessions().unwrap().is_empty());
        // Every write is refused.
        assert!(r.conn.execute("DELETE FROM session", []).is_err());
        drop(r);
        assert_eq!(beside(), ["s.db"], "a report would leave these beside the store each time");
    }
}

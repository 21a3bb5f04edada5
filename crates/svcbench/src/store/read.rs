//! The store's read-only API: what `report`, `compare` and `export` read, without SQL of their own. A
//! reader never changes what it reads; a store of an older schema is upgraded first (columns are only ever
//! added), then opened read-only.
use super::records::StepRow;
use crate::figures::Validity;
use anyhow::{bail, Context, Result};
use rusqlite::{Connection, OpenFlags, Row};
use std::path::Path;

#[derive(Debug, Clone)]
pub struct Session {
    pub id: i64,
    pub started_at: String,
    pub ended_at: Option<String>,
    pub label: Option<String>,
    pub command: String,
    pub svcbench_version: String,
    pub scenario: String,
    pub profile: String,
    pub runs_per_service: i64,
    pub host_name: Option<String>,
    pub cpu_model: Option<String>,
    pub cpu_cores: Option<i64>,
    pub memory_mib: Option<f64>,
    pub kernel: Option<String>,
    pub cgroup_version: String,
    pub limit_cpus: Option<f64>,
    pub limit_memory_mib: Option<f64>,
    pub service_cpuset: Option<String>,
    pub loadgen_cpuset: Option<String>,
    /// Machine-speed drift allowed before a step is flagged, as a fraction (0.1: 10 %); None in older stores.
    pub probe_tolerance: Option<f64>,
    pub status: String,
    pub warnings: Vec<String>,
    pub study: Option<String>,
    /// `--net`: the parts' addresses and links; None: everything on loopback.
    pub network: Option<String>,
    /// The machines reached over ssh (a hosts file's generators), with their facts.
    pub other_hosts: Vec<crate::host::OtherHost>,
    /// The dependencies' warm-up before the first run, as JSON (None: no warm-up).
    pub warmup: Option<String>,
}

#[derive(Debug, Clone)]
pub struct StoredService {
    pub session_id: i64,
    pub name: String,
    pub language: String,
    pub framework: String,
    pub framework_version: String,
    pub model: String,
    pub build_ok: bool,
    pub build_s: Option<f64>,
    pub build_error: Option<String>,
    pub artifact_bytes: Option<i64>,
    pub refuses_bad_dependency: Option<bool>,
    pub refuse_detail: Option<String>,
    /// The name without `@variant`, and the variant (None: the base).
    pub base_name: String,
    pub variant: Option<String>,
    /// How it ran: `process`, `container (podman)`, `pod (podman kube play)`; None: a process.
    pub runtime: Option<String>,
    /// The commit of the service folder's repository, and whether the folder differed from it; None outside
    /// a repository (and in stores before version 16).
    pub git_commit: Option<String>,
    pub git_dirty: Option<bool>,
    /// The revision as given when the service was named `FOLDER#REV`.
    pub git_revision: Option<String>,
}

impl StoredService {
    /// Whether it ran as a container or a Pod rather than a process.
    pub fn ran_contained(&self) -> bool {
        self.runtime.as_deref().is_some_and(|r| r != "process")
    }

    /// A service known only from its runs (its row is missing or filtered out).
    pub fn placeholder(session_id: i64, name: &str) -> StoredService {
        StoredService {
            session_id,
            name: name.to_string(),
            language: String::new(),
            framework: String::new(),
            framework_version: String::new(),
            model: String::new(),
            build_ok: true,
            build_s: None,
            build_error: None,
            artifact_bytes: None,
            refuses_bad_dependency: None,
            refuse_detail: None,
            base_name: name.split('@').next().unwrap_or(name).to_string(),
            variant: name.split_once('@').map(|(_, v)| v.to_string()),
            runtime: None,
            git_commit: None,
            git_dirty: None,
            git_revision: None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct StoredCheck {
    pub seq: i64,
    pub name: String,
    pub passed: bool,
    pub reason: String,
}

#[derive(Debug, Clone)]
pub struct Run {
    pub id: i64,
    pub session_id: i64,
    pub service: String,
    pub run_index: i64,
    /// Index of the run within its report group, 1-based (the `#n` of its label); set by the report.
    pub ordinal: usize,
    /// "go-nethttp #1": what tooltips and tables call the run; set by the report.
    pub label: String,
    pub group: usize,
    pub status: String,
    pub error: Option<String>,
    pub startup_ms: Option<f64>,
    /// A container's startup from its engine's "started" (None for a process).
    pub startup_engine_ms: Option<f64>,
    pub idle_mem_mib: Option<f64>,
    pub idle_rss_mib: Option<f64>,
    pub checks_passed: Option<i64>,
    pub checks_failed: Option<i64>,
    pub shutdown_ms: Option<f64>,
    pub stopped_gracefully: Option<bool>,
    pub exit_code: Option<i64>,
    pub exit_signal: Option<i64>,
    pub oom_killed: bool,
    pub crashed: bool,
    /// Ended by svcbench after sitting at its memory cap without answering (NULL in older stores: false).
    pub stuck_at_memory_cap: bool,
    /// The user the service ran as (NULL in older stores and for a service on its own machine).
    pub service_user: Option<String>,
    pub failed_stage: Option<String>,
    pub total_cpu_s: Option<f64>,
    pub total_requests_ok: Option<i64>,
    pub cgroup_version: Option<String>,
    pub applied_cpus: Option<f64>,
    pub applied_memory_mib: Option<f64>,
    pub applied_cpuset: Option<String>,
    /// The limits cell as asked (`cpus=0.5 memory=256M`); None before studies were stored.
    pub cell: Option<String>,
    pub asked_cpus: Option<f64>,
    pub asked_memory_mib: Option<f64>,
    pub warnings: Vec<String>,
    /// The warning when the service listened on more than its `{host}` after startup (None: only there, or
    /// not read: on another machine, or in an older store).
    pub listen_warning: Option<String>,
    /// Where the service's processes listened after startup, as read from /proc (None: not read).
    pub listen_addrs: Option<String>,
    /// Whether the run completed under the limits asked, as stored (None: not yet ended).
    pub valid: Option<bool>,
    flags: Option<String>,
    pub steps: Vec<StepRow>,
    pub checks: Vec<StoredCheck>,
    pub figures: Vec<(String, f64)>,
}

impl Run {
    /// The run's flags; a run stored before validity was gets "incomplete" from its status alone.
    pub fn validity(&self) -> Validity {
        match &self.flags {
            Some(j) => Validity::from_json(j),
            None => Validity { flags: crate::figures::validity::run_flags(&self.status, &[], &[]) },
        }
    }

    /// The flags as stored (None in a store made before validity was, where `validity` infers them).
    pub fn stored_flags(&self) -> Option<Validity> {
        self.flags.as_deref().map(Validity::from_json)
    }

    /// Whether the run's figures may enter medians and verdicts: completed, under the limits asked.
    pub fn counts(&self) -> bool {
        self.validity().valid()
    }

    /// Whether the run's valid steps enter medians and verdicts: it counts, or the service ended it under the
    /// limits asked. A capacity profile breaks the service on purpose, so dying in the step that broke it is an
    /// answer and the valid steps before it stand; figures of the whole run (CPU per request) still need `counts`.
    pub fn enters_figures(&self) -> bool {
        self.counts() || self.ended_by_the_service()
    }

    /// Whether the service ended the run under the limits asked (OOM-killed, crashed, stuck at its memory
    /// cap): its answer under those limits, as a resumed study counts it (`completed_cells`).
    pub fn ended_by_the_service(&self) -> bool {
        self.status == "failed"
            && (self.oom_killed || self.crashed || self.stuck_at_memory_cap)
            && !self.validity().has(crate::figures::validity::FlagCode::Unlimited)
            && !self.validity().has(crate::figures::validity::FlagCode::StoreChanged)
    }
}

fn json_strings(s: Option<String>) -> Vec<String> {
    s.and_then(|t| serde_json::from_str::<Vec<String>>(&t).ok()).unwrap_or_default()
}

fn session_of(r: &Row) -> rusqlite::Result<Session> {
    Ok(Session {
        id: r.get("id")?,
        started_at: r.get("started_at")?,
        ended_at: r.get("ended_at")?,
        label: r.get("label")?,
        command: r.get("command")?,
        svcbench_version: r.get("svcbench_version")?,
        scenario: r.get("scenario")?,
        profile: r.get("profile")?,
        runs_per_service: r.get("runs_per_service")?,
        host_name: r.get("host_name")?,
        cpu_model: r.get("cpu_model")?,
        cpu_cores: r.get("cpu_cores")?,
        memory_mib: r.get("memory_mib")?,
        kernel: r.get("kernel")?,
        cgroup_version: r.get("cgroup_version")?,
        limit_cpus: r.get("limit_cpus")?,
        limit_memory_mib: r.get("limit_memory_mib")?,
        service_cpuset: r.get("service_cpuset")?,
        loadgen_cpuset: r.get("loadgen_cpuset")?,
        probe_tolerance: r.get("probe_tolerance")?,
        status: r.get("status")?,
        warnings: json_strings(r.get("warnings")?),
        study: r.get("study")?,
        network: r.get("network")?,
        warmup: r.get("warmup")?,
        other_hosts: r
            .get::<_, Option<String>>("other_hosts")?
            .and_then(|j| serde_json::from_str(&j).ok())
            .unwrap_or_default(),
    })
}

fn service_of(r: &Row) -> rusqlite::Result<StoredService> {
    Ok(StoredService {
        session_id: r.get("session_id")?,
        name: r.get("name")?,
        language: r.get("language")?,
        framework: r.get("framework")?,
        framework_version: r.get("framework_version")?,
        model: r.get("model")?,
        build_ok: r.get::<_, i64>("build_ok")? != 0,
        build_s: r.get("build_s")?,
        build_error: r.get("build_error")?,
        artifact_bytes: r.get("artifact_bytes")?,
        refuses_bad_dependency: r.get::<_, Option<i64>>("refuses_bad_dependency")?.map(|v| v != 0),
        refuse_detail: r.get("refuse_detail")?,
        base_name: r.get::<_, Option<String>>("base_name")?.unwrap_or_else(|| r.get("name").unwrap_or_default()),
        variant: r.get("variant")?,
        runtime: r.get("runtime")?,
        git_commit: r.get("git_commit")?,
        git_dirty: r.get::<_, Option<i64>>("git_dirty")?.map(|v| v != 0),
        git_revision: r.get("git_revision")?,
    })
}

fn run_of(r: &Row) -> rusqlite::Result<Run> {
    Ok(Run {
        id: r.get("id")?,
        session_id: r.get("session_id")?,
        service: r.get("service")?,
        run_index: r.get("run_index")?,
        ordinal: 0,
        label: String::new(),
        group: 0,
        status: r.get("status")?,
        error: r.get("error")?,
        startup_ms: r.get("startup_ms")?,
        startup_engine_ms: r.get("startup_engine_ms")?,
        idle_mem_mib: r.get("idle_mem_mib")?,
        idle_rss_mib: r.get("idle_rss_mib")?,
        checks_passed: r.get("checks_passed")?,
        checks_failed: r.get("checks_failed")?,
        shutdown_ms: r.get("shutdown_ms")?,
        stopped_gracefully: r.get::<_, Option<i64>>("stopped_gracefully")?.map(|v| v != 0),
        exit_code: r.get("exit_code")?,
        exit_signal: r.get("exit_signal")?,
        oom_killed: r.get::<_, i64>("oom_killed")? != 0,
        crashed: r.get::<_, i64>("crashed")? != 0,
        stuck_at_memory_cap: r.get::<_, Option<i64>>("stuck_at_memory_cap")?.unwrap_or(0) != 0,
        service_user: r.get("service_user")?,
        failed_stage: r.get("failed_stage")?,
        total_cpu_s: r.get("total_cpu_s")?,
        total_requests_ok: r.get("total_requests_ok")?,
        cgroup_version: r.get("cgroup_version")?,
        applied_cpus: r.get("applied_cpus")?,
        applied_memory_mib: r.get("applied_memory_mib")?,
        applied_cpuset: r.get("applied_cpuset")?,
        cell: r.get("cell")?,
        asked_cpus: r.get("asked_cpus")?,
        asked_memory_mib: r.get("asked_memory_mib")?,
        warnings: json_strings(r.get("warnings")?),
        listen_warning: r.get("listen_warning")?,
        listen_addrs: r.get("listen_addrs")?,
        valid: r.get::<_, Option<i64>>("valid")?.map(|v| v != 0),
        flags: r.get("flags")?,
        steps: Vec::new(),
        checks: Vec::new(),
        figures: Vec::new(),
    })
}

/// A read-only view of a store.
pub struct Reader {
    pub(super) conn: Connection,
}

impl Reader {
    pub fn open(path: &Path) -> Result<Reader> {
        if !path.exists() {
            bail!("store {} does not exist; run `svcbench run …` first or pass --db", path.display());
        }
        // Opened for writing where the file allows it (SQLite falls back to reading only), with every write
        // refused: a read-only connection cannot remove the WAL files it makes, and a report would leave an
        // empty `-wal` and a `-shm` beside the store each time.
        let reading = || -> Result<Connection> {
            let conn =
                Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX)
                    .with_context(|| format!("cannot open store {}", path.display()))?;
            conn.pragma_update(None, "query_only", true)?;
            conn.busy_timeout(std::time::Duration::from_secs(10))?;
            Ok(conn)
        };
        let conn = reading()?;
        let has_meta = conn
            .query_row("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'", [], |r| {
                r.get::<_, i64>(0)
            })
            .with_context(|| format!("{} is not an svcbench store", path.display()))?;
        if has_meta == 0 {
            bail!("{} is not an svcbench store (no meta table)", path.display());
        }
        if super::upgrade::needs_upgrade(&conn)? {
            drop(conn);
            // Adds the newer columns (every older row stays as it was), then reads.
            super::Store::open(path)?;
            return Ok(Reader { conn: reading()? });
        }
        Ok(Reader { conn })
    }

    pub fn sessions(&self) -> Result<Vec<Session>> {
        Ok(self
            .conn
            .prepare("SELECT * FROM session ORDER BY id")?
            .query_map([], session_of)?
            .collect::<rusqlite::Result<_>>()?)
    }

    /// Ended runs of a study per (service, cell): what a resumed study does not run again. A run whose service
    /// was OOM-killed, crashed or stuck at its memory cap is its answer under those limits, not an interruption, and counts
    /// too; only when the profile restarts the service for later steps (`all_steps`: their number) must it
    /// have stored them all (older runs stopped at the death). With `make_up`, a run that measured nothing of
    /// its service (`Validity::measured_nothing`: the generator late from its first step, say) does not count,
    /// so a resume runs another in its place; it stays in the store.
    pub fn completed_cells(
        &self,
        study: &str,
        all_steps: Option<usize>,
        make_up: bool,
    ) -> Result<std::collections::BTreeMap<(String, String), u32>> {
        let mut st = self.conn.prepare(
            "SELECT r.service, COALESCE(r.cell, ''), r.id FROM run r JOIN session s ON s.id = r.session_id
             WHERE s.study = ?1 AND (r.status = 'completed'
               OR (r.status = 'failed' AND (r.oom_killed = 1 OR r.crashed = 1 OR r.stuck_at_memory_cap = 1)
                   AND (?2 IS NULL OR (SELECT COUNT(*) FROM step WHERE run_id = r.id) >= ?2)))",
        )?;
        let rows = st.query_map(rusqlite::params![study, all_steps.map(|n| n as i64)], |r| {
            Ok(((r.get::<_, String>(0)?, r.get::<_, String>(1)?), r.get::<_, i64>(2)?))
        })?;
        let mut out = std::collections::BTreeMap::new();
        for row in rows {
            let (cell, run) = row?;
            if make_up {
                let steps: Vec<Validity> = self.steps(run)?.iter().map(StepRow::validity).collect();
                if Validity::measured_nothing(&steps) {
                    continue;
                }
            }
            *out.entry(cell).or_insert(0) += 1;
        }
        Ok(out)
    }

    /// Sessions of a study in this store.
    pub fn study_sessions(&self, study: &str) -> Result<usize> {
        Ok(self.conn.query_row("SELECT COUNT(*) FROM session WHERE study = ?1", [study], |r| r.get(0))?)
    }

    pub fn run_count(&self, session: i64) -> Result<i64> {
        Ok(self.conn.query_row("SELECT COUNT(*) FROM run WHERE session_id = ?1", [session], |r| r.get(0))?)
    }

    pub fn services(&self, session: i64) -> Result<Vec<StoredService>> {
        Ok(self
            .conn
            .prepare("SELECT * FROM service WHERE session_id = ?1 ORDER BY rowid")?
            .query_map([session], service_of)?
            .collect::<rusqlite::Result<_>>()?)
    }

    /// A session's runs, without their steps and checks (see `fill`).
    pub fn runs(&self, session: i64) -> Result<Vec<Run>> {
        Ok(self
            .conn
            .prepare("SELECT * FROM run WHERE session_id = ?1 ORDER BY run_index, id")?
            .query_map([session], run_of)?
            .collect::<rusqlite::Result<_>>()?)
    }

    pub fn steps(&self, run: i64) -> Result<Vec<StepRow>> {
        let mut stmt = self.conn.prepare(
            "SELECT s.*, (SELECT rss_mib FROM sample WHERE step_id = s.id ORDER BY t_s DESC LIMIT 1) AS rss_end_mib
             FROM step s WHERE s.run_id = ?1 ORDER BY s.seq",
        )?;
        let rows = serde_rusqlite::from_rows::<StepRow>(stmt.query([run])?);
        rows.collect::<std::result::Result<Vec<_>, _>>().context("cannot read a step row")
    }

    pub fn checks(&self, run: i64) -> Result<Vec<StoredCheck>> {
        Ok(self
            .conn
            .prepare("SELECT seq, name, passed, reason FROM check_result WHERE run_id = ?1 ORDER BY seq")?
            .query_map([run], |r| {
                Ok(StoredCheck { seq: r.get(0)?, name: r.get(1)?, passed: r.get::<_, i64>(2)? != 0, reason: r.get(3)? })
            })?
            .collect::<rusqlite::Result<_>>()?)
    }

    pub fn run_figures(&self, run: i64) -> Result<Vec<(String, f64)>> {
        Ok(self
            .conn
            .prepare("SELECT name, value FROM run_figure WHERE run_id = ?1 ORDER BY name")?
            .query_map([run], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?)
    }

    /// How many sampler readings are stored with the run's steps.
    pub fn sample_count(&self, run: i64) -> Result<i64> {
        Ok(self.conn.query_row(
            "SELECT COUNT(*) FROM sample WHERE step_id IN (SELECT id FROM step WHERE run_id = ?1)",
            [run],
            |r| r.get(0),
        )?)
    }

    /// Whether the store has the table: a store read only, never upgraded, may predate the duet tables.
    pub(super) fn has_table(&self, name: &str) -> Result<bool> {
        Ok(self.conn.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1")?.exists([name])?)
    }

    /// Loads a run's steps, checks and extra figures into it.
    pub fn fill(&self, run: &mut Run) -> Result<()> {
        run.steps = self.steps(run.id)?;
        run.checks = self.checks(run.id)?;
        run.figures = self.run_figures(run.id)?;
        Ok(())
    }
}

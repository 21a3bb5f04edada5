//! Reads the store (read-only) into plain structs: the selected sessions, their services, runs, steps and
//! checks, with the runs grouped into the lines a reader compares (one group = one colour).
use super::filter::{Filter, SessionKey};
use anyhow::{bail, Context, Result};
use rusqlite::{Connection, OpenFlags, Row};
use std::collections::BTreeMap;
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
    pub status: String,
    pub warnings: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Service {
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
}

#[derive(Debug, Clone)]
pub struct Check {
    pub seq: i64,
    pub name: String,
    pub passed: bool,
    pub reason: String,
}

#[derive(Debug, Clone)]
pub struct Step {
    pub seq: i64,
    pub label: String,
    pub model: String,
    pub connections: Option<i64>,
    pub rate: Option<f64>,
    pub mix: String,
    pub upstream_delay_ms: Option<i64>,
    pub requests_ok: i64,
    pub success_rps: f64,
    pub error_ratio: f64,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    pub mean_ms: Option<f64>,
    pub open_intended: Option<i64>,
    pub cpu_s: Option<f64>,
    pub cpu_ms_per_req: Option<f64>,
    pub mem_peak_mib: Option<f64>,
    pub mem_mib_s_per_req: Option<f64>,
    pub rss_peak_mib: Option<f64>,
    /// RSS at the step's last sampler reading (seed 002's "RSS after replay").
    pub rss_end_mib: Option<f64>,
    pub client_saturated: bool,
    pub dep_saturated: bool,
    pub oom_killed: bool,
    pub crashed: bool,
}

impl Step {
    /// Share of the requests that succeeded: of the intended ones in the open model (unsent ones count as
    /// failed, as in seed 004's "fewer than 90 % succeed"), of the completed ones in the closed model.
    pub fn success_ratio(&self) -> f64 {
        match self.open_intended {
            Some(n) if n > 0 => (self.requests_ok as f64 / n as f64).min(1.0),
            _ => 1.0 - self.error_ratio,
        }
    }

    pub fn is_open(&self) -> bool {
        self.model == "open"
    }
}

#[derive(Debug, Clone)]
pub struct Run {
    pub id: i64,
    pub session_id: i64,
    pub service: String,
    pub run_index: i64,
    /// Index of the run within its group, 1-based (the `#n` of its label).
    pub ordinal: usize,
    /// "go-nethttp #1": what tooltips and tables call the run.
    pub label: String,
    pub group: usize,
    pub status: String,
    pub error: Option<String>,
    pub startup_ms: Option<f64>,
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
    pub total_cpu_s: Option<f64>,
    pub total_requests_ok: Option<i64>,
    pub warnings: Vec<String>,
    pub steps: Vec<Step>,
    pub checks: Vec<Check>,
    pub figures: Vec<(String, f64)>,
}

/// The runs drawn in one colour: one service of one session, or (pooled, for compare) one service name
/// over all selected sessions.
#[derive(Debug, Clone)]
pub struct Group {
    pub name: String,
    pub service: Service,
    pub runs: Vec<usize>,
}

#[derive(Debug, Clone)]
pub struct Dataset {
    pub source: String,
    pub filter: String,
    pub sessions: Vec<Session>,
    pub groups: Vec<Group>,
    pub runs: Vec<Run>,
}

impl Dataset {
    pub fn group_runs(&self, g: usize) -> impl Iterator<Item = &Run> {
        self.groups[g].runs.iter().map(move |&i| &self.runs[i])
    }

    pub fn scenarios(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.sessions.iter().map(|s| s.scenario.as_str()).collect();
        v.dedup();
        v
    }
}

/// Opens a store without writing to it (a report must not change what it reports on).
pub fn open(path: &Path) -> Result<Connection> {
    if !path.exists() {
        bail!("store {} does not exist; run `svcbench run …` first or pass --db", path.display());
    }
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .with_context(|| format!("cannot open store {}", path.display()))?;
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    let version: Option<String> = conn
        .query_row("SELECT value FROM meta WHERE key = 'schema_version'", [], |r| r.get(0))
        .with_context(|| format!("{} is not an svcbench store (no meta table)", path.display()))?;
    if !version.as_deref().is_some_and(|v| crate::store::READABLE_VERSIONS.contains(&v)) {
        bail!(
            "store {} has schema version {:?}; this svcbench reads version {}",
            path.display(),
            version,
            crate::store::SCHEMA_VERSION
        );
    }
    Ok(conn)
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
        status: r.get("status")?,
        warnings: json_strings(r.get("warnings")?),
    })
}

/// Loads what `filter` selects. `pooled`: one group per service name over all selected sessions (compare);
/// otherwise a service that appears in several sessions gets one group per session (report).
pub fn load(conn: &Connection, source: &str, filter: &Filter, pooled: bool) -> Result<Dataset> {
    let all: Vec<Session> = conn
        .prepare("SELECT * FROM session ORDER BY id")?
        .query_map([], session_of)?
        .collect::<rusqlite::Result<_>>()?;
    if all.is_empty() {
        bail!("store {source} holds no sessions yet; run `svcbench run …` first");
    }
    let latest = all.iter().map(|s| s.id).max().unwrap_or(0);
    let mut sessions: Vec<Session> = all
        .iter()
        .filter(|s| {
            let key = SessionKey { id: s.id, label: s.label.as_deref(), scenario: &s.scenario, profile: &s.profile };
            filter.session_matches(&key, latest)
        })
        .cloned()
        .collect();
    if !filter.picks_sessions() {
        // Default: the newest scenario (that has runs) among what the other terms allow.
        let has_runs = |id: i64| -> bool {
            conn.query_row("SELECT COUNT(*) FROM run WHERE session_id = ?1", [id], |r| r.get::<_, i64>(0)).unwrap_or(0)
                > 0
        };
        if let Some(newest) = sessions.iter().rev().find(|s| has_runs(s.id)).map(|s| s.scenario.clone()) {
            sessions.retain(|s| s.scenario == newest);
        }
    }

    let mut services: Vec<Service> = Vec::new();
    let mut runs: Vec<Run> = Vec::new();
    for s in &sessions {
        let mut stmt = conn.prepare("SELECT * FROM service WHERE session_id = ?1 ORDER BY rowid")?;
        let rows = stmt.query_map([s.id], |r| {
            Ok(Service {
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
            })
        })?;
        for svc in rows {
            let svc = svc?;
            if filter.service_matches(&svc.name) {
                services.push(svc);
            }
        }
        let mut stmt = conn.prepare("SELECT * FROM run WHERE session_id = ?1 ORDER BY run_index, id")?;
        let rows = stmt.query_map([s.id], |r| {
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
                total_cpu_s: r.get("total_cpu_s")?,
                total_requests_ok: r.get("total_requests_ok")?,
                warnings: json_strings(r.get("warnings")?),
                steps: Vec::new(),
                checks: Vec::new(),
                figures: Vec::new(),
            })
        })?;
        for run in rows {
            let run = run?;
            if filter.service_matches(&run.service) {
                runs.push(run);
            }
        }
    }
    for run in &mut runs {
        run.steps = load_steps(conn, run.id)?;
        run.checks = conn
            .prepare("SELECT seq, name, passed, reason FROM check_result WHERE run_id = ?1 ORDER BY seq")?
            .query_map([run.id], |r| {
                Ok(Check { seq: r.get(0)?, name: r.get(1)?, passed: r.get::<_, i64>(2)? != 0, reason: r.get(3)? })
            })?
            .collect::<rusqlite::Result<_>>()?;
        run.figures = conn
            .prepare("SELECT name, value FROM run_figure WHERE run_id = ?1 ORDER BY name")?
            .query_map([run.id], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
    }
    // Sessions that contribute nothing (e.g. every service filtered out) are not shown.
    sessions.retain(|s| runs.iter().any(|r| r.session_id == s.id) || services.iter().any(|v| v.session_id == s.id));
    if runs.is_empty() && services.is_empty() {
        let known: Vec<String> = all
            .iter()
            .map(|s| {
                format!(
                    "{} ({}{}, {})",
                    s.id,
                    s.scenario,
                    s.label.as_ref().map(|l| format!(", label {l}")).unwrap_or_default(),
                    s.started_at
                )
            })
            .collect();
        bail!("no runs in {source} match --filter {}; sessions there: {}", filter.describe(), known.join("; "));
    }

    let groups = group(&sessions, &services, &mut runs, pooled);
    Ok(Dataset { source: source.to_string(), filter: filter.describe(), sessions, groups, runs })
}

fn load_steps(conn: &Connection, run_id: i64) -> Result<Vec<Step>> {
    let mut stmt = conn.prepare(
        "SELECT s.*, (SELECT rss_mib FROM sample WHERE step_id = s.id ORDER BY t_s DESC LIMIT 1) AS rss_end_mib
         FROM step s WHERE s.run_id = ?1 ORDER BY s.seq",
    )?;
    let rows = stmt.query_map([run_id], |r| {
        Ok(Step {
            seq: r.get("seq")?,
            label: r.get("label")?,
            model: r.get("model")?,
            connections: r.get("connections")?,
            rate: r.get("rate")?,
            mix: r.get("mix")?,
            upstream_delay_ms: r.get("upstream_delay_ms")?,
            requests_ok: r.get("requests_ok")?,
            success_rps: r.get("success_rps")?,
            error_ratio: r.get("error_ratio")?,
            p50: r.get("p50")?,
            p90: r.get("p90")?,
            p99: r.get("p99")?,
            mean_ms: r.get("mean_ms")?,
            open_intended: r.get("open_intended")?,
            cpu_s: r.get("cpu_s")?,
            cpu_ms_per_req: r.get("cpu_ms_per_req")?,
            mem_peak_mib: r.get("mem_peak_mib")?,
            mem_mib_s_per_req: r.get("mem_mib_s_per_req")?,
            rss_peak_mib: r.get("rss_peak_mib")?,
            rss_end_mib: r.get("rss_end_mib")?,
            client_saturated: r.get::<_, i64>("client_saturated")? != 0,
            dep_saturated: r.get::<_, i64>("dep_saturated")? != 0,
            oom_killed: r.get::<_, i64>("oom_killed")? != 0,
            crashed: r.get::<_, i64>("crashed")? != 0,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Groups runs into colours. Group order follows the services' order in the store (the command line's).
fn group(sessions: &[Session], services: &[Service], runs: &mut [Run], pooled: bool) -> Vec<Group> {
    // How many selected sessions each service name appears in: names seen in several get a session tag.
    let mut seen: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for r in runs.iter() {
        let v = seen.entry(r.service.clone()).or_default();
        if !v.contains(&r.session_id) {
            v.push(r.session_id);
        }
    }
    let tag = |name: &str, session_id: i64| -> String {
        if pooled || seen.get(name).map_or(1, |v| v.len()) <= 1 {
            return name.to_string();
        }
        let label = sessions.iter().find(|s| s.id == session_id).and_then(|s| s.label.clone());
        let label_unique = label.as_ref().is_some_and(|l| {
            seen[name].iter().filter(|&&id| sessions.iter().any(|s| s.id == id && s.label.as_ref() == Some(l))).count()
                == 1
        });
        match label {
            Some(l) if label_unique => format!("{name} ({l})"),
            _ => format!("{name} (session {session_id})"),
        }
    };
    let mut groups: Vec<Group> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut add = |name: String, svc: &Service, groups: &mut Vec<Group>| -> usize {
        *index.entry(name.clone()).or_insert_with(|| {
            groups.push(Group { name, service: svc.clone(), runs: Vec::new() });
            groups.len() - 1
        })
    };
    for svc in services {
        add(tag(&svc.name, svc.session_id), svc, &mut groups);
    }
    for (i, r) in runs.iter_mut().enumerate() {
        let name = tag(&r.service, r.session_id);
        let placeholder = Service {
            session_id: r.session_id,
            name: r.service.clone(),
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
        };
        let g = add(name, &placeholder, &mut groups);
        r.group = g;
        groups[g].runs.push(i);
    }
    for g in &mut groups {
        g.runs.sort_by_key(|&i| (runs[i].session_id, runs[i].run_index, runs[i].id));
        for (k, &i) in g.runs.iter().enumerate() {
            runs[i].ordinal = k + 1;
            runs[i].label = format!("{} #{}", g.name, k + 1);
        }
    }
    groups
}

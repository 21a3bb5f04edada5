//! Columns added after schema version 1, in one list: a new store gets them right after schema.sql, an
//! older one in place (only columns are ever added, so every older row stays readable; its new columns
//! are NULL, which readers take as "not measured by the svcbench that wrote it").
use anyhow::Result;
use rusqlite::Connection;

/// (table, column, SQL type, the schema version that added it, what it holds).
pub const ADDED_COLUMNS: &[(&str, &str, &str, u32, &str)] = &[
    ("step", "in_flight_at_end", "INTEGER", 2, "requests sent but unanswered when the step ended"),
    ("step", "requests_ok_in_window", "INTEGER", 3, "successes completed inside the step's window (what req/s counts)"),
    ("step", "err_connect_refused", "INTEGER", 3, "connection refused"),
    ("step", "err_connect_timeout", "INTEGER", 3, "connection not made within the connect timeout"),
    ("step", "err_client_resource", "INTEGER", 3, "the generator's own failure: EMFILE, EADDRNOTAVAIL, ..."),
    ("step", "err_reset", "INTEGER", 3, "connection reset while a request was in flight"),
    ("step", "err_closed_early", "INTEGER", 3, "connection closed before the response was complete"),
    ("step", "connect_attempts_failed", "INTEGER", 3, "every failed connect attempt, retries included"),
    ("step", "success_ratio", "REAL", 3, "figures::success_ratio, the one definition per model"),
    ("step", "open_lag_p50_ms", "REAL", 3, "the generator's own schedule lag (open model)"),
    ("step", "open_lag_p99_ms", "REAL", 3, ""),
    ("step", "open_lag_max_ms", "REAL", 3, ""),
    ("step", "open_achieved_rate", "REAL", 3, "requests sent in the window per second"),
    ("step", "conn_used", "INTEGER", 3, "connection slots used"),
    ("step", "conn_starved", "INTEGER", 3, "connections that got no answer at all in the step"),
    ("step", "conn_never_connected", "INTEGER", 3, "connection slots whose attempts never completed"),
    ("step", "answers_min", "INTEGER", 3, "answers per connection"),
    ("step", "answers_median", "INTEGER", 3, ""),
    ("step", "answers_max", "INTEGER", 3, ""),
    ("step", "oldest_unanswered_ms", "REAL", 3, "age of the oldest request unanswered at the end"),
    ("step", "stalled", "INTEGER", 3, "requests unanswered at the end after waiting half the step or more"),
    ("step", "client_workers", "TEXT", 3, "JSON: per generator worker, CPU, run-queue wait and wall seconds"),
    ("step", "dep_wait_s", "REAL", 3, "seconds the dependencies' threads waited for a CPU"),
    ("step", "probe_ms", "REAL", 3, "machine-speed probe: the slowest CPU's time for the fixed loop"),
    ("step", "valid", "INTEGER", 3, "1 when no flag stands against the step"),
    ("step", "flags", "TEXT", 3, "JSON: [{code, detail}], figures::validity"),
    ("run", "applied_cpus", "REAL", 3, "CPU quota read back from the cgroup"),
    ("run", "applied_memory_mib", "REAL", 3, "memory cap read back from the cgroup"),
    ("run", "applied_cpuset", "TEXT", 3, "CPU set read back from the cgroup"),
    ("run", "failed_stage", "TEXT", 3, "startup, checks or step N: where the service died"),
    ("run", "valid", "INTEGER", 3, "1 when the run completed under the limits asked"),
    ("run", "flags", "TEXT", 3, "JSON: [{code, detail}]"),
    ("session", "probe_tolerance", "REAL", 3, "machine-speed drift allowed before a step is flagged"),
    ("session", "warmup", "TEXT", 3, "JSON: the dependencies' warm-up before the first run"),
    ("session", "study", "TEXT", 4, "the study the session ran for (svcbench study)"),
    ("service", "base_name", "TEXT", 4, "the service's name without @variant"),
    ("service", "variant", "TEXT", 4, "the variant ([variant.<name>] of the manifest); NULL: the base"),
    ("run", "cell", "TEXT", 4, "the limits cell as asked, e.g. `cpus=0.5 memory=256M`"),
    ("run", "asked_cpus", "REAL", 4, "CPU quota asked for this run (a study's limits axis)"),
    ("run", "asked_memory_mib", "REAL", 4, "memory cap asked for this run"),
    ("session", "network", "TEXT", 5, "--net: the parts' addresses and the links between them; NULL: loopback"),
    ("session", "other_hosts", "TEXT", 6, "JSON: [{role, place, facts}] of the machines reached over ssh (hosts file)"),
    (
        "run",
        "stuck_at_memory_cap",
        "INTEGER",
        7,
        "1 when the service sat at its memory cap without answering and was ended",
    ),
    ("run", "service_user", "TEXT", 8, "the user the service ran as: svcbench, root (run_as) or svcbench's own"),
    ("run", "listen_addrs", "TEXT", 9, "where the service's processes listened after startup, read from /proc"),
    (
        "run",
        "listen_warning",
        "TEXT",
        9,
        "one line when one of them was a wildcard or not the {host} given; NULL: all on {host} (or not read)",
    ),
    ("session", "study_file", "TEXT", 10, "the study file's path in its repository, else canonical (svcbench study)"),
    ("session", "plan_hash", "TEXT", 10, "hash of the study's resolved step plan, which a resume must match"),
    ("session", "service_code", "TEXT", 10, "JSON {service: hash of its build inputs} as the session ran them"),
    (
        "run",
        "startup_engine_ms",
        "REAL",
        12,
        "a container service: from the engine's \"started\" to the first answer (startup_ms: from the command)",
    ),
    ("duet", "mode", "TEXT", 13, "side_by_side or alternating; NULL: side by side (a duet before version 13)"),
    (
        "service",
        "runtime",
        "TEXT",
        14,
        "how it ran: `process`, `container (<engine program>)` or `pod (podman kube play)`; NULL: process",
    ),
    ("step", "open_files_peak", "INTEGER", 15, "open files of the service's process nearest its open-file limit"),
    ("step", "open_files_limit", "INTEGER", 15, "that process's soft RLIMIT_NOFILE at that reading"),
    ("step", "listen_drops", "INTEGER", 15, "connection attempts dropped at the service's full accept queue"),
    ("step", "dep_listen_drops", "INTEGER", 15, "the same at the dependencies svcbench started"),
    ("service", "git_commit", "TEXT", 16, "the commit of the service folder's repository; NULL: not in one"),
    (
        "service",
        "git_dirty",
        "INTEGER",
        16,
        "1 when the service folder differed from that commit (uncommitted changes)",
    ),
    (
        "session",
        "scenario_parts",
        "TEXT",
        16,
        "JSON {checks, mixes, …, data files: hash}: the scenario a study's session ran",
    ),
    ("session", "svcbench_build", "TEXT", 16, "hash of the svcbench program a study's session ran"),
    ("session", "image_ids", "TEXT", 16, "JSON {service: image ID} of a study's container services"),
    ("service", "git_revision", "TEXT", 17, "the revision as given (`FOLDER#REV`); NULL: the folder as it was"),
];

/// 11: the duet tables (duet.sql), created in every store that lacks them when it is opened.
/// 12: run.startup_engine_ms (a container's startup from the engine's start).
/// 13: duet.mode (side by side or alternating).
/// 14: service.runtime (a process, a container by its engine, or a played Pod).
/// 15: step.open_files_peak and open_files_limit (the sampler's open-file readings), listen_drops and
/// dep_listen_drops (accept-queue overflows).
/// 16: service.git_commit and git_dirty (the code a session measured).
/// 16: session.scenario_parts, svcbench_build and image_ids (what a study's resume must match too).
/// 17: service.git_revision (a service named at a revision).
pub const SCHEMA_VERSION: u32 = 17;

fn has_column(conn: &Connection, table: &str, col: &str) -> Result<bool> {
    let mut st = conn.prepare("SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2")?;
    Ok(st.exists([table, col])?)
}

/// Brings the store to SCHEMA_VERSION; refuses a store from a newer svcbench.
pub fn upgrade(conn: &Connection) -> Result<()> {
    let version: String = conn.query_row("SELECT value FROM meta WHERE key = 'schema_version'", [], |r| r.get(0))?;
    let v: u32 = version.parse().unwrap_or(u32::MAX);
    if v == SCHEMA_VERSION {
        return Ok(());
    }
    if v > SCHEMA_VERSION {
        anyhow::bail!(
            "its schema version {version} is not one this svcbench knows ({SCHEMA_VERSION}); use a newer svcbench"
        );
    }
    let tx = conn.unchecked_transaction()?;
    for (table, col, ty, _, _) in ADDED_COLUMNS {
        if !has_column(&tx, table, col)? {
            tx.execute(&format!("ALTER TABLE {table} ADD COLUMN {col} {ty}"), [])?;
        }
    }
    if v < 7 {
        // Before version 7 a service ended for sitting at its memory cap was told apart only by its error.
        tx.execute(
            "UPDATE run SET stuck_at_memory_cap = 1 WHERE status = 'failed' AND error LIKE '% sat at its memory cap %'",
            [],
        )?;
    }
    tx.execute("UPDATE meta SET value = ?1 WHERE key = 'schema_version'", [SCHEMA_VERSION.to_string()])?;
    tx.commit()?;
    Ok(())
}

/// Whether the store needs `upgrade` (readers open read-only and upgrade first only when it does).
pub fn needs_upgrade(conn: &Connection) -> Result<bool> {
    let version: String = conn.query_row("SELECT value FROM meta WHERE key = 'schema_version'", [], |r| r.get(0))?;
    Ok(version != SCHEMA_VERSION.to_string())
}

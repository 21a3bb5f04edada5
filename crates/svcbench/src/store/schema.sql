-- svcbench store: the tables as schema version 1 made them; every later column is added by upgrade.rs (in new
-- stores too), so a column is declared in exactly one place. Documented in docs/store.md. Every table is append-only: a row is
-- written the moment its figures exist (a step as soon as it ends), so nothing measured is lost when a
-- later step, run or service fails.
PRAGMA journal_mode = WAL;

CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

-- One invocation of `svcbench run` (or `check`).
CREATE TABLE IF NOT EXISTS session (
  id INTEGER PRIMARY KEY,
  started_at TEXT NOT NULL,            -- RFC 3339, UTC
  ended_at TEXT,
  label TEXT,                          -- --label, for filters and compare
  command TEXT NOT NULL,               -- the command line
  svcbench_version TEXT NOT NULL,
  scenario TEXT NOT NULL,
  profile TEXT NOT NULL,
  runs_per_service INTEGER NOT NULL,
  host_name TEXT, cpu_model TEXT, cpu_cores INTEGER, memory_mib REAL, kernel TEXT,
  cgroup_version TEXT NOT NULL,        -- v1, v2 or none (none = no limits were applied!)
  limit_cpus REAL,                     -- --cpus (NULL: none)
  limit_memory_mib REAL,               -- --memory (NULL: none)
  service_cpuset TEXT,                 -- CPUs of the service
  loadgen_cpuset TEXT,                 -- CPUs of the load generator and dependencies
  status TEXT NOT NULL DEFAULT 'running',  -- running, completed, interrupted, failed
  warnings TEXT NOT NULL DEFAULT '[]'  -- JSON array of strings
);

-- A service as built for a session.
CREATE TABLE IF NOT EXISTS service (
  session_id INTEGER NOT NULL REFERENCES session(id),
  name TEXT NOT NULL,
  scenario TEXT NOT NULL, language TEXT NOT NULL, framework TEXT NOT NULL, framework_version TEXT NOT NULL,
  model TEXT NOT NULL,                 -- async or blocking
  dir TEXT NOT NULL,
  build_ok INTEGER NOT NULL, build_s REAL, build_error TEXT,
  artifact_bytes INTEGER,
  refuses_bad_dependency INTEGER,      -- 1/0: exited non-zero within 15 s with broken_env; NULL: not tested
  refuse_detail TEXT,
  PRIMARY KEY (session_id, name)
);

-- One fresh start of one service through the profile.
CREATE TABLE IF NOT EXISTS run (
  id INTEGER PRIMARY KEY,
  session_id INTEGER NOT NULL REFERENCES session(id),
  service TEXT NOT NULL,
  run_index INTEGER NOT NULL,          -- 1-based
  started_at TEXT NOT NULL, ended_at TEXT,
  status TEXT NOT NULL DEFAULT 'running',  -- running, completed, failed, interrupted
  error TEXT,
  startup_ms REAL,                     -- spawn to first HTTP answer on the readiness path
  idle_mem_mib REAL, idle_rss_mib REAL, idle_threads INTEGER,
  checks_passed INTEGER, checks_failed INTEGER,
  shutdown_ms REAL, stopped_gracefully INTEGER, exit_code INTEGER, exit_signal INTEGER,
  oom_killed INTEGER NOT NULL DEFAULT 0, crashed INTEGER NOT NULL DEFAULT 0,
  total_cpu_s REAL,                    -- service CPU from spawn to stop, startup included
  total_requests_ok INTEGER,
  cgroup_version TEXT,
  warnings TEXT NOT NULL DEFAULT '[]'
);

CREATE TABLE IF NOT EXISTS check_result (
  run_id INTEGER NOT NULL REFERENCES run(id),
  seq INTEGER NOT NULL, name TEXT NOT NULL, passed INTEGER NOT NULL, reason TEXT NOT NULL,
  PRIMARY KEY (run_id, seq)
);

-- One load level of a run.
CREATE TABLE IF NOT EXISTS step (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES run(id),
  seq INTEGER NOT NULL,                -- 1-based within the run
  label TEXT NOT NULL,
  model TEXT NOT NULL,                 -- closed or open
  connections INTEGER,                 -- closed model
  rate REAL, rate_end REAL,            -- open model, requests/s offered (ramp: start..end)
  mix TEXT NOT NULL,
  upstream_delay_ms INTEGER,
  duration_s REAL NOT NULL,            -- measured
  requests_ok INTEGER NOT NULL, requests_err INTEGER NOT NULL,
  err_connect INTEGER NOT NULL, err_timeout INTEGER NOT NULL, err_read INTEGER NOT NULL,
  err_status INTEGER NOT NULL, err_malformed INTEGER NOT NULL,
  status_counts TEXT NOT NULL,         -- JSON object status -> count
  success_rps REAL NOT NULL, error_ratio REAL NOT NULL,
  p50 REAL, p75 REAL, p90 REAL, p99 REAL, p999 REAL, p9999 REAL, max_ms REAL, mean_ms REAL,
  latency_hdr TEXT NOT NULL,           -- base64 HDR histogram (V2 deflate), microseconds
  open_intended INTEGER, open_late INTEGER, open_unsent INTEGER, open_max_lateness_ms REAL,
  cpu_s REAL,                          -- service CPU time during the step
  cpu_ms_per_req REAL,
  mem_peak_mib REAL, mem_mib_s_per_req REAL, rss_peak_mib REAL, threads_max INTEGER, throttled_s REAL,
  client_cpu_s REAL, client_cpus INTEGER, client_saturated INTEGER NOT NULL,
  dep_cpu_s REAL,                      -- CPU of the scenario's dependencies during the step
  dep_saturated INTEGER NOT NULL DEFAULT 0,
  oom_killed INTEGER NOT NULL DEFAULT 0, crashed INTEGER NOT NULL DEFAULT 0,
  samples INTEGER NOT NULL,            -- sampler readings taken during the step
  timeline TEXT NOT NULL,              -- JSON: per-second successes, errors, p50, p99
  dependency_calls INTEGER,            -- calls the mock upstream received during the step
  UNIQUE (run_id, seq)
);

-- Every sampler reading (20 Hz) of every step.
CREATE TABLE IF NOT EXISTS sample (
  step_id INTEGER NOT NULL REFERENCES step(id),
  t_s REAL NOT NULL, cpu_s REAL NOT NULL, mem_mib REAL NOT NULL, rss_mib REAL NOT NULL,
  threads INTEGER NOT NULL, throttled_s REAL NOT NULL
);

-- Extra per-step figures that only some scenarios have (e.g. users: database file size).
CREATE TABLE IF NOT EXISTS run_figure (
  run_id INTEGER NOT NULL REFERENCES run(id),
  name TEXT NOT NULL, value REAL NOT NULL,
  PRIMARY KEY (run_id, name)
);

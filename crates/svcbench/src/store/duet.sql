-- Duets (schema version 11): `svcbench duet A B`, two services measured side by side, their slices and the
-- verdict lines. Tables only ever added, like every other; documented in docs/store.md.

-- One invocation of `svcbench duet`.
CREATE TABLE IF NOT EXISTS duet (
  id INTEGER PRIMARY KEY,
  started_at TEXT NOT NULL,
  ended_at TEXT,
  status TEXT NOT NULL,               -- running, done, interrupted, failed
  label TEXT,
  command TEXT NOT NULL,
  svcbench_version TEXT NOT NULL,
  scenario TEXT NOT NULL,
  profile TEXT NOT NULL,
  service_a TEXT NOT NULL,            -- the duet's first service (`service@variant`)
  service_b TEXT NOT NULL,
  limit_cpus REAL,                    -- each side's CPU quota
  limit_memory_mib REAL,
  service_cpuset TEXT,                -- the CPUs both sides share
  loadgen_cpuset TEXT,
  cgroup_version TEXT NOT NULL,
  pairs_asked INTEGER NOT NULL,
  pairs_done INTEGER NOT NULL DEFAULT 0,
  precision REAL,                     -- stop early when every interval is within ± this share
  machine_s REAL,                     -- wall-clock seconds the duet took, starts and stops included
  error TEXT,
  mode TEXT                           -- side_by_side, alternating (version 13; NULL before: side by side)
);

-- One second of one step of one pair: both sides' figures, read at the same instants.
CREATE TABLE IF NOT EXISTS duet_slice (
  duet_id INTEGER NOT NULL REFERENCES duet(id),
  pair INTEGER NOT NULL,
  a_first INTEGER NOT NULL,           -- 1: A went first (side by side: in this pair; alternating: in this round)
  step INTEGER NOT NULL, step_label TEXT NOT NULL,
  second INTEGER NOT NULL,
  seconds REAL NOT NULL,              -- the slice's length as read
  a_ok INTEGER NOT NULL, a_errors INTEGER NOT NULL, a_cpu_s REAL NOT NULL, a_throttled_s REAL NOT NULL,
  a_p50_ms REAL NOT NULL, a_p99_ms REAL NOT NULL,
  b_ok INTEGER NOT NULL, b_errors INTEGER NOT NULL, b_cpu_s REAL NOT NULL, b_throttled_s REAL NOT NULL,
  b_p50_ms REAL NOT NULL, b_p99_ms REAL NOT NULL,
  generator_busy REAL NOT NULL,       -- share of the generators' CPUs they used
  invalid TEXT,                       -- why the slice is not compared; NULL: valid
  PRIMARY KEY (duet_id, pair, step, second)
);

-- The answer per step and metric: B/A over pairs with its 95 % interval and Holm-corrected verdict.
CREATE TABLE IF NOT EXISTS duet_line (
  duet_id INTEGER NOT NULL REFERENCES duet(id),
  step INTEGER NOT NULL, step_label TEXT NOT NULL,
  metric TEXT NOT NULL,               -- ok_rps, cpu_us_per_req, p50_ms, p99_ms
  ratio REAL, ci_low REAL, ci_high REAL, p REAL,
  verdict TEXT NOT NULL,              -- faster, slower, no_significant_difference, too_few_pairs, no_spread
  pairs INTEGER, slices INTEGER, pair_min REAL, pair_max REAL,
  PRIMARY KEY (duet_id, step, metric)
);

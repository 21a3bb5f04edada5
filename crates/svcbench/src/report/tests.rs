//! Unit tests on hand-made stores: the step-column-driven tables (mix, rate, upstream delay), the load
//! axis of the charts, session grouping and the Markdown/HTML renderers. Real runs are in tests/report.rs.
use super::*;
use crate::figures::validity::{Flag, Validity};
use rusqlite::params;

struct Fixture {
    _dir: tempfile::TempDir,
    path: PathBuf,
    store: crate::store::Store,
}

fn store() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let store = crate::store::Store::open(&path).unwrap();
    Fixture { _dir: dir, path, store }
}

impl Fixture {
    fn session(&self, scenario: &str, label: Option<&str>) -> i64 {
        self.store
            .raw()
            .execute(
                "INSERT INTO session (started_at, label, command, svcbench_version, scenario, profile, runs_per_service, cgroup_version, limit_cpus, status)
                 VALUES ('2026-01-01T00:00:00Z', ?1, 'svcbench run …', '0.1.0', ?2, 'test', 2, 'v1', 1.5, 'completed')",
                params![label, scenario],
            )
            .unwrap();
        self.store.raw().last_insert_rowid()
    }

    fn service(&self, session: i64, name: &str) {
        self.store
            .raw()
            .execute(
                "INSERT INTO service (session_id, name, scenario, language, framework, framework_version, model, dir, build_ok, artifact_bytes)
                 VALUES (?1, ?2, 's', 'go', 'net/http', '1', 'blocking', '/x', 1, 10485760)",
                params![session, name],
            )
            .unwrap();
    }

    fn run(&self, session: i64, service: &str, index: i64, cpu: f64, ok: i64) -> i64 {
        self.store
            .raw()
            .execute(
                "INSERT INTO run (session_id, service, run_index, started_at, status, startup_ms, idle_mem_mib, idle_rss_mib,
                   total_cpu_s, total_requests_ok, stopped_gracefully)
                 VALUES (?1, ?2, ?3, 'now', 'completed', 10, 5, 6.5, ?4, ?5, 1)",
                params![session, service, index, cpu, ok],
            )
            .unwrap();
        self.store.raw().last_insert_rowid()
    }

    /// A step: (seq, model, connections, rate, mix, delay, success rps, requests ok, intended, mean ms).
    #[allow(clippy::too_many_arguments)]
    fn step(
        &self,
        run: i64,
        seq: i64,
        model: &str,
        conns: Option<i64>,
        rate: Option<f64>,
        mix: &str,
        delay: Option<i64>,
        rps: f64,
        ok: i64,
        intended: Option<i64>,
        mean: f64,
    ) {
        self.store
            .raw()
            .execute(
                "INSERT INTO step (run_id, seq, label, model, connections, rate, mix, upstream_delay_ms, duration_s, requests_ok,
                   requests_err, err_connect, err_timeout, err_read, err_status, err_malformed, status_counts, success_rps,
                   error_ratio, p50, p90, p99, mean_ms, latency_hdr, open_intended, cpu_s, cpu_ms_per_req, mem_peak_mib,
                   rss_peak_mib, client_saturated, samples, timeline)
                 VALUES (?1, ?2, 'step ' || ?2, ?3, ?4, ?5, ?6, ?7, 1.0, ?8, 0, 0, 0, 0, 0, 0, '{}', ?9, 0, 1, 2, 3, ?10, '',
                   ?11, 0.5, 1, 20, 15, ?12, 10, '[]')",
                params![run, seq, model, conns, rate, mix, delay, ok, rps, mean, intended, seq == 2],
            )
            .unwrap();
        let step = self.store.raw().last_insert_rowid();
        self.store.raw().execute("INSERT INTO sample (step_id, t_s, cpu_s, mem_mib, rss_mib, threads, throttled_s) VALUES (?1, 0.9, 0.5, 20, 14.5, 4, 0)", [step]).unwrap();
    }

    fn load(&self, filter: &[&str], pooled: bool) -> data::Dataset {
        let f = filter::Filter::parse(&filter.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
        data::load(&data::open(&self.path).unwrap(), "t.db", &f, pooled).unwrap()
    }
}

fn cell_texts(t: &table::Table, row: usize) -> Vec<String> {
    t.rows[row].cells.iter().map(|c| c.text.clone()).collect()
}

#[test]
fn mix_steps_make_seed_002s_table_and_a_step_axis() {
    let f = store();
    let s = f.session("users", None);
    f.service(s, "go");
    for i in 1..=2 {
        let r = f.run(s, "go", i, 2.0, 2000);
        // Three closed steps at the same 100 connections: two mixes, one repeated.
        f.step(r, 1, "closed", Some(100), None, "add", None, 1000.0, 1000, None, 3.0);
        f.step(r, 2, "closed", Some(100), None, "lookup", None, 3000.0 + i as f64, 3000, None, 2.0);
        f.step(r, 3, "closed", Some(100), None, "add", None, 900.0, 900, None, 3.0);
    }
    let d = f.load(&[], false);
    let levels = levels::tables(&d);
    let mix = levels.iter().find(|t| t.id == "by-mix").expect("a per-mix table");
    assert_eq!(
        mix.head[1..4],
        ["artifact (MiB)".to_string(), "RSS at start (MiB)".into(), "add (step 1): success req/s".into()]
    );
    // Step 2 of each run is marked client-saturated (the fixture's older rule): its figure is in parentheses.
    assert_eq!(cell_texts(mix, 0)[1..7], ["10", "6.50", "1,000", "1,000", "14.5", "(3,002)"].map(String::from));
    assert!(levels.iter().all(|t| !t.id.starts_with("by-rate") && !t.id.starts_with("by-delay")));
    // Repeated connection counts: one x position per step, labelled by its connections.
    let charts = charts::charts(&d);
    let rps = charts.iter().find(|c| c.id == "rps").unwrap();
    assert_eq!(rps.x.scale, "category");
    assert_eq!(rps.x.categories, ["100", "100", "100"]);
    assert_eq!(rps.series.len(), 2);
    // Step 2 was marked as client-saturated: its point carries the flag.
    assert_eq!(rps.series[0].points[1].flag.as_deref(), Some("load generator saturated (older rule)"));
    assert!(rps.series[0].points[0].flag.is_none());
    assert!(charts.iter().all(|c| !c.id.starts_with("open-")));
}

#[test]
fn rate_and_delay_steps_make_seed_004s_tables() {
    let f = store();
    let s = f.session("upstream", None);
    for svc in ["vertx", "spring"] {
        f.service(s, svc);
        let r = f.run(s, svc, 1, 10.0, 500);
        f.step(r, 1, "open", None, Some(100.0), "default", None, 100.0, 100, Some(100), 1000.0);
        if svc == "vertx" {
            f.step(r, 2, "open", None, Some(200.0), "default", None, 199.0, 199, Some(200), 1100.0);
            f.step(r, 3, "open", None, Some(300.0), "default", None, 290.0, 290, Some(300), 3100.0);
        } else {
            // 80 % answered: X, and the profile's stop rule ended the run.
            f.step(r, 2, "open", None, Some(200.0), "default", None, 160.0, 160, Some(200), 2100.0);
        }
    }
    let d = f.load(&[], false);
    let levels = levels::tables(&d);
    let resp = levels.iter().find(|t| t.id == "by-rate-response").unwrap();
    assert_eq!(resp.head, ["service", "100 req/s", "200 req/s", "300 req/s"]);
    // The fixture marks every step 2 client-saturated: not valid, so in parentheses.
    assert_eq!(cell_texts(resp, 0), ["vertx", "1,000", "(1,100)", "3,100"]);
    assert_eq!(cell_texts(resp, 1), ["spring", "1,000", "(X)", ""]);
    assert_eq!(resp.rows[0].cells[2].class, "warn");
    assert_eq!(resp.rows[0].cells[2].title.as_deref(), Some("not valid: load generator saturated (older rule)"));
    assert_eq!(resp.rows[1].cells[2].class, "warn", "an X from a step that was not valid is marked too");
    assert!(levels.iter().any(|t| t.id == "by-rate-cpu") && levels.iter().any(|t| t.id == "by-rate-mem"));
    let charts = charts::charts(&d);
    let success = charts.iter().find(|c| c.id == "open-success").unwrap();
    assert_eq!(success.x.scale, "linear");
    assert_eq!(success.series[1].points.iter().map(|p| p.y.round()).collect::<Vec<_>>(), [100.0, 80.0]);
    assert!(charts.iter().all(|c| c.id != "rps"), "no closed-model charts without closed steps");

    // Fixed rate, growing upstream delay: seed 004's second table.
    let f = store();
    let s = f.session("upstream", None);
    f.service(s, "spring");
    let r = f.run(s, "spring", 1, 10.0, 500);
    for (i, delay) in [1000, 2000, 4000].into_iter().enumerate() {
        let ok = if delay == 4000 { 50 } else { 100 };
        f.step(
            r,
            i as i64 + 1,
            "open",
            None,
            Some(100.0),
            "default",
            Some(delay),
            ok as f64,
            ok,
            Some(100),
            delay as f64,
        );
    }
    let d = f.load(&[], false);
    let levels = levels::tables(&d);
    assert!(levels.iter().all(|t| !t.id.starts_with("by-rate")), "the rate does not vary");
    let delay = levels.iter().find(|t| t.id == "by-delay-response").unwrap();
    assert_eq!(cell_texts(delay, 0), ["spring", "1,000", "(2,000)", "X"]);
    assert_eq!(delay.rows[0].cells[3].class, "fail");
    let p99 = charts::charts(&d).into_iter().find(|c| c.id == "open-p99").unwrap();
    assert_eq!(p99.x.name, "upstream delay");
}

#[test]
fn level_tables_take_the_valid_steps_median_and_parenthesize_a_level_with_none() {
    let f = store();
    let s = f.session("upstream", None);
    f.service(s, "vertx");
    let mut runs = Vec::new();
    for (i, mean) in [(1, 1000.0), (2, 5000.0)] {
        let r = f.run(s, "vertx", i, 10.0, 500);
        f.step(r, 1, "open", None, Some(100.0), "default", None, 100.0, 100, Some(100), 1000.0);
        f.step(r, 2, "open", None, Some(200.0), "default", None, 199.0, 199, Some(200), mean);
        runs.push(r);
    }
    let resp = |f: &Fixture| {
        let d = f.load(&[], false);
        let t = levels::tables(&d).into_iter().find(|t| t.id == "by-rate-response").unwrap();
        (cell_texts(&t, 0), t.note)
    };
    // Both runs' 200 req/s steps are client-saturated: their median, in parentheses.
    let (cells, note) = resp(&f);
    assert_eq!(cells, ["vertx", "1,000", "(3,000)"]);
    assert!(note.contains("In parentheses: no run's step at that level was valid"), "{note}");
    // One of them valid after all: the cell is its figure alone, not the median with the other.
    f.store.raw().execute("UPDATE step SET client_saturated = 0 WHERE run_id = ?1 AND seq = 2", [runs[0]]).unwrap();
    assert_eq!(resp(&f).0, ["vertx", "1,000", "1,000"]);
    // That run's limits were not applied: its steps lend no figure either.
    f.store
        .raw()
        .execute(
            "UPDATE run SET flags = '[{\"code\":\"unlimited\",\"detail\":\"no memory cap\"}]' WHERE id = ?1",
            [runs[0]],
        )
        .unwrap();
    assert_eq!(resp(&f).0, ["vertx", "1,000", "(3,000)"]);
    f.store.raw().execute("UPDATE run SET flags = NULL", []).unwrap();
    // Both OOM-killed with 25 % answered: X is the service's own verdict and stands plainly, while the
    // level's CPU time, from steps that are not valid, is in parentheses.
    f.store
        .raw()
        .execute("UPDATE step SET client_saturated = 0, oom_killed = 1, requests_ok = 50 WHERE seq = 2", [])
        .unwrap();
    assert_eq!(resp(&f).0, ["vertx", "1,000", "X"]);
    let d = f.load(&[], false);
    let cpu = levels::tables(&d).into_iter().find(|t| t.id == "by-rate-cpu").unwrap();
    assert_eq!(cpu.rows[0].cells[2].text, "(0.500)");
    assert_eq!(cpu.rows[0].cells[2].title.as_deref(), Some("not valid: service OOM-killed"));
    // A backlog that held every connection also left sends late and unsent: still the service's X (seed
    // 004's Spring MVC behind a 4 s dependency). The same lag and rate alone may be the generator's: (X).
    let flags = |codes: &[&str]| {
        let flags = codes
            .iter()
            .map(|c| Flag { code: crate::figures::validity::FlagCode::from_code(c), detail: c.to_string() })
            .collect();
        f.store.raw().execute("UPDATE step SET flags = ?1 WHERE seq = 2", [Validity { flags }.to_json()]).unwrap();
    };
    flags(&["not_sustained", "rate_not_held", "schedule_lag"]);
    assert_eq!(resp(&f).0, ["vertx", "1,000", "X"]);
    flags(&["rate_not_held", "schedule_lag"]);
    assert_eq!(resp(&f).0, ["vertx", "1,000", "(X)"]);
}

#[test]
fn sessions_group_by_label_and_filters_select() {
    let f = store();
    for (label, rps) in [("before", 1000.0), ("after", 500.0)] {
        let s = f.session("hello", Some(label));
        f.service(s, "go");
        for i in 1..=2 {
            let r = f.run(s, "go", i, 1.0, 1000);
            for (k, c) in [1, 2, 4].into_iter().enumerate() {
                f.step(
                    r,
                    k as i64 + 1,
                    "closed",
                    Some(c),
                    None,
                    "default",
                    None,
                    rps * c as f64 + i as f64,
                    100,
                    None,
                    1.0,
                );
            }
        }
    }
    let old = f.session("older-scenario", None);
    f.service(old, "x");
    f.run(old, "x", 1, 1.0, 1);

    // Default: the newest scenario with runs is "older-scenario" (session 3).
    let d = f.load(&[], false);
    assert_eq!(d.groups.iter().map(|g| g.name.as_str()).collect::<Vec<_>>(), ["x"]);
    // Both hello sessions: the same service in two sessions gets two colours, named by label.
    let d = f.load(&["scenario=hello"], false);
    assert_eq!(d.groups.iter().map(|g| g.name.as_str()).collect::<Vec<_>>(), ["go (before)", "go (after)"]);
    assert_eq!(
        d.runs.iter().map(|r| r.label.as_str()).collect::<Vec<_>>(),
        ["go (before) #1", "go (before) #2", "go (after) #1", "go (after) #2"]
    );
    let rps = charts::charts(&d).into_iter().find(|c| c.id == "rps").unwrap();
    assert_eq!(rps.x.scale, "log2");
    assert_eq!(rps.series[0].color, rps.series[1].color);
    assert_ne!(rps.series[1].color, rps.series[2].color);
    // Pooled (compare): one group over both sessions.
    assert_eq!(f.load(&["scenario=hello"], true).groups.len(), 1);
    assert_eq!(f.load(&["label=after"], false).groups[0].name, "go");

    // Compare: half the throughput, but 2 runs a side are too few for a verdict (or a --fail-on failure);
    // the ratio and the runs the spread calls for are still shown.
    let c = compare::compare(&f.load(&["label=before"], true), &f.load(&["label=after"], true), 0.05, &[]);
    let peak = c.lines.iter().find(|l| l.metric == "peak_rps").unwrap();
    assert_eq!(peak.verdict, "too few runs");
    assert!((peak.ratio.unwrap() - 0.5).abs() < 0.01);
    assert!(peak.advice.as_ref().unwrap().runs_for_5pct.is_some());
    assert_eq!(c.tested, 0);
    assert!(compare::failures(&c.lines, &[compare::parse_fail_on("peak_rps").unwrap()]).is_empty());
    assert!(compare::parse_fail_on("nope").is_err());

    // Both renderers take the same report.
    let r = build(f.load(&["scenario=hello"], false), 0.0275);
    let md = markdown::render(&r);
    assert!(md.contains("| go (before) |") && md.contains("### Summary"));
    let html = html::render(&r);
    assert!(html.contains("id=\"chart-bang\"") && html.contains("data-service=\"go (after)\""));
    assert!(!html.contains("</script></script>"));
}

#[test]
fn compare_gives_a_verdict_per_attempt_between_two_services() {
    // Seed 003: Spray and Akka HTTP, the same load three times; Akka's JIT catches up by the third attempt.
    let f = store();
    let s = f.session("hello", None);
    for (svc, attempts) in [("spray", [20_000.0, 20_000.0, 20_000.0]), ("akka", [5_000.0, 10_000.0, 20_100.0])] {
        f.service(s, svc);
        // Three runs with ±5 % noise: enough for a verdict on a fourfold and a twofold change, not on 0.5 %.
        for (i, noise) in [0.95, 1.0, 1.05].into_iter().enumerate() {
            let r = f.run(s, svc, i as i64 + 1, 1.0, 1000);
            for (k, rps) in attempts.into_iter().enumerate() {
                let seq = k as i64 + 1;
                f.step(r, seq, "closed", Some(100), None, "default", None, rps * noise, 100, None, 1.0);
            }
        }
    }
    let c = compare::compare(&f.load(&["service=spray"], true), &f.load(&["service=akka"], true), 0.05, &[]);
    let lines = &c.lines;
    assert!(lines.iter().all(|l| l.service == "spray → akka"), "the two selected services are paired");
    let attempt = |n: &str| lines.iter().find(|l| l.metric == "step_rps" && l.step.as_deref() == Some(n)).unwrap();
    assert_eq!(attempt("#1 step 1").verdict, "slower");
    assert!((attempt("#1 step 1").ratio.unwrap() - 0.25).abs() < 0.01);
    // The fixture marks every step 2 as client-saturated: not valid, so it gives no verdict.
    assert_eq!(attempt("#2 step 2").verdict, "no data");
    assert_eq!(attempt("#3 step 3").verdict, "within noise");
    assert_eq!(lines.iter().filter(|l| l.metric == "step_p99_ms").count(), 3);
    let rules = vec![compare::parse_fail_on("step_rps:60%").unwrap()];
    assert_eq!(compare::failures(lines, &rules).len(), 1, "only attempt 1 lost more than 60 %");
    let md = compare::markdown(&f.load(&["service=spray"], true), &f.load(&["service=akka"], true), &c, None);
    assert!(md.contains("### Per step") && md.contains("| spray → akka | #3 step 3 | success req/s (`step_rps`) |"));
    // The same service on both sides is matched by name, not paired across names.
    let same = compare::compare(&f.load(&["service=spray"], true), &f.load(&["service=spray"], true), 0.05, &[]);
    assert!(same
        .lines
        .iter()
        .all(|l| l.service == "spray" && (l.verdict == "within noise" || l.step.as_deref() == Some("#2 step 2"))));
    // --metric narrows the family: the same p values, corrected over fewer lines.
    let only = compare::compare(
        &f.load(&["service=spray"], true),
        &f.load(&["service=akka"], true),
        0.05,
        &compare::parse_metrics(&["step_rps".into()]).unwrap(),
    );
    // Step 2 is not valid on either side (the fixture marks it): no line of it is tested.
    assert_eq!((only.tested, c.tested), (2, 11));
    let p_adj =
        |c: &compare::Comparison| c.lines.iter().find(|l| l.step.as_deref() == Some("#1 step 1")).unwrap().p_adjusted;
    assert!(p_adj(&only) < p_adj(&c));
    // Only per-step lines: their table alone, no empty table of whole-run lines before it.
    let md = compare::markdown(&f.load(&["service=spray"], true), &f.load(&["service=akka"], true), &only, None);
    assert_eq!(md.matches("| service |").count(), 1, "{md}");
    assert!(md.contains("### Per step"), "{md}");
    // The verdicts' count is a paragraph of its own, not a last row of the table above it.
    assert!(md.contains("|\n\n0 better, 1 worse,"), "{md}");
    assert!(md.contains("Holm–Bonferroni over the 2 lines tested"), "{md}");
    // One line tested reads "1 line", in the verdicts' count and in the runs-needed advice.
    let one = compare::compare(
        &f.load(&["service=spray"], true),
        &f.load(&["service=akka"], true),
        0.05,
        &compare::parse_metrics(&["peak_rps".into()]).unwrap(),
    );
    assert_eq!(one.tested, 1);
    let md = compare::markdown(&f.load(&["service=spray"], true), &f.load(&["service=akka"], true), &one, None);
    assert!(md.contains("over the 1 line tested at"), "{md}");
    assert!(md.contains("over the 1 line tested (`--metric` narrows them)"), "{md}");
}

#[test]
fn compare_leaves_out_unfinished_runs_and_warns_of_other_hosts_and_days() {
    let f = store();
    let mut runs = Vec::new();
    for (label, day) in [("base", "2026-01-01T08:00:00Z"), ("new", "2026-01-02T09:30:00Z")] {
        let s = f.session("hello", Some(label));
        f.store
            .raw()
            .execute(
                "UPDATE session SET started_at = ?2, host_name = ?3, cpu_model = 'EPYC' WHERE id = ?1",
                params![s, day, format!("host-{label}")],
            )
            .unwrap();
        f.service(s, "go");
        for i in 1..=4 {
            let r = f.run(s, "go", i, 1.0, 1000);
            // The run cut short peaked far lower: it would read as a slowdown if it entered.
            let rps = if label == "new" && i == 4 { 10.0 } else { 1000.0 + i as f64 };
            f.step(r, 1, "closed", Some(1), None, "default", None, rps, 100, None, 1.0);
            runs.push(r);
        }
    }
    let last = *runs.last().unwrap();
    f.store.raw().execute("UPDATE run SET status = 'interrupted' WHERE id = ?1", [last]).unwrap();
    let (base, new) = (f.load(&["label=base"], true), f.load(&["label=new"], true));
    let c = compare::compare(&base, &new, 0.05, &[]);
    assert_eq!(c.left_out.len(), 1);
    assert_eq!((c.left_out[0].side, c.left_out[0].status.as_str()), ("NEW", "interrupted"));
    let peak = c.lines.iter().find(|l| l.metric == "peak_rps").unwrap();
    assert_eq!((peak.base.unwrap().n, peak.new.unwrap().n), (4, 3));
    assert_eq!(peak.verdict, "within noise", "{peak:?}");
    assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
    assert!(c.warnings[0].contains("host-base (EPYC)") && c.warnings[0].contains("host-new (EPYC)"));
    assert!(c.warnings[1].contains("26 hours apart"), "{}", c.warnings[1]);
    let md = compare::markdown(&base, &new, &c, None);
    assert!(md.contains("left out (did not complete): 1 interrupted run of go in NEW (go #4)"), "{md}");
    assert!(md.starts_with("## svcbench compare\n\n> **Warning:** BASE and NEW were recorded on different hosts"));
    assert!(
        md.contains("### Runs needed")
            && md.contains("- go, peak success req/s: noise 0.1 % (log SD): 3 runs a side are enough for 5 %"),
        "{md}"
    );
    // Sessions of one host recorded together: no warning.
    let both = f.load(&["label=base"], true);
    assert!(compare::compare(&both, &both, 0.05, &[]).warnings.is_empty());
}

#[test]
fn a_store_saturated_step_is_left_out_of_the_peak_and_the_reason_shown() {
    let f = store();
    let s = f.session("locations", None);
    f.service(s, "actix");
    let r = f.run(s, "actix", 1, 1.0, 1000);
    // Steps 1 and 3 clean; step 2 the highest but store-saturated (step 2 also carries the fixture's legacy
    // client mark, replaced here by the stored flags).
    f.step(r, 1, "closed", Some(1), None, "default", None, 500.0, 500, None, 1.0);
    f.step(r, 2, "closed", Some(4), None, "default", None, 5500.0, 5500, None, 1.0);
    f.step(r, 3, "closed", Some(16), None, "default", None, 1800.0, 1800, None, 1.0);
    let flags = r#"[{"code":"dependency_saturated","detail":"dependencies used 88 % of their 1 CPU(s)"}]"#;
    f.store.raw().execute("UPDATE step SET flags = '[]', valid = 1 WHERE seq != 2", []).unwrap();
    f.store.raw().execute("UPDATE step SET flags = ?1, valid = 0 WHERE seq = 2", [flags]).unwrap();
    let d = f.load(&[], false);
    let (summary, sums) = sections::summary(&d, 0.0275);
    assert_eq!(sums[0].peak_rps.unwrap().median, 1800.0, "the peak is the highest valid step");
    assert_eq!(sums[0].steps_left_out, ["1 × dependency saturated"]);
    assert!(cell_texts(&summary, 0).contains(&"1 × dependency saturated".to_string()));
    let v = quality::validity(&d);
    assert_eq!(cell_texts(&v, 0), ["actix #1", "#2 step 2", "dependency saturated"]);
    assert!(v.rows[0].cells[2].title.as_deref().unwrap().contains("88 %"));
    let md = markdown::render(&build(d.clone(), 0.0275));
    assert!(md.contains("### Validity") && md.contains("dependency saturated"));
    // --include-invalid puts it back, still flagged.
    let mut all = d;
    all.include_invalid = true;
    let (_, sums) = sections::summary(&all, 0.0275);
    assert_eq!(sums[0].peak_rps.unwrap().median, 5500.0);
    assert!(quality::validity(&all).note.contains("--include-invalid"));
}

#[test]
fn an_interrupted_run_is_not_in_the_median_nor_in_a_verdict() {
    let f = store();
    let s = f.session("hello", None);
    f.service(s, "go");
    for (i, rps) in [(1, 1000.0), (2, 1100.0), (3, 9000.0)] {
        let r = f.run(s, "go", i, 1.0, 1000);
        f.step(r, 1, "closed", Some(64), None, "default", None, rps, rps as i64, None, 1.0);
        if i == 3 {
            // Ctrl-C: svcbench killed the service at once.
            let sql = "UPDATE run SET status = 'interrupted', stopped_gracefully = 0, exit_signal = 9 WHERE id = ?1";
            f.store.raw().execute(sql, [r]).unwrap();
        }
    }
    let d = f.load(&[], false);
    // Its stop is svcbench's, not a stop of the service's that was not graceful.
    let t = sections::runs(&d);
    let col = t.head.iter().position(|h| h == "stop").unwrap();
    let stops: Vec<(String, &str)> = t.rows.iter().map(|r| (r.cells[col].text.clone(), r.cells[col].class)).collect();
    assert_eq!(stops[2], ("ended by svcbench (interrupted)".to_string(), ""), "{stops:?}");
    assert_eq!(stops[0].0, "graceful (exit –)");
    let (_, sums) = sections::summary(&d, 0.0275);
    let peak = sums[0].peak_rps.unwrap();
    assert_eq!((peak.n, peak.max), (2, 1100.0), "the interrupted run's 9,000 req/s is not counted");
    assert_eq!(sums[0].runs_left_out.len(), 1);
    assert!(sums[0].runs_left_out[0].contains("run not completed"));
    let v = quality::validity(&d);
    assert!(v.rows.iter().any(|r| r.cells[1].text == "whole run"));
    let lines = compare::compare(&d, &d, 0.05, &[]).lines;
    let l = lines.iter().find(|l| l.metric == "peak_rps").unwrap();
    assert_eq!(l.base.unwrap().n, 2);
}

#[test]
fn a_run_the_service_ended_counts_with_its_valid_steps_before_the_end() {
    // Seed 004's capacity: rates of 100, 200, 300 req/s; the third run is OOM-killed at 300.
    let f = store();
    let s = f.session("upstream", None);
    f.service(s, "mvc");
    let mut runs = Vec::new();
    for i in 1..=3 {
        let r = f.run(s, "mvc", i, 10.0 * i as f64, 1000);
        for (seq, rate) in [(1, 100.0), (2, 200.0), (3, 300.0)] {
            let answered = if i == 3 && seq == 3 { 150.0 } else { rate - i as f64 };
            f.step(
                r,
                seq,
                "open",
                None,
                Some(rate),
                "default",
                None,
                answered,
                answered as i64,
                Some(rate as i64),
                1.0,
            );
        }
        runs.push(r);
    }
    f.store.raw().execute("UPDATE step SET flags = '[]', valid = 1", []).unwrap();
    let died = Validity { flags: crate::figures::validity::service_end_flags(true, false) }.to_json();
    f.store
        .raw()
        .execute("UPDATE step SET flags = ?2, valid = 0 WHERE run_id = ?1 AND seq = 3", params![runs[2], died])
        .unwrap();
    f.store.raw().execute("UPDATE run SET status = 'failed', oom_killed = 1 WHERE id = ?1", [runs[2]]).unwrap();
    let d = f.load(&[], false);
    let (summary, sums) = sections::summary(&d, 0.0275);
    let peak = sums[0].peak_rps.unwrap();
    assert_eq!((peak.n, peak.min, peak.max), (3, 197.0, 299.0), "its 197 req/s at 200 counts, its 150 at 300 not");
    assert_eq!((sums[0].runs, sums[0].ended_by_the_service, sums[0].oom_kills), (3, 1, 1));
    assert!(sums[0].runs_left_out.is_empty(), "{:?}", sums[0].runs_left_out);
    assert_eq!(sums[0].cpu_us_per_req.unwrap().n, 2, "no whole-run CPU per request from the run that died");
    assert_eq!(cell_texts(&summary, 0)[1], "3 (1 ended by the service)");
    let v = quality::validity(&d);
    assert!(v.rows.iter().any(|r| r.cells[0].text.ends_with("#3") && r.cells[1].text.contains("ended by the service")));
    let lines = compare::compare(&d, &d, 0.05, &[]).lines;
    assert_eq!(lines.iter().find(|l| l.metric == "peak_rps").unwrap().base.unwrap().n, 3);
    // Without limits as asked, the service's death answers nothing: left out, as an interrupted run is.
    let unlimited = Validity {
        flags: crate::figures::validity::run_flags("failed", &["no memory cap was applied".to_string()], &[]),
    }
    .to_json();
    f.store.raw().execute("UPDATE run SET flags = ?2 WHERE id = ?1", params![runs[2], unlimited]).unwrap();
    let (_, sums) = sections::summary(&f.load(&[], false), 0.0275);
    assert_eq!((sums[0].runs, sums[0].ended_by_the_service, sums[0].runs_left_out.len()), (2, 0, 1));
    // A counted run none of whose steps is valid (a generator that kept sending late) has no peak: the runs
    // cell says so, since the peak's median is then over fewer runs than it counts.
    let late = Validity { flags: vec![Flag::new(crate::figures::validity::FlagCode::ScheduleLag, "lag p99 2 ms")] };
    f.store
        .raw()
        .execute("UPDATE step SET flags = ?2, valid = 0 WHERE run_id = ?1", params![runs[1], late.to_json()])
        .unwrap();
    let (summary, sums) = sections::summary(&f.load(&[], false), 0.0275);
    assert_eq!((sums[0].runs, sums[0].peak_rps.unwrap().n), (2, 1));
    assert_eq!(cell_texts(&summary, 0)[1], "2 (1 left out, 1 without a valid step)");
}

#[test]
fn the_stop_rule_and_the_report_agree_on_an_open_step_with_unsent_requests() {
    // An open step: 100 intended, 80 answered, none failed, 20 never sent. The runner's stop rule reads
    // StepRow::success_ratio (runner/step.rs), and the report reads the same stored figure.
    let row = crate::store::StepRow {
        model: "open".into(),
        requests_ok: 80,
        requests_err: 0,
        open_intended: Some(100),
        open_unsent: Some(20),
        ..Default::default()
    };
    assert!((row.success_ratio() - 0.8).abs() < 1e-12, "unsent requests count as failed");
    let f = store();
    let s = f.session("upstream", None);
    f.service(s, "spring");
    let r = f.run(s, "spring", 1, 1.0, 80);
    f.step(r, 1, "open", None, Some(100.0), "default", None, 80.0, 80, Some(100), 1.0);
    let d = f.load(&[], false);
    assert!((d.runs[0].steps[0].success_ratio() - row.success_ratio()).abs() < 1e-12)
}

#[test]
fn errors_by_kind_get_a_chart_with_a_bar_per_kind_that_occurred() {
    let f = store();
    let s = f.session("hello", None);
    for (name, resets, timeouts) in [("a", 7, 0), ("b", 1, 4)] {
        f.service(s, name);
        let r = f.run(s, name, 1, 1.0, 1000);
        f.step(r, 1, "closed", Some(4), None, "default", None, 100.0, 100, None, 1.0);
        f.store
            .raw()
            .execute(
                "UPDATE step SET err_connect_refused = 0, err_connect_timeout = 0, err_client_resource = 0, err_reset = ?1,
                   err_closed_early = 0, err_timeout = ?2 WHERE run_id = ?3",
                params![resets, timeouts, r],
            )
            .unwrap();
    }
    let d = f.load(&[], false);
    let chart = charts::charts(&d).into_iter().find(|c| c.id == "errors-by-kind").expect("an errors chart");
    assert_eq!(chart.x.categories, ["reset", "request timeout"]);
    let bars = |g: usize| chart.series[g].points.iter().map(|p| p.y).collect::<Vec<_>>();
    assert_eq!(bars(0), [7.0, 0.0]);
    assert_eq!(bars(1), [1.0, 4.0]);
    // Nothing failed: no chart.
    let f2 = store();
    let s2 = f2.session("hello", None);
    f2.service(s2, "a");
    let r = f2.run(s2, "a", 1, 1.0, 1000);
    f2.step(r, 1, "closed", Some(4), None, "default", None, 100.0, 100, None, 1.0);
    assert!(!charts::charts(&f2.load(&[], false)).iter().any(|c| c.id == "errors-by-kind"));
}

#[test]
fn a_service_whose_build_failed_is_named_in_every_round_of_a_study() {
    let f = store();
    let s = f.session("hello", Some("two-cells"));
    f.store.raw().execute("UPDATE session SET study = 'two-cells' WHERE id = ?1", params![s]).unwrap();
    f.service(s, "fast");
    f.service(s, "broken");
    f.store
        .raw()
        .execute("UPDATE service SET build_ok = 0, build_error = 'cargo: error[E0425]' WHERE name = 'broken'", [])
        .unwrap();
    for (i, cell) in ["cpus=0.5 memory=512M", "cpus=1 memory=512M"].iter().enumerate() {
        let r = f.run(s, "fast", i as i64 + 1, 1.0, 1000);
        f.store.raw().execute("UPDATE run SET cell = ?2 WHERE id = ?1", params![r, cell]).unwrap();
        f.step(r, 1, "closed", Some(8), None, "default", None, 1000.0, 1000, None, 1.0);
    }
    let file = f.path.with_file_name("two-cells.toml");
    std::fs::write(
        &file,
        "title = \"t\"\nquestion = \"q\"\nservices = [\"fast\", \"broken\"]\nprofile = \"quick\"\n[limits]\ncpus = [0.5, 1]\n",
    )
    .unwrap();
    let study = crate::study::file::Study::load(&file, false).unwrap();
    let d = f.load(&["label=two-cells"], true);
    let section = study::section(&d, &study);
    let rounds: Vec<_> = section.tables.iter().filter(|t| t.id.starts_with("round-")).collect();
    assert_eq!(rounds.len(), 2);
    for t in rounds {
        let row = t.rows.iter().find(|r| r.cells[0].text == "broken").unwrap_or_else(|| panic!("{}", t.caption));
        let verdict = row.cells.last().unwrap();
        assert_eq!(verdict.text, "build failed");
        assert!(verdict.title.as_deref().unwrap().contains("E0425"));
    }
}

#[test]
fn a_round_names_no_best_beside_a_row_without_a_valid_peak() {
    let f = store();
    let s = f.session("hello", Some("round"));
    f.store.raw().execute("UPDATE session SET study = 'round' WHERE id = ?1", params![s]).unwrap();
    for (i, (name, rps)) in [("cheap", 1000.0), ("costly", 3000.0), ("other", 500.0)].iter().enumerate() {
        f.service(s, name);
        let r = f.run(s, name, i as i64 + 1, 1.0, *rps as i64);
        f.step(r, 1, "closed", Some(8), None, "default", None, *rps, *rps as i64, None, 1.0);
    }
    let file = f.path.with_file_name("round.toml");
    std::fs::write(
        &file,
        "title = \"t\"\nquestion = \"q\"\nservices = [\"cheap\", \"costly\", \"other\"]\nprofile = \"quick\"\n",
    )
    .unwrap();
    let study = crate::study::file::Study::load(&file, false).unwrap();
    let verdicts = || {
        let d = f.load(&["label=round"], true);
        let t = study::section(&d, &study).tables.into_iter().find(|t| t.id.starts_with("round-")).unwrap();
        t.rows.iter().map(|r| (r.cells[0].text.clone(), r.cells.last().unwrap().clone())).collect::<Vec<_>>()
    };
    let of = |v: &[(String, table::Cell)], name: &str| v.iter().find(|(n, _)| n == name).unwrap().1.clone();
    let all = verdicts();
    assert_eq!((of(&all, "costly").text.as_str(), of(&all, "costly").class), ("best", "ok"));
    // The costliest row's steps are all left out: the others are not beaten by it, nor is either the best.
    let spoil = |name: &str| {
        let flags = r#"[{"code":"schedule_lag","detail":"set"}]"#;
        let sql = "UPDATE step SET valid = 0, flags = ?1 WHERE run_id IN (SELECT id FROM run WHERE service = ?2)";
        f.store.raw().execute(sql, params![flags, name]).unwrap();
    };
    spoil("costly");
    let v = verdicts();
    assert_eq!(of(&v, "costly").text, "no valid peak");
    assert_eq!((of(&v, "cheap").text.as_str(), of(&v, "cheap").class), ("best of the valid peaks", ""));
    spoil("other");
    let v = verdicts();
    assert_eq!((of(&v, "cheap").text.as_str(), of(&v, "cheap").class), ("only valid peak", ""));
    assert!(v.iter().all(|(_, c)| c.text != "best" && c.class != "ok"), "{v:?}");
    // No row has a valid peak: there is no best to be compared with, and each row says why.
    spoil("cheap");
    let v = verdicts();
    assert!(v.iter().all(|(_, c)| c.text == "no valid peak"), "{v:?}");
}

#[test]
fn a_study_resumed_on_another_cpu_model_says_which_sessions_ran_where() {
    let f = store();
    let mut sessions = Vec::new();
    for (i, model) in ["Intel Xeon", "Intel Xeon", "AMD EPYC"].iter().enumerate() {
        let s = f.session("hello", Some("resumed"));
        f.store
            .raw()
            .execute("UPDATE session SET study = 'resumed', cpu_model = ?2 WHERE id = ?1", params![s, model])
            .unwrap();
        f.service(s, "svc");
        let r = f.run(s, "svc", i as i64 + 1, 1.0, 1000);
        f.step(r, 1, "closed", Some(8), None, "default", None, 1000.0, 1000, None, 1.0);
        sessions.push(s);
    }
    let file = f.path.with_file_name("resumed.toml");
    std::fs::write(&file, "title = \"t\"\nquestion = \"q\"\nservices = [\"svc\"]\nprofile = \"quick\"\n").unwrap();
    let study = crate::study::file::Study::load(&file, false).unwrap();
    let warning = |filter: &str| {
        let d = f.load(&["label=resumed", filter], true);
        study::section(&d, &study).paragraphs.into_iter().find(|p| p.starts_with("Warning:"))
    };
    let all = warning(&format!("session={}-{}", sessions[0], sessions[2])).expect("three sessions on two models");
    let expected = format!(
        "2 CPU models, AMD EPYC (session {}); Intel Xeon (sessions {}, {}):",
        sessions[2], sessions[0], sessions[1]
    );
    assert!(all.contains(&expected), "{all}");
    // One machine's sessions: nothing to warn of.
    assert_eq!(warning(&format!("session={}-{}", sessions[0], sessions[1])), None);
}

#[test]
fn sizing_judges_a_death_as_not_holding_and_needs_more_than_half_the_runs() {
    let f = store();
    let s = f.session("hello", Some("sized"));
    f.store.raw().execute("UPDATE session SET study = 'sized' WHERE id = ?1", params![s]).unwrap();
    f.service(s, "svc");
    let mut runs = Vec::new();
    for i in 1..=3 {
        let r = f.run(s, "svc", i, 1.0, 1000);
        f.store.raw().execute("UPDATE run SET cell = 'cpus=1' WHERE id = ?1", params![r]).unwrap();
        // The third run dies at 1,000 req/s, below the SLO's rate.
        let rate = if i == 3 { 1000.0 } else { 5000.0 };
        f.step(r, 1, "open", None, Some(rate), "default", None, rate, rate as i64, Some(rate as i64), 1.0);
        runs.push(r);
    }
    f.store.raw().execute("UPDATE run SET status = 'failed', oom_killed = 1 WHERE id = ?1", [runs[2]]).unwrap();
    let file = f.path.with_file_name("sized.toml");
    std::fs::write(
        &file,
        "title = \"t\"\nquestion = \"q\"\nservices = [\"svc\"]\nprofile = \"quick\"\n[limits]\ncpus = [1]\n\
         [slo]\nat_rps = 5000\np99_ms = 10\nsuccess = 0.999\n",
    )
    .unwrap();
    let study = crate::study::file::Study::load(&file, false).unwrap();
    let sizing = |f: &Fixture| {
        let d = f.load(&["label=sized"], true);
        let t = study::section(&d, &study).tables.into_iter().find(|t| t.id == "sizing").unwrap();
        cell_texts(&t, 0)[1..].to_vec()
    };
    let p99 = |run: i64, ms: f64| {
        f.store.raw().execute("UPDATE step SET p99 = ?2 WHERE run_id = ?1", params![run, ms]).unwrap();
    };
    // One run holds (p99 3 ms), one misses (50 ms), one died before the rate: 1 of 3, not held, although
    // the two completed runs alone would split one to one.
    p99(runs[1], 50.0);
    assert_eq!(sizing(&f), ["✗ 26.5 ms · 1/3", "none of these"]);
    p99(runs[1], 3.0);
    assert_eq!(sizing(&f), ["✓ 3 ms · 2/3", "cpus=1 memory=512M"]);
    // An interrupted run is the measurement's failure: not judged.
    f.store.raw().execute("UPDATE run SET status = 'interrupted', oom_killed = 0 WHERE id = ?1", [runs[2]]).unwrap();
    assert_eq!(sizing(&f), ["✓ 3 ms · 2/2", "cpus=1 memory=512M"]);
    // A step at the rate flagged for the machine alone leaves its run unjudged; one the service starved is
    // judged and misses, and a tie does not hold.
    let flag = |code: &str| {
        let flags = Validity {
            flags: vec![Flag { code: crate::figures::validity::FlagCode::from_code(code), detail: code.into() }],
        }
        .to_json();
        f.store.raw().execute("UPDATE step SET flags = ?2 WHERE run_id = ?1", params![runs[1], flags]).unwrap();
    };
    flag("machine_speed");
    assert_eq!(sizing(&f), ["✓ 3 ms · 1/1", "cpus=1 memory=512M"]);
    flag("starved_connections");
    assert_eq!(sizing(&f), ["✗ 3 ms · 1/2", "none of these"]);
}

#[test]
fn sizing_says_which_cells_went_unjudged_beside_its_answer() {
    let f = store();
    let s = f.session("hello", Some("unjudged"));
    f.store.raw().execute("UPDATE session SET study = 'unjudged' WHERE id = ?1", params![s]).unwrap();
    f.service(s, "svc");
    let mut runs = Vec::new();
    for (i, cell) in ["cpus=0.5 memory=512M", "cpus=1 memory=512M"].iter().enumerate() {
        let r = f.run(s, "svc", i as i64 + 1, 1.0, 5000);
        f.store.raw().execute("UPDATE run SET cell = ?2 WHERE id = ?1", params![r, cell]).unwrap();
        f.step(r, 1, "open", None, Some(5000.0), "default", None, 5000.0, 5000, Some(5000), 1.0);
        f.store.raw().execute("UPDATE step SET p99 = 3 WHERE run_id = ?1", [r]).unwrap();
        runs.push(r);
    }
    let file = f.path.with_file_name("unjudged.toml");
    std::fs::write(
        &file,
        "title = \"t\"\nquestion = \"q\"\nservices = [\"svc\"]\nprofile = \"quick\"\n[limits]\ncpus = [0.5, 1]\n\
         [slo]\nat_rps = 5000\np99_ms = 10\n",
    )
    .unwrap();
    let study = crate::study::file::Study::load(&file, false).unwrap();
    let sizing = || {
        let d = f.load(&["label=unjudged"], true);
        let t = study::section(&d, &study).tables.into_iter().find(|t| t.id == "sizing").unwrap();
        cell_texts(&t, 0)[1..].to_vec()
    };
    assert_eq!(sizing(), ["✓ 3 ms · 1/1", "✓ 3 ms · 1/1", "cpus=0.5 memory=512M"]);
    // A step flagged for the machine alone leaves its run, and here its cell, unjudged.
    let spoil = |run: i64| {
        let flags = r#"[{"code":"machine_speed","detail":"set"}]"#;
        f.store.raw().execute("UPDATE step SET valid = 0, flags = ?2 WHERE run_id = ?1", params![run, flags]).unwrap();
    };
    spoil(runs[0]);
    assert_eq!(sizing(), ["–", "✓ 3 ms · 1/1", "cpus=1 memory=512M (1 smaller not judged)"]);
    f.store.raw().execute("UPDATE step SET p99 = 30 WHERE run_id = ?1", [runs[1]]).unwrap();
    assert_eq!(sizing(), ["–", "✗ 30 ms · 0/1", "none of those judged (1 not judged)"]);
    spoil(runs[1]);
    assert_eq!(sizing(), ["–", "–", "not judged in any cell"]);
}

#[test]
fn a_ramp_step_is_charted_per_second_against_its_offered_rate_with_its_knee_in_the_summary() {
    let f = store();
    let s = f.session("hello", None);
    f.service(s, "go");
    // 100 → 1,000 req/s over 10 s: second i offers 145 + 90 i. Every answer succeeds with a 2 ms p99 up to
    // second 4 (505 req/s offered); from second 5 on, half of them fail.
    let timeline: Vec<String> = (0..10)
        .map(|i| {
            let offered = 145 + 90 * i;
            let errors = if i < 5 { 0 } else { offered / 2 };
            format!(r#"{{"second":{i},"ok":{},"errors":{errors},"p50_ms":1.0,"p99_ms":2.0}}"#, offered - errors)
        })
        .collect();
    for i in 1..=2 {
        let r = f.run(s, "go", i, 2.0, 2000);
        f.step(r, 1, "ramp", None, Some(100.0), "default", None, 400.0, 4000, Some(5500), 1.0);
        f.store
            .raw()
            .execute(
                "UPDATE step SET rate_end = 1000, duration_s = 10, label = 'ramp=100→1000/s', timeline = ?1 WHERE run_id = ?2",
                params![format!("[{}]", timeline.join(",")), r],
            )
            .unwrap();
    }
    let d = f.load(&[], false);
    let charts = charts::charts(&d);
    let success = charts.iter().find(|c| c.id == "ramp-success").expect("a per-second success chart");
    assert_eq!((success.x.name.as_str(), success.x.unit.as_str()), ("offered rate", "req/s"));
    assert_eq!(success.series.len(), 2, "a line per run");
    let points: Vec<(f64, f64)> = success.series[0].points.iter().map(|p| (p.x, p.y)).collect();
    assert_eq!(points.len(), 10);
    assert_eq!((points[0], points[4]), ((145.0, 100.0), (505.0, 100.0)));
    assert!((points[9].0 - 955.0).abs() < 1e-9 && (points[9].1 - 50.0).abs() < 1.0, "{points:?}");
    let p99 = charts.iter().find(|c| c.id == "ramp-p99").expect("a per-second p99 chart");
    assert!(p99.series[0].points.iter().all(|p| p.y == 2.0));

    let (summary, sums) = sections::summary(&d, 0.0275);
    assert_eq!(sums[0].knee_rps.map(|k| k.median), Some(505.0));
    let col = summary.head.iter().position(|h| h == "knee (offered req/s)").expect("a knee column");
    assert_eq!(cell_texts(&summary, 0)[col], "505");
    assert!(summary.note.contains("knee"));

    // A report without ramp steps keeps its columns and charts.
    let f = store();
    let s = f.session("hello", None);
    f.service(s, "go");
    let r = f.run(s, "go", 1, 2.0, 2000);
    f.step(r, 1, "open", None, Some(100.0), "default", None, 100.0, 1000, Some(1000), 1.0);
    let d = f.load(&[], false);
    assert!(charts::charts(&d).iter().all(|c| !c.id.starts_with("ramp-")));
    let (summary, sums) = sections::summary(&d, 0.0275);
    assert!(sums[0].knee_rps.is_none() && !summary.head.iter().any(|h| h.contains("knee")));
}

#[test]
fn the_services_table_says_how_each_ran_only_where_one_ran_as_an_image_or_a_pod() {
    let f = store();
    let s = f.session("hello", None);
    for name in ["go", "go@container"] {
        f.service(s, name);
        f.run(s, name, 1, 1.0, 100);
    }
    let head = |d: &data::Dataset| sections::services(d).head;
    // Processes only (and stores from before the column): no column.
    assert_eq!(head(&f.load(&[], false)).last().map(String::as_str), Some("artifact (MiB)"));
    f.store.set_runtime(s, "go", "process").unwrap();
    f.store.set_runtime(s, "go@container", "pod (podman kube play)").unwrap();
    let d = f.load(&[], false);
    let t = sections::services(&d);
    assert_eq!(t.head.last().map(String::as_str), Some("runs as"));
    assert_eq!(cell_texts(&t, 0).last().map(String::as_str), Some("process"));
    assert_eq!(cell_texts(&t, 1).last().map(String::as_str), Some("pod (podman kube play)"));
}

#[test]
fn compare_pairs_two_variants_of_one_service_cell_by_cell() {
    // Seed 002's JVM runs: two variants of one service under two memory caps, set against each other.
    let f = store();
    let s = f.session("users", None);
    for (svc, rps) in [("k@xmx", 1000.0), ("k@default", 2000.0)] {
        f.service(s, svc);
        for cell in ["memory=512M", "memory=none"] {
            for (i, noise) in [0.95, 1.0, 1.05].into_iter().enumerate() {
                let r = f.run(s, svc, i as i64 + 1, 1.0, 1000);
                f.store.raw().execute("UPDATE run SET cell = ?1 WHERE id = ?2", params![cell, r]).unwrap();
                f.step(r, 1, "closed", Some(100), None, "default", None, rps * noise, 100, None, 1.0);
            }
        }
    }
    let c = compare::compare(&f.load(&["service=k@xmx"], true), &f.load(&["service=k@default"], true), 0.05, &[]);
    for cell in ["memory=512M", "memory=none"] {
        let name = format!("k@xmx → k@default [{cell}]");
        let peak = c.lines.iter().find(|l| l.metric == "peak_rps" && l.service == name);
        let peak = peak
            .unwrap_or_else(|| panic!("no line {name}: {:?}", c.lines.iter().map(|l| &l.service).collect::<Vec<_>>()));
        assert_eq!(peak.verdict, "faster", "{name}");
        assert!((peak.ratio.unwrap() - 2.0).abs() < 0.05, "{name}: {:?}", peak.ratio);
    }
    assert!(c.lines.iter().all(|l| l.service.starts_with("k@xmx → k@default [")), "nothing left unpaired");
}

#[test]
fn connection_attempts_dropped_at_the_accept_queue_get_a_column_only_where_some_were() {
    let f = store();
    let s = f.session("hello", None);
    for (name, drops) in [("a", Some(9)), ("b", None)] {
        f.service(s, name);
        let r = f.run(s, name, 1, 1.0, 1000);
        f.step(r, 1, "closed", Some(64), None, "default", None, 100.0, 100, None, 1.0);
        f.store.raw().execute("UPDATE step SET listen_drops = ?1 WHERE run_id = ?2", params![drops, r]).unwrap();
    }
    let t = quality::errors(&f.load(&[], false)).expect("drops alone make the table");
    let col = t.head.iter().position(|h| h == "attempts dropped at its accept queue").expect("the drops column");
    assert_eq!(cell_texts(&t, 0)[col], "9");
    assert_eq!(cell_texts(&t, 1)[col], "–");
    // None dropped, nothing failed: no table.
    let f2 = store();
    let s2 = f2.session("hello", None);
    f2.service(s2, "a");
    let r = f2.run(s2, "a", 1, 1.0, 1000);
    f2.step(r, 1, "closed", Some(4), None, "default", None, 100.0, 100, None, 1.0);
    f2.store.raw().execute("UPDATE step SET listen_drops = 0 WHERE run_id = ?1", params![r]).unwrap();
    assert!(quality::errors(&f2.load(&[], false)).is_none());
}

/// Two labelled sessions of one service, 3 runs each with two steps (valid, with every step's flags given),
/// peak req/s about `rps` of each side.
fn two_sides(f: &Fixture, rps: [f64; 2]) -> [Vec<i64>; 2] {
    let mut out = [Vec::new(), Vec::new()];
    for (k, label) in ["base", "new"].into_iter().enumerate() {
        let s = f.session("hello", Some(label));
        f.service(s, "go");
        for i in 1..=3 {
            let r = f.run(s, "go", i, 1.0, 1000);
            f.step(r, 1, "closed", Some(1), None, "default", None, rps[k] * (0.99 + 0.01 * i as f64), 100, None, 1.0);
            f.step(r, 2, "closed", Some(64), None, "default", None, rps[k] * (1.49 + 0.01 * i as f64), 100, None, 1.0);
            out[k].push(r);
        }
    }
    f.store.raw().execute("UPDATE step SET flags = '[]', valid = 1", []).unwrap();
    out
}

fn flag_steps(f: &Fixture, runs: &[i64], seq: i64, code: &str) {
    let flags = format!(r#"[{{"code":"{code}","detail":"as the test says"}}]"#);
    for r in runs {
        f.store
            .raw()
            .execute("UPDATE step SET flags = ?3, valid = 0 WHERE run_id = ?1 AND seq = ?2", params![r, seq, flags])
            .unwrap();
    }
}

#[test]
fn compare_says_why_new_has_no_figure_and_the_gate_fails_only_on_the_services_own_failures() {
    let f = store();
    let [base_runs, new_runs] = two_sides(&f, [1000.0, 1000.0]);
    // BASE kept 2 valid runs at c=64; every NEW step at c=64 lost its generator's CPU: a measurement that
    // could not be made, not the service's doing.
    flag_steps(&f, &base_runs[..1], 2, "generator_contended");
    flag_steps(&f, &new_runs, 2, "generator_contended");
    let (base, new) = (f.load(&["label=base"], true), f.load(&["label=new"], true));
    let c = compare::compare(&base, &new, 0.05, &[]);
    let line = c.lines.iter().find(|l| l.metric == "step_rps" && l.step.as_deref() == Some("#2 step 2")).unwrap();
    assert_eq!(line.verdict, compare::NOT_JUDGED);
    assert_eq!(
        line.note.as_deref(),
        Some("every NEW step at #2 step 2 left out: 3 × load generator lost CPU to other processes")
    );
    assert!(line.regression_pct.is_none());
    let json = serde_json::to_value(&c).unwrap();
    let j = json["lines"].as_array().unwrap().iter().find(|l| l["step"] == "#2 step 2").unwrap();
    assert!(j["note"].as_str().unwrap().contains("load generator lost CPU"), "{j}");
    let rules = [compare::parse_fail_on("step_rps").unwrap()];
    let gate = compare::gate(&c, &rules, false).unwrap();
    assert_eq!((gate.result, gate.exit_code()), ("passed", 0), "{gate:?}");
    assert!(gate.failures.is_empty());
    assert_eq!(gate.not_judged.len(), 1);
    assert!(gate.not_judged[0].starts_with("go step #2 step 2 step_rps: every NEW step at #2 step 2 left out"));
    assert_eq!(
        gate.summary,
        "--fail-on step_rps (any regression): passed: no regression in the 1 line judged; not judged: 1 left out \
         in NEW for the measurement's reasons"
    );
    let md = compare::markdown(&base, &new, &c, Some(&gate));
    assert!(md.contains("| not judged: every NEW step at #2 step 2 left out: 3 × load generator lost CPU"), "{md}");
    assert!(md.contains(&format!("**{}**", gate.summary)) && md.contains("- not judged: go step #2"), "{md}");

    // The service OOM-killed at c=64 in every NEW run: its own failure, a regression whatever the threshold
    // (and though BASE has 2 runs there), said without a percentage.
    flag_steps(&f, &new_runs, 2, "oom_killed");
    let c = compare::compare(&f.load(&["label=base"], true), &f.load(&["label=new"], true), 0.05, &[]);
    let line = c.lines.iter().find(|l| l.metric == "step_rps" && l.step.as_deref() == Some("#2 step 2")).unwrap();
    assert_eq!(line.verdict, compare::FAILED_IN_NEW);
    let gate = compare::gate(&c, &[compare::parse_fail_on("step_rps:50%").unwrap()], false).unwrap();
    assert_eq!((gate.result, gate.exit_code()), ("failed", 1));
    assert_eq!(
        gate.failures,
        ["go step #2 step 2 step_rps: the service failed in NEW: every NEW step at #2 step 2 left out: 3 × service \
          OOM-killed"]
    );
    assert!(!gate.failures[0].contains('%'), "{}", gate.failures[0]);
    assert!(gate.summary.contains("failed: 1 regression in the 2 lines judged"), "{}", gate.summary);

    // Every NEW run interrupted: no whole-run figure, and nothing said of the service.
    f.store.raw().execute("UPDATE step SET flags = '[]', valid = 1", []).unwrap();
    for r in &new_runs {
        f.store.raw().execute("UPDATE run SET status = 'interrupted' WHERE id = ?1", [r]).unwrap();
    }
    let c = compare::compare(&f.load(&["label=base"], true), &f.load(&["label=new"], true), 0.05, &[]);
    let peak = c.lines.iter().find(|l| l.metric == "peak_rps").unwrap();
    assert_eq!(peak.verdict, compare::NOT_JUDGED);
    assert_eq!(peak.note.as_deref(), Some("no NEW run gives it (runs: 3 × interrupted)"));
    let gate = compare::gate(&c, &[compare::parse_fail_on("all").unwrap()], false).unwrap();
    assert_eq!(gate.result, "passed");
    assert!(
        gate.summary.contains("passed, but no line could be judged; not judged: 7 left out in NEW"),
        "{}",
        gate.summary
    );
    // Every NEW run failed its conformance checks: the service's failure.
    for r in &new_runs {
        f.store.raw().execute("UPDATE run SET status = 'failed', checks_failed = 1 WHERE id = ?1", [r]).unwrap();
    }
    let c = compare::compare(&f.load(&["label=base"], true), &f.load(&["label=new"], true), 0.05, &[]);
    let peak = c.lines.iter().find(|l| l.metric == "peak_rps").unwrap();
    assert_eq!(peak.verdict, compare::FAILED_IN_NEW);
    assert_eq!(peak.note.as_deref(), Some("no NEW run gives it (runs: 3 × failed its conformance checks)"));
    assert_eq!(compare::gate(&c, &[compare::parse_fail_on("peak_rps").unwrap()], false).unwrap().exit_code(), 1);
    // Every NEW run failed otherwise (never ready, its start failed): the service's failure too, and a gate
    // at 100 % on a higher-is-better metric fails on it.
    for r in &new_runs {
        f.store.raw().execute("UPDATE run SET status = 'failed', checks_failed = NULL WHERE id = ?1", [r]).unwrap();
    }
    let c = compare::compare(&f.load(&["label=base"], true), &f.load(&["label=new"], true), 0.05, &[]);
    let peak = c.lines.iter().find(|l| l.metric == "peak_rps").unwrap();
    assert_eq!(peak.verdict, compare::FAILED_IN_NEW, "{:?}", peak.note);
    assert!(
        peak.note.as_deref().unwrap_or("").contains("3 × failed (the service did not start or answer"),
        "{:?}",
        peak.note
    );
    assert_eq!(compare::gate(&c, &[compare::parse_fail_on("peak_rps:100%").unwrap()], false).unwrap().exit_code(), 1);
}

#[test]
fn compare_warns_when_base_and_new_were_measured_differently_and_the_gate_does_not_judge_them() {
    let f = store();
    let [_, new_runs] = two_sides(&f, [1000.0, 500.0]);
    let alike =
        |f: &Fixture| compare::compare(&f.load(&["label=base"], true), &f.load(&["label=new"], true), 0.05, &[]);
    assert!(alike(&f).differences.is_empty() && alike(&f).warnings.is_empty());
    // Another profile, and half the CPU and memory.
    f.store
        .raw()
        .execute(
            "UPDATE session SET profile = 'tiny', limit_cpus = 0.5, limit_memory_mib = 128 WHERE label = 'new'",
            [],
        )
        .unwrap();
    f.store
        .raw()
        .execute("UPDATE session SET profile = 'quick', limit_memory_mib = 256 WHERE label = 'base'", [])
        .unwrap();
    let (base, new) = (f.load(&["label=base"], true), f.load(&["label=new"], true));
    let c = compare::compare(&base, &new, 0.05, &[]);
    let settings: Vec<&str> = c.differences.iter().map(|d| d.setting).collect();
    assert_eq!(settings, ["profile", "limits"]);
    assert_eq!(
        c.warnings[0],
        "BASE and NEW were measured with different profiles (BASE: quick; NEW: tiny): other load steps give other \
         figures, so a difference may be the profile's, not the code's."
    );
    assert!(c.warnings[1].contains("different limits (BASE: cpus=1.5 memory=256M; NEW: cpus=0.5 memory=128M)"));
    let md = compare::markdown(&base, &new, &c, None);
    assert!(md.starts_with("## svcbench compare\n\n> **Warning:** BASE and NEW were measured with different profiles"));
    let json = serde_json::to_value(&c).unwrap();
    assert_eq!(json["warnings"].as_array().unwrap().len(), 2);
    assert_eq!(json["differences"][1]["new"][0], "cpus=0.5 memory=128M");
    // The gate does not judge them (exit 3), whatever the verdicts; told to, it does.
    let rules = [compare::parse_fail_on("all:10%").unwrap()];
    let refused = compare::gate(&c, &rules, false).unwrap();
    assert_eq!((refused.result, refused.exit_code(), refused.judged), ("refused", 3, 0));
    assert!(refused.failures.is_empty());
    assert!(refused.summary.contains("measured differently (profile, limits;"), "{}", refused.summary);
    assert!(refused.summary.contains("--allow-different-settings"), "{}", refused.summary);
    let judged = compare::gate(&c, &rules, true).unwrap();
    assert_eq!((judged.result, judged.exit_code()), ("failed", 1), "{judged:?}");

    // One session, two cells of a study's limits axis, against a session of the other cell's limits: the
    // runs' own limits count.
    f.store
        .raw()
        .execute("UPDATE session SET profile = 'quick', limit_cpus = 1.5, limit_memory_mib = 256", [])
        .unwrap();
    assert!(alike(&f).differences.is_empty());
    for r in &new_runs {
        f.store.raw().execute("UPDATE run SET cell = 'cpus=0.75 memory=256M', asked_cpus = 0.75, asked_memory_mib = 256 WHERE id = ?1", [r]).unwrap();
    }
    let c = alike(&f);
    assert_eq!(c.differences.len(), 1);
    assert_eq!(
        (c.differences[0].base[0].as_str(), c.differences[0].new[0].as_str()),
        ("cpus=1.5 memory=256M", "cpus=0.75 memory=256M")
    );
    // The same profile with longer steps (--step-duration), and another generator set-up.
    f.store.raw().execute("UPDATE run SET cell = NULL, asked_cpus = NULL, asked_memory_mib = NULL", []).unwrap();
    for r in &new_runs {
        f.store.raw().execute("UPDATE step SET duration_s = 5.0 WHERE run_id = ?1", [r]).unwrap();
    }
    f.store
        .raw()
        .execute(
            "UPDATE session SET loadgen_cpuset = '0', network = 'loopback; 2 generator agents' WHERE label = 'new'",
            [],
        )
        .unwrap();
    f.store.raw().execute("UPDATE session SET loadgen_cpuset = '0' WHERE label = 'base'", []).unwrap();
    let c = alike(&f);
    let settings: Vec<&str> = c.differences.iter().map(|d| d.setting).collect();
    assert_eq!(settings, ["load generator", "steps"]);
    assert!(c.warnings[0].contains("drove the load differently (BASE: generator CPUs 0; loopback; NEW: generator CPUs 0; loopback; 2 generator agents)"), "{}", c.warnings[0]);
    assert!(c.warnings[1].contains("(BASE: #1 step 1 mix=default for 1.00 s; NEW: #1 step 1 mix=default for 5.00 s) (--step-duration or --mix)"), "{}", c.warnings[1]);
}

#[test]
fn a_passing_gate_says_so_in_one_line() {
    let f = store();
    two_sides(&f, [1000.0, 1000.0]);
    let (base, new) = (f.load(&["label=base"], true), f.load(&["label=new"], true));
    let c = compare::compare(&base, &new, 0.05, &compare::parse_metrics(&["peak_rps".into()]).unwrap());
    let gate = compare::gate(&c, &[compare::parse_fail_on("peak_rps:10%").unwrap()], false).unwrap();
    assert_eq!((gate.result, gate.judged), ("passed", 1));
    assert_eq!(
        gate.summary,
        "--fail-on peak_rps (worse by more than 10 %): passed: no regression in the 1 line judged"
    );
    let md = compare::markdown(&base, &new, &c, Some(&gate));
    assert!(md.ends_with(&format!("\n**{}**\n", gate.summary)), "{md}");
    // No --fail-on, no gate line.
    assert!(compare::gate(&c, &[], false).is_none());
    assert!(!compare::markdown(&base, &new, &c, None).contains("--fail-on"));
}

#[test]
fn status_errors_name_the_statuses_outside_2xx_with_their_median_counts() {
    let f = store();
    let s = f.session("users", None);
    f.service(s, "k");
    // Three runs: 404 in each (10, 12, 20), 500 in one only (its median over the three is 0).
    for (i, counts) in
        [r#"{"200":90,"404":10}"#, r#"{"200":88,"404":12}"#, r#"{"200":70,"404":20,"500":3}"#].iter().enumerate()
    {
        let r = f.run(s, "k", i as i64 + 1, 1.0, 1000);
        f.step(r, 1, "closed", Some(4), None, "default", None, 100.0, 100, None, 1.0);
        f.store
            .raw()
            .execute("UPDATE step SET err_status = 5, status_counts = ?1 WHERE run_id = ?2", params![counts, r])
            .unwrap();
    }
    let t = quality::errors(&f.load(&[], false)).expect("status errors make the table");
    let col = t.head.iter().position(|h| h.starts_with("answers outside 2xx")).expect("the statuses column");
    assert_eq!(cell_texts(&t, 0)[col], "404: 12, 500: 0");
    // No status error: no such column.
    let f2 = store();
    let s2 = f2.session("hello", None);
    f2.service(s2, "a");
    let r = f2.run(s2, "a", 1, 1.0, 1000);
    f2.step(r, 1, "closed", Some(4), None, "default", None, 100.0, 100, None, 1.0);
    f2.store.raw().execute("UPDATE step SET err_reset = 2, err_connect_refused = 0 WHERE run_id = ?1", [r]).unwrap();
    let t = quality::errors(&f2.load(&[], false)).expect("resets make the table");
    assert!(!t.head.iter().any(|h| h.starts_with("answers outside 2xx")), "{:?}", t.head);
}

#[test]
fn compare_says_why_neither_side_has_a_figure_where_both_ran() {
    let f = store();
    let [base_runs, new_runs] = two_sides(&f, [1000.0, 1000.0]);
    // A busy machine: every step of both sides lost its generator's CPU. Both sides ran 3 counted runs, so
    // "no data" alone would read as though nothing had been measured.
    for seq in [1, 2] {
        flag_steps(&f, &base_runs, seq, "generator_contended");
        flag_steps(&f, &new_runs, seq, "generator_contended");
    }
    let (base, new) = (f.load(&["label=base"], true), f.load(&["label=new"], true));
    let c = compare::compare(&base, &new, 0.05, &[]);
    let peak = c.lines.iter().find(|l| l.metric == "peak_rps").unwrap();
    assert_eq!(peak.verdict, "no data");
    let contended = "6 × load generator lost CPU to other processes";
    assert_eq!(
        peak.note.as_deref(),
        Some(format!(
            "BASE: no BASE run gives it (steps left out: {contended}); NEW: no NEW run gives it (steps left out: \
             {contended})"
        ))
        .as_deref()
    );
    let step = c.lines.iter().find(|l| l.metric == "step_rps" && l.step.as_deref() == Some("#2 step 2")).unwrap();
    assert_eq!(step.verdict, "no data");
    assert!(step.note.as_deref().unwrap().starts_with("BASE: every BASE step at #2 step 2 left out: 3 × "), "{step:?}");
    // Whole-run CPU per request is not read from the steps: it still has its figures and verdict.
    let cpu = c.lines.iter().find(|l| l.metric == "cpu_per_req").unwrap();
    assert_eq!((cpu.verdict.as_str(), cpu.note.as_deref()), ("within noise", None));
    let md = compare::markdown(&base, &new, &c, None);
    assert!(md.contains("| no data: BASE: no BASE run gives it (steps left out: 6 × load generator"), "{md}");
}

/// A round of two services, three runs each, every run with a valid step at 8 connections and one at 16
/// the load generator saturated.
fn round_with_a_saturated_step(f: &Fixture) -> table::Table {
    let s = f.session("hello", Some("round"));
    f.store.raw().execute("UPDATE session SET study = 'round' WHERE id = ?1", params![s]).unwrap();
    for (name, rps) in [("fast", [3000.0, 3100.0, 2900.0]), ("slow", [1000.0, 1050.0, 950.0])] {
        f.service(s, name);
        for (i, x) in rps.iter().enumerate() {
            let r = f.run(s, name, i as i64 + 1, 1.0, *x as i64);
            f.step(r, 1, "closed", Some(8), None, "default", None, *x, *x as i64, None, 1.0);
            f.step(r, 2, "closed", Some(16), None, "default", None, *x * 2.0, *x as i64 * 2, None, 1.0);
        }
    }
    let file = f.path.with_file_name("round.toml");
    std::fs::write(&file, "title = \"t\"\nquestion = \"q\"\nservices = [\"fast\", \"slow\"]\nprofile = \"quick\"\n")
        .unwrap();
    let study = crate::study::file::Study::load(&file, false).unwrap();
    let d = f.load(&["label=round"], true);
    study::section(&d, &study).tables.into_iter().find(|t| t.id.starts_with("round-")).unwrap()
}

#[test]
fn a_rounds_verdict_gives_the_ratio_with_its_interval() {
    let f = store();
    let t = round_with_a_saturated_step(&f);
    let slow = t.rows.iter().find(|r| r.cells[0].text == "slow").unwrap();
    let verdict = slow.cells.last().unwrap();
    assert_eq!(verdict.text, "0.33× [0.30, 0.37] slower");
}

#[test]
fn a_rounds_runs_cell_says_how_many_steps_its_peak_leaves_out_and_why() {
    let f = store();
    let t = round_with_a_saturated_step(&f);
    let runs_col = t.head.iter().position(|h| h == "runs").unwrap();
    for row in &t.rows {
        let runs = &row.cells[runs_col];
        assert_eq!((runs.text.as_str(), runs.class), ("3; 3 of 6 steps left out", "warn"));
        assert!(runs.title.as_deref().unwrap().contains("3 × load generator saturated"), "{:?}", runs.title);
    }
}

#[test]
fn per_request_cpu_and_memory_charts_are_log_scaled_where_services_differ_tenfold() {
    let f = store();
    let s = f.session("hello", None);
    for (i, name) in ["lean", "heavy"].iter().enumerate() {
        f.service(s, name);
        let r = f.run(s, name, i as i64 + 1, 1.0, 1000);
        f.step(r, 1, "closed", Some(4), None, "default", None, 1000.0, 1000, None, 1.0);
        f.step(r, 3, "closed", Some(8), None, "default", None, 1000.0, 1000, None, 1.0);
    }
    let scale = |id: &str| {
        let chart = charts::charts(&f.load(&[], false)).into_iter().find(|c| c.id == id).unwrap();
        (chart.y.scale, chart.note.contains("Log scale"))
    };
    // 1 ms per request each: linear, as the CPU time per step always is.
    assert_eq!(scale("cpu-per-req"), ("linear", false));
    f.store
        .raw()
        .execute(
            "UPDATE step SET cpu_ms_per_req = 0.05 WHERE run_id IN (SELECT id FROM run WHERE service = 'lean')",
            [],
        )
        .unwrap();
    assert_eq!(scale("cpu-per-req"), ("log", true));
    assert_eq!(scale("cpu"), ("linear", false));
}

#[test]
fn a_charts_legend_gets_the_rows_every_service_needs_to_be_named() {
    let legend_rows = |names: &[&str]| {
        let f = store();
        let s = f.session("upstream", None);
        for (i, name) in names.iter().enumerate() {
            f.service(s, name);
            let r = f.run(s, name, i as i64 + 1, 1.0, 1000);
            f.step(r, 1, "closed", Some(4), None, "default", None, 1000.0, 1000, None, 1.0);
        }
        let page = html::render(&build(f.load(&[], false), 0.0275));
        let chart = page.split("id=\"chart-rps\"").nth(1).unwrap().split('>').next().unwrap().to_string();
        chart
    };
    let two = legend_rows(&["go", "rust"]);
    assert!(two.contains("data-legend-rows=\"1\"") && two.contains("height: 340px"), "{two}");
    // Seed 004's nine services: five rows, the chart taller by four of them.
    let nine = legend_rows(&[
        "upstream-java-micronaut",
        "upstream-java-spring-mvc",
        "upstream-java-spring-webflux",
        "upstream-java-vertx",
        "upstream-kotlin-ktor-cio",
        "upstream-kotlin-ktor-cio@pool1000",
        "upstream-kotlin-ktor-netty",
        "upstream-kotlin-ktor-netty@pool1000",
        "upstream-node-http",
    ]);
    assert!(nine.contains("data-legend-rows=\"5\"") && nine.contains("height: 428px"), "{nine}");
}

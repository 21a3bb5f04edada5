//! `svcbench report` and `svcbench compare` on stores made by real runs: two `hello` services (quick
//! profile, 2 runs each) rendered and opened in headless Chromium, and the steady fixture under a CPU quota
//! and half of it (5 runs each) for compare's verdicts.
mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// The two services the issue names; the store holds 2 quick runs of each.
const HELLO: [&str; 2] = ["services/hello/go-nethttp", "services/hello/rust-actix"];

fn work_dir() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-tests");
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Runs that measure must not overlap (the machine has few CPUs): one at a time within this binary.
static MEASURING: Mutex<()> = Mutex::new(());

/// The hello store, made once per test binary by a real `svcbench run`.
fn hello_store() -> &'static Path {
    static STORE: OnceLock<PathBuf> = OnceLock::new();
    STORE.get_or_init(|| {
        let _guard = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
        let dbp = work_dir().join("hello.db");
        let _ = std::fs::remove_file(&dbp);
        let services: Vec<String> = HELLO.iter().map(|s| repo().join(s).display().to_string()).collect();
        let mut args = vec!["run"];
        args.extend(services.iter().map(String::as_str));
        args.extend(["--profile", "quick", "--runs", "2", "--db", dbp.to_str().unwrap()]);
        let out = svcbench(&args, &repo());
        assert!(out.status.success(), "svcbench run of the hello services failed");
        dbp
    })
}

/// The steady fixture at a CPU quota where it is CPU-bound (0.1 CPU), then at half of it, in one store
/// with labels `full` and `half`, 5 runs each: CPU quotas on this machine spread runs by 15–35 %, and at 3
/// runs a side that is too noisy for a verdict corrected over the 15 lines of a comparison. (At 0.5 CPU this Python service is not CPU-bound, so halving that
/// quota would not halve its throughput: the test would measure nothing.)
fn quota_store() -> &'static Path {
    static STORE: OnceLock<PathBuf> = OnceLock::new();
    STORE.get_or_init(|| {
        let _guard = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
        let dbp = work_dir().join("quota.db");
        let _ = std::fs::remove_file(&dbp);
        let steady = fixture("steady");
        // Two steps, both past where 0.1 CPU binds: the peak is what is compared.
        let prof = work_dir().join("two-steps.toml");
        std::fs::write(&prof, "name = \"two\"\n[[step]]\nconnections = [4, 16]\nduration = \"1s\"\n").unwrap();
        for (label, cpus) in [("full", "0.1"), ("half", "0.05")] {
            let out = svcbench(
                &[
                    "run",
                    steady.to_str().unwrap(),
                    "--profile",
                    prof.to_str().unwrap(),
                    "--runs",
                    "5",
                    "--cpus",
                    cpus,
                    "--label",
                    label,
                    "--db",
                    dbp.to_str().unwrap(),
                ],
                &repo(),
            );
            assert!(out.status.success(), "svcbench run of steady at --cpus {cpus} failed");
        }
        dbp
    })
}

/// With an even count, the lower of the two middle values (the report's rule for the peak's connections).
fn low_median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[(v.len() - 1) / 2]
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    assert!(n > 0);
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// A figure of each run of `service` that has it.
fn column(s: &Stored, service: &str, figure: impl Fn(&Run) -> Option<f64>) -> Vec<f64> {
    s.runs_of(service).filter_map(figure).collect()
}

/// A run's figure per successful request (None when it has none, as SQL divides by zero).
fn per_request(r: &Run, scale: f64) -> Option<f64> {
    let ok = r.total_requests_ok.filter(|&n| n != 0)?;
    Some(r.total_cpu_s? * scale / ok as f64)
}

/// The run's valid step with the most successful requests per second.
fn peak_step(r: &Run) -> Option<&StepRow> {
    r.steps.iter().filter(|st| st.valid == Some(true)).max_by(|a, b| a.success_rps.total_cmp(&b.success_rps))
}

/// The figure a chart draws, of one step.
fn chart_figure(id: &str, st: &StepRow) -> Option<f64> {
    match id {
        "errors" => Some(st.error_ratio),
        "rps" => Some(st.success_rps),
        "p50" => st.p50,
        "p90" => st.p90,
        "p99" => st.p99,
        "mem" => st.mem_peak_mib,
        "mem-per-rps" => st.mem_mib_s_per_req,
        "cpu" => st.cpu_s,
        "cpu-per-req" => st.cpu_ms_per_req,
        _ => None,
    }
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1e-12)
}

/// The first number in a table cell's text ("11,782 (11,747–11,817)" → 11782).
fn first_number(text: &str) -> f64 {
    let t: String = text
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ',')
        .collect();
    t.replace(',', "").parse().unwrap_or(f64::NAN)
}

/// Installs playwright-core (tests/report/package.json) when it is missing; it drives Debian's chromium.
fn browser_helper() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/report");
    if !dir.join("node_modules/playwright-core").exists() {
        let st = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&dir)
            .status()
            .unwrap();
        assert!(st.success(), "npm ci in {} failed", dir.display());
    }
    dir.join("check.mjs")
}

#[test]
fn html_report_of_two_hello_services_in_chromium() {
    let dbp = hello_store();
    let html = work_dir().join("hello.html");
    let out = svcbench(&["report", "--db", dbp.to_str().unwrap(), "-o", html.to_str().unwrap()], &repo());
    assert!(out.status.success());
    let page = std::fs::read_to_string(&html).unwrap();
    // Self-contained: no script, stylesheet or font is fetched from anywhere.
    for needle in ["<script src", "<link ", "@import", "url(http"] {
        assert!(!page.contains(needle), "the report refers to an external resource ({needle})");
    }

    let results = repo().join("results");
    std::fs::create_dir_all(&results).unwrap();
    let shot = results.join("report-screenshot.png");
    let _ = std::fs::remove_file(&shot);
    let node = Command::new("node").arg(browser_helper()).arg(&html).arg(&shot).output().unwrap();
    assert!(node.status.success(), "browser check failed: {}", String::from_utf8_lossy(&node.stderr));
    let v: Value = serde_json::from_slice(&node.stdout).unwrap();
    assert_eq!(v["consoleErrors"], Value::Array(vec![]), "console errors in the report");
    assert_eq!(v["externalRequests"], Value::Array(vec![]), "the report fetched something");

    let stored = stored(dbp);
    let services: Vec<String> = stored.services().map(|sv| sv.name.clone()).collect();
    assert_eq!(services.len(), 2);
    let run_labels: Vec<String> = services.iter().flat_map(|s| [format!("{s} #1"), format!("{s} #2")]).collect();
    let steps = stored.steps().count() as i64 / 4;
    assert_eq!(steps, 4, "quick has 4 steps");

    // The eleven charts, each with one series per run and a legend entry per service.
    let charts = v["charts"].as_array().unwrap();
    let ids: Vec<&str> = charts.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        ["startup", "errors", "rps", "p50", "p90", "p99", "mem", "mem-per-rps", "cpu", "cpu-per-req", "bang"]
    );
    for ch in charts {
        let id = ch["id"].as_str().unwrap();
        let series = ch["series"].as_array().unwrap();
        let got: Vec<&str> = series.iter().map(|s| s["id"].as_str().unwrap()).collect();
        assert_eq!(got, run_labels, "chart {id}: one series per run");
        let legend: Vec<&str> = ch["legend"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
        assert_eq!(legend, services, "chart {id}: one legend entry per service");
        // A point per step that has the figure: a step without successes has no latency or CPU per
        // request, and a log axis has no place for a latency of 0.
        for s in series {
            let label = s["id"].as_str().unwrap();
            let (svc, index) = label.rsplit_once(" #").unwrap();
            let run = stored
                .runs_of(svc)
                .find(|r| r.run_index.to_string() == index)
                .unwrap_or_else(|| panic!("no stored run {label}"));
            let want = match id {
                "startup" => 1,
                "bang" => steps + 1,
                _ => {
                    let positive = |v: f64| !id.starts_with('p') || v > 0.0;
                    run.steps.iter().filter(|st| chart_figure(id, st).is_some_and(positive)).count() as i64
                }
            };
            assert_eq!(s["points"].as_i64().unwrap(), want, "chart {id}, series {label}");
        }
        assert!(ch["drawnPaths"].as_i64().unwrap() > 10, "chart {id} drew nothing");
        assert!(ch["width"].as_f64().unwrap() > 300.0 && ch["height"].as_f64().unwrap() > 200.0);
    }

    // Hovering a point shows its run and value; a legend click hides the service in every chart.
    let hover = &v["hover"];
    let tip = hover["tooltip"].as_str().unwrap();
    assert!(tip.contains(hover["run"].as_str().unwrap()), "tooltip {tip:?} does not name the run");
    let y = hover["y"].as_f64().unwrap();
    let shown =
        tip.lines().find(|l| l.starts_with("Successful requests per second:")).map(first_number).unwrap_or(f64::NAN);
    assert!(close(shown, y, 0.01), "tooltip shows {shown}, the point is {y}");
    let legend = &v["legend"];
    for (id, sel) in legend["afterFirstClick"].as_object().unwrap() {
        assert_eq!(sel, &Value::Bool(false), "chart {id} still shows {}", legend["name"]);
    }
    for (id, sel) in legend["afterSecondClick"].as_object().unwrap() {
        assert_eq!(sel, &Value::Bool(true), "chart {id} did not show {} again", legend["name"]);
    }

    // The summary table's figures equal the ones computed here from the store.
    let price = 0.0275;
    let rows = v["summary"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for row in rows {
        let svc = row["service"].as_str().unwrap();
        let cells = &row["cells"];
        let expect: [(&str, Vec<f64>); 7] = [
            // Peaks come from valid steps only: a run without one has no peak.
            ("peak_rps", column(&stored, svc, |r| peak_step(r).map(|st| st.success_rps))),
            ("peak_at", column(&stored, svc, |r| peak_step(r).and_then(|st| st.connections).map(|n| n as f64))),
            ("cpu_us_per_req", column(&stored, svc, |r| per_request(r, 1e6))),
            ("cost_per_billion", column(&stored, svc, |r| per_request(r, 1e9 / 3600.0 * price))),
            ("startup_ms", column(&stored, svc, |r| r.startup_ms)),
            ("idle_mem_mib", column(&stored, svc, |r| r.idle_mem_mib)),
            ("peak_mem_mib", column(&stored, svc, |r| max_present(r.steps.iter().map(|st| st.mem_peak_mib)))),
        ];
        for (metric, values) in expect {
            let cell = &cells[metric];
            if metric.starts_with("peak_") && values.is_empty() {
                assert!(cell.is_null(), "{svc} {metric}: no valid step, no figure: {cell}");
                continue;
            }
            assert!(values.len() == 2 || metric.starts_with("peak_"), "{svc} {metric}: two runs");
            let med = if metric == "peak_at" { low_median(values.clone()) } else { median(values.clone()) };
            let (lo, hi) =
                (values.iter().cloned().fold(f64::MAX, f64::min), values.iter().cloned().fold(f64::MIN, f64::max));
            assert!(
                close(cell["median"].as_f64().unwrap(), med, 1e-9),
                "{svc} {metric}: table {} vs store {med}",
                cell["median"]
            );
            assert!(
                close(cell["min"].as_f64().unwrap(), lo, 1e-9) && close(cell["max"].as_f64().unwrap(), hi, 1e-9),
                "{svc} {metric} range"
            );
            let shown = first_number(cell["text"].as_str().unwrap());
            assert!(close(shown, med, 0.006), "{svc} {metric}: shows {shown}, median {med}");
            // The range line is there when min and max differ as shown.
            if let Some(range) = cell["range"].as_str() {
                let (a, b) = range.split_once('–').unwrap_or_else(|| panic!("{svc} {metric}: range {range:?}"));
                assert!(
                    close(first_number(a), lo, 0.006) && close(first_number(b), hi, 0.006),
                    "{svc} {metric}: range {range}"
                );
            }
        }
        let artifact = stored.service(svc).artifact_bytes.map_or(f64::NAN, |b| b as f64 / 1048576.0);
        assert!(close(cells["artifact_mib"]["value"].as_f64().unwrap(), artifact, 1e-9));
        let oom = stored.runs_of(svc).filter(|r| r.oom_killed).count() as i64;
        assert_eq!(cells["oom_kills"]["value"].as_i64().unwrap(), oom);
        let graceful = stored.runs_of(svc).filter(|r| r.stopped_gracefully == Some(true)).count() as i64;
        assert_eq!(cells["graceful"]["value"].as_i64().unwrap(), graceful);
    }

    let png = std::fs::read(&shot).unwrap();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 50_000, "screenshot {} looks empty", shot.display());
}

#[test]
fn markdown_report_and_filters() {
    let dbp = hello_store();
    let md = work_dir().join("hello.md");
    let out = svcbench(&["report", "--db", dbp.to_str().unwrap(), "-o", md.to_str().unwrap()], &repo());
    assert!(out.status.success());
    let text = std::fs::read_to_string(&md).unwrap();
    for needle in [
        "### Setup",
        "### Summary",
        "### Conformance",
        "hello-go-nethttp",
        "cost per 10⁹ requests",
        "cgroup",
        "| c=64 |",
    ] {
        assert!(text.contains(needle), "markdown lacks {needle:?}");
    }
    assert!(!text.contains("<script"), "markdown must not carry the page's scripts");

    // A service filter keeps one service; a label that matches nothing says what the store holds.
    let out = svcbench(
        &["report", "--db", dbp.to_str().unwrap(), "--filter", "service=*go*", "--format", "markdown", "-o", "-"],
        &repo(),
    );
    assert!(out.status.success());
    let one = String::from_utf8_lossy(&out.stdout);
    assert!(one.contains("hello-go-nethttp") && !one.contains("hello-rust-actix"), "{one}");
    let out = svcbench(&["report", "--db", dbp.to_str().unwrap(), "--filter", "label=nope", "-o", "-"], &repo());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("sessions there: 1 (hello"));
    let out = svcbench(&["report", "--db", dbp.to_str().unwrap(), "--filter", "colour=red", "-o", "-"], &repo());
    assert_eq!(out.status.code(), Some(2));
}

fn compare_json(args: &[&str]) -> (i32, Value) {
    let mut all = vec!["compare", "--format", "json"];
    all.extend_from_slice(args);
    let out = svcbench(&all, &repo());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code().unwrap_or(-1), v)
}

#[test]
fn compare_a_store_with_itself_is_within_noise_or_too_few_runs() {
    // 2 runs a side: no verdict, and so nothing for --fail-on, but the ratio and the advice are there.
    let dbp = hello_store().to_str().unwrap().to_string();
    let (code, v) = compare_json(&[&dbp, &dbp, "--fail-on", "all"]);
    assert_eq!(code, 0);
    let lines = v["lines"].as_array().unwrap();
    let whole_run = lines.iter().filter(|l| l["step"].is_null()).count();
    assert_eq!(whole_run, 2 * 7, "two services × seven metrics");
    assert_eq!(lines.len() - whole_run, 2 * 4 * 2, "two services × four quick steps × two step metrics");
    assert_eq!(v["tested"], 0);
    let no_data = lines.iter().filter(|l| l["verdict"] == "no data").count();
    assert!(no_data * 2 < lines.len() - whole_run, "most steps must have their figures: {no_data} without");
    for l in lines {
        // A step flagged in both runs (the generator lost its CPU on a busy host) has no figure to compare:
        // "no data", which is no verdict either. Whole-run metrics always have their two runs.
        if l["verdict"] == "no data" && !l["step"].is_null() {
            assert!(l["ratio"].is_null() && l["new"].is_null(), "{l}");
            continue;
        }
        assert_eq!(l["verdict"], "too few runs", "{l}");
        assert_eq!(l["ratio"].as_f64(), Some(1.0), "{l}");
        assert!(l["p"].is_null(), "{l}");
    }
    let peak = lines.iter().find(|l| l["metric"] == "peak_rps").unwrap();
    assert!(peak["advice"]["runs_for_5pct"].as_u64().unwrap() >= peak["advice"]["runs_for_10pct"].as_u64().unwrap());
    assert!(v["warnings"].as_array().unwrap().is_empty() && v["left_out"].as_array().unwrap().is_empty());

    // Enough runs a side: tested, and identical sides are within noise everywhere.
    let dbp = quota_store().to_str().unwrap().to_string();
    let (code, v) = compare_json(&["--db", &dbp, "--base", "label=full", "--new", "label=full", "--fail-on", "all"]);
    assert_eq!(code, 0);
    let lines = v["lines"].as_array().unwrap();
    // Every whole-run metric is tested; a per-step line may lack runs where that step was flagged (e.g. the
    // generator lost its CPU) — "too few runs", or "no data" when it was flagged in every run — and then says
    // so instead of deciding.
    let whole_run = lines.iter().filter(|l| l["step"].is_null()).count() as u64;
    assert!(v["tested"].as_u64().unwrap() >= whole_run, "{}", v["tested"]);
    for l in lines {
        if l["verdict"] == "too few runs" || l["verdict"] == "no data" {
            assert!(!l["step"].is_null(), "{l}");
            continue;
        }
        assert_eq!(l["verdict"], "within noise", "{l}");
        assert_eq!(l["p"].as_f64(), Some(1.0), "{l}");
    }
}

#[test]
fn compare_sees_half_the_cpu_quota_as_slower_and_fails_ci() {
    let dbp = quota_store().to_str().unwrap().to_string();
    // The peak alone, a family of one: with all eleven metrics Holm's correction asks p ≤ 0.0045 of the
    // first line, which five runs a side on a shared machine (20–30 % spread) do not always give.
    let peak_only = ["--metric", "peak_rps"];
    let gate = ["--db", &dbp, "--base", "label=full", "--new", "label=half", "--fail-on", "peak_rps:10%"];
    // Two quotas are two ways of measuring: the gate does not judge them unless told to, and says why.
    let (code, v) = compare_json(&[&gate[..], &peak_only].concat());
    assert_eq!(code, 3, "{v}");
    assert_eq!(v["gate"]["result"], "refused");
    assert!(v["warnings"][0].as_str().unwrap().contains("different limits (BASE: cpus=0.1"), "{v}");
    let (code, v) = compare_json(&[&gate[..], &peak_only, &["--allow-different-settings"]].concat());
    let peak = v["lines"].as_array().unwrap().iter().find(|l| l["metric"] == "peak_rps").unwrap().clone();
    assert_eq!(peak["service"], "test-steady");
    assert_eq!(peak["verdict"], "slower", "{peak}");
    assert!(peak["ratio"].as_f64().unwrap() < 0.8, "half the CPU should cost far more than 20 % of peak req/s: {peak}");
    let ci = peak["ci"].as_array().unwrap();
    assert!(ci[0].as_f64().unwrap() <= peak["ratio"].as_f64().unwrap() && ci[1].as_f64().unwrap() < 1.0, "{peak}");
    assert!(peak["p_adjusted"].as_f64().unwrap() <= 0.05 && peak["p"].as_f64() <= peak["p_adjusted"].as_f64());
    assert_eq!(code, 1, "--fail-on peak_rps:10% must fail on that regression");
    assert_eq!(v["failures"].as_array().unwrap().len(), 1);

    // The same comparison without --fail-on only reports; the other way round it is faster.
    let (code, _) = compare_json(&["--db", &dbp, "--base", "label=full", "--new", "label=half"]);
    assert_eq!(code, 0);
    let (code, v) = compare_json(
        &[
            &["--db", &dbp, "--base", "label=half", "--new", "label=full", "--fail-on", "peak_rps"][..],
            &peak_only,
            &["--allow-different-settings"],
        ]
        .concat(),
    );
    assert_eq!(code, 0);
    assert_eq!(v["gate"]["result"], "passed");
    assert!(v["lines"].as_array().unwrap().iter().any(|l| l["metric"] == "peak_rps" && l["verdict"] == "faster"));
    // --metric: only the metrics asked for, a family of that size.
    let (_, v) = compare_json(&["--db", &dbp, "--base", "label=full", "--new", "label=half", "--metric", "peak_rps"]);
    assert_eq!(v["lines"].as_array().unwrap().len(), 1);
    assert_eq!(v["tested"], 1);

    // Markdown (the default) says it in words; a bad rule, metric or α is a usage error.
    let out = svcbench(
        &["compare", "--db", &dbp, "--base", "label=full", "--new", "label=half", "--metric", "peak_rps"],
        &repo(),
    );
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains("**slower**") && md.contains("### Runs needed"), "{md}");
    for bad in [["--fail-on", "speed:x"], ["--metric", "speed"], ["--alpha", "1.5"]] {
        let mut args = vec!["compare", "--db", &dbp, "--base", "label=full", "--new", "label=half"];
        args.extend(bad);
        assert_eq!(svcbench(&args, &repo()).status.code(), Some(2), "{bad:?}");
    }
    let out = svcbench(
        &[
            "compare",
            "--db",
            &dbp,
            "--base",
            "label=full",
            "--new",
            "label=half",
            "--metric",
            "p99_ms",
            "--fail-on",
            "peak_rps",
        ],
        &repo(),
    );
    assert_eq!(out.status.code(), Some(2), "--fail-on a metric left out by --metric");
}

/// The seeds' pages embed svcbench's study reports (scripts/seed-pages.sh writes them): each must be, byte
/// for byte but its generation time, what the committed store gives today, so no table there is typed by
/// hand or left behind by a change of the report. The script owns the page format; its `--check` compares.
#[test]
fn seed_pages_hold_the_reports_their_committed_stores_give() {
    let check = |pages: &[&Path]| {
        let mut cmd = Command::new(repo().join("scripts/seed-pages.sh"));
        cmd.arg("--check").args(pages).env("SVCBENCH_BIN", bin());
        cmd.output().unwrap()
    };
    let out = check(&[]);
    let said = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("docs/seeds/003.md: 1 report(s)"), "{said}");
    assert!(said.contains("docs/seeds/000.md: 6 report(s) and 6 comparison(s) checked"), "{said}");
    // And it can fail: one figure changed in a copy of a page is found.
    let tmp = tempfile::tempdir().unwrap();
    let page = repo().join("docs/seeds/003.md");
    let text = std::fs::read_to_string(&page).unwrap();
    // The first figure of the round's table: its first row's run count.
    let row = text.find("| hello-scala-akka-http | (base) |").expect("seed 003's round table");
    let at = row + text[row..].find("| 3 |").expect("its run count") + 2;
    let changed = format!("{}4{}", &text[..at], &text[at + 1..]);
    let copy = tmp.path().join("003.md");
    std::fs::write(&copy, changed).unwrap();
    let out = check(&[&copy]);
    assert_eq!(out.status.code(), Some(1), "a changed figure is not what the store gives");
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not what the store gives today"));

    // A verdict quoted from `compare` is checked too: seed 000's first comparison alone on a page holds, and
    // with one verdict changed it does not.
    let text = std::fs::read_to_string(repo().join("docs/seeds/000.md")).unwrap();
    let start = text.find("<!-- svcbench compare ").expect("seed 000 quotes a comparison");
    let end_marker = "<!-- end of svcbench's compare -->\n";
    let end = start + text[start..].find(end_marker).unwrap() + end_marker.len();
    let block = &text[start..end];
    let page = tmp.path().join("compare.md");
    std::fs::write(&page, block).unwrap();
    let out = check(&[&page]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("0 report(s) and 1 comparison(s) checked"));
    let verdict = block.find("| within noise |").expect("a line within noise");
    std::fs::write(&page, format!("{}| faster |{}", &block[..verdict], &block[verdict + "| within noise |".len()..]))
        .unwrap();
    let out = check(&[&page]);
    assert_eq!(out.status.code(), Some(1), "a changed verdict is not what the store gives");
    assert!(String::from_utf8_lossy(&out.stderr).contains("svcbench compare"));
    // A marker naming a store that is not there: one line that names it, no traceback.
    std::fs::write(&page, block.replace("docs/seeds/data/", "docs/seeds/data/missing-")).unwrap();
    let out = check(&[&page]);
    let said = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.starts_with("seed-pages: no store docs/seeds/data/missing-") && said.lines().count() == 1, "{said}");
}

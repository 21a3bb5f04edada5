//! `svcbench history` over stores written by the store's own writer, one per "CI run", each session at a
//! commit of a repository made here: the sessions are put in git order whatever order the stores are
//! given in, the change point is named at the commit that made it, and `--fail-on regression` exits 1 for
//! a regression and 0 for an improvement. Nothing is started: no lock needed.
mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use svcbench::store::{RunEnd, RunStartup, SessionRecord, StepRow, Store};

/// A small deterministic wobble of about ±0.6 %: the noise of the synthetic sessions.
fn wobble(i: usize) -> f64 {
    [0.0, 0.006, -0.004, 0.003, -0.006, 0.002, 0.005, -0.003, -0.001, 0.004][i % 10]
}

/// One store with one session of three runs of `svc`, as it stands in `repo` now: CPU per request
/// `cpu_us` and peak req/s `rps`, on host `host`.
fn write_store(db: &Path, svc_dir: &Path, cpu_us: f64, rps: f64, host: &str) {
    let s = Store::open(db).unwrap();
    let mut rec = SessionRecord {
        command: "svcbench run".into(),
        scenario: "hello".into(),
        profile: "quick".into(),
        ..Default::default()
    };
    rec.runs_per_service = 3;
    rec.host.host_name = host.into();
    rec.host.kernel = "6.1.0".into();
    rec.cgroup_version = "v2".into();
    let session = s.create_session(&rec).unwrap();
    let svc = svcbench::manifest::Service::load(svc_dir).unwrap();
    s.add_service(session, &svc, true, Some(1.0), None, None).unwrap();
    for k in 1..=3 {
        let run = s.start_run(session, &svc.manifest.name, k).unwrap();
        s.record_startup(
            run,
            &RunStartup { startup_ms: 50.0, idle_mem_mib: 10.0, idle_rss_mib: 8.0, ..Default::default() },
        )
        .unwrap();
        let jitter = 1.0 + 0.002 * (k as f64 - 2.0);
        let row = StepRow {
            seq: 1,
            label: "c=8".into(),
            model: "closed".into(),
            connections: Some(8),
            mix: "default".into(),
            duration_s: 2.0,
            requests_ok: (rps * 2.0) as i64,
            requests_ok_in_window: Some((rps * 2.0) as i64),
            success_rps: rps * jitter,
            p99: Some(2.0),
            mem_peak_mib: Some(20.0),
            status_counts: "{}".into(),
            timeline: "[]".into(),
            valid: Some(true),
            flags: Some("[]".into()),
            ..Default::default()
        };
        s.add_step(run, &row, &[]).unwrap();
        let requests = 100_000u64;
        let end = RunEnd {
            total_requests_ok: requests,
            total_cpu_s: cpu_us * jitter * 1e-6 * requests as f64,
            shutdown_ms: Some(5.0),
            stopped_gracefully: Some(true),
            exit_code: Some(0),
            exit_signal: None,
        };
        s.record_end(run, &end).unwrap();
        s.finish_run(run, "completed", None, &[]).unwrap();
    }
    s.finish_session(session, "completed").unwrap();
}

struct Lab {
    _tmp: tempfile::TempDir,
    repo: PathBuf,
    stores: Vec<PathBuf>,
    commits: Vec<String>,
    side_commit: String,
}

/// Ten commits on the main line, one store each; the service's CPU per request goes up 10 % and its req/s
/// up 8 % from commit `step` on, where the CI host changes too. One more store measured a commit on a side
/// branch that the main line never merged.
fn lab(step: usize) -> Lab {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    let svc = repo.join("svc");
    std::fs::create_dir_all(&svc).unwrap();
    std::fs::write(
        svc.join("svcbench.toml"),
        "name = \"svc\"\nscenario = \"hello\"\nlanguage = \"sh\"\nframework = \"sh\"\nframework_version = \"1\"\n\
         model = \"blocking\"\nrun = \"./s\"\nreadiness = \"/\"\n",
    )
    .unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    let (mut stores, mut commits) = (Vec::new(), Vec::new());
    for i in 0..10 {
        std::fs::write(svc.join("code.txt"), format!("version {i}")).unwrap();
        git(&repo, &["add", "."]);
        git(&repo, &["commit", "-qm", &format!("change {i}")]);
        commits.push(git(&repo, &["rev-parse", "HEAD"]));
        let after = i >= step;
        let (cpu, rps) = if after { (110.0, 1080.0) } else { (100.0, 1000.0) };
        let db = tmp.path().join(format!("ci-{i}.db"));
        let host = if after { "ci-b" } else { "ci-a" };
        write_store(&db, &svc, cpu * (1.0 + wobble(i)), rps * (1.0 - wobble(i + 3)), host);
        stores.push(db);
    }
    git(&repo, &["checkout", "-qb", "side", &commits[3]]);
    std::fs::write(svc.join("code.txt"), "an experiment").unwrap();
    git(&repo, &["commit", "-qam", "experiment"]);
    let side_commit = git(&repo, &["rev-parse", "HEAD"]);
    let side = tmp.path().join("ci-side.db");
    write_store(&side, &svc, 300.0, 300.0, "ci-a");
    git(&repo, &["checkout", "-q", "main"]);
    stores.push(side);
    Lab { _tmp: tmp, repo, stores, commits, side_commit }
}

/// `svcbench history` over the lab's stores, given newest first (git order must not come from the
/// command line), with `extra` arguments.
fn history(lab: &Lab, extra: &[&str]) -> std::process::Output {
    let mut args: Vec<String> = vec!["history".into(), "--repo".into(), lab.repo.display().to_string()];
    for db in lab.stores.iter().rev() {
        args.extend(["--db".into(), db.display().to_string()]);
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    svcbench(&refs, &lab.repo)
}

fn series<'a>(json: &'a Value, metric: &str) -> &'a Value {
    json["series"].as_array().unwrap().iter().find(|s| s["metric"] == metric).unwrap_or_else(|| panic!("{metric}"))
}

#[test]
fn sessions_are_laid_in_git_order_and_the_change_is_named_at_its_commit() {
    let lab = lab(6);
    let out = history(&lab, &["--json", "--metric", "cpu_per_req,peak_rps"]);
    assert!(out.status.success());
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let cpu = series(&json, "cpu_per_req");
    let points: Vec<&str> = cpu["points"].as_array().unwrap().iter().map(|p| p["commit"].as_str().unwrap()).collect();
    assert_eq!(
        points,
        lab.commits.iter().map(String::as_str).collect::<Vec<_>>(),
        "git order, the side commit left out"
    );
    let cps = cpu["change_points"].as_array().unwrap();
    assert_eq!(cps.len(), 1, "{cps:?}");
    assert_eq!(cps[0]["commit"], lab.commits[6].as_str());
    assert_eq!(cps[0]["commit_before"], lab.commits[5].as_str());
    assert_eq!(cps[0]["direction"], "regression");
    let (ratio, lo, hi) =
        (cps[0]["ratio"].as_f64().unwrap(), cps[0]["ci"][0].as_f64().unwrap(), cps[0]["ci"][1].as_f64().unwrap());
    assert!(lo < 1.10 && 1.10 < hi && (ratio - 1.10).abs() < 0.02, "{ratio} [{lo}, {hi}]");
    assert_eq!(cps[0]["coincides_with"][0], "host from ci-a to ci-b");
    let rps = &series(&json, "peak_rps")["change_points"][0];
    assert_eq!(
        (rps["commit"].as_str(), rps["direction"].as_str()),
        (Some(lab.commits[6].as_str()), Some("improvement"))
    );
    let warnings = json["warnings"].to_string();
    assert!(
        warnings.contains(&lab.side_commit[..7]) && warnings.contains("not in the repository's history"),
        "{warnings}"
    );
}

#[test]
fn fail_on_regression_judges_the_newest_change_point() {
    let lab = lab(6);
    let worse = history(&lab, &["--metric", "cpu_per_req", "--fail-on", "regression"]);
    assert_eq!(worse.status.code(), Some(1), "more CPU per request is a regression");
    assert!(String::from_utf8_lossy(&worse.stderr).contains(&lab.commits[6][..7]));
    let better = history(&lab, &["--metric", "peak_rps", "--fail-on", "regression"]);
    assert_eq!(better.status.code(), Some(0), "more req/s is an improvement");
    assert!(String::from_utf8_lossy(&better.stdout).contains("improvement"));
}

#[test]
fn the_pages_mark_the_change_and_bad_input_is_refused_before_any_work() {
    let lab = lab(5);
    let page = lab.repo.join("history.html");
    let out = history(&lab, &["--metric", "cpu_per_req", "-o", page.to_str().unwrap()]);
    assert!(out.status.success());
    let html = std::fs::read_to_string(&page).unwrap();
    let short = &lab.commits[5][..7];
    assert!(html.contains("echarts") && html.contains(&format!("change point {}..{short}", &lab.commits[4][..7])));
    let md = lab.repo.join("history.md");
    assert!(history(&lab, &["--metric", "cpu_per_req", "-o", md.to_str().unwrap()]).status.success());
    assert!(std::fs::read_to_string(&md).unwrap().contains(&format!("| {short} ▲ |")));

    let unknown = history(&lab, &["--metric", "speed"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("unknown metric"));
    let missing = svcbench(&["history", "--db", "/nonexistent/x.db", "--repo", lab.repo.to_str().unwrap()], &lab.repo);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/nonexistent/x.db"));
    let outside = lab.repo.parent().unwrap().to_str().unwrap();
    let not_repo = svcbench(&["history", "--db", lab.stores[0].to_str().unwrap(), "--repo", outside], &lab.repo);
    assert_eq!(not_repo.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&not_repo.stderr).contains("not a git repository"));
}

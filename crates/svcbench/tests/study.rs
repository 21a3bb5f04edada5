//! Studies end to end: a service's variants under two CPU quotas, interleaved, interrupted with SIGINT and
//! resumed without re-running what completed, ending in the study's report; and variants built differently
//! getting their own artifacts and their own environment.
mod common;
use common::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A study of the `variants` fixture (base: at most 50 req/s; `fast`: far more) under cpus 0.5 and 1,
/// three runs per cell, one 1 s step at 4 connections, with an SLO only `fast` can hold.
fn study_file(tmp: &Path) -> PathBuf {
    let prof = tmp.join("one-step.toml");
    std::fs::write(&prof, "name = \"one-step\"\n[[step]]\nconnections = 4\nduration = \"1s\"\n").unwrap();
    let f = tmp.join("two-by-two.toml");
    std::fs::write(
        &f,
        format!(
            r#"title = "Two variants under two quotas"
question = "Does the fast variant serve more, and from which quota does it hold the SLO?"
services = ["{}@*"]
profile = "{}"
runs = 3
[limits]
cpus = [0.5, 1]
memory = ["128M"]
[slo]
at_rps = 100
p99_ms = 1000
success = 0.99
"#,
            fixture("variants").display(),
            prof.display()
        ),
    )
    .unwrap();
    f
}

/// The machine-speed probe is not what this test checks: on a shared machine it would leave steps out of
/// the peaks at random, and the verdicts would read "too few runs".
const TOLERANCE: &str = "1000";

fn study(tmp: &Path, args: &[&str]) -> std::process::Output {
    let mut a = vec!["study"];
    a.extend(args);
    svcbench_locked(&a, tmp)
}

/// Runs completed in the store so far (0 while it cannot be read yet).
fn completed(dbp: &Path) -> usize {
    try_stored(dbp).map_or(0, |s| s.runs().filter(|r| r.status == "completed").count())
}

#[test]
fn a_study_runs_interleaved_resumes_after_sigint_and_reports_its_rounds() {
    let tmp = tempfile::tempdir().unwrap();
    let file = study_file(tmp.path());
    let f = file.to_str().unwrap();
    let dbp = tmp.path().join("study.db");
    let d = dbp.to_str().unwrap();

    // The plan: 2 services × 2 cells × 3 runs, nothing run.
    let out = study(tmp.path(), &[f, "--plan", "--db", d]);
    assert!(out.status.success());
    let plan = String::from_utf8_lossy(&out.stderr);
    assert!(plan.contains("12 of 12 runs to do"), "{plan}");
    assert!(plan.contains("test-variants@fast") && plan.contains("cpus=0.5 memory=128M"), "{plan}");
    assert!(!dbp.exists(), "--plan runs nothing");

    // Interrupted with SIGINT once three runs have completed.
    let mut child = spawn_svcbench(tmp.path(), "first", &["study", f, "--db", d, "--probe-tolerance", TOLERANCE]);
    let t0 = Instant::now();
    while completed(&dbp) < 3 {
        assert!(t0.elapsed() < Duration::from_secs(120), "three runs did not complete");
        std::thread::sleep(Duration::from_millis(50));
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    let first = stderr_of(tmp.path(), "first");
    eprintln!("--- first session\n{first}");
    assert_eq!(status.code(), Some(130), "an interrupted study exits 130");
    // The way to continue names this store and the session's options, not the study's default store.
    let hint = format!("continue it with: svcbench study {f} --db {d} --probe-tolerance {TOLERANCE} --resume\n");
    assert!(first.contains(&hint), "the way to continue is named: {first}");
    let done_before = completed(&dbp);
    assert!((3..12).contains(&done_before), "{done_before}");

    // Started again without --resume: refused, nothing run.
    let out = study(tmp.path(), &[f, "--db", d]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("pass --resume"));
    assert_eq!(completed(&dbp), done_before);
    // Another study file is refused this store, with or without --resume: a store holds one study.
    let third = tmp.path().join("third.toml");
    std::fs::copy(&file, &third).unwrap();
    for resume in [&[][..], &["--resume"][..]] {
        let out = study(tmp.path(), &[&[third.to_str().unwrap(), "--db", d][..], resume].concat());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("holds the sessions of study `two-by-two`") && err.contains("--db"), "{err}");
    }
    // A resume of a store that is not there has nothing to continue: refused, no store made.
    let none = tmp.path().join("none.db");
    let out = study(tmp.path(), &[f, "--resume", "--db", none.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code() == Some(2) && err.contains("nothing to resume") && !none.exists(), "{err}");
    assert_eq!(completed(&dbp), done_before);

    let out = study(tmp.path(), &[f, "--resume", "--db", d, "--probe-tolerance", TOLERANCE]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains(&format!("{} of 12 runs to do", 12 - done_before)), "{text}");
    assert!(text.contains("runs done, about"), "progress for the whole study: {text}");

    let s = stored(&dbp);
    let done: Vec<&Run> = s.runs().filter(|r| r.status == "completed").collect();
    // Every cell has exactly its three completed runs: nothing completed was run again.
    let mut cells: BTreeMap<(&str, &str), Vec<i64>> = BTreeMap::new();
    for r in &done {
        let cell = r.cell.as_deref().unwrap_or_else(|| panic!("run {} of {} has no cell", r.id, r.service));
        cells.entry((r.service.as_str(), cell)).or_default().push(r.run_index);
    }
    // (service, cell, runs, distinct run indexes)
    let per_cell: Vec<(&str, &str, usize, usize)> = cells
        .iter()
        .map(|((svc, cell), idx)| (*svc, *cell, idx.len(), idx.iter().collect::<BTreeSet<_>>().len()))
        .collect();
    assert_eq!(per_cell.len(), 4, "{per_cell:?}");
    assert!(per_cell.iter().all(|(_, _, n, distinct)| *n == 3 && *distinct == 3), "{per_cell:?}");
    // The limits asked and held are on every run.
    assert_eq!(done.iter().filter(|r| r.asked_cpus == Some(0.5) && r.applied_cpus == Some(0.5)).count(), 6);
    assert_eq!(done.iter().filter(|r| r.asked_memory_mib == Some(128.0)).count(), 12);
    assert_eq!(s.service("test-variants@fast").variant.as_deref(), Some("fast"));
    assert_eq!(s.service("test-variants@fast").base_name, "test-variants");
    assert!(
        s.sessions().any(|x| x.study.as_deref() == Some("two-by-two")),
        "sessions stored for study two-by-two: {:?}",
        s.sessions().map(|x| &x.study).collect::<Vec<_>>()
    );
    // Interleaved: the first session's runs go run 1 of every cell (both services), then run 2.
    let mut first: Vec<&Run> = s.runs().filter(|r| r.session_id == 1).collect();
    first.sort_by_key(|r| r.id);
    let order: Vec<(&str, &str, i64)> = first
        .iter()
        .take(4)
        .map(|r| {
            (r.service.as_str(), r.cell.as_deref().unwrap_or_else(|| panic!("run {} has no cell", r.id)), r.run_index)
        })
        .collect();
    let expected = [
        ("test-variants", "cpus=0.5 memory=128M"),
        ("test-variants@fast", "cpus=0.5 memory=128M"),
        ("test-variants", "cpus=1 memory=128M"),
        ("test-variants@fast", "cpus=1 memory=128M"),
    ];
    for (got, want) in order.iter().zip(expected) {
        assert_eq!(*got, (want.0, want.1, 1), "{order:?}");
    }

    // The study's report, named after its store: a round per cell with a verdict against its best, and the
    // sizing.
    let md = std::fs::read_to_string(tmp.path().join("study.md")).unwrap();
    assert!(std::fs::read_to_string(tmp.path().join("study.html")).unwrap().contains("Study: Two variants"));
    assert!(!tmp.path().join("two-by-two.html").exists(), "another store of the study would write that one");
    for cell in ["cpus=0.5 memory=128M", "cpus=1 memory=128M"] {
        let round = md.split(&format!("#### Round under {cell}")).nth(1).expect("a round per cell");
        let round = round.split("####").next().unwrap();
        let fast = round.lines().find(|l| l.contains("| fast |")).unwrap_or_default();
        let base = round.lines().find(|l| l.contains("| (base) |")).unwrap_or_default();
        assert!(fast.contains("best"), "the fast variant leads its round: {round}");
        assert!(base.contains("slower"), "the 50 req/s base is judged slower with 3 runs a side: {round}");
    }
    let sizing = md.split("#### Sizing").nth(1).expect("a sizing table");
    let fast = sizing.lines().find(|l| l.contains("test-variants@fast")).unwrap();
    let base = sizing.lines().find(|l| l.contains("| test-variants |")).unwrap();
    assert!(fast.contains("✓") && fast.trim_end().ends_with("cpus=0.5 memory=128M |"), "{sizing}");
    assert!(base.contains("✗ not reached") && base.contains("none of these"), "{sizing}");

    // The profile's step gets longer: resuming would mix runs of two plans, so it is refused, nothing run.
    let prof = tmp.path().join("one-step.toml");
    std::fs::write(&prof, "name = \"one-step\"\n[[step]]\nconnections = 4\nduration = \"2s\"\n").unwrap();
    let out = study(tmp.path(), &[f, "--resume", "--db", d]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("the step plan of profile") && err.contains("--new-cell"), "{err}");
    assert_eq!(err.lines().filter(|l| l.contains("error")).count(), 1, "{err}");
    assert_eq!(completed(&dbp), 12);
    // With --new-cell the study starts again as a generation of its own: none of the earlier runs count.
    let out = study(tmp.path(), &[f, "--plan", "--resume", "--new-cell", "--db", d]);
    let plan = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && plan.contains("two-by-two#2") && plan.contains("12 of 12 runs to do"), "{plan}");
    // Another study file of the same name does not share the store.
    let other = tmp.path().join("elsewhere");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::copy(&file, other.join("two-by-two.toml")).unwrap();
    let out = study(tmp.path(), &[other.join("two-by-two.toml").to_str().unwrap(), "--resume", "--db", d]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("elsewhere/two-by-two.toml") && err.contains("--db"), "{err}");
    assert_no_leftovers("testservice.py");
}

#[test]
fn a_study_stopped_before_its_first_run_says_so_and_exits_130() {
    let tmp = tempfile::tempdir().unwrap();
    // Reachable by the services' user: the service folder is in it.
    std::fs::set_permissions(tmp.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let svc = tmp.path().join("slow-build");
    std::fs::create_dir_all(&svc).unwrap();
    std::fs::write(
        svc.join("svcbench.toml"),
        format!(
            "name = \"slow-build\"\nscenario = \"{}\"\nlanguage = \"sh\"\nframework = \"none\"\n\
             framework_version = \"0\"\nmodel = \"blocking\"\nreadiness = \"/\"\nbuild = \"sleep 60\"\nrun = \"./x\"\n",
            repo().join("crates/svcbench/tests/fixtures/scenarios/testing").display()
        ),
    )
    .unwrap();
    let prof = tmp.path().join("p.toml");
    std::fs::write(&prof, "name = \"p\"\n[[step]]\nconnections = 1\nduration = \"1s\"\n").unwrap();
    let file = tmp.path().join("early.toml");
    std::fs::write(
        &file,
        format!(
            "title = \"t\"\nquestion = \"q\"\nservices = [\"{}\"]\nprofile = \"{}\"\nruns = 1\n",
            svc.display(),
            prof.display()
        ),
    )
    .unwrap();
    let dbp = tmp.path().join("early.db");
    let (f, d) = (file.to_str().unwrap(), dbp.to_str().unwrap());
    let wait_for = |name: &str, what: &str| {
        let t0 = Instant::now();
        while !stderr_of(tmp.path(), name).contains(what) {
            assert!(t0.elapsed() < Duration::from_secs(60), "never said {what:?}: {}", stderr_of(tmp.path(), name));
            std::thread::sleep(Duration::from_millis(50));
        }
    };

    // Queued behind another measurement (this test holds the machine's lock): Ctrl-C ends the wait, and
    // nothing is made.
    let lock = std::fs::File::create(tmp.path().join("measure.lock")).unwrap();
    assert_eq!(unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&lock), libc::LOCK_EX) }, 0);
    let mut bg = spawn_svcbench(tmp.path(), "queued", &["study", f, "--db", d, "--wait-lock"]);
    wait_for("queued", "waiting for the other measurement");
    let status = bg.interrupt(Duration::from_secs(30));
    let err = stderr_of(tmp.path(), "queued");
    assert_eq!(status.and_then(|s| s.code()), Some(130), "{err}");
    assert!(err.contains("interrupted while waiting") && !err.contains("error"), "{err}");
    assert!(!dbp.exists(), "nothing stored: {err}");
    drop(lock);

    // Stopped during its build: nothing measured, said so, no report to write.
    let mut bg = spawn_svcbench(tmp.path(), "building", &["study", f, "--db", d]);
    wait_for("building", "svcbench: building slow-build");
    let status = bg.interrupt(Duration::from_secs(30));
    let err = stderr_of(tmp.path(), "building");
    assert_eq!(status.and_then(|s| s.code()), Some(130), "{err}");
    assert!(err.contains("interrupted before its first run: nothing measured"), "{err}");
    assert!(err.contains(&format!("continue it with: svcbench study {f} --db {d} --resume")), "{err}");
    assert!(!err.contains("error:") && !tmp.path().join("early.html").exists(), "{err}");
    assert_no_leftovers("slow-build");
}

#[test]
fn variants_built_differently_get_their_own_artifacts_and_environment() {
    let tmp = tempfile::tempdir().unwrap();
    let prof = tmp.path().join("p.toml");
    std::fs::write(&prof, "name = \"p\"\n[[step]]\nconnections = 2\nduration = \"1s\"\n").unwrap();
    let dbp = tmp.path().join("v.db");
    let dir = fixture("variants-rs");
    let spec = format!("{}@*", dir.display());
    let out = svcbench(
        &["run", &spec, "--profile", prof.to_str().unwrap(), "--runs", "1", "--db", dbp.to_str().unwrap()],
        tmp.path(),
    );
    assert!(out.status.success());
    let base = std::fs::read(dir.join("target/base/release/variants-rs")).unwrap();
    let other = std::fs::read(dir.join("target/other/release/variants-rs")).unwrap();
    assert_ne!(base, other, "each variant's build has its own artifact");
    let s = stored(&dbp);
    assert_eq!(s.runs().filter(|r| r.status == "completed").count(), 3);
    let sizes: BTreeSet<i64> = s.services().filter(|sv| sv.build_ok).filter_map(|sv| sv.artifact_bytes).collect();
    assert_eq!(sizes.len(), 2, "artifact sizes of the builds: {sizes:?}");
    // A variant that only runs differently reuses its base's build, and says what that build took.
    let base_s = s.service("test-variants-rs").build_s.unwrap_or(f64::NAN);
    assert!(base_s > 0.0, "the base's build is timed");
    assert_eq!(s.service("test-variants-rs@loud").build_s, Some(base_s));
    // Each process says which build it is and which environment it got.
    let logs: Vec<String> = walk(&tmp.path().join("work"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "log") && !p.to_string_lossy().contains("build-"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    let joined = logs.join("\n");
    assert!(joined.contains("built=base, flavour=base"), "{joined}");
    assert!(joined.contains("built=other, flavour=other"), "{joined}");
    assert!(joined.contains("built=base, flavour=loud"), "{joined}");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn every_bundled_study_plans() {
    let tmp = tempfile::tempdir().unwrap();
    let mut n = 0;
    for e in std::fs::read_dir(repo().join("studies")).unwrap().flatten() {
        let path = e.path();
        if path.extension().is_none_or(|x| x != "toml") {
            continue;
        }
        let db = tmp.path().join("plan.db");
        let out = study(tmp.path(), &[path.to_str().unwrap(), "--plan", "--db", db.to_str().unwrap()]);
        assert!(out.status.success(), "{}", path.display());
        assert!(String::from_utf8_lossy(&out.stderr).contains("runs to do"));
        n += 1;
    }
    assert!(n >= 14, "{n} bundled studies");
}

#[test]
fn a_death_does_not_cost_the_fresh_start_levels_after_it_and_a_resume_keeps_the_answer() {
    // Seed 004's resource table: each level after a fresh start. The hog keeps 8 MiB per request, so under a
    // 64 MiB cap it is OOM-killed within each 2 s level; every level is still measured, once each.
    let tmp = tempfile::tempdir().unwrap();
    let prof = tmp.path().join("levels.toml");
    std::fs::write(&prof, "name = \"levels\"\n[[step]]\nconnections = [1, 2]\nduration = \"2s\"\nfresh_start = true\n")
        .unwrap();
    let file = tmp.path().join("hog.toml");
    std::fs::write(
        &file,
        format!(
            "title = \"A hog under a cap\"\nquestion = \"Does every level get measured?\"\nservices = [\"{}\"]\n\
             profile = \"{}\"\nruns = 1\n[limits]\nmemory = [\"64M\"]\n",
            fixture("hog").display(),
            prof.display()
        ),
    )
    .unwrap();
    let dbp = tmp.path().join("hog.db");
    let (f, d) = (file.to_str().unwrap(), dbp.to_str().unwrap());
    let out = study(tmp.path(), &[f, "--db", d, "--probe-tolerance", TOLERANCE]);
    assert_eq!(out.status.code(), Some(1), "a failed run makes the exit code 1");
    let s = stored(&dbp);
    let run = s.run();
    assert_eq!(run.status, "failed");
    assert!(run.oom_killed, "OOM-killed: {:?}", run.error);
    assert_eq!(run.failed_stage.as_deref(), Some("step 1"));
    // Both levels stored, each with its own OOM kill: the second level was not skipped.
    assert_eq!(s.steps().filter(|st| st.oom_killed).count(), 2);
    // The death is the service's answer under that cap, not an interruption: a resume has nothing to run.
    let out = study(tmp.path(), &[f, "--resume", "--plan", "--db", d]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("1/1 runs done") && said.contains("0 of 1 runs to do"), "{said}");
    assert_no_leftovers("fixtures/testservice.py");
}

#[test]
fn a_store_resumes_from_another_clone_of_the_repository_that_holds_its_study() {
    // A study committed with its store, as the seeds' are: another clone at another path continues it.
    let tmp = tempfile::tempdir().unwrap();
    let prof = tmp.path().join("one-step.toml");
    std::fs::write(&prof, "name = \"one-step\"\n[[step]]\nconnections = 2\nduration = \"1s\"\n").unwrap();
    let text = format!(
        "title = \"One run\"\nquestion = \"Does a clone continue it?\"\nservices = [\"{}\"]\nprofile = \"{}\"\nruns = 1\n",
        fixture("variants").display(),
        prof.display()
    );
    let clone = |name: &str, rel: &str| {
        let root = tmp.path().join(name);
        std::fs::create_dir_all(root.join(".git")).unwrap();
        let file = root.join(rel);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, &text).unwrap();
        file
    };
    let (a, b) = (clone("a", "studies/one.toml"), clone("b", "studies/one.toml"));
    let dbp = tmp.path().join("a/one.db");
    let d = dbp.to_str().unwrap();
    let out = study(tmp.path(), &[a.to_str().unwrap(), "--db", d, "--probe-tolerance", TOLERANCE]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let copied = tmp.path().join("b/one.db");
    std::fs::copy(&dbp, &copied).unwrap();
    let d = copied.to_str().unwrap();

    let out = study(tmp.path(), &[b.to_str().unwrap(), "--resume", "--plan", "--db", d]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && said.contains("1/1 runs done") && said.contains("0 of 1 runs to do"), "{said}");
    // Another file of the same name in the same clone is another study: refused, naming both.
    let other = clone("b", "other/one.toml");
    let out = study(tmp.path(), &[other.to_str().unwrap(), "--resume", "--plan", "--db", d]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(" studies/one.toml") && err.contains(" other/one.toml") && err.contains("--db"), "{err}");
    assert_no_leftovers("testservice.py");
}

#[test]
fn a_run_that_measured_nothing_is_made_up_on_request_and_a_failed_first_step_is_kept() {
    // A run whose every step was left out, the first for the generator's lateness only, told nothing of its
    // service (seed 004's capacity lost whole runs so on a busy machine): `--resume --make-up` runs another in
    // its place and the store keeps both; a first step the service failed is its answer and stays the run.
    let tmp = tempfile::tempdir().unwrap();
    let prof = tmp.path().join("two-steps.toml");
    std::fs::write(&prof, "name = \"two-steps\"\n[[step]]\nconnections = [1, 2]\nduration = \"1s\"\n").unwrap();
    let file = tmp.path().join("one.toml");
    let text = format!(
        "title = \"One run\"\nquestion = \"Is a spoiled run made up?\"\nservices = [\"{}\"]\nprofile = \"{}\"\nruns = 1\n",
        fixture("variants").display(),
        prof.display()
    );
    std::fs::write(&file, text).unwrap();
    let dbp = tmp.path().join("one.db");
    let (f, d) = (file.to_str().unwrap(), dbp.to_str().unwrap());
    let out = study(tmp.path(), &[f, "--db", d, "--probe-tolerance", TOLERANCE]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The steps' flags as the report reads them, set here: which ones a busy machine raises is not up to a test.
    let set = |code: &str, run: &str| {
        let flags = if code.is_empty() { "[]".to_string() } else { format!(r#"[{{"code":"{code}","detail":"set"}}]"#) };
        let c = rusqlite::Connection::open(&dbp).unwrap();
        let sql = format!("UPDATE step SET valid = {}, flags = ?1 WHERE run_id IN ({run})", i32::from(code.is_empty()));
        assert!(c.execute(&sql, [flags]).unwrap() > 0);
    };
    let plan = |extra: &[&str]| {
        let mut a = vec![f, "--resume", "--plan", "--db", d];
        a.extend(extra);
        let out = study(tmp.path(), &a);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    set("schedule_lag", "SELECT id FROM run");
    assert!(plan(&[]).contains("0 of 1 runs to do"), "without --make-up a completed run is not run again");
    let said = plan(&["--make-up"]);
    assert!(said.contains("1 ended run(s) measured nothing") && said.contains("1 of 1 runs to do"), "{said}");
    set("not_sustained", "SELECT id FROM run");
    let said = plan(&["--make-up"]);
    assert!(said.contains("0 ended run(s)") && said.contains("0 of 1 runs to do"), "{said}");

    set("schedule_lag", "SELECT id FROM run");
    let out = study(tmp.path(), &[f, "--resume", "--make-up", "--db", d, "--probe-tolerance", TOLERANCE]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let s = stored(&dbp);
    let runs: Vec<&Run> = s.runs().filter(|r| r.status == "completed").collect();
    assert_eq!(runs.len(), 2, "the spoiled run is kept beside the one made up");
    assert_eq!(runs.iter().filter(|r| r.run_index == 1).count(), 2, "the new run takes the spoiled one's place");
    // The made-up run counts once it has a valid step: nothing more to run.
    set("", "SELECT max(id) FROM run");
    let said = plan(&["--make-up"]);
    assert!(said.contains("1 ended run(s) measured nothing") && said.contains("0 of 1 runs to do"), "{said}");
    assert_no_leftovers("testservice.py");
}

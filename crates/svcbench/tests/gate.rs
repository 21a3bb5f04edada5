//! `svcbench gate`: a repository made here whose working tree makes the test service spend 3 ms of CPU more
//! per answer than its last commit; the gate calls it a regression (exit 1) with the Markdown and JSON a
//! pull request reads, never exits 0 when it could not decide (too few pairs: exit 3), and refuses a base
//! that names no commit before anything starts (exit 2).
mod common;
use common::repo as repo_root;
use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The fixtures in a repository, the steady service committed as it is; the working tree adds `SPIN_US`.
fn repo(tmp: &Path, spin_us: u32) -> (PathBuf, String) {
    let repo = tmp.join("repo");
    copy_fixtures(&repo);
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "-qm", "base"]);
    let base = git(&repo, &["rev-parse", "HEAD"]);
    let manifest = repo.join("services/steady/svcbench.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, text.replace("[env]\n", &format!("[env]\nSPIN_US = \"{spin_us}\"\n"))).unwrap();
    (repo, base)
}

fn gate(tmp: &Path, svc: &str, extra: &[&str]) -> (Option<i32>, String, String) {
    let prof = tmp.join("gate.toml");
    std::fs::write(&prof, "name = \"gate-test\"\n[[step]]\nrate = [100]\nduration = \"3s\"\n").unwrap();
    let db = tmp.join("gate.db");
    let mut args = vec!["gate", svc, "--profile", prof.to_str().unwrap(), "--db", db.to_str().unwrap()];
    args.extend(extra);
    let out = locked(&args, tmp).env("SVCBENCH_REVISIONS", tmp.join("revisions")).output().unwrap();
    report(&args, out)
}

fn report(args: &[&str], out: std::process::Output) -> (Option<i32>, String, String) {
    let (stdout, stderr) =
        (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned());
    eprintln!("--- svcbench {args:?}\n{stderr}");
    (out.status.code(), stdout, stderr)
}

#[test]
fn a_change_that_costs_cpu_per_answer_is_a_regression_with_its_summary_and_too_few_pairs_never_pass() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (repo, base) = repo(tmp.path(), 3000);
    let svc = repo.join("services/steady").display().to_string();
    // Through the script the CI workflows in ci/ run, as they run it.
    let prof = tmp.path().join("gate.toml");
    std::fs::write(&prof, "name = \"gate-test\"\n[[step]]\nrate = [100]\nduration = \"3s\"\n").unwrap();
    let args = [svc.as_str(), "main", "--profile", prof.to_str().unwrap(), "--max-pairs", "12"];
    let out = Command::new(repo_root().join("scripts/gate.sh"))
        .args(args)
        .current_dir(tmp.path())
        .env("SVCBENCH", bin())
        .env("SVCBENCH_HOME", repo_root())
        .env("SVCBENCH_LOCK_FILE", tmp.path().join("measure.lock"))
        .env("SVCBENCH_SESSIONS_DIR", sessions_dir(tmp.path()))
        .env("SVCBENCH_REVISIONS", tmp.path().join("revisions"))
        .output()
        .unwrap();
    let (code, stdout, stderr) = report(&args, out);
    let (md, json) = (tmp.path().join("results/gate.md"), tmp.path().join("results/gate.json"));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("CPU µs/req B/A against the threshold 2.0 %"), "{stderr}");
    assert!(stderr.contains("svcbench: gate regression"), "{stderr}");
    assert!(stderr
        .trim_end()
        .ends_with("gate: regression (results/gate.md says which metric, its ratio and interval)"));
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(stdout.contains(&md), "the summary is printed too");
    assert!(md.starts_with("### svcbench gate: ❌ **regression**"), "{md}");
    assert!(md.contains(&format!("against main (`{}`)", &base[..8])), "{md}");
    let j: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!((j["decision"].as_str(), j["exit_code"].as_i64()), (Some("regression"), Some(1)), "{j}");
    assert_eq!(j["base_commit"].as_str(), Some(base.as_str()));
    let step = &j["steps"][0];
    assert!(step["ci"][0].as_f64().unwrap() > 1.02, "the whole interval beyond the threshold: {step}");
    let pairs = step["pairs"].as_u64().unwrap();
    assert!((6..12).contains(&pairs), "decided as soon as it could, not after every pair asked: {pairs} pairs");

    // Too few pairs to judge: not decided, exit 3, whatever the ratio.
    let (code, stdout, stderr) = gate(tmp.path(), &svc, &["--base", "main", "--max-pairs", "3"]);
    assert_eq!(code, Some(3), "{stderr}");
    assert!(stdout.contains("⚠️ **not decided**") && stderr.contains("svcbench: gate not decided"), "{stdout}");

    // A base that names no commit: refused before anything is built.
    let (code, _, stderr) = gate(tmp.path(), &svc, &["--base", "no-such-branch"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("no commit `no-such-branch`") && !stderr.contains("building"), "{stderr}");
}

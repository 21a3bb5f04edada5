//! Puts the report's chart library (Apache ECharts, from npm: assets/package.json + package-lock.json) into
//! OUT_DIR, so src/report/html.rs can embed it and every report is one self-contained HTML file.
//! `npm ci` runs here only when assets/node_modules is missing (scripts/setup.sh normally did it already).
//! Also the commit svcbench is built from, which every store records with its version.
use std::path::Path;
use std::process::Command;

const DIST: &str = "node_modules/echarts/dist/echarts.common.min.js";

fn main() {
    let assets = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets");
    println!("cargo:rerun-if-changed=assets/package-lock.json");
    println!("cargo:rerun-if-changed=assets/{DIST}");
    let dist = assets.join(DIST);
    if !dist.exists() {
        let status = Command::new("npm")
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&assets)
            .status()
            .unwrap_or_else(|e| panic!("cannot run `npm ci` in {} ({e}); install Node.js and npm", assets.display()));
        assert!(status.success(), "`npm ci` in {} failed: the report's chart library is missing", assets.display());
    }
    let out_dir = std::env::var("OUT_DIR").unwrap();
    let out = Path::new(&out_dir).join("echarts.min.js");
    std::fs::copy(&dist, &out).unwrap_or_else(|e| panic!("cannot copy {} to {}: {e}", dist.display(), out.display()));
    // The version, for the report's footer: `"version": "x.y.z"` of the installed package.json.
    let pkg = std::fs::read_to_string(assets.join("node_modules/echarts/package.json")).unwrap_or_default();
    let version =
        pkg.split("\"version\"").nth(1).and_then(|rest| rest.split('"').nth(1)).unwrap_or("unknown").to_string();
    std::fs::write(Path::new(&out_dir).join("echarts_version.txt"), version).unwrap();
    println!("cargo:rustc-env=SVCBENCH_COMMIT_SUFFIX={}", commit_suffix());
}

/// ` (commit <sha>)`, with `, uncommitted changes` when svcbench's sources differ from it; empty outside
/// a git checkout (a source archive).
fn commit_suffix() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git").arg("-C").arg(&root).args(args).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let Some(commit) = git(&["rev-parse", "--verify", "HEAD"]) else { return String::new() };
    // Built again when HEAD moves, a commit lands on its branch or the index changes; not when another
    // branch (another worktree's) moves, which would rebuild every worktree at each commit of any.
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        for f in ["HEAD", "index"] {
            println!("cargo:rerun-if-changed={}", root.join(&dir).join(f).display());
        }
    }
    if let Some(common) = git(&["rev-parse", "--git-common-dir"]) {
        let common = root.join(common);
        println!("cargo:rerun-if-changed={}", common.join("packed-refs").display());
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={}", common.join(branch).display());
        }
    }
    for dir in ["crates/svcbench/src", "crates/loadgen/src", "Cargo.toml", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={}", root.join(dir).display());
    }
    let changes = git(&["status", "--porcelain", "--", "crates", "Cargo.toml", "Cargo.lock"]).unwrap_or_default();
    let dirty = if changes.is_empty() { "" } else { ", uncommitted changes" };
    format!(" (commit {commit}{dirty})")
}

//! Building many services ahead of their runs (`svcbench build`), several at a time. A study of a dozen
//! services and variants spends most of its first minutes building; a Rust build's last phase (fat LTO, one
//! codegen unit) uses one core and a Maven build waits on downloads, so two builds side by side can overlap
//! (on 2 cores they gained nothing measurable, docs/manifest.md: cargo keeps both busy). Builds of one tool (cargo, mvn, go, npm) run one after the other: they
//! share that tool's caches and locks, and each already uses every core it can. A service built here is
//! not built again by `run` or `study` (build_stamp.rs).
use super::build::build;
use crate::manifest::Service;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// What became of one build: the service's name, and its seconds or why it failed.
pub type Outcome = (String, Result<f64, String>);

/// The tool a build command starts, ignoring leading `VAR=value` assignments: `CGO_ENABLED=0 go build` → go.
fn tool(command: &str) -> &str {
    command.split_whitespace().find(|w| !w.contains('=')).unwrap_or("")
}

/// What a build is expected to take, only to start the longest first: its last build's time where a stamp
/// records one (nothing when that build is still fresh: it is skipped), else a guess by tool from this
/// project's builds on a fresh 2-core machine (a Rust release build with its crates 75 s alone, Go's first
/// build, compiling its standard library, 27 s, a Scala Maven build 17 s; 20 s for any other tool).
fn expected_seconds(svc: &Service, tool: &str) -> f64 {
    match super::build_stamp::last(svc) {
        Some(stamp) if super::build_stamp::holds(svc, &stamp) => 0.0,
        Some(stamp) => stamp.seconds,
        None => match tool {
            "cargo" => 75.0,
            "go" => 27.0,
            _ => 20.0,
        },
    }
}

/// The services to build, one lane per tool, each lane in the order given, the lane expected to take longest
/// first; variants that share their base's build (same folder, command and environment) appear once.
pub fn lanes(services: &[Service]) -> Vec<Vec<Service>> {
    let mut seen = std::collections::BTreeSet::new();
    let mut by_tool: Vec<(&str, Vec<Service>)> = Vec::new();
    for s in services {
        let Some(cmd) = &s.manifest.build else { continue };
        if !seen.insert(s.build_key()) {
            continue;
        }
        match by_tool.iter_mut().find(|(t, _)| *t == tool(cmd)) {
            Some((_, lane)) => lane.push(s.clone()),
            None => by_tool.push((tool(cmd), vec![s.clone()])),
        }
    }
    // The longest lanes first, so they start at once and the short ones fill in beside them: on a fresh
    // machine the main job's Rust build, started third behind Go and Maven, ended 37 s after the others.
    let mut timed: Vec<(f64, Vec<Service>)> =
        by_tool.into_iter().map(|(t, lane)| (lane.iter().map(|s| expected_seconds(s, t)).sum(), lane)).collect();
    timed.sort_by(|a, b| b.0.total_cmp(&a.0));
    timed.into_iter().map(|(_, lane)| lane).collect()
}

/// Builds every lane (from `lanes`), `jobs` lanes at a time, until all are built or `stop` is set (builds
/// already running finish). Returns each build's outcome in the order they ended.
pub fn build_all(lanes: Vec<Vec<Service>>, jobs: usize, log_dir: &Path, stop: Arc<AtomicBool>) -> Vec<Outcome> {
    let queue = Mutex::new(lanes.into_iter());
    let outcomes = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..jobs.max(1) {
            scope.spawn(|| loop {
                let Some(lane) = queue.lock().unwrap().next() else { return };
                for svc in lane {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let result = build(&svc, log_dir, false).map(|b| b.seconds).map_err(|e| format!("{e:#}"));
                    outcomes.lock().unwrap().push((svc.name().to_string(), result));
                }
            });
        }
    });
    outcomes.into_inner().unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service(dir: &Path, name: &str, build: &str, variants: &str) -> Vec<Service> {
        let d = dir.join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("svcbench.toml"),
            crate::manifest::test_manifest(
                name,
                "hello",
                &format!(
                    "readiness = \"/\"\nbuild = \"{build}\"\nrun = \"./x\"\nartifacts = [\"out-{name}\"]\n{variants}"
                ),
            ),
        )
        .unwrap();
        Service::load_spec(&format!("{}@*", d.display())).or_else(|_| Service::load_spec(d.to_str().unwrap())).unwrap()
    }

    #[test]
    fn one_lane_per_tool_and_a_shared_build_once() {
        let tmp = tempfile::tempdir().unwrap();
        let mut all = Vec::new();
        // A variant that only runs differently shares the base's build; one with its own target dir does not.
        all.extend(service(
            tmp.path(),
            "a",
            "cargo build --release",
            "[variant.workers]\nenv = { WORKERS = \"4\" }\n\
             [variant.plain]\nbuild_env = { CARGO_TARGET_DIR = \"plain\" }\nartifacts = [\"out-plain\"]\n",
        ));
        all.extend(service(tmp.path(), "b", "mvn -q package", ""));
        all.extend(service(tmp.path(), "c", "CGO_ENABLED=0 go build -o out-c .", ""));
        all.extend(service(tmp.path(), "d", "mvn -q package", ""));
        let lanes = lanes(&all);
        let names: Vec<Vec<&str>> = lanes.iter().map(|l| l.iter().map(|s| s.name()).collect()).collect();
        assert_eq!(names, [vec!["a", "a@plain"], vec!["b", "d"], vec!["c"]]);
        assert_eq!(tool("CGO_ENABLED=0 GOOS=linux go build"), "go");
    }

    #[test]
    fn the_lane_expected_longest_starts_first_by_its_last_build_else_by_its_tool() {
        let tmp = tempfile::tempdir().unwrap();
        let mut all = Vec::new();
        all.extend(service(tmp.path(), "jvm1", "mvn -q package", ""));
        all.extend(service(tmp.path(), "jvm2", "mvn -q package", ""));
        all.extend(service(tmp.path(), "go", "go build -o out-go .", ""));
        all.extend(service(tmp.path(), "rust", "cargo build --release", ""));
        let order = |all: &[Service]| -> Vec<String> { lanes(all).iter().map(|l| l[0].name().to_string()).collect() };
        // Nothing built yet: one Rust build before two Maven builds, and those before one Go build.
        assert_eq!(order(&all), ["rust", "jvm1", "go"]);
        // The Go service took 500 s last time and has changed since: now its lane is the longest.
        let go = all.iter().find(|s| s.name() == "go").unwrap();
        std::fs::write(go.dir.join("out-go"), "built").unwrap();
        crate::service::build_stamp::write(go, 500.0, std::time::SystemTime::now()).unwrap();
        assert_eq!(order(&all), ["rust", "jvm1", "go"], "a fresh build is skipped: nothing to wait for");
        std::fs::write(go.dir.join("main.go"), "package main").unwrap();
        assert_eq!(order(&all), ["go", "rust", "jvm1"]);
    }

    #[test]
    fn builds_run_side_by_side_and_a_failure_is_reported_not_fatal() {
        let tmp = tempfile::tempdir().unwrap();
        let mut all = Vec::new();
        // Each build waits for the other tool's to have started: only side by side do both finish quickly.
        let (x, y) = (tmp.path().join("x-started"), tmp.path().join("y-started"));
        let wait = |mine: &Path, other: &Path| {
            format!(
                "sh -c 'touch {} && for i in $(seq 50); do [ -e {} ] && break; sleep 0.1; done && [ -e {} ] && touch out-$(basename $PWD)'",
                mine.display(),
                other.display(),
                other.display()
            )
        };
        all.extend(service(tmp.path(), "x", &wait(&x, &y), ""));
        all.extend(service(tmp.path(), "y", &format!("env {}", wait(&y, &x)), ""));
        all.extend(service(tmp.path(), "z", "false", ""));
        let stop = Arc::new(AtomicBool::new(false));
        let out = build_all(lanes(&all), 2, &tmp.path().join("logs"), stop);
        let ok = |n: &str| out.iter().find(|o| o.0 == n).unwrap().1.is_ok();
        assert!(ok("x") && ok("y"), "{out:?}");
        assert!(!ok("z"), "a failed build is an outcome: {out:?}");
        assert_eq!(out.len(), 3);
    }
}

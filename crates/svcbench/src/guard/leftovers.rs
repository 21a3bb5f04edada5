//! Leftovers of an svcbench that was killed before it could tear down (SIGKILL, OOM, a crash): its
//! services and dependencies still running in their cgroups, its session still `running` in the store.
//! Every `svcbench run` and `check` looks for them first: lock files of dead owners in the results' work
//! folders, and svcbench cgroups named after a dead svcbench (sandbox names start with its pid; groups still
//! holding processes this pid namespace cannot see belong to an svcbench in another container). It ends
//! their processes, removes the cgroups and `--net` namespaces, and marks the sessions and their runs
//! `aborted`.
use super::{owner_alive, LockFile, Part, LOCK_NAME};
use crate::sandbox::{cgroup, process, CGROUP_PARENT};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Kills a part's process group and everything in its cgroups, then removes the cgroups.
pub fn end_part(p: &Part) {
    crate::poll::until(Duration::from_secs(3), Duration::from_millis(20), || {
        process::signal_group(p.pgid, libc::SIGKILL);
        let pids: Vec<i32> = p.cgroups.iter().flat_map(|d| cgroup::read_pids(&d.join("cgroup.procs"))).collect();
        process::signal_pids(&pids, libc::SIGKILL);
        let group_left = p.pgid > 1 && !crate::sandbox::procfs::group_pids(p.pgid).is_empty();
        (pids.is_empty() && !group_left).then_some(())
    });
    for d in p.cgroups.iter().rev() {
        let _ = cgroup::rmdir_retry(d);
    }
}

/// Whether an svcbench with this pid is running (a reused pid of another program is not).
fn svcbench_alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "svcbench")
}

/// svcbench's parent folders in every cgroup hierarchy mounted here.
fn cgroup_parents() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for c in ["cpu", "cpuacct", "cpuset", "memory", "pids"] {
        if let Some(m) = cgroup::v1_mount(c) {
            let d = m.join(CGROUP_PARENT);
            if !out.contains(&d) {
                out.push(d);
            }
        }
    }
    if let Some(m) = cgroup::v2_mount() {
        out.push(m.join(CGROUP_PARENT));
    }
    out
}

/// Groups left by svcbench processes that no longer run, by the pid their names start with, and the pids
/// of svcbench processes that run unseen from here (their groups still hold processes this pid namespace
/// cannot see: another container on the machine, whose groups and network are its own).
fn orphan_cgroups() -> (Vec<Part>, Vec<i32>) {
    let mut by_name: Vec<(i32, Part)> = Vec::new();
    let mut elsewhere: Vec<i32> = Vec::new();
    for parent in cgroup_parents() {
        let Ok(rd) = std::fs::read_dir(&parent) else { continue };
        for e in rd.flatten().filter(|e| e.path().is_dir()) {
            let name = e.file_name().to_string_lossy().to_string();
            let Some(pid) = name.split('-').next().and_then(|p| p.parse::<i32>().ok()) else { continue };
            if svcbench_alive(pid) {
                continue;
            }
            if !elsewhere.contains(&pid) && cgroup::populated_unseen(&e.path()) {
                elsewhere.push(pid);
            }
            match by_name.iter_mut().find(|(_, p)| p.name == name) {
                Some((_, p)) => p.cgroups.push(e.path()),
                None => by_name.push((pid, Part { name, pgid: 0, cgroups: vec![e.path()] })),
            }
        }
    }
    let orphans = by_name.into_iter().filter(|(pid, _)| !elsewhere.contains(pid)).map(|(_, p)| p).collect();
    (orphans, elsewhere)
}

/// Cleans up after every dead svcbench whose lock file is under `results_dir/work/`, and every orphaned
/// svcbench cgroup. Returns one line per session aborted and one summing up the groups removed.
pub fn clean(results_dir: &Path) -> Vec<String> {
    let mut said = Vec::new();
    let me = std::process::id();
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let work = results_dir.join("work");
    let locks: Vec<PathBuf> = std::fs::read_dir(&work)
        .map(|rd| rd.flatten().map(|e| e.path().join(LOCK_NAME)).filter(|p| p.exists()).collect())
        .unwrap_or_default();
    for path in locks {
        let Ok(lf) = std::fs::read_to_string(&path)
            .map_err(anyhow::Error::from)
            .and_then(|t| serde_json::from_str::<LockFile>(&t).map_err(anyhow::Error::from))
        else {
            continue;
        };
        // An owner whose services run unseen from here lives in another pid namespace (a container).
        let unseen = lf.parts.iter().any(|p| p.cgroups.iter().any(|d| cgroup::populated_unseen(d)));
        if owner_alive(lf.pid, lf.start_ticks) || unseen {
            continue;
        }
        for p in &lf.parts {
            end_part(p);
        }
        let why = format!("svcbench (pid {}) ended without tearing down; cleaned up by pid {me} at {now}", lf.pid);
        match crate::store::Store::open(&lf.store).and_then(|s| s.abort_session(lf.session, &why, &crate::figures::validity::run_flags("aborted", &[]))) {
            Ok(runs) => said.push(format!(
                "svcbench: cleaned up after svcbench pid {} (killed mid-session): {} process group(s) ended, session {} \
                 and {runs} run(s) in {} marked aborted",
                lf.pid,
                lf.parts.len(),
                lf.session,
                lf.store.display()
            )),
            Err(e) => said.push(format!(
                "svcbench: cleaned up after svcbench pid {} but could not mark its session aborted in {}: {e:#}",
                lf.pid,
                lf.store.display()
            )),
        }
        let _ = std::fs::remove_file(&path);
    }
    let (orphans, elsewhere) = orphan_cgroups();
    if !orphans.is_empty() {
        for p in &orphans {
            end_part(p);
        }
        said.push(format!(
            "svcbench: removed {} cgroup(s) left by svcbench processes that no longer run (their processes ended): {}",
            orphans.len(),
            orphans.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ")
        ));
    }
    // After the processes: a namespace lives on while anything runs in it.
    let owners = crate::network::remove_orphans(|pid| svcbench_alive(pid) || elsewhere.contains(&pid));
    if !owners.is_empty() {
        said.push(format!(
            "svcbench: removed the --net namespaces and interfaces of svcbench pid(s) {} that no longer run",
            owners.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", ")
        ));
    }
    said
}

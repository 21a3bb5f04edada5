//! Leftovers of an svcbench that was killed before it could tear down (SIGKILL, OOM, a crash): its
//! services and dependencies still running in their cgroups, its session still `running` in the store.
//! Every `svcbench run`, `study`, `up`, `check` and `duet` looks for them first: lock files of dead owners
//! in the sessions folder (lock_dir.rs), with the containers and pods they record (and only those: a
//! label anyone can set proves nothing), and svcbench cgroups named after a dead svcbench (sandbox names start with its pid; groups
//! still holding processes this pid namespace cannot see belong to an svcbench in another container). It
//! ends their processes, removes the cgroups and `--net` namespaces, and marks the sessions and their runs
//! `aborted`. Nothing a lock file names is trusted as it stands: a process is ended only inside one of the
//! session's own cgroups, or in a group whose leader is still the process recorded; only cgroups under
//! svcbench's own parent folders, named after the session's svcbench, are removed. Whatever else a file
//! names is left alone, and the file is called untrusted in one warning line.
use crate::guard::identity::{self, Liveness};
use crate::guard::{LockFile, Part, RecordedPart};
use crate::sandbox::{cgroup, process, CGROUP_PARENT};
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Kills a part's process group and everything in its cgroups, then removes the cgroups: this svcbench's
/// own parts, known from its memory, not from a file.
pub fn end_part(p: &Part) {
    thaw(&p.cgroups);
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

/// Ends a recorded part of a dead svcbench: its group while the leader is the recorded process (or gone
/// with its members left: a pid in use as a group id is not handed out again), and the processes that
/// /proc places in its verified cgroups, which are then removed.
fn end_recorded(p: &RecordedPart, cgroups: &[PathBuf]) {
    let pgid = p.part.pgid;
    let leader_ok = |now: Option<u64>| now.is_none() || now == Some(p.leader_start_ticks);
    let group_ok = pgid > 1 && p.leader_start_ticks != 0 && identity::start_ticks(pgid) == Some(p.leader_start_ticks);
    thaw(cgroups);
    crate::poll::until(Duration::from_secs(3), Duration::from_millis(20), || {
        let members = if group_ok { crate::sandbox::procfs::group_pids(pgid) } else { Vec::new() };
        if !members.is_empty() && leader_ok(identity::start_ticks(pgid)) {
            process::signal_group(pgid, libc::SIGKILL);
        }
        let pids: Vec<i32> = cgroups
            .iter()
            .flat_map(|d| {
                cgroup::read_pids(&d.join("cgroup.procs")).into_iter().filter(|&pid| identity::in_cgroup(pid, d))
            })
            .collect();
        process::signal_pids(&pids, libc::SIGKILL);
        (pids.is_empty() && members.is_empty()).then_some(())
    });
    for d in cgroups.iter().rev() {
        let _ = cgroup::rmdir_retry(d);
    }
}

/// Thaws groups left frozen (an svcbench killed while it killed a v1 group): a frozen process dies of
/// SIGKILL only once thawed.
fn thaw(cgroups: &[PathBuf]) {
    for d in cgroups {
        let state = d.join("freezer.state");
        if state.exists() {
            let _ = cgroup::write(&state, "THAWED");
        }
    }
}

/// Whether `dir` is a cgroup svcbench pid `owner` made: a direct child of one of svcbench's parent folders,
/// named after that pid, reached without `..` or a symlink.
fn own_cgroup(dir: &Path, owner: i32) -> bool {
    let plain = dir.is_absolute() && dir.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    let named = dir.file_name().is_some_and(|n| n.to_string_lossy().starts_with(&format!("{owner}-")));
    let under = dir.parent().is_some_and(|p| cgroup_parents().iter().any(|c| c == p));
    let real = std::fs::symlink_metadata(dir).map_or(true, |m| m.file_type().is_dir());
    plain && named && under && real
}

/// svcbench's parent folders in every cgroup hierarchy mounted here.
fn cgroup_parents() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for c in ["cpu", "cpuacct", "cpuset", "memory", "pids", "freezer"] {
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

/// When a cgroup folder was made (its change time: the files inside a group never change it).
fn made_at(dir: &Path) -> Option<SystemTime> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(dir).ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(m.ctime().max(0) as u64))
}

/// Groups left by svcbench processes that no longer run, by the pid their names start with, and the pids
/// of svcbench processes that run unseen from here (their groups still hold processes this pid namespace
/// cannot see: another container on the machine, whose groups and network are its own). A pid counts as
/// its group's svcbench only if it runs svcbench's executable and started before the group was made.
fn orphan_cgroups() -> (Vec<Part>, Vec<i32>) {
    let mut by_name: Vec<(i32, Part)> = Vec::new();
    let mut elsewhere: Vec<i32> = Vec::new();
    for parent in cgroup_parents() {
        let Ok(rd) = std::fs::read_dir(&parent) else { continue };
        for e in rd.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir())) {
            let name = e.file_name().to_string_lossy().to_string();
            let Some(pid) = name.split('-').next().and_then(|p| p.parse::<i32>().ok()) else { continue };
            if identity::svcbench_since(pid, made_at(&e.path())) {
                continue;
            }
            if !elsewhere.contains(&pid) && cgroup::populated_unseen(&e.path()) {
                elsewhere.push(pid);
            }
            match by_name.iter_mut().find(|(_, p)| p.name == name) {
                Some((_, p)) => p.cgroups.push(e.path()),
                None => by_name.push((pid, Part { name, pgid: 0, cgroups: vec![e.path()], engine: Vec::new() })),
            }
        }
    }
    let orphans = by_name.into_iter().filter(|(pid, _)| !elsewhere.contains(pid)).map(|(_, p)| p).collect();
    (orphans, elsewhere)
}

/// Lock files of the old kind, beside a store (`work/*/svcbench.lock`), where anyone who can write the
/// results folder could have made them: never acted on, only pointed out.
fn old_lock_files(results_dir: &Path) -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(results_dir.join("work")) else { return Vec::new() };
    rd.flatten()
        .map(|e| e.path().join("svcbench.lock"))
        .filter(|p| p.symlink_metadata().is_ok())
        .map(|p| {
            format!(
                "svcbench: WARNING: {} is untrusted (a lock file beside the store, which others may have written):                  nothing it names was killed or removed; delete it",
                p.display()
            )
        })
        .collect()
}

/// Lock files in the sessions folder: regular files of svcbench's own user (anything else there is
/// untrusted and said so).
fn lock_files(said: &mut Vec<String>) -> Vec<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    let dir = match crate::guard::lock_dir::sessions_dir() {
        Ok(d) => d,
        Err(e) => {
            said.push(format!(
                "svcbench: WARNING: the sessions folder is unusable ({e:#}): leftovers are found by their cgroups only"
            ));
            return Vec::new();
        }
    };
    let uid = unsafe { libc::geteuid() };
    let mut out = Vec::new();
    for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let path = e.path();
        // A user other than root keeps its measurement lock in this folder too: not a session's.
        if path.extension().is_none_or(|x| x != "lock")
            || path.file_name().is_some_and(|n| n == crate::guard::machine_lock::FILE_NAME)
        {
            continue;
        }
        match path.symlink_metadata() {
            Ok(m) if m.file_type().is_file() && m.uid() == uid => out.push(path),
            _ => said.push(format!(
                "svcbench: WARNING: {} is untrusted (not a regular file of uid {uid}): nothing it names was killed or                  removed; delete it",
                path.display()
            )),
        }
    }
    out
}

/// Ends what a dead svcbench's lock file names, as far as it is verified, and marks its session aborted.
/// Returns the lines to print; nothing when its owner still runs or cannot be judged from here.
fn clean_lock(path: &Path, removed: &mut crate::sandbox::container::cleanup::Removed) -> Vec<String> {
    let mut said = Vec::new();
    let lf = match std::fs::read_to_string(path)
        .map_err(anyhow::Error::from)
        .and_then(|t| serde_json::from_str::<LockFile>(&t).map_err(anyhow::Error::from))
    {
        Ok(lf) => lf,
        Err(e) => {
            let _ = std::fs::remove_file(path);
            return vec![format!(
                "svcbench: WARNING: {} is unreadable ({e:#}): removed, nothing it names touched",
                path.display()
            )];
        }
    };
    // An owner whose services run unseen from here lives in another pid namespace (a container).
    let unseen = lf.parts.iter().any(|p| p.part.cgroups.iter().any(|d| cgroup::populated_unseen(d)));
    if lf.owner.liveness() != Liveness::Gone || unseen {
        return said;
    }
    let owner = lf.owner.pid;
    // Its containers and pods first (their cgroups sit inside the groups removed below), as recorded.
    let parts: Vec<Part> = lf.parts.iter().map(|p| p.part.clone()).collect();
    crate::sandbox::container::cleanup::remove_recorded(&lf.owner, &parts, removed);
    let mut untrusted = Vec::new();
    for p in &lf.parts {
        let (own, foreign): (Vec<PathBuf>, Vec<PathBuf>) =
            p.part.cgroups.iter().cloned().partition(|d| own_cgroup(d, owner));
        untrusted.extend(foreign.iter().map(|d| format!("cgroup {} (not svcbench's own)", d.display())));
        let pgid = p.part.pgid;
        match identity::start_ticks(pgid) {
            Some(t) if pgid > 1 && t != p.leader_start_ticks => {
                untrusted.push(format!("process group {pgid} (its leader is another process now)"))
            }
            None if pgid > 1 => {
                let stray = crate::sandbox::procfs::group_pids(pgid)
                    .into_iter()
                    .filter(|&pid| !own.iter().any(|d| identity::in_cgroup(pid, d)))
                    .count();
                if stray > 0 {
                    untrusted.push(format!(
                        "process group {pgid} ({stray} process(es) outside the session's cgroups, its leader gone)"
                    ));
                }
            }
            _ => {}
        }
        end_recorded(p, &own);
    }
    let me = std::process::id();
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let why = format!("svcbench (pid {owner}) ended without tearing down; cleaned up by pid {me} at {now}");
    match lf.store.symlink_metadata() {
        Err(_) => said.push(format!(
            "svcbench: cleaned up after svcbench pid {owner} (killed mid-session); its store {} is gone",
            lf.store.display()
        )),
        Ok(m) if !m.file_type().is_file() => {
            untrusted.push(format!("store {} (not a regular file)", lf.store.display()))
        }
        Ok(_) => match crate::store::Store::open(&lf.store)
            .and_then(|s| s.abort_session(lf.session, &why, &crate::figures::validity::run_flags("aborted", &[], &[])))
        {
            Ok(runs) => said.push(format!(
                "svcbench: cleaned up after svcbench pid {owner} (killed mid-session): {} part(s) ended, session {} \
                 and {runs} run(s) in {} marked aborted",
                lf.parts.len(),
                lf.session,
                lf.store.display()
            )),
            Err(e) => said.push(format!(
                "svcbench: cleaned up after svcbench pid {owner} but could not mark its session aborted in {}: {e:#}",
                lf.store.display()
            )),
        },
    }
    if !untrusted.is_empty() {
        said.push(format!(
            "svcbench: WARNING: lock file {} is untrusted: it names what svcbench cannot verify as that session's, \
             left alone: {}",
            path.display(),
            untrusted.join("; ")
        ));
    }
    let _ = std::fs::remove_file(path);
    said
}

/// Cleans up after every dead svcbench whose lock file is in the sessions folder, and every orphaned
/// svcbench cgroup. Returns one line per session aborted, one per untrusted lock file, and one summing up
/// the groups removed. `results_dir` is only looked at for lock files of the old kind.
pub fn clean(results_dir: &Path) -> Vec<String> {
    let mut said = old_lock_files(results_dir);
    let mut removed = crate::sandbox::container::cleanup::Removed::default();
    for path in lock_files(&mut said) {
        said.extend(clean_lock(&path, &mut removed));
    }
    for (what, names) in [("pod", &removed.pods), ("container", &removed.containers)] {
        if !names.is_empty() {
            said.push(format!(
                "svcbench: removed {} {what}(s) left by svcbench processes that no longer run: {}",
                names.len(),
                names.join(", ")
            ));
        }
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
    // After the processes: a namespace lives on while anything runs in it. Only names with svcbench's own
    // prefix are looked at (network/).
    let owners = crate::network::remove_orphans(|pid| identity::svcbench_since(pid, None) || elsewhere.contains(&pid));
    if !owners.is_empty() {
        said.push(format!(
            "svcbench: removed the --net namespaces and interfaces of svcbench pid(s) {} that no longer run",
            owners.iter().map(|p| p.to_string()).collect::<Vec<_>>().join(", ")
        ));
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_groups_under_svcbench_s_parents_named_after_the_owner_are_its_own() {
        let Some(parent) = cgroup_parents().into_iter().next() else {
            eprintln!("skipped: no cgroup hierarchy mounted");
            return;
        };
        assert!(own_cgroup(&parent.join("4242-7-steady"), 4242));
        assert!(!own_cgroup(&parent.join("4243-7-steady"), 4242), "another svcbench's group");
        assert!(!own_cgroup(&parent.join("4242-7-steady/child"), 4242), "not a direct child");
        assert!(!own_cgroup(&parent.join("../4242-7-steady"), 4242), "climbs out with ..");
        assert!(!own_cgroup(&parent.parent().unwrap().join("4242-7-steady"), 4242), "beside svcbench's parent");
        assert!(!own_cgroup(Path::new("/tmp/svcbench/4242-7-steady"), 4242), "not in a cgroup hierarchy");
        assert!(!own_cgroup(Path::new("svcbench/4242-7-steady"), 4242), "relative");
    }
}

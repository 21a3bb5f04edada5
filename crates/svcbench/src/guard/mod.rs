//! Nothing left behind, one measurement at a time. svcbench starts services and dependencies in their own
//! process groups and cgroups; this module keeps a live registry of them so that whatever ends svcbench —
//! the end of a session, an error, a second Ctrl-C — they end too, and writes that registry to a lock file
//! in the work folder so that when svcbench itself is killed (SIGKILL, OOM, power) the next svcbench finds
//! and ends them (leftovers.rs). The machine-wide lock (machine_lock.rs) keeps two measurements from
//! sharing the CPUs; signals.rs turns Ctrl-C into an orderly stop, and a second one into a teardown.
pub mod leftovers;
pub mod machine_lock;
pub mod quiet_cpus;
pub mod signals;

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// One started part: a service or a dependency.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Part {
    pub name: String,
    pub pgid: i32,
    pub cgroups: Vec<PathBuf>,
}

/// What the lock file of a work folder says.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LockFile {
    pub pid: i32,
    /// The owner's start time (/proc/<pid>/stat, clock ticks since boot): a reused pid is not the owner.
    pub start_ticks: u64,
    pub store: PathBuf,
    pub session: i64,
    pub parts: Vec<Part>,
}

pub const LOCK_NAME: &str = "svcbench.lock";

#[derive(Default)]
struct Registry {
    parts: Vec<Part>,
    lock: Option<(PathBuf, PathBuf, i64)>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry { parts: Vec::new(), lock: None });

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// This process's start time, in clock ticks since boot.
pub fn start_ticks(pid: i32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &text[text.rfind(')')? + 2..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Whether `pid` is still the process that wrote a lock file (not dead, not a reused pid).
pub fn owner_alive(pid: i32, ticks: u64) -> bool {
    start_ticks(pid).is_some_and(|t| t == ticks)
}

fn write_lock(r: &Registry) {
    let Some((path, store, session)) = &r.lock else { return };
    let me = std::process::id() as i32;
    let lf = LockFile {
        pid: me,
        start_ticks: start_ticks(me).unwrap_or(0),
        store: store.clone(),
        session: *session,
        parts: r.parts.clone(),
    };
    if let Ok(text) = serde_json::to_string_pretty(&lf) {
        // Written whole, then renamed: a reader never sees half a file.
        let tmp = path.with_extension("lock.tmp");
        if std::fs::write(&tmp, text).is_ok() {
            let _ = std::fs::rename(&tmp, path);
        }
    }
}

/// Starts keeping the work folder's lock file for `session` of `store`.
pub fn open_lock(work_dir: &Path, store: &Path, session: i64) {
    let mut r = registry();
    let store = std::path::absolute(store).unwrap_or_else(|_| store.to_path_buf());
    r.lock = Some((work_dir.join(LOCK_NAME), store, session));
    write_lock(&r);
}

/// The session ended in order: its lock file goes.
pub fn close_lock() {
    let mut r = registry();
    if let Some((path, ..)) = r.lock.take() {
        let _ = std::fs::remove_file(path);
    }
}

pub fn register(part: Part) {
    let mut r = registry();
    r.parts.retain(|p| p.name != part.name);
    r.parts.push(part);
    write_lock(&r);
}

pub fn unregister(name: &str) {
    let mut r = registry();
    r.parts.retain(|p| p.name != name);
    write_lock(&r);
}

/// Kills every registered part and removes its cgroups, then marks the session aborted and drops the lock
/// file: the end of svcbench that cannot wait for the session to wind down (a second Ctrl-C).
pub fn teardown_all(why: &str) {
    let parts = registry().parts.clone();
    for p in &parts {
        leftovers::end_part(p);
    }
    crate::network::remove_mine();
    let mut r = registry();
    r.parts.clear();
    if let Some((path, store, session)) = r.lock.take() {
        if let Ok(s) = crate::store::Store::open(&store) {
            let _ = s.abort_session(session, why, &crate::figures::validity::run_flags("aborted", &[]));
        }
        let _ = std::fs::remove_file(path);
    }
}

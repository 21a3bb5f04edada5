//! Nothing left behind, one measurement at a time. svcbench starts services and dependencies in their own
//! process groups and cgroups; this module keeps a live registry of them so that whatever ends svcbench —
//! the end of a session, an error, a second Ctrl-C — they end too, and writes that registry to a lock file
//! in a folder only svcbench's user can write (lock_dir.rs), so that when svcbench itself is killed
//! (SIGKILL, OOM, power) the next svcbench finds and ends them (leftovers.rs), after checking that each
//! still is what was recorded (identity.rs). The machine-wide lock (machine_lock.rs) keeps two
//! measurements from sharing the CPUs; signals.rs turns Ctrl-C into an orderly stop, and a second one into
//! a teardown.
pub mod identity;
pub mod lock_dir;
pub mod machine_lock;
pub mod signals;

use identity::Identity;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// One started part: a service or a dependency.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Part {
    pub name: String,
    pub pgid: i32,
    pub cgroups: Vec<PathBuf>,
    /// The containers and pods the engine runs for it, as svcbench started them: the only ones a later
    /// svcbench removes (a label says nothing of who set it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub engine: Vec<EngineObject>,
}

/// A container or pod svcbench asked the engine for: its name at once, its id as soon as the engine has one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineObject {
    pub kind: EngineKind,
    pub name: String,
    #[serde(default)]
    pub id: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    Container,
    Pod,
}

/// A part as its lock file records it: with its group leader's start time, so that a later svcbench ends
/// the group only while its leader is still that process.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RecordedPart {
    #[serde(flatten)]
    pub part: Part,
    pub leader_start_ticks: u64,
}

/// What a session's lock file says.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LockFile {
    /// The svcbench that wrote it: while it runs, nothing it names is touched.
    pub owner: Identity,
    pub store: PathBuf,
    pub session: i64,
    pub parts: Vec<RecordedPart>,
}

#[derive(Default)]
struct Registry {
    parts: Vec<RecordedPart>,
    /// The lock file, the store and the session.
    lock: Option<(PathBuf, PathBuf, i64)>,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry { parts: Vec::new(), lock: None });

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

fn write_lock(r: &Registry) {
    let Some((path, store, session)) = &r.lock else { return };
    let lf = LockFile { owner: Identity::me(), store: store.clone(), session: *session, parts: r.parts.clone() };
    if let Ok(text) = serde_json::to_string_pretty(&lf) {
        // Written whole, then renamed: a reader never sees half a file.
        let tmp = path.with_extension("tmp");
        if std::fs::write(&tmp, text).is_ok() {
            let _ = std::fs::rename(&tmp, path);
        }
    }
}

/// Starts keeping a lock file for `session` of `store`. Without a folder for it, a killed svcbench's
/// parts are still found by their cgroups' names; that is said once.
pub fn open_lock(store: &Path, session: i64) {
    let dir = match lock_dir::sessions_dir() {
        Ok(d) => d,
        Err(e) => {
            crate::errln!("svcbench: WARNING: no lock file for this session ({e:#}): if svcbench is killed, the next one finds its leftovers by their cgroups only");
            return;
        }
    };
    let me = Identity::me();
    let mut r = registry();
    let store = std::path::absolute(store).unwrap_or_else(|_| store.to_path_buf());
    r.lock = Some((dir.join(format!("{}-{}.lock", me.pid, me.start_ticks)), store, session));
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
    let leader_start_ticks = identity::start_ticks(part.pgid).unwrap_or(0);
    let mut r = registry();
    r.parts.retain(|p| p.part.name != part.name);
    r.parts.push(RecordedPart { part, leader_start_ticks });
    write_lock(&r);
}

/// Records the engine's id of a part's container or pod (known once the engine has made it).
pub fn record_engine_id(part: &str, object: &str, id: &str) {
    let mut r = registry();
    let Some(p) = r.parts.iter_mut().find(|p| p.part.name == part) else { return };
    for o in p.part.engine.iter_mut().filter(|o| o.name == object) {
        o.id = Some(id.to_string());
    }
    write_lock(&r);
}

pub fn unregister(name: &str) {
    let mut r = registry();
    r.parts.retain(|p| p.part.name != name);
    write_lock(&r);
}

/// The parts registered now (what a teardown ends).
pub fn registered() -> Vec<RecordedPart> {
    registry().parts.clone()
}

/// Forgets every part and the lock file; returns the lock file, its store and session, if one was kept.
pub fn forget_all() -> Option<(PathBuf, PathBuf, i64)> {
    let mut r = registry();
    r.parts.clear();
    r.lock.take()
}

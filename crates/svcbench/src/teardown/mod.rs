//! What svcbench ends and removes: every part it started at once (a second Ctrl-C), and what a killed
//! svcbench left behind, verified before anything is touched (leftovers.rs). guard/ keeps the registry and
//! the lock files this reads.
pub mod leftovers;

/// Kills every registered part and removes its cgroups, then marks the session aborted and drops the lock
/// file: the end of svcbench that cannot wait for the session to wind down (a second Ctrl-C).
pub fn teardown_all(why: &str) {
    for p in &crate::guard::registered() {
        leftovers::end_part(&p.part);
    }
    crate::sandbox::container::cleanup::remove_own();
    crate::network::remove_mine();
    if let Some((path, store, session)) = crate::guard::forget_all() {
        if let Ok(s) = crate::store::Store::open(&store) {
            let _ = s.abort_session(session, why, &crate::figures::validity::run_flags("aborted", &[], &[]));
        }
        let _ = std::fs::remove_file(path);
    }
}

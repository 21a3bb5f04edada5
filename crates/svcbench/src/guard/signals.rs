//! Ctrl-C, SIGTERM and SIGHUP (a closed terminal, a dropped ssh connection): the first one asks the session
//! to stop (every wait checks the flag, so it ends within a second, keeping what was measured); a second one
//! kills every service and dependency, removes their cgroups, and only then exits (130). Without SIGHUP here
//! a hangup would end svcbench at once, leaving its services, cgroups and lock file behind.
use anyhow::Result;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Set by the first signal, for waits that are not handed the session's flag (a service's stop grace).
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// A command asked to stop before it started or stored anything (a wait for the machine's lock): it exits
/// 130 with this one line, not as an error.
#[derive(Debug)]
pub struct StoppedBeforeStart(pub String);

impl std::fmt::Display for StoppedBeforeStart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StoppedBeforeStart {}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// The stop flag of a command; a second signal calls `teardown` (what ends every part at once), then exits.
pub fn stop_flag(teardown: fn(&str)) -> Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    let mut signals = Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    let f = flag.clone();
    std::thread::Builder::new().name("signals".into()).spawn(move || {
        for sig in signals.forever() {
            INTERRUPTED.store(true, Ordering::SeqCst);
            if f.swap(true, Ordering::SeqCst) {
                crate::errln!("\nsvcbench: second signal ({sig}): stopping every service and dependency now");
                teardown(&format!("svcbench stopped at once by a second signal ({sig})"));
                std::process::exit(130);
            }
            crate::errln!("\nsvcbench: stopping after the current wait (again to stop at once; it still cleans up)");
        }
    })?;
    Ok(flag)
}

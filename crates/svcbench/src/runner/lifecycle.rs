//! The seeds' lifecycle check: with a wrong dependency address (the manifest's `broken_env`) the service
//! must refuse to start, exiting non-zero within 15 s, instead of serving errors.
use super::instance::{Instance, StartSpec};
use crate::manifest::Service;
use anyhow::Result;
use std::time::Duration;

pub const REFUSE_WITHIN: Duration = Duration::from_secs(15);

/// Some((refused, detail)) when the manifest says how to break the service, None otherwise.
pub fn check_refusal(svc: &Service, spec: StartSpec) -> Result<Option<(bool, String)>> {
    if svc.manifest.broken_env.is_empty() {
        return Ok(None);
    }
    let mut inst = Instance::spawn(svc, &spec)?;
    let exit = inst.sandbox.wait_exit(REFUSE_WITHIN);
    let elapsed = inst.spawned_at.elapsed();
    let verdict = match exit {
        Some(e) if e.code.is_some_and(|c| c != 0) => {
            (true, format!("refused to start: {e} after {:.0} ms", elapsed.as_secs_f64() * 1e3))
        }
        Some(e) => (false, format!("ended with {e} — a refusal must exit non-zero")),
        None => {
            inst.sandbox.stop(Duration::from_secs(2));
            (false, format!("still running {} s after start with a wrong dependency address", REFUSE_WITHIN.as_secs()))
        }
    };
    Ok(Some(verdict))
}

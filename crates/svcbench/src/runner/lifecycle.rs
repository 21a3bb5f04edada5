//! The seeds' lifecycle check: with a wrong dependency address (the manifest's `broken_env`) the service
//! must refuse to start, exiting non-zero within 15 s, instead of serving errors. A refusal is an exit of
//! the service itself: a run command that could not be executed (126, 127) refuses nothing, and a service
//! that answers its readiness path before exiting did start.
use crate::manifest::Service;
use crate::readiness::{wait_ready, Readiness};
use crate::service::instance::{Instance, StartSpec};
use anyhow::Result;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

pub const REFUSE_WITHIN: Duration = Duration::from_secs(15);

/// Some((refused, detail)) when the manifest says how to break the service, None otherwise.
pub fn check_refusal(svc: &Service, spec: StartSpec, stop: &AtomicBool) -> Result<Option<(bool, String)>> {
    if svc.manifest.broken_env.is_empty() {
        return Ok(None);
    }
    let mut inst = Instance::spawn(svc, &spec)?;
    let watch = inst.take_first_answer(&svc.manifest.readiness, REFUSE_WITHIN);
    let sandbox = &mut inst.sandbox;
    let readiness = wait_ready(&watch, inst.spawned_at, REFUSE_WITHIN, || sandbox.try_exit().is_some(), stop);
    drop(watch);
    let elapsed = inst.spawned_at.elapsed();
    let verdict = match readiness {
        Readiness::Interrupted => {
            inst.sandbox.stop(Duration::from_secs(2));
            return Ok(None);
        }
        Readiness::Ready { after } => {
            inst.sandbox.stop(Duration::from_secs(2));
            (
                false,
                format!(
                    "answered its readiness path {} after {:.0} ms with a wrong dependency address: it should refuse",
                    svc.manifest.readiness,
                    after.as_secs_f64() * 1e3
                ),
            )
        }
        Readiness::TimedOut => {
            inst.sandbox.stop(Duration::from_secs(2));
            (false, format!("still running {} s after start with a wrong dependency address", REFUSE_WITHIN.as_secs()))
        }
        Readiness::Exited => match inst.sandbox.try_exit() {
            Some(e) if matches!(e.code, Some(126 | 127)) => (
                false,
                format!(
                    "the run command could not be executed ({e}: {}), which is not a refusal; last log lines: {}",
                    if e.code == Some(127) { "command not found" } else { "not executable" },
                    inst.log_tail(2)
                ),
            ),
            Some(e) if e.code.is_some_and(|c| c != 0) => {
                (true, format!("refused to start: {e} after {:.0} ms", elapsed.as_secs_f64() * 1e3))
            }
            Some(e) => (false, format!("ended with {e}: a refusal must exit non-zero")),
            None => (false, "ended without an exit status".to_string()),
        },
    };
    Ok(Some(verdict))
}

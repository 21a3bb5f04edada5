//! The exit codes every command shares (docs/exit-codes.md): a CI tells from the code alone whether
//! everything was measured as asked, something was not, svcbench refused before it ran anything, or it was
//! interrupted.
use std::fmt;

/// Everything was done as asked (steps flagged not valid included: the final line says how many).
pub const DONE: i32 = 0;
/// The command ran, but something was not measured or checked as asked: a build that failed, an image
/// missing, a service folder its user cannot enter, a run or a duet's pair that failed, a failed check, a
/// regression (`compare --fail-on`).
pub const FAILED: i32 = 1;
/// Refused before anything was built or started: bad input, a machine that cannot do what is asked.
pub const REFUSED: i32 = 2;
/// Judged nothing: `compare --fail-on` when the two sides were measured differently, `gate` when it could
/// not decide or could not measure.
pub const NOT_JUDGED: i32 = 3;
/// Stopped by Ctrl-C, SIGTERM or SIGHUP before it was done.
pub const INTERRUPTED: i32 = 130;

/// An error after the command had started building or running (a dependency that did not start, a store
/// that could not be written, a service that did not come up): exit [`FAILED`], not [`REFUSED`].
#[derive(Debug)]
pub struct Failed(pub String);

/// The command was stopped while it still had something to do: exit [`INTERRUPTED`] with this one line.
#[derive(Debug)]
pub struct Interrupted(pub String);

impl fmt::Display for Failed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Failed {}
impl std::error::Error for Interrupted {}

/// `e` as an error after the start (exit 1), keeping its whole text; one already marked keeps its mark.
pub fn failed(e: anyhow::Error) -> anyhow::Error {
    if e.downcast_ref::<Failed>().is_some() || e.downcast_ref::<Interrupted>().is_some() {
        return e;
    }
    Failed(format!("{e:#}")).into()
}

/// [`failed`], or [`Interrupted`] when the command was asked to stop: an error while stopping is the stop's.
pub fn after_start(e: anyhow::Error, stopped: bool) -> anyhow::Error {
    if stopped && e.downcast_ref::<Failed>().is_none() {
        return Interrupted(format!("interrupted: {e:#}")).into();
    }
    failed(e)
}

/// The exit code of a command that ended with `e`.
pub fn of_error(e: &anyhow::Error) -> i32 {
    if e.downcast_ref::<Interrupted>().is_some() {
        INTERRUPTED
    } else if e.downcast_ref::<Failed>().is_some() {
        FAILED
    } else {
        REFUSED
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_after_the_start_exits_1_a_refusal_2_a_stop_130() {
        let refused = anyhow::anyhow!("--runs must be at least 1");
        assert_eq!(of_error(&refused), REFUSED);
        let f = failed(anyhow::anyhow!("no such file").context("cannot start opensearch"));
        assert_eq!(of_error(&f), FAILED);
        assert_eq!(f.to_string(), "cannot start opensearch: no such file", "the whole chain is kept");
        // Marked once: context added later does not hide the mark.
        assert_eq!(of_error(&failed(f)), FAILED);
        let stopped = after_start(anyhow::anyhow!("readiness wait ended"), true);
        assert_eq!(of_error(&stopped), INTERRUPTED);
        assert_eq!(of_error(&after_start(anyhow::anyhow!("x"), false)), FAILED);
    }
}

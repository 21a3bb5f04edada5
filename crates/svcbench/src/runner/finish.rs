//! The last phase of a session: what the links carried, the steps that ran while the machine's speed
//! drifted (flagged against the session's median, so only once every run is in), the session's end, and
//! its summary: the one line a user reads last and the exit code a CI reads (docs/exit-codes.md).
use super::{SessionCtx, SessionSummary};
use crate::cell::AxisCell;
use crate::network::Network;
use anyhow::Result;

/// A service the session did not measure as asked, and why.
#[derive(Debug, Clone)]
pub struct NotMeasured {
    pub service: String,
    pub reason: String,
    /// The runs it was to have in this session: counted as failed.
    pub runs: usize,
}

/// The services whose build (or image, or folder check) failed, each with the runs it lost.
pub fn not_measured(ctx: &SessionCtx, not_built: Vec<(String, String)>, cells: &[AxisCell]) -> Vec<NotMeasured> {
    let keys: Vec<String> = cells.iter().map(AxisCell::key).collect();
    not_built
        .into_iter()
        .map(|(service, reason)| {
            let runs =
                super::plan::plan(std::slice::from_ref(&service), &keys, ctx.opts.plan.runs, &ctx.opts.plan.completed)
                    .len();
            NotMeasured { service, reason, runs }
        })
        .collect()
}

pub fn finish(ctx: &mut SessionCtx, network: Option<&Network>, summary: &mut SessionSummary) -> Result<()> {
    for (link, carried, dropped) in network.iter().flat_map(|n| n.link_counts()) {
        crate::errln!("svcbench: link {link}: {carried} packets carried, {dropped} dropped");
    }
    let tolerance = ctx.opts.probe_tolerance;
    let probed = ctx.store.probed_steps(ctx.session_id)?;
    let slow = crate::figures::validity::speed_flags(&probed, tolerance);
    for (step, flag) in &slow {
        let mut v = probed.iter().find(|p| p.0 == *step).map(|p| p.2.clone()).unwrap_or_default();
        v.flags.push(flag.clone());
        ctx.store.set_step_validity(*step, &v)?;
    }
    if !slow.is_empty() {
        let slow = slow.len();
        crate::errln!(
            "svcbench: {slow} step(s) ran while the machine-speed probe was more than {:.0} % off the session's \
             median: flagged, left out of the peaks",
            tolerance * 100.0
        );
    }
    (summary.invalid_steps, summary.steps) = ctx.store.step_validity_counts(ctx.session_id)?;
    ctx.store.finish_session(ctx.session_id, if summary.interrupted { "interrupted" } else { "completed" })
}

impl SessionSummary {
    /// Failed runs, the runs of services that could not be measured included.
    pub fn failed(&self) -> usize {
        self.runs_failed + self.not_measured.iter().map(|n| n.runs).sum::<usize>()
    }

    /// 130 interrupted; 1 when a service was not measured as asked (not built, a run failed); else 0, steps
    /// flagged not valid included (the summary says how many).
    pub fn exit_code(&self) -> i32 {
        if self.interrupted {
            crate::exit::INTERRUPTED
        } else if self.failed() > 0 || !self.not_measured.is_empty() {
            crate::exit::FAILED
        } else {
            crate::exit::DONE
        }
    }

    /// `done: 2 run(s) completed, 0 interrupted, 1 failed (…which and why…); 1 of 8 step(s) not valid (…)`.
    pub fn describe(&self) -> String {
        let mut why: Vec<String> =
            self.not_measured.iter().map(|n| format!("{} not measured: {}", n.service, n.reason)).collect();
        why.extend(self.failed_runs.iter().map(|(service, n, first)| match n {
            1 => format!("{service}: 1 run failed: {first}"),
            n => format!("{service}: {n} runs failed, the first: {first}"),
        }));
        // One line, whatever a build's or an engine's message holds.
        let why = if why.is_empty() { String::new() } else { format!(" ({})", why.join("; ").replace('\n', " ")) };
        let invalid = match self.invalid_steps {
            0 => String::new(),
            n => format!(
                "; {n} of {} step(s) not valid (flagged, left out of the figures; the report says why)",
                self.steps
            ),
        };
        format!(
            "{}: {} run(s) completed, {} interrupted, {} failed{why}{invalid}",
            if self.interrupted { "interrupted" } else { "done" },
            self.runs_ok,
            self.runs_interrupted,
            self.failed(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_not_measured_fails_the_session_and_is_named_an_invalid_step_does_not() {
        let mut s = SessionSummary { session_id: 1, runs_ok: 2, steps: 8, invalid_steps: 1, ..Default::default() };
        assert_eq!(s.exit_code(), 0);
        assert_eq!(
            s.describe(),
            "done: 2 run(s) completed, 0 interrupted, 0 failed; 1 of 8 step(s) not valid (flagged, left out of the \
             figures; the report says why)"
        );
        s.not_measured.push(NotMeasured {
            service: "b".into(),
            reason: "build of b failed (exit status: 3)".into(),
            runs: 3,
        });
        assert_eq!(s.exit_code(), 1);
        assert!(s.describe().starts_with("done: 2 run(s) completed, 0 interrupted, 3 failed (b not measured: build of b failed (exit status: 3))"), "{}", s.describe());
        // Nothing it was to run (a resumed study whose runs of it are done) still fails: it was not built.
        s.not_measured[0].runs = 0;
        assert_eq!(s.exit_code(), 1);
        s.runs_failed = 2;
        s.failed_runs.push(("c".into(), 2, "c exited at startup".into()));
        assert!(s.describe().contains("; c: 2 runs failed, the first: c exited at startup)"), "{}", s.describe());
        s.interrupted = true;
        assert_eq!(s.exit_code(), 130);
    }
}

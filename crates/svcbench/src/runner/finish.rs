//! The last phase of a session: what the links carried, the steps that ran while the machine's speed
//! drifted (flagged against the session's median, so only once every run is in), and the session's end.
use super::{SessionCtx, SessionSummary};
use crate::network::Network;
use anyhow::Result;

pub fn finish(ctx: &mut SessionCtx, network: Option<&Network>, summary: &SessionSummary) -> Result<()> {
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
    ctx.store.finish_session(ctx.session_id, if summary.interrupted { "interrupted" } else { "completed" })
}

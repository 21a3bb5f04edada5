//! The last phase of a session: what the links carried, the steps that ran while the machine's speed
//! drifted (flagged against the session's median, so only once every run is in), and the session's end.
use super::{SessionCtx, SessionSummary};
use crate::network::Network;
use anyhow::Result;

pub fn finish(ctx: &mut SessionCtx, network: Option<&Network>, summary: &SessionSummary) -> Result<()> {
    for (link, carried, dropped) in network.iter().flat_map(|n| n.link_counts()) {
        eprintln!("svcbench: link {link}: {carried} packets carried, {dropped} dropped");
    }
    let tolerance = ctx.opts.probe_tolerance;
    let slow = ctx.store.flag_machine_speed(ctx.session_id, tolerance)?;
    if slow > 0 {
        eprintln!(
            "svcbench: {slow} step(s) ran while the machine-speed probe was more than {:.0} % off the session's \
             median: flagged, left out of the peaks",
            tolerance * 100.0
        );
    }
    ctx.store.finish_session(ctx.session_id, if summary.interrupted { "interrupted" } else { "completed" })
}

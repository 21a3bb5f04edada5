//! What svcbench's own HTTP servers (the mock upstream, the live metrics) do after a failed accept.
use std::time::Duration;

const PAUSE: Duration = Duration::from_millis(20);

/// A connection that went away before it was taken only costs itself. At the open-file limit (EMFILE) or
/// out of memory, accept fails at once for as long as connections wait, and retrying at once would spin
/// a CPU that the service and the generator need: wait a little, and say so once (`told`).
pub async fn pause_after_error(server: &str, e: &std::io::Error, told: &mut bool) {
    use std::io::ErrorKind::{ConnectionAborted, ConnectionReset};
    if matches!(e.kind(), ConnectionAborted | ConnectionReset) {
        return;
    }
    if !*told {
        crate::errln!("svcbench: {server} cannot accept connections ({e}); they wait until it can");
        *told = true;
    }
    tokio::time::sleep(PAUSE).await;
}

//! `svcbench load` on its own checks its target once before it starts: a URL naming a port nobody
//! listens on would otherwise run the whole duration and end in a table of zeros and connect errors.

use anyhow::{bail, Result};
use std::io::ErrorKind;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// Refuses a target that refuses connections; any other outcome (accepted, slow, unreachable) is left
/// to the run, which counts its errors by kind.
pub fn refuse_closed_port(addr: SocketAddr, url: &str, timeout: Duration) -> Result<()> {
    match TcpStream::connect_timeout(&addr, timeout) {
        Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
            bail!("nothing listens on {addr} ({url}: connection refused): start the service first, or fix the port")
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn a_port_nobody_listens_on_is_refused_and_a_listening_one_is_not() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let open = listener.local_addr().unwrap();
        assert!(refuse_closed_port(open, "http://x/", Duration::from_secs(1)).is_ok());
        drop(listener);
        let e = refuse_closed_port(open, "http://x/", Duration::from_secs(1)).unwrap_err().to_string();
        assert!(e.starts_with(&format!("nothing listens on {open}")) && e.contains("start the service"), "{e}");
    }
}

//! The hosts file (`--hosts hosts.toml`): which machine each part of a run uses. Today it places the load
//! generator agents (this machine, or another reached with OpenSSH where the same svcbench is installed)
//! and the address the service listens on, so that generators elsewhere can reach it.
//!
//! ```toml
//! [service]
//! address = "10.0.0.3"                 # an address of this machine the generator hosts reach
//!
//! [[generator]]
//! at = "ssh://bench@10.0.0.7"          # key authentication and the user's own ssh config
//! ssh_options = ["-i", "~/.ssh/lab"]   # optional, passed to ssh as they are
//! svcbench = "/usr/local/bin/svcbench" # optional: where svcbench is on that host (default: on its PATH)
//!
//! [[generator]]
//! at = "local"
//! ```
use anyhow::{bail, Context, Result};
use serde::Deserialize;
use std::net::Ipv4Addr;
use std::path::Path;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HostsFile {
    #[serde(default)]
    service: Option<ServiceSection>,
    #[serde(default)]
    generator: Vec<GeneratorEntry>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ServiceSection {
    address: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GeneratorEntry {
    at: String,
    #[serde(default)]
    ssh_options: Vec<String>,
    #[serde(default)]
    svcbench: Option<String>,
}

/// Where one generator agent runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Place {
    /// On this machine.
    Local,
    /// On another machine, through `ssh [options] destination`.
    Ssh { destination: String, port: Option<u16>, options: Vec<String>, svcbench: String },
}

impl Place {
    pub fn describe(&self) -> String {
        match self {
            Place::Local => "local".into(),
            Place::Ssh { destination, port: Some(p), .. } => format!("ssh://{destination}:{p}"),
            Place::Ssh { destination, .. } => format!("ssh://{destination}"),
        }
    }
}

/// What the hosts file asks for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HostsPlan {
    /// Where the service listens (None: loopback).
    pub service_addr: Option<Ipv4Addr>,
    pub generators: Vec<Place>,
}

impl HostsPlan {
    /// Reads and checks the file; every problem in one line naming the file.
    pub fn load(path: &Path) -> Result<HostsPlan> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("cannot read the hosts file {}", path.display()))?;
        HostsPlan::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e:#}", path.display()))
    }

    fn parse(text: &str) -> Result<HostsPlan> {
        let f: HostsFile = toml::from_str(text).map_err(|e| anyhow::anyhow!("{}", e.message()))?;
        let service_addr = match &f.service {
            Some(s) => {
                let addr: Ipv4Addr = s.address.parse().ok().with_context(|| {
                    format!("[service] address {:?} is not an IPv4 address (e.g. \"10.0.0.3\")", s.address)
                })?;
                Some(addr)
            }
            None => None,
        };
        if f.generator.is_empty() {
            bail!("no [[generator]]: give at least one, with at = \"local\" or at = \"ssh://user@host\"");
        }
        if f.generator.len() > super::MAX_GENERATORS {
            bail!("{} generators: at most {}", f.generator.len(), super::MAX_GENERATORS);
        }
        let mut generators = Vec::new();
        for (i, g) in f.generator.iter().enumerate() {
            let n = i + 1;
            let place = if g.at == "local" {
                if !g.ssh_options.is_empty() || g.svcbench.is_some() {
                    bail!("generator {n}: ssh_options and svcbench are for at = \"ssh://…\"");
                }
                Place::Local
            } else if let Some(rest) = g.at.strip_prefix("ssh://") {
                let (destination, port) = match rest.rsplit_once(':') {
                    Some((d, p)) => (
                        d,
                        Some(
                            p.parse::<u16>()
                                .ok()
                                .with_context(|| format!("generator {n}: port {p:?} in {:?} is not a number", g.at))?,
                        ),
                    ),
                    None => (rest, None),
                };
                if destination.is_empty() || destination.contains('/') || destination.starts_with('-') {
                    bail!("generator {n}: {:?} is not ssh://[user@]host[:port]", g.at);
                }
                Place::Ssh {
                    destination: destination.to_string(),
                    port,
                    options: g.ssh_options.clone(),
                    svcbench: g.svcbench.clone().unwrap_or_else(|| "svcbench".into()),
                }
            } else {
                bail!("generator {n}: at = {:?}: write \"local\" or \"ssh://[user@]host[:port]\"", g.at);
            };
            generators.push(place);
        }
        let remote = generators.iter().any(|p| matches!(p, Place::Ssh { .. }));
        if remote && service_addr.is_none_or(|a| a.is_loopback()) {
            bail!("a generator on another host cannot reach a service on loopback: set [service] address to an address of this machine that the generator hosts reach");
        }
        Ok(HostsPlan { service_addr, generators })
    }

    /// Refuses a service address this machine does not have (nothing could listen there).
    pub fn check_here(&self) -> Result<()> {
        if let Some(addr) = self.service_addr {
            std::net::TcpListener::bind((addr, 0)).with_context(|| {
                format!("[service] address {addr} is not an address of this machine (see `ip addr`)")
            })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_are_read() {
        let p = HostsPlan::parse(
            "[service]\naddress = \"10.0.0.3\"\n[[generator]]\nat = \"ssh://bench@10.0.0.7:2222\"\nssh_options = [\"-i\", \"k\"]\n[[generator]]\nat = \"local\"\n",
        )
        .unwrap();
        assert_eq!(p.service_addr, Some(Ipv4Addr::new(10, 0, 0, 3)));
        assert_eq!(
            p.generators[0],
            Place::Ssh {
                destination: "bench@10.0.0.7".into(),
                port: Some(2222),
                options: vec!["-i".into(), "k".into()],
                svcbench: "svcbench".into()
            }
        );
        assert_eq!(p.generators[1], Place::Local);
        assert_eq!(p.generators[0].describe(), "ssh://bench@10.0.0.7:2222");
    }

    #[test]
    fn what_cannot_work_is_refused_in_one_line() {
        for (text, says) in [
            ("", "no [[generator]]"),
            ("[[generator]]\nat = \"ftp://x\"\n", "write \"local\""),
            ("[[generator]]\nat = \"ssh://\"\n", "is not ssh://"),
            ("[[generator]]\nat = \"ssh://h:port\"\n", "is not a number"),
            ("[[generator]]\nat = \"ssh://h\"\n", "cannot reach a service on loopback"),
            ("[service]\naddress = \"nine\"\n[[generator]]\nat = \"local\"\n", "not an IPv4 address"),
            ("[[generator]]\nat = \"local\"\nsvcbench = \"x\"\n", "are for at"),
            ("[[generator]]\nplace = \"local\"\n", "unknown field"),
        ] {
            let e = format!("{:#}", HostsPlan::parse(text).unwrap_err());
            assert!(e.contains(says) && !e.contains('\n'), "{text:?}: {e}");
        }
    }
}

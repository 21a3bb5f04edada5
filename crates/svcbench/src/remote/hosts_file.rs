//! The hosts file (`--hosts hosts.toml`): which machine each part of a run uses. It places the load
//! generator agents (this machine, or another reached with OpenSSH where the same svcbench is installed),
//! the scenario's store and the service (this machine, or another where a svcbench checkout builds and
//! starts them), and the address the service listens on, so that generators elsewhere can reach it.
//!
//! ```toml
//! [service]
//! address = "10.0.0.3"                 # an address of this machine the generator hosts reach
//! # or, the service on another machine (built and run there from the checkout, under its limits):
//! # at = "ssh://bench@10.0.0.5"
//! # dir = "/home/bench/svcbench"       # the services' paths are taken relative to the checkout here
//!
//! [store]
//! at = "ssh://bench@10.0.0.9"          # the scenario's dependencies run there, started by svcbench
//! dir = "/home/bench/svcbench"         # the svcbench checkout there (its scenarios and data)
//! address = "10.0.0.9"                 # optional: where the store listens (default: the ssh host)
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
use std::time::Duration;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HostsFile {
    #[serde(default)]
    service: Option<FarEntry>,
    #[serde(default)]
    store: Option<FarEntry>,
    #[serde(default)]
    generator: Vec<GeneratorEntry>,
}

/// `[service]` or `[store]`: on this machine, or on another one reached over ssh.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FarEntry {
    #[serde(default)]
    at: Option<String>,
    #[serde(default)]
    ssh_options: Vec<String>,
    #[serde(default)]
    svcbench: Option<String>,
    dir: Option<String>,
    #[serde(default)]
    address: Option<String>,
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
    /// `ssh` arguments for a command here: no password prompts (keys only), the user's own config, and
    /// svcbench's time limits ([`wait_options`]) where the hosts file's options set none.
    pub fn ssh_args(&self, command: &str) -> Vec<String> {
        let Place::Ssh { destination, port, options, .. } = self else { return vec![] };
        let mut a = vec!["-o".to_string(), "BatchMode=yes".to_string()];
        if let Some(p) = port {
            a.extend(["-p".into(), p.to_string()]);
        }
        a.extend(options.iter().cloned());
        a.extend(wait_options());
        a.extend([destination.clone(), "--".into(), command.into()]);
        a
    }

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
    /// Where the service listens (None: loopback): an address of this machine, or of the service's own.
    pub service_addr: Option<Ipv4Addr>,
    /// The service's machine, where svcbench builds and runs it over ssh (None: this machine).
    pub service_at: Option<RemotePlace>,
    /// Where the scenario's dependencies run (None: this machine, as without a hosts file).
    pub store: Option<RemotePlace>,
    pub generators: Vec<Place>,
}

/// Another machine reached over ssh, where svcbench starts a part of the run (the scenario's dependencies,
/// or the service) from a checkout.
#[derive(Debug, Clone, PartialEq)]
pub struct RemotePlace {
    pub place: Place,
    /// The svcbench checkout there: its scenarios, services and datasets.
    pub dir: String,
    /// The address the part listens on there, which this machine (and the service) reach.
    pub address: Ipv4Addr,
}

impl HostsPlan {
    /// Reads and checks the file; every problem in one line naming the file.
    pub fn load(path: &Path) -> Result<HostsPlan> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("cannot read the hosts file {}", path.display()))?;
        // TOML's errors name the file and the line, as for the other TOML files; the plan's name the file.
        let f: HostsFile = crate::toml_file::parse(path, &text)?;
        HostsPlan::from_file(f).map_err(|e| anyhow::anyhow!("{}: {e:#}", path.display()))
    }

    #[cfg(test)]
    fn parse(text: &str) -> Result<HostsPlan> {
        HostsPlan::from_file(crate::toml_file::parse(Path::new("hosts.toml"), text)?)
    }

    fn from_file(f: HostsFile) -> Result<HostsPlan> {
        let service_at = match &f.service {
            Some(s) if s.at.as_deref().is_some_and(|a| a != "local") => Some(remote_place("[service]", s)?),
            _ => None,
        };
        let service_addr = match (&f.service, &service_at) {
            (_, Some(at)) => Some(at.address),
            (Some(FarEntry { address: Some(a), .. }), None) => Some(a.parse().ok().with_context(|| {
                format!("[service] address {a:?} is not an IPv4 address (e.g. \"10.0.0.3\")")
            })?),
            (Some(_), None) => bail!("[service]: give address = \"…\" (an address of this machine the generator hosts reach), or at = \"ssh://user@host\" and dir"),
            (None, None) => None,
        };
        if let Some(s) = f.service.as_ref().filter(|_| service_at.is_none()) {
            if s.dir.is_some() || !s.ssh_options.is_empty() || s.svcbench.is_some() {
                bail!("[service]: dir, ssh_options and svcbench are for at = \"ssh://…\"");
            }
        }
        let store = match &f.store {
            Some(s) if s.at.is_none() => bail!("[store]: give at = \"ssh://user@host\" and dir"),
            Some(s) => Some(remote_place("[store]", s)?),
            None => None,
        };
        if f.generator.is_empty() && store.is_none() && service_at.is_none() {
            bail!("no [[generator]]: give at least one, with at = \"local\" or at = \"ssh://user@host\"");
        }
        if f.generator.len() > crate::network::MAX_GENERATORS {
            bail!("{} generators: at most {}", f.generator.len(), crate::network::MAX_GENERATORS);
        }
        let mut generators = Vec::new();
        for (i, g) in f.generator.iter().enumerate() {
            let what = format!("generator {}", i + 1);
            generators.push(place(&what, &g.at, &g.ssh_options, &g.svcbench)?);
        }
        if generators.is_empty() {
            generators.push(Place::Local);
        }
        let remote = generators.iter().any(|p| matches!(p, Place::Ssh { .. }));
        if remote && service_addr.is_none_or(|a| a.is_loopback()) {
            bail!("a generator on another host cannot reach a service on loopback: set [service] address to an address of this machine that the generator hosts reach");
        }
        Ok(HostsPlan { service_addr, service_at, store, generators })
    }

    /// Whether the load goes through agents (`svcbench load` processes) rather than this process's own
    /// generator: several generators, or one elsewhere.
    pub fn uses_agents(&self) -> bool {
        self.generators != [Place::Local]
    }

    /// Refuses a service address this machine does not have (nothing could listen there).
    pub fn check_here(&self) -> Result<()> {
        if let Some(addr) = self.service_addr.filter(|_| self.service_at.is_none()) {
            std::net::TcpListener::bind((addr, 0)).with_context(|| {
                format!("[service] address {addr} is not an address of this machine (see `ip addr`)")
            })?;
        }
        Ok(())
    }
}

/// One `at = …` entry: "local" or ssh://[user@]host[:port]; `what` names it in errors.
fn place(what: &str, at: &str, ssh_options: &[String], svcbench: &Option<String>) -> Result<Place> {
    if at == "local" {
        if !ssh_options.is_empty() || svcbench.is_some() {
            bail!("{what}: ssh_options and svcbench are for at = \"ssh://…\"");
        }
        return Ok(Place::Local);
    }
    let Some(rest) = at.strip_prefix("ssh://") else {
        bail!("{what}: at = {at:?}: write \"local\" or \"ssh://[user@]host[:port]\"");
    };
    let (destination, port) = match rest.rsplit_once(':') {
        Some((d, p)) => {
            (d, Some(p.parse::<u16>().ok().with_context(|| format!("{what}: port {p:?} in {at:?} is not a number"))?))
        }
        None => (rest, None),
    };
    // The destination becomes an argument of ssh: no option, no path, nothing a shell or ssh would read twice.
    if destination.is_empty()
        || destination.starts_with('-')
        || !destination.chars().all(|c| c.is_ascii_alphanumeric() || "._-@".contains(c))
    {
        bail!("{what}: {at:?} is not ssh://[user@]host[:port] (letters, digits, '.', '_', '-' and one '@')");
    }
    if let Some(bad) = svcbench.as_deref().filter(|p| !plain_path(p)) {
        bail!("{what}: svcbench = {bad:?}: give a path without spaces, quotes or control characters");
    }
    Ok(Place::Ssh {
        destination: destination.to_string(),
        port,
        options: ssh_options.to_vec(),
        svcbench: svcbench.clone().unwrap_or_else(|| "svcbench".into()),
    })
}

/// A path that enters a command line on the other host as it is: no whitespace, quotes, control characters
/// or shell syntax.
fn plain_path(p: &str) -> bool {
    !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+~=,".contains(c))
}

/// `[store]`, or `[service]` with `at`, on another machine (this machine is the default).
fn remote_place(section: &str, s: &FarEntry) -> Result<RemotePlace> {
    let place = place(section, s.at.as_deref().unwrap_or("local"), &s.ssh_options, &s.svcbench)?;
    let Place::Ssh { destination, .. } = &place else {
        bail!("{section}: at = \"local\" is the default; leave it out, or give at = \"ssh://user@host\"");
    };
    let Some(dir) = s.dir.clone().filter(|d| d.starts_with('/') && plain_path(d)) else {
        bail!("{section}: give dir = \"/path/to/svcbench\", the absolute path (no spaces or quotes) of the svcbench checkout on that host (its scenarios, services and data)");
    };
    let host = destination.rsplit_once('@').map_or(destination.as_str(), |(_, h)| h);
    let address = match &s.address {
        Some(a) => a.parse().ok().with_context(|| format!("{section} address {a:?} is not an IPv4 address"))?,
        None => host.parse().ok().with_context(|| {
            format!("{section}: {host:?} is not an IPv4 address: give address = \"…\", where it listens there")
        })?,
    };
    if Ipv4Addr::is_loopback(&address) || address.is_unspecified() {
        bail!("{section} address {address} cannot be reached from this machine: give that host's own address");
    }
    Ok(RemotePlace { place, dir, address })
}

/// How long ssh may take to connect: the TCP handshake and the other side's first words (its banner).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// How often ssh asks the other side, inside the encrypted connection, whether it is still there…
pub const ALIVE_INTERVAL: Duration = Duration::from_secs(10);
/// …and how many questions may go unanswered before it ends the connection: a machine or network lost
/// mid-run ends every ssh within `ALIVE_INTERVAL × ALIVE_COUNT_MAX` (30 s).
pub const ALIVE_COUNT_MAX: u32 = 3;
/// The `-o` options every ssh of svcbench gets after the hosts file's own `ssh_options` (ssh keeps the
/// first value it is given, so a hosts file may set other ones).
pub fn wait_options() -> Vec<String> {
    [
        format!("ConnectTimeout={}", CONNECT_TIMEOUT.as_secs()),
        format!("ServerAliveInterval={}", ALIVE_INTERVAL.as_secs()),
        format!("ServerAliveCountMax={ALIVE_COUNT_MAX}"),
    ]
    .into_iter()
    .flat_map(|o| ["-o".to_string(), o])
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_ssh_gets_the_time_limits_after_the_hosts_files_own_options() {
        let place = Place::Ssh {
            destination: "bench@10.0.0.9".into(),
            port: None,
            options: vec!["-o".into(), "ConnectTimeout=99".into()],
            svcbench: "svcbench".into(),
        };
        let a = place.ssh_args("true");
        let at = |o: &str| a.iter().position(|x| x.starts_with(o)).unwrap_or_else(|| panic!("no {o} in {a:?}"));
        assert!(a[..2] == ["-o", "BatchMode=yes"], "{a:?}");
        assert_eq!(a[at("ConnectTimeout=")], "ConnectTimeout=99", "ssh keeps the first value: the hosts file's");
        assert!(a.contains(&"ConnectTimeout=15".to_string()) && at("ServerAliveInterval=10") < at("bench@"));
        assert!(at("ServerAliveCountMax=3") < at("bench@"), "options go before the destination: {a:?}");
    }

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
    fn a_store_elsewhere_is_read_and_the_generator_stays_here_by_default() {
        let p = HostsPlan::parse("[store]\nat = \"ssh://bench@10.0.0.9\"\ndir = \"/srv/svcbench\"\n").unwrap();
        let store = p.store.clone().unwrap();
        assert_eq!(store.address, Ipv4Addr::new(10, 0, 0, 9));
        assert_eq!(store.dir, "/srv/svcbench");
        assert_eq!(store.place.describe(), "ssh://bench@10.0.0.9");
        assert_eq!(p.generators, [Place::Local]);
        let named = HostsPlan::parse(
            "[store]\nat = \"ssh://lab-store:2222\"\ndir = \"/srv/s\"\naddress = \"192.168.1.9\"\n[[generator]]\nat = \"local\"\n[[generator]]\nat = \"local\"\n",
        )
        .unwrap();
        assert_eq!(named.store.clone().unwrap().address, Ipv4Addr::new(192, 168, 1, 9));
        assert!(named.uses_agents());
        assert!(!p.uses_agents());
    }

    #[test]
    fn a_service_elsewhere_listens_on_its_own_address() {
        let p = HostsPlan::parse("[service]\nat = \"ssh://bench@10.0.0.5\"\ndir = \"/srv/svcbench\"\n").unwrap();
        let at = p.service_at.clone().unwrap();
        assert_eq!((at.address, at.dir.as_str()), (Ipv4Addr::new(10, 0, 0, 5), "/srv/svcbench"));
        assert_eq!(p.service_addr, Some(Ipv4Addr::new(10, 0, 0, 5)), "the generators aim there");
        assert_eq!(p.generators, [Place::Local]);
        // Not an address of this machine, and not refused for it: nothing listens here.
        assert!(p.check_here().is_ok());
        let here = HostsPlan::parse("[service]\naddress = \"192.0.2.77\"\n[[generator]]\nat = \"local\"\n").unwrap();
        assert!(here.service_at.is_none() && here.check_here().is_err());
    }

    #[test]
    fn a_toml_error_names_the_file_and_its_line_as_in_the_other_toml_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hosts.toml");
        for (text, line, says) in [
            ("[[generator]]\nat = \"local\"\n[service]\nadress = \"10.0.0.3\"\n", 4, "did you mean `address`?"),
            ("[[generator]]\n\nat = \"ssh://h\\q\"\n", 3, "invalid"),
        ] {
            std::fs::write(&path, text).unwrap();
            let e = format!("{:#}", HostsPlan::load(&path).unwrap_err());
            assert!(e.starts_with(&format!("{}:{line}: ", path.display())) && e.contains(says), "{text:?}: {e}");
        }
        // What the plan refuses still names the file.
        std::fs::write(&path, "").unwrap();
        let e = format!("{:#}", HostsPlan::load(&path).unwrap_err());
        assert!(e.starts_with(&format!("{}: no [[generator]]", path.display())), "{e}");
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
            ("[store]\nat = \"local\"\ndir = \"/s\"\n", "is the default"),
            ("[store]\ndir = \"/s\"\n", "give at"),
            ("[service]\n[[generator]]\nat = \"local\"\n", "give address"),
            ("[service]\naddress = \"10.0.0.3\"\ndir = \"/s\"\n[[generator]]\nat = \"local\"\n", "are for at"),
            ("[service]\nat = \"ssh://h\"\n", "give dir"),
            ("[service]\nat = \"ssh://10.0.0.5\"\ndir = \"/s\"\naddress = \"0.0.0.0\"\n", "cannot be reached"),
            ("[store]\nat = \"ssh://h\"\n", "give dir"),
            ("[store]\nat = \"ssh://h\"\ndir = \"rel\"\n", "give dir"),
            ("[store]\nat = \"ssh://10.0.0.5\"\ndir = \"/x; rm -rf /\"\n", "give dir"),
            ("[[generator]]\nat = \"ssh://h -oProxyCommand=x\"\n", "is not ssh://"),
            ("[[generator]]\nat = \"ssh://h\"\nsvcbench = \"$(x)\"\n", "svcbench = "),
            ("[store]\nat = \"ssh://store-host\"\ndir = \"/s\"\n", "give address"),
            ("[store]\nat = \"ssh://h\"\ndir = \"/s\"\naddress = \"127.0.0.1\"\n", "cannot be reached"),
        ] {
            let e = format!("{:#}", HostsPlan::parse(text).unwrap_err());
            assert!(e.contains(says) && !e.contains('\n'), "{text:?}: {e}");
        }
    }
}

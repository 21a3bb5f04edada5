//! The options shared by the commands that measure (run, study, up, check): their argument types, parsed
//! by cli and by the commands' own argument structs, and the one constructor of the runner's options.
mod session;

pub use session::{run_options, SessionArgs, SessionPlan};

use std::path::PathBuf;

/// The limits a service runs under.
/// The service's memory cap when none is given (`--memory`, a study's `limits.memory`, a study's duet).
pub const DEFAULT_MEMORY: &str = "512M";

#[derive(clap::Args, Debug, Clone)]
pub struct LimitsArgs {
    /// CPU quota of the service, in CPUs (as Docker's --cpus).
    #[arg(long, allow_negative_numbers = true)]
    pub cpus: Option<f64>,
    /// Memory cap of the service, no swap (e.g. 512M, 1G; "none" for no cap).
    #[arg(long, default_value = DEFAULT_MEMORY)]
    pub memory: String,
    /// CPUs the service may run on (default: the upper half of this machine's CPUs).
    #[arg(long)]
    pub cpuset: Option<String>,
    /// Most processes and threads the service may run at once (its cgroup's pids.max; default 4096).
    #[arg(long)]
    pub pids: Option<u64>,
}

impl LimitsArgs {
    /// The limits as asked; the CPU set is checked and normalised with the rest of the split
    /// (cpus::cpu_split).
    pub fn limits(&self) -> anyhow::Result<crate::sandbox::Limits> {
        if let Some(c) = self.cpus {
            if !(c.is_finite() && c > 0.0) {
                anyhow::bail!("--cpus {c}: must be a number of CPUs above 0 (e.g. 1.5)");
            }
        }
        if self.pids == Some(0) {
            anyhow::bail!("--pids 0: a service needs at least one process; give a number above 0 (e.g. 4096)");
        }
        Ok(crate::sandbox::Limits {
            cpus: self.cpus,
            memory_bytes: parse_memory(&self.memory)?,
            cpuset: self.cpuset.clone(),
            pids: self.pids,
        })
    }
}

/// The emulated network between the parts of a run.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct NetworkArgs {
    /// Put the load generator, the service and the dependencies in network namespaces of their own, joined
    /// by a bridge (needs root and iproute2).
    #[arg(long)]
    pub net: bool,
    /// An emulated link between two parts (client, service, store), e.g. service-store=delay:2ms,jitter:0.2ms,loss:0.1%;
    /// the delay is added once to every round trip between them (a user-space delay line, docs/network.md).
    /// Implies --net. Repeatable.
    #[arg(long = "link", value_name = "A-B=SPEC", value_parser = parse_link)]
    pub links: Vec<crate::network::Link>,
}

impl NetworkArgs {
    /// Whether namespaces were asked for (`--net`, or a `--link`, which implies it).
    pub fn asked(&self) -> bool {
        self.net || !self.links.is_empty()
    }

    /// None: everything on loopback. Refuses, before any build or start, links given twice and a machine
    /// where the network cannot be made.
    pub fn links(&self) -> anyhow::Result<Option<Vec<crate::network::Link>>> {
        let links = self.links_asked()?;
        if links.is_some() {
            crate::network::check_available(!self.links.is_empty())?;
        }
        Ok(links)
    }

    /// The links asked for, each pair once, without making sure this machine can make them (a plan's view).
    pub fn links_asked(&self) -> anyhow::Result<Option<Vec<crate::network::Link>>> {
        crate::network::link::check_distinct(&self.links)?;
        Ok(self.asked().then(|| self.links.clone()))
    }
}

/// Dependencies that already run somewhere, used instead of starting them.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct DepArgs {
    /// Use a running dependency instead of starting one, e.g. opensearch=http://10.0.0.5:9200: svcbench checks
    /// it, loads the scenario's data where missing, and reads its CPU from its own statistics. Repeatable
    #[arg(long = "dep", value_name = "KIND=URL", value_parser = parse_dep)]
    pub deps: Vec<String>,
    /// With --dep: refuse a store that lacks the scenario's data instead of loading it
    #[arg(long)]
    pub dep_readonly: bool,
}

impl DepArgs {
    pub fn given(&self) -> anyhow::Result<crate::deps::GivenDeps> {
        crate::deps::GivenDeps::parse(&self.deps, self.dep_readonly)
    }
}

/// How many load generator agents drive each step.
#[derive(clap::Args, Debug, Clone)]
pub struct GeneratorArgs {
    /// Drive each step from N generator agents (svcbench load processes, each with its share of the
    /// connections or of the rate's schedule) whose results merge exactly; with --net each in a network
    /// namespace of its own (client, client2, …), behind the same client-service link.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=crate::network::MAX_GENERATORS as i64))]
    pub generators: u8,
    /// A hosts file placing the generator agents (this machine, or ssh://user@host with svcbench installed)
    /// and the service's address (docs/network.md)
    #[arg(long, value_name = "FILE")]
    pub hosts: Option<PathBuf>,
}

impl GeneratorArgs {
    /// The hosts file's plan, checked here and now (before anything is built).
    pub fn plan(&self, network: &NetworkArgs) -> anyhow::Result<Option<crate::remote::hosts_file::HostsPlan>> {
        let Some(path) = &self.hosts else { return Ok(None) };
        if self.generators > 1 {
            anyhow::bail!(
                "--generators {} and --hosts {}: the hosts file's [[generator]] entries set the agents (one each); \
                 leave --generators out",
                self.generators,
                path.display()
            );
        }
        if network.asked() {
            anyhow::bail!(
                "--hosts places parts on machines, --net and --link on namespaces of this one: give one or the other"
            );
        }
        let plan = crate::remote::hosts_file::HostsPlan::load(path)?;
        plan.check_here()?;
        Ok(Some(plan))
    }

    /// Generator agents per step.
    pub fn count(&self, plan: Option<&crate::remote::hosts_file::HostsPlan>) -> usize {
        plan.map_or(usize::from(self.generators), |p| p.generators.len())
    }
}

fn parse_link(s: &str) -> Result<crate::network::Link, String> {
    crate::network::Link::parse(s).map_err(|e| e.to_string())
}

/// Most runs per service (or per study cell): a hundred fresh starts already tell the spread; more is a
/// typo that would keep the machine busy for days.
pub const MAX_RUNS: u32 = 100;

/// The most pairs a duet runs (`svcbench duet --pairs`, a study's `[duet]`).
pub const MAX_PAIRS: u32 = 200;

/// A duet's `--precision` (and a study's `duet.precision`): `2%` or `0.02` → 0.02.
pub fn parse_precision(s: &str) -> Result<f64, String> {
    let v = match s.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|x| x / 100.0),
        None => s.trim().parse::<f64>(),
    }
    .map_err(|_| format!("`{s}` is not a share: give e.g. 2% or 0.02"))?;
    if !(v > 0.0 && v < 1.0) {
        return Err(format!("`{s}`: give a share between 0 and 100 %, e.g. 2%"));
    }
    Ok(v)
}

/// Longest wait for a service to answer its readiness path: an hour (the slowest cold JVM start seen
/// was under a minute).
pub const MAX_STARTUP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3_600);
/// Largest machine-speed drift tolerance, in percent: beyond it no drift would ever be flagged.
pub const MAX_PROBE_TOLERANCE_PCT: f64 = 1_000.0;
/// Smallest memory cap: a mebibyte.
pub const MIN_MEMORY: u64 = 1 << 20;

/// `--step-duration`: at most the longest step a profile may hold (a day).
pub fn parse_step_duration(s: &str) -> Result<std::time::Duration, String> {
    loadgen::cli::parse_duration_within(s, crate::profile::MAX_STEP, "a day (24h)")
}

/// `--startup-timeout`, shared by the commands that start a service (run, check, up).
#[derive(clap::Args, Debug, Clone)]
pub struct StartupArgs {
    /// Give up on a service that has not answered its readiness path after this long (at most an hour).
    #[arg(long, default_value = "120s", value_parser = parse_startup_timeout)]
    pub startup_timeout: std::time::Duration,
}

/// `--startup-timeout`: at most [`MAX_STARTUP_TIMEOUT`].
pub fn parse_startup_timeout(s: &str) -> Result<std::time::Duration, String> {
    loadgen::cli::parse_duration_within(s, MAX_STARTUP_TIMEOUT, "an hour (1h)")
}

/// `--probe-tolerance`: a finite percentage above zero, at most [`MAX_PROBE_TOLERANCE_PCT`].
pub fn parse_probe_tolerance(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(p) if p.is_finite() && p > 0.0 && p <= MAX_PROBE_TOLERANCE_PCT => Ok(p),
        _ => Err(format!("'{s}' is not a drift in percent above 0 and at most {MAX_PROBE_TOLERANCE_PCT}, e.g. 10")),
    }
}

/// `--dep KIND=URL`: the URL's scheme is http, the only one svcbench speaks to a dependency (no TLS is
/// built in). The rest is checked with the scenario (deps::GivenDeps).
fn parse_dep(s: &str) -> Result<String, String> {
    let url = s.split_once('=').map_or("", |(_, u)| u);
    if url.starts_with("https://") {
        return Err(format!(
            "'{s}': svcbench speaks plain http to a dependency (no TLS built in); give its http:// address"
        ));
    }
    if !url.starts_with("http://") {
        return Err(format!("'{s}': write it as KIND=http://HOST:PORT, e.g. opensearch=http://10.0.0.5:9200"));
    }
    Ok(s.to_string())
}

/// "512M", "1G", "64m", "1048576" → bytes; "none" → None.
pub fn parse_memory(s: &str) -> anyhow::Result<Option<u64>> {
    parse_memory_of("--memory", s)
}

/// [`parse_memory`] with its refusals naming `key`, where the size was given (`--memory`, a study's
/// `[limits] memory`).
pub fn parse_memory_of(key: &str, s: &str) -> anyhow::Result<Option<u64>> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    let (num, mult) = match t.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&t[..t.len() - 1], 1u64 << 10),
        Some('M') => (&t[..t.len() - 1], 1 << 20),
        Some('G') => (&t[..t.len() - 1], 1 << 30),
        _ => (t, 1),
    };
    let n: f64 = num.parse().map_err(|_| anyhow::anyhow!("{key} {s:?}: write a size like 512M or 1G, or none"))?;
    // NaN and infinities parse as numbers; no machine has a pebibyte to cap.
    if !(n > 0.0 && n * mult as f64 <= (1u64 << 50) as f64) {
        anyhow::bail!("{key} {s:?}: write a size above zero and below 1024T, like 512M or 1G, or none");
    }
    let bytes = (n * mult as f64) as u64;
    // A cap below a mebibyte (1e-300G rounds to 0 bytes) is a typo: no service starts under it.
    if bytes < MIN_MEMORY {
        anyhow::bail!("{key} {s:?}: below 1M, which no service starts under; write a size like 512M or 1G, or none");
    }
    Ok(Some(bytes))
}

#[cfg(test)]
mod tests {
    use super::parse_memory;

    #[test]
    fn generators_beside_a_hosts_file_are_refused_in_one_line_naming_its_entries() {
        let a = super::GeneratorArgs { generators: 2, hosts: Some("hosts.toml".into()) };
        let e = a.plan(&super::NetworkArgs::default()).unwrap_err().to_string();
        assert!(e.contains("[[generator]] entries set the agents") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn memory_sizes() {
        assert_eq!(parse_memory("512M").unwrap(), Some(512 << 20));
        assert_eq!(parse_memory("1g").unwrap(), Some(1 << 30));
        assert_eq!(parse_memory("none").unwrap(), None);
        assert!(parse_memory("lots").is_err());
        for bad in ["nan", "0", "-1M", "inf", "1e20G", "1e-300", "0.5", "1023K"] {
            assert!(parse_memory(bad).is_err(), "{bad}");
        }
    }
}

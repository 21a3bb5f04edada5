//! What a cgroup backend (v1 or v2) offers the sandbox, and the detection of which one this machine has.
use anyhow::Result;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Limits of a sandbox, as Docker's `--cpus`, `--memory` (no swap), `--cpuset-cpus` and `--pids-limit`.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Limits {
    pub cpus: Option<f64>,
    pub memory_bytes: Option<u64>,
    pub cpuset: Option<String>,
    /// Most processes and threads at once (`pids.max`); None: [`DEFAULT_PIDS`]. Every cgroup svcbench makes
    /// has one, so that a service that forks without end fills its own limit, not the machine's.
    #[serde(default)]
    pub pids: Option<u64>,
}

/// The process and thread limit of a cgroup when none is given: twice the most threads a bundled service
/// was seen to run (2,063, http4k with Apache's client under load), far below the machine's.
pub const DEFAULT_PIDS: u64 = 4096;

impl Limits {
    /// The `pids.max` a cgroup with these limits gets.
    pub fn pids_max(&self) -> u64 {
        self.pids.unwrap_or(DEFAULT_PIDS)
    }
}

/// Limits as the kernel holds them, read back from the group's own files after it was set up: what the
/// service really runs under, whatever was asked. `None`: no limit there (or nothing to read).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Applied {
    pub cpus: Option<f64>,
    pub memory_bytes: Option<u64>,
    pub cpuset: Option<String>,
    #[serde(default)]
    pub pids: Option<u64>,
}

/// How the process limit held differs from the one asked (a cgroup's: containers set their own).
pub fn pids_mismatch(asked: &Limits, held: &Applied) -> Option<String> {
    let want = asked.pids_max();
    match held.pids {
        Some(h) if h == want => None,
        Some(h) => Some(format!("process limit {want} asked, {h} held")),
        None => Some(format!("process limit {want} asked, none held")),
    }
}

/// The one line telling that a service hit its process limit, naming the limit and the fix.
pub fn pids_hit_line(limit: Option<u64>, refused: u64) -> String {
    let limit = limit.map_or("its".to_string(), |l| l.to_string());
    format!(
        "it hit its limit of {limit} processes and threads (pids.max; {refused} forks or new threads refused): \
         raise --pids, or find what it starts without end"
    )
}

/// How the limits held differ from the limits asked, one sentence each (empty: as asked).
pub fn mismatches(asked: &Limits, held: &Applied) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(c) = asked.cpus {
        match held.cpus {
            Some(h) if (h - c).abs() < 0.005 => {}
            Some(h) => out.push(format!("CPU quota {c} asked, {h} held")),
            None => out.push(format!("CPU quota {c} asked, none held")),
        }
    }
    if let Some(m) = asked.memory_bytes {
        // The kernel rounds the cap down to whole pages.
        match held.memory_bytes {
            Some(h) if h.abs_diff(m) < 64 * 1024 => {}
            Some(h) => out.push(format!("memory cap {} MiB asked, {} MiB held", m >> 20, h >> 20)),
            None => out.push(format!("memory cap {} MiB asked, none held", m >> 20)),
        }
    }
    if let Some(set) = &asked.cpuset {
        let same = match &held.cpuset {
            Some(h) => crate::cpus::parse(h).ok() == crate::cpus::parse(set).ok(),
            None => false,
        };
        if !same {
            out.push(format!("cpuset {set} asked, {} held", held.cpuset.as_deref().unwrap_or("none")));
        }
    }
    out
}

/// Counters read from the cgroup at one moment. Fields a backend cannot read stay `None`.
#[derive(Debug, Clone, Default)]
pub struct Counters {
    pub cpu_ns: Option<u64>,
    pub mem_bytes: Option<u64>,
    /// High-water mark since creation or the last `reset_peak`.
    pub mem_peak_bytes: Option<u64>,
    pub throttled_ns: Option<u64>,
    pub oom_kills: Option<u64>,
    /// Forks and new threads refused at the group's process limit (pids.events `max`).
    pub pids_refused: Option<u64>,
}

pub trait CgroupBackend: Send + Sync {
    fn version(&self) -> &'static str;
    /// Files to write "0" into from the child (before exec) so that the service starts inside the group.
    fn procs_files(&self) -> Vec<PathBuf>;
    fn pids(&self) -> Vec<i32>;
    fn counters(&self) -> Counters;
    /// Restarts the memory high-water mark (per step); false where the kernel does not allow it.
    fn reset_peak(&self) -> bool;
    /// Removes the group (all its processes must be gone).
    fn remove(&self) -> Result<()>;
    /// Every folder of the group (one per v1 hierarchy, one in v2): what a later svcbench must remove if
    /// this one is killed before it can.
    fn dirs(&self) -> Vec<PathBuf>;
    /// The limits the kernel holds for the group now.
    fn applied(&self) -> Applied;
    /// Moves the group to other CPUs (where it has a cpuset; elsewhere creation already warned).
    fn pin(&self, set: &str) -> Result<()>;
    /// SIGKILL to every process of the group at once, none able to fork past it (v2's `cgroup.kill`, v1's
    /// freezer); false where the kernel offers neither, the caller then kills what `cgroup.procs` lists.
    fn kill_whole(&self) -> bool;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum)]
pub enum CgroupChoice {
    Auto,
    V1,
    V2,
    None,
}

pub(crate) fn mounts() -> Vec<(String, PathBuf, Vec<String>)> {
    // /proc/self/mounts: "cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0"
    let text = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 4).then(|| (f[2].to_string(), PathBuf::from(f[1]), f[3].split(',').map(String::from).collect()))
        })
        .collect()
}

/// Where the v2 hierarchy is mounted, if at all.
pub(crate) fn v2_mount() -> Option<PathBuf> {
    mounts().into_iter().find(|(fs, _, _)| fs == "cgroup2").map(|(_, p, _)| p)
}

pub(crate) fn v2_controllers(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("cgroup.controllers"))
        .unwrap_or_default()
        .split_whitespace()
        .map(String::from)
        .collect()
}

/// v1 hierarchy mount points, by controller name.
pub(crate) fn v1_mount(controller: &str) -> Option<PathBuf> {
    mounts().into_iter().find(|(fs, _, opts)| fs == "cgroup" && opts.iter().any(|o| o == controller)).map(|(_, p, _)| p)
}

/// Which cgroup version to use on this machine: v2 when its hierarchy has the cpu and memory controllers,
/// else v1 when the cpu, cpuacct and memory controllers are mounted, else v2 without controllers (CPU time
/// can still be read), else none.
pub fn detect() -> CgroupChoice {
    with_limits().unwrap_or(if v2_mount().is_some() { CgroupChoice::V2 } else { CgroupChoice::None })
}

/// The cgroup version that can hold a service to a CPU quota and a memory cap here, if one can.
fn with_limits() -> Option<CgroupChoice> {
    if let Some(m) = v2_mount() {
        let c = v2_controllers(&m);
        if c.iter().any(|x| x == "cpu") && c.iter().any(|x| x == "memory") {
            return Some(CgroupChoice::V2);
        }
    }
    ["cpu", "cpuacct", "memory"].iter().all(|c| v1_mount(c).is_some()).then_some(CgroupChoice::V1)
}

/// Whether a CPU quota and a memory cap can be applied on this machine (told to another machine's
/// svcbench in its host facts).
pub fn limits_applicable() -> bool {
    with_limits().is_some()
}

pub(crate) fn read_u64(path: &Path) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// "key value" lines (cpu.stat, memory.events, memory.oom_control).
pub(crate) fn read_keyed(path: &Path, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().find_map(|l| {
        let mut it = l.split_whitespace();
        (it.next()? == key).then(|| it.next()?.parse().ok()).flatten()
    })
}

pub(crate) fn read_pids(path: &Path) -> Vec<i32> {
    std::fs::read_to_string(path).unwrap_or_default().lines().filter_map(|l| l.trim().parse().ok()).collect()
}

pub(crate) fn write(path: &Path, value: &str) -> Result<()> {
    std::fs::write(path, value).map_err(|e| anyhow::anyhow!("cannot write {value:?} to {}: {e}", path.display()))
}

/// Whether processes this pid namespace cannot see run in the group: an svcbench in another container that
/// shares the machine's cgroups made it, and its pid means nothing here. None of the group's processes show,
/// yet v2 says it is populated or v1's memory controller holds their resident pages (freed when the last
/// one ends).
pub(crate) fn populated_unseen(dir: &Path) -> bool {
    read_pids(&dir.join("cgroup.procs")).is_empty()
        && (read_keyed(&dir.join("cgroup.events"), "populated") == Some(1)
            || read_keyed(&dir.join("memory.stat"), "rss").is_some_and(|b| b > 0))
}

/// rmdir, retried briefly: the kernel frees a group a moment after its last process is reaped.
pub(crate) fn rmdir_retry(dir: &Path) -> Result<()> {
    if !dir.exists() {
        return Ok(());
    }
    let mut last = None;
    let removed =
        crate::poll::until(Duration::from_secs(1), Duration::from_millis(20), || match std::fs::remove_dir(dir) {
            Ok(()) => Some(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(()),
            Err(e) => {
                last = Some(e);
                None
            }
        });
    removed.ok_or_else(|| anyhow::anyhow!("cannot remove cgroup {}: {}", dir.display(), last.unwrap()))
}

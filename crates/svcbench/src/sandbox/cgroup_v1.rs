//! cgroup v1: one group per hierarchy (cpu, cpuacct, cpuset, memory, pids, freezer; co-mounted hierarchies
//! share one folder), as on this project's machines (see DESIGN.md, "Containers"). The freezer holds no
//! limit: it stops the group's processes while they are killed, so that none forks past the kill.
use super::cgroup::{
    read_keyed, read_pids, read_u64, rmdir_retry, v1_mount, write, Applied, CgroupBackend, Counters, Limits,
};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Default)]
pub struct CgroupV1 {
    cpu: Option<PathBuf>,
    cpuacct: Option<PathBuf>,
    memory: Option<PathBuf>,
    cpuset: Option<PathBuf>,
    pids: Option<PathBuf>,
    freezer: Option<PathBuf>,
    /// Every folder created, in creation order (co-mounted controllers appear once).
    dirs: Vec<PathBuf>,
}

const PERIOD_US: u64 = 100_000;

impl CgroupV1 {
    pub fn create(parent: &str, name: &str, limits: &Limits, warnings: &mut Vec<String>) -> Result<CgroupV1> {
        let mut g = CgroupV1::default();
        let result = g.setup(parent, name, limits, warnings);
        if result.is_err() {
            let _ = g.remove();
        }
        result.map(|_| g)
    }

    /// The groups a running process is in (read from /proc/<pid>/cgroup), as a group to read and not to
    /// manage: a container's, which its engine made and removes.
    pub fn of_process(pid: i32) -> Option<CgroupV1> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
        let mut g = CgroupV1::default();
        for line in text.lines() {
            // "4:memory:/svcbench/x/libpod-<id>", co-mounted controllers comma-separated.
            let mut f = line.splitn(3, ':');
            let (Some(_), Some(controllers), Some(path)) = (f.next(), f.next(), f.next()) else { continue };
            for controller in controllers.split(',') {
                let slot = match controller {
                    "cpu" => &mut g.cpu,
                    "cpuacct" => &mut g.cpuacct,
                    "memory" => &mut g.memory,
                    "cpuset" => &mut g.cpuset,
                    "pids" => &mut g.pids,
                    _ => continue,
                };
                let Some(mount) = v1_mount(controller) else { continue };
                let dir = mount.join(path.trim_start_matches('/'));
                if !g.dirs.contains(&dir) {
                    g.dirs.push(dir.clone());
                }
                *slot = Some(dir);
            }
        }
        (g.memory.is_some() && g.cpuacct.is_some()).then_some(g)
    }

    fn setup(&mut self, parent: &str, name: &str, limits: &Limits, warnings: &mut Vec<String>) -> Result<()> {
        for controller in CONTROLLERS {
            let Some(mount) = v1_mount(controller) else {
                if controller != "freezer" && (controller != "cpuset" || limits.cpuset.is_some()) {
                    warnings.push(format!(
                        "cgroup v1 controller `{controller}` is not mounted: its limits and figures are missing"
                    ));
                }
                continue;
            };
            let dir = mount.join(parent).join(name);
            if !self.dirs.contains(&dir) {
                let parent_dir = mount.join(parent);
                std::fs::create_dir_all(&parent_dir)
                    .with_context(|| format!("cannot create {}", parent_dir.display()))?;
                if controller == "cpuset" {
                    inherit_cpuset(&mount, &parent_dir)?;
                }
                std::fs::create_dir(&dir)
                    .or_else(|e| if dir.exists() { Ok(()) } else { Err(e) })
                    .with_context(|| format!("cannot create {}", dir.display()))?;
                if controller == "cpuset" {
                    inherit_cpuset(&parent_dir, &dir)?;
                }
                self.dirs.push(dir.clone());
            }
            match controller {
                "cpu" => self.cpu = Some(dir),
                "cpuacct" => self.cpuacct = Some(dir),
                "memory" => self.memory = Some(dir),
                "cpuset" => self.cpuset = Some(dir),
                "pids" => self.pids = Some(dir),
                _ => self.freezer = Some(dir),
            }
        }
        if let (Some(cpus), Some(dir)) = (limits.cpus, &self.cpu) {
            write(&dir.join("cpu.cfs_period_us"), &PERIOD_US.to_string())?;
            write(&dir.join("cpu.cfs_quota_us"), &((cpus * PERIOD_US as f64).round() as u64).to_string())?;
        }
        if let (Some(bytes), Some(dir)) = (limits.memory_bytes, &self.memory) {
            write(&dir.join("memory.limit_in_bytes"), &bytes.to_string())?;
            // No swap: cap memory+swap at the same value where the kernel accounts swap.
            let memsw = dir.join("memory.memsw.limit_in_bytes");
            if memsw.exists() {
                write(&memsw, &bytes.to_string())?;
            }
            let _ = write(&dir.join("memory.swappiness"), "0");
        }
        if let (Some(set), Some(dir)) = (&limits.cpuset, &self.cpuset) {
            write(&dir.join("cpuset.cpus"), set)?;
        }
        if let Some(dir) = &self.pids {
            write(&dir.join("pids.max"), &limits.pids_max().to_string())?;
        }
        Ok(())
    }

    /// Freezes the group and waits (bounded) until the kernel says it is frozen.
    fn freeze(dir: &Path) -> bool {
        if write(&dir.join("freezer.state"), "FROZEN").is_err() {
            return false;
        }
        let state = || std::fs::read_to_string(dir.join("freezer.state")).unwrap_or_default();
        crate::poll::until(FREEZE_WAIT, Duration::from_millis(1), || (state().trim() == "FROZEN").then_some(()))
            .is_some()
    }
}

/// The hierarchies a group is made in, in this order.
const CONTROLLERS: [&str; 6] = ["cpu", "cpuacct", "memory", "cpuset", "pids", "freezer"];
/// How long a group may take to freeze (a process in an uninterruptible wait delays it).
const FREEZE_WAIT: Duration = Duration::from_secs(2);

/// A new cpuset group starts with empty cpus and mems: copy them from its parent so processes may join.
fn inherit_cpuset(from: &Path, to: &Path) -> Result<()> {
    for f in ["cpuset.cpus", "cpuset.mems"] {
        let current = std::fs::read_to_string(to.join(f)).unwrap_or_default();
        if current.trim().is_empty() {
            let v = std::fs::read_to_string(from.join(f))
                .with_context(|| format!("cannot read {}", from.join(f).display()))?;
            write(&to.join(f), v.trim())?;
        }
    }
    Ok(())
}

impl CgroupBackend for CgroupV1 {
    fn version(&self) -> &'static str {
        "v1"
    }

    fn procs_files(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|d| d.join("cgroup.procs")).collect()
    }

    fn pids(&self) -> Vec<i32> {
        self.dirs.first().map(|d| read_pids(&d.join("cgroup.procs"))).unwrap_or_default()
    }

    fn counters(&self) -> Counters {
        let mem = self.memory.as_deref();
        Counters {
            cpu_ns: self.cpuacct.as_ref().and_then(|d| read_u64(&d.join("cpuacct.usage"))),
            mem_bytes: mem.and_then(|d| read_u64(&d.join("memory.usage_in_bytes"))),
            mem_peak_bytes: mem.and_then(|d| read_u64(&d.join("memory.max_usage_in_bytes"))),
            throttled_ns: self.cpu.as_ref().and_then(|d| read_keyed(&d.join("cpu.stat"), "throttled_time")),
            oom_kills: mem.and_then(|d| read_keyed(&d.join("memory.oom_control"), "oom_kill")),
            pids_refused: self.pids.as_ref().and_then(|d| read_keyed(&d.join("pids.events"), "max")),
        }
    }

    fn reset_peak(&self) -> bool {
        self.memory.as_ref().is_some_and(|d| write(&d.join("memory.max_usage_in_bytes"), "0").is_ok())
    }

    fn dirs(&self) -> Vec<PathBuf> {
        self.dirs.clone()
    }

    fn pin(&self, set: &str) -> Result<()> {
        self.cpuset.as_ref().map_or(Ok(()), |dir| write(&dir.join("cpuset.cpus"), set))
    }

    fn applied(&self) -> Applied {
        let read = |d: &Option<PathBuf>, f: &str| d.as_ref().and_then(|d| std::fs::read_to_string(d.join(f)).ok());
        let quota = read(&self.cpu, "cpu.cfs_quota_us").and_then(|t| t.trim().parse::<i64>().ok());
        let period = read(&self.cpu, "cpu.cfs_period_us").and_then(|t| t.trim().parse::<i64>().ok());
        let cpus = match (quota, period) {
            (Some(q), Some(p)) if q > 0 && p > 0 => Some(q as f64 / p as f64),
            _ => None,
        };
        // "No limit" reads as a huge page-rounded number.
        let memory_bytes =
            self.memory.as_ref().and_then(|d| read_u64(&d.join("memory.limit_in_bytes"))).filter(|b| *b < (1u64 << 62));
        let cpuset = read(&self.cpuset, "cpuset.cpus").map(|t| t.trim().to_string()).filter(|t| !t.is_empty());
        // "max": no limit.
        let pids = self.pids.as_ref().and_then(|d| read_u64(&d.join("pids.max")));
        Applied { cpus, memory_bytes, cpuset, pids }
    }

    fn kill_whole(&self) -> bool {
        let Some(dir) = &self.freezer else { return false };
        // Frozen, nothing in the group can fork between the read of its processes and their kill; each
        // dies as the group thaws.
        let frozen = Self::freeze(dir);
        if frozen {
            super::process::signal_pids(&read_pids(&dir.join("cgroup.procs")), libc::SIGKILL);
        }
        let _ = write(&dir.join("freezer.state"), "THAWED");
        frozen
    }

    fn remove(&self) -> Result<()> {
        let mut first_err = None;
        for d in self.dirs.iter().rev() {
            if let Err(e) = rmdir_retry(d) {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}

//! cgroup v2: one folder in the unified hierarchy. Controllers are enabled down the path from the mount;
//! where one is missing (as on this project's machines, whose v2 mount has none) its limits are skipped
//! with a warning and the figures it would give are left empty, while CPU time (always in `cpu.stat`)
//! is still read.
use super::cgroup::{
    read_keyed, read_pids, read_u64, rmdir_retry, v2_controllers, write, Applied, CgroupBackend, Counters, Limits,
};
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

pub struct CgroupV2 {
    dir: PathBuf,
    created_parent: Option<PathBuf>,
}

const PERIOD_US: u64 = 100_000;

impl CgroupV2 {
    pub fn create(
        mount: &Path,
        parent: &str,
        name: &str,
        limits: &Limits,
        warnings: &mut Vec<String>,
    ) -> Result<CgroupV2> {
        let parent_dir = mount.join(parent);
        let created_parent = (!parent_dir.exists()).then(|| parent_dir.clone());
        std::fs::create_dir_all(&parent_dir).with_context(|| format!("cannot create {}", parent_dir.display()))?;
        let available = v2_controllers(mount);
        let wanted: Vec<&str> =
            ["cpu", "memory", "cpuset", "pids"].into_iter().filter(|c| available.iter().any(|a| a == c)).collect();
        // Delegate the controllers to our parent folder, then to the group itself.
        for d in [mount, parent_dir.as_path()] {
            let line: Vec<String> = wanted.iter().map(|c| format!("+{c}")).collect();
            if !line.is_empty() {
                if let Err(e) = write(&d.join("cgroup.subtree_control"), &line.join(" ")) {
                    warnings.push(format!("cgroup v2: cannot enable controllers in {}: {e}", d.display()));
                }
            }
        }
        let dir = parent_dir.join(name);
        std::fs::create_dir(&dir)
            .or_else(|e| if dir.exists() { Ok(()) } else { Err(e) })
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let g = CgroupV2 { dir, created_parent };
        if let Err(e) = g.apply(limits, warnings) {
            let _ = g.remove();
            return Err(e);
        }
        Ok(g)
    }

    /// The unified group a running process is in (the `0::` line of /proc/<pid>/cgroup), to read and not
    /// to manage: a container's, which its engine made and removes.
    pub fn of_process(pid: i32) -> Option<CgroupV2> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
        let path = text.lines().find_map(|l| l.strip_prefix("0::"))?;
        let dir = super::cgroup::v2_mount()?.join(path.trim_start_matches('/'));
        dir.is_dir().then_some(CgroupV2 { dir, created_parent: None })
    }

    fn apply(&self, limits: &Limits, warnings: &mut Vec<String>) -> Result<()> {
        let has = |f: &str| self.dir.join(f).exists();
        if let Some(cpus) = limits.cpus {
            if has("cpu.max") {
                write(&self.dir.join("cpu.max"), &format!("{} {PERIOD_US}", (cpus * PERIOD_US as f64).round() as u64))?;
            } else {
                warnings.push("cgroup v2 has no cpu controller here: CPU quota NOT applied".into());
            }
        }
        if let Some(bytes) = limits.memory_bytes {
            if has("memory.max") {
                write(&self.dir.join("memory.max"), &bytes.to_string())?;
                if has("memory.swap.max") {
                    write(&self.dir.join("memory.swap.max"), "0")?;
                }
            } else {
                warnings.push("cgroup v2 has no memory controller here: memory cap NOT applied".into());
            }
        }
        if let Some(set) = &limits.cpuset {
            if has("cpuset.cpus") {
                write(&self.dir.join("cpuset.cpus"), set)?;
            } else {
                warnings.push("cgroup v2 has no cpuset controller here: CPU pinning NOT applied".into());
            }
        }
        if has("pids.max") {
            write(&self.dir.join("pids.max"), &limits.pids_max().to_string())?;
        } else {
            warnings.push("cgroup v2 has no pids controller here: process limit NOT applied".into());
        }
        Ok(())
    }
}

impl CgroupBackend for CgroupV2 {
    fn version(&self) -> &'static str {
        "v2"
    }

    fn procs_files(&self) -> Vec<PathBuf> {
        vec![self.dir.join("cgroup.procs")]
    }

    fn pids(&self) -> Vec<i32> {
        read_pids(&self.dir.join("cgroup.procs"))
    }

    fn counters(&self) -> Counters {
        let stat = self.dir.join("cpu.stat");
        Counters {
            cpu_ns: read_keyed(&stat, "usage_usec").map(|us| us * 1000),
            mem_bytes: read_u64(&self.dir.join("memory.current")),
            mem_peak_bytes: read_u64(&self.dir.join("memory.peak")),
            throttled_ns: read_keyed(&stat, "throttled_usec").map(|us| us * 1000),
            oom_kills: read_keyed(&self.dir.join("memory.events"), "oom_kill"),
            pids_refused: read_keyed(&self.dir.join("pids.events"), "max"),
        }
    }

    fn reset_peak(&self) -> bool {
        // Since Linux 6.12 a write to memory.peak restarts the mark only for the writer's open file, not
        // for later readers: per-step peaks therefore come from the sampler's own maximum on v2.
        false
    }

    fn dirs(&self) -> Vec<PathBuf> {
        vec![self.dir.clone()]
    }

    fn pin(&self, set: &str) -> Result<()> {
        let file = self.dir.join("cpuset.cpus");
        if file.exists() {
            write(&file, set)?;
        }
        Ok(())
    }

    fn applied(&self) -> Applied {
        let read = |f: &str| std::fs::read_to_string(self.dir.join(f)).ok().map(|t| t.trim().to_string());
        let cpus = read("cpu.max").and_then(|t| {
            let (q, p) = t.split_once(' ')?;
            Some(q.parse::<f64>().ok()? / p.parse::<f64>().ok()?)
        });
        let memory_bytes = read("memory.max").and_then(|t| t.parse().ok());
        // Without the cpuset controller the file is missing; an empty one means "the parent's".
        let cpuset = read("cpuset.cpus").filter(|t| !t.is_empty());
        // "max": no limit.
        let pids = read("pids.max").and_then(|t| t.parse().ok());
        Applied { cpus, memory_bytes, cpuset, pids }
    }

    fn kill_whole(&self) -> bool {
        // Since Linux 5.14: the kernel kills every process of the group, and any it forks meanwhile.
        let file = self.dir.join("cgroup.kill");
        file.exists() && write(&file, "1").is_ok()
    }

    fn remove(&self) -> Result<()> {
        rmdir_retry(&self.dir)?;
        if let Some(p) = &self.created_parent {
            let _ = std::fs::remove_dir(p);
        }
        Ok(())
    }
}

//! Facts about the machine a session ran on, stored with it so a reader knows what was measured where.
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostFacts {
    pub host_name: String,
    pub cpu_model: String,
    pub cpu_cores: u32,
    pub memory_mib: f64,
    pub kernel: String,
    /// Whether svcbench there can hold a service to a CPU quota and a memory cap (a cgroup hierarchy with
    /// those controllers); None from an svcbench too old to say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<bool>,
}

impl HostFacts {
    /// One line for the report: `bench2: Intel Xeon (2 cores), 24,000 MiB, Linux 6.1`.
    pub fn describe(&self) -> String {
        format!(
            "{}: {} ({} cores), {:.0} MiB, {}",
            self.host_name, self.cpu_model, self.cpu_cores, self.memory_mib, self.kernel
        )
    }
}

/// A machine other than svcbench's own that took part in a session (a generator host reached over ssh):
/// where, and its facts as svcbench there read them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OtherHost {
    pub role: String,
    pub place: String,
    pub facts: HostFacts,
}

pub fn facts() -> HostFacts {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let cpu_cores = cpuinfo.lines().filter(|l| l.starts_with("processor")).count() as u32;
    let memory_mib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| t.lines().find(|l| l.starts_with("MemTotal:")).map(String::from))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|k| k.parse::<f64>().ok()))
        .map(|kib| kib / 1024.0)
        .unwrap_or(0.0);
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default().trim().to_string();
    HostFacts {
        host_name: read("/proc/sys/kernel/hostname"),
        cpu_model,
        cpu_cores,
        memory_mib,
        kernel: format!("{} {}", read("/proc/sys/kernel/ostype"), read("/proc/sys/kernel/osrelease")),
        limits: Some(crate::sandbox::cgroup::limits_applicable()),
    }
}

//! Facts about the machine a session ran on, stored with it so a reader knows what was measured where.
use serde::Serialize;

#[derive(Debug, Clone, Default, Serialize)]
pub struct HostFacts {
    pub host_name: String,
    pub cpu_model: String,
    pub cpu_cores: u32,
    pub memory_mib: f64,
    pub kernel: String,
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
    }
}

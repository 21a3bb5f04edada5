//! Quiet CPUs: before a session and before each run, svcbench looks at the CPUs it will measure on for a
//! moment, and warns — naming the busiest processes that are not its own — when something else uses them
//! (a compiler daemon left by a build, another benchmark, an IDE). The warning is stored with the figures.
use std::collections::HashMap;
use std::time::Duration;

/// A CPU busier than this while svcbench is idle on it is not quiet.
pub const BUSY: f64 = 0.15;

/// busy and total ticks per CPU, from /proc/stat.
fn cpu_ticks() -> HashMap<usize, (u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let mut out = HashMap::new();
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let Some(cpu) = f.next().and_then(|n| n.strip_prefix("cpu")).and_then(|n| n.parse::<usize>().ok()) else {
            continue;
        };
        let v: Vec<u64> = f.filter_map(|x| x.parse().ok()).collect();
        let total: u64 = v.iter().take(8).sum();
        // idle and iowait are not busy.
        let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
        out.insert(cpu, (total - idle, total));
    }
    out
}

/// CPU ticks used so far and the command name of every process, with the CPU it last ran on.
fn process_ticks() -> HashMap<i32, (u64, usize, String)> {
    let mut out = HashMap::new();
    let Ok(rd) = std::fs::read_dir("/proc") else { return out };
    for e in rd.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else { continue };
        let Ok(text) = std::fs::read_to_string(e.path().join("stat")) else { continue };
        let (Some(open), Some(close)) = (text.find('('), text.rfind(')')) else { continue };
        let comm = text[open + 1..close].to_string();
        let f: Vec<&str> = text[close + 2..].split_whitespace().collect();
        let num = |i: usize| f.get(i).and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
        // proc(5) fields minus 3: utime=11, stime=12, processor=36.
        out.insert(pid, (num(11) + num(12), num(36) as usize, comm));
    }
    out
}

/// Looks at `cpus` for `window`; one sentence when some of them were busy, naming the busiest foreign
/// processes, None when they were quiet.
pub fn check(cpus: &[usize], window: Duration) -> Option<String> {
    let (c0, p0) = (cpu_ticks(), process_ticks());
    std::thread::sleep(window);
    let (c1, p1) = (cpu_ticks(), process_ticks());
    let busy: Vec<(usize, f64)> = cpus
        .iter()
        .filter_map(|c| {
            let ((b0, t0), (b1, t1)) = (c0.get(c)?, c1.get(c)?);
            let share = (b1 - b0) as f64 / (t1 - t0).max(1) as f64;
            (share > BUSY).then_some((*c, share))
        })
        .collect();
    if busy.is_empty() {
        return None;
    }
    let me = std::process::id() as i32;
    let secs = window.as_secs_f64() * crate::sandbox::procfs::ticks_per_second();
    let mut users: Vec<(f64, i32, String)> = p1
        .iter()
        .filter(|(pid, (_, cpu, _))| **pid != me && cpus.contains(cpu))
        .filter_map(|(pid, (t1, _, comm))| {
            let t0 = p0.get(pid).map_or(0, |p| p.0);
            let share = t1.saturating_sub(t0) as f64 / secs;
            (share >= 0.02).then(|| (share, *pid, comm.clone()))
        })
        .collect();
    users.sort_by(|a, b| b.0.total_cmp(&a.0));
    let cpus_text: Vec<String> = busy.iter().map(|(c, s)| format!("CPU {c} {:.0} % busy", s * 100.0)).collect();
    let who: Vec<String> =
        users.iter().take(3).map(|(s, pid, comm)| format!("{comm} (pid {pid}, {:.0} %)", s * 100.0)).collect();
    Some(format!(
        "the measured CPUs are not quiet ({}){}: figures may be slower and noisier than this machine can do",
        cpus_text.join(", "),
        if who.is_empty() { String::new() } else { format!("; busiest: {}", who.join(", ")) }
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_loop_on_a_measured_cpu_is_named() {
        let cpu = *crate::sandbox::procfs::allowed_cpus().last().unwrap();
        let mut hog = std::process::Command::new("taskset")
            .args(["-c", &cpu.to_string(), "sh", "-c", "while :; do :; done"])
            .spawn()
            .expect("taskset (util-linux) is needed");
        let said = check(&[cpu], Duration::from_millis(500));
        let _ = hog.kill();
        let _ = hog.wait();
        let said = said.expect("a CPU running a busy loop is not quiet");
        assert!(said.contains(&format!("CPU {cpu}")) && said.contains("sh (pid"), "{said}");
    }
}

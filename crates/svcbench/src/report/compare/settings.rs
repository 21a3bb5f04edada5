//! Whether BASE and NEW were measured alike: per pair of compared services, the settings their counted runs
//! were measured with, as the store holds them per session and run (scenario, profile and its steps as run,
//! limits, the load generator's CPUs, network and agents, the machine-speed tolerance). Where they differ a
//! difference in figures may be the measurement's rather than the code's: `compare` warns, and `--fail-on`
//! does not judge unless told to.
use crate::report::data::{Dataset, Run, Session};
use crate::report::table::{num, num_fractional};
use serde::Serialize;

/// One setting BASE and NEW were measured with differently.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Difference {
    /// `scenario`, `profile`, `steps`, `limits`, `load generator` or `probe tolerance`.
    pub setting: &'static str,
    pub base: Vec<String>,
    pub new: Vec<String>,
    /// The compared services it concerns (every compared one when it concerns all).
    pub services: Vec<String>,
}

/// A setting of one run, as a value that two runs measured alike share (None: not known in this store).
struct Setting {
    key: &'static str,
    value: fn(&Session, &Run) -> Option<String>,
}

fn mib(m: f64) -> String {
    if m >= 1024.0 && m % 1024.0 == 0.0 {
        format!("{}G", m / 1024.0)
    } else {
        format!("{}M", num(m))
    }
}

/// The limits a run was measured under: asked with its cell (a study's limits axis), else the session's; its
/// CPU set as read back from its cgroup.
fn limits(s: &Session, r: &Run) -> Option<String> {
    let (cpus, memory) = match r.cell {
        Some(_) => (r.asked_cpus, r.asked_memory_mib),
        None => (s.limit_cpus, s.limit_memory_mib),
    };
    let cpus = cpus.map_or("none".into(), |c| format!("{c}"));
    let memory = memory.map_or("none".into(), mib);
    let cpuset = r.applied_cpuset.as_ref().or(s.service_cpuset.as_ref()).map(|c| format!(" cpuset={c}"));
    Some(format!("cpus={cpus} memory={memory}{}", cpuset.unwrap_or_default()))
}

/// Dotted IPv4 addresses masked: a network's subnet is picked free at each session, and says nothing of how
/// the load was driven.
fn mask_addresses(s: &str) -> String {
    let mut out = String::new();
    let mut token = String::new();
    let flush = |token: &mut String, out: &mut String| {
        let parts: Vec<&str> = token.split('.').collect();
        if parts.len() == 4 && parts.iter().all(|p| !p.is_empty() && p.len() <= 3) {
            out.push_str("ADDR");
        } else {
            out.push_str(token);
        }
        token.clear();
    };
    for c in s.chars() {
        if c.is_ascii_digit() || c == '.' {
            token.push(c);
        } else {
            flush(&mut token, &mut out);
            out.push(c);
        }
    }
    flush(&mut token, &mut out);
    out
}

/// How the load was driven: the generator's CPUs, the network (loopback, namespaces and links, a hosts file)
/// with the number of agents, and the other machines' roles and places.
fn generator(s: &Session, _: &Run) -> Option<String> {
    let mut v = format!("generator CPUs {}", s.loadgen_cpuset.as_deref().unwrap_or("unknown"));
    v.push_str(&format!("; {}", s.network.as_deref().map_or("loopback".into(), mask_addresses)));
    for h in &s.other_hosts {
        v.push_str(&format!("; {} {}", h.role, h.place));
    }
    Some(v)
}

const SETTINGS: &[Setting] = &[
    Setting { key: "scenario", value: |s, _| Some(s.scenario.clone()) },
    Setting { key: "profile", value: |s, _| Some(s.profile.clone()) },
    Setting { key: "limits", value: limits },
    Setting { key: "load generator", value: generator },
    Setting {
        key: "probe tolerance",
        value: |s, _| s.probe_tolerance.map(|t| format!("{} %", num((t * 1e4).round() / 100.0))),
    },
];

/// The runs a side's figures come from: its counted runs, or all of them where none counts.
fn runs_of(d: &Dataset, g: usize) -> Vec<&Run> {
    let counted: Vec<&Run> = d.counted_runs(g).collect();
    if counted.is_empty() {
        d.group_runs(g).collect()
    } else {
        counted
    }
}

/// The distinct values of one setting over a side's runs, sorted.
fn values(d: &Dataset, runs: &[&Run], setting: &Setting) -> Vec<String> {
    let mut v: Vec<String> = runs
        .iter()
        .filter_map(|r| {
            let s = d.sessions.iter().find(|s| s.id == r.session_id)?;
            (setting.value)(s, r)
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

/// Each step position of a side's completed runs (a step the service ended is cut short): its load and mix,
/// and its measured length (median over the runs).
fn steps(runs: &[&Run]) -> Vec<(i64, String, f64)> {
    let mut by_seq: Vec<(i64, String, Vec<f64>)> = Vec::new();
    for r in runs.iter().filter(|r| r.counts()) {
        for s in &r.steps {
            let what = format!("{} mix={}", s.label, s.mix);
            match by_seq.iter_mut().find(|(seq, w, _)| *seq == s.seq && *w == what) {
                Some(e) => e.2.push(s.duration_s),
                None => by_seq.push((s.seq, what, vec![s.duration_s])),
            }
        }
    }
    by_seq.sort_by_key(|e| e.0);
    by_seq.into_iter().filter_map(|(seq, what, d)| Some((seq, what, crate::figures::median(d)?))).collect()
}

/// The first step position both sides ran with another load, mix or length (a length more than 10 % apart:
/// `--step-duration`), as each side ran it.
fn step_difference(base: &[&Run], new: &[&Run]) -> Option<(String, String)> {
    let (b, n) = (steps(base), steps(new));
    let show = |seq: i64, what: &str, secs: f64| format!("#{seq} {what} for {} s", num_fractional(secs));
    for (seq, bw, bd) in &b {
        for (_, nw, nd) in n.iter().filter(|(s, ..)| s == seq) {
            if bw != nw || (bd / nd).max(nd / bd) > 1.1 {
                return Some((show(*seq, bw, *bd), show(*seq, nw, *nd)));
            }
        }
    }
    None
}

/// The settings BASE and NEW differ in, over the compared pairs of groups (`name`, BASE's, NEW's), each with
/// the services it concerns.
pub fn differences(base: &Dataset, new: &Dataset, pairs: &[(String, usize, usize)]) -> Vec<Difference> {
    let mut out: Vec<Difference> = Vec::new();
    let mut add = |setting: &'static str, b: Vec<String>, n: Vec<String>, service: &str| match out
        .iter_mut()
        .find(|d| d.setting == setting && d.base == b && d.new == n)
    {
        Some(d) => d.services.push(service.to_string()),
        None => out.push(Difference { setting, base: b, new: n, services: vec![service.to_string()] }),
    };
    for (name, bg, ng) in pairs {
        let (br, nr) = (runs_of(base, *bg), runs_of(new, *ng));
        if br.is_empty() || nr.is_empty() {
            continue;
        }
        let mut profiles_differ = false;
        for setting in SETTINGS {
            let (b, n) = (values(base, &br, setting), values(new, &nr, setting));
            if !b.is_empty() && !n.is_empty() && b != n {
                profiles_differ |= setting.key == "profile";
                add(setting.key, b, n, name);
            }
        }
        // The same profile run with other steps (--step-duration, --mix); another profile says it already.
        if !profiles_differ {
            if let Some((b, n)) = step_difference(&br, &nr) {
                add("steps", vec![b], vec![n], name);
            }
        }
    }
    out
}

/// The warning of one difference; `all` when it concerns every compared service.
pub fn warning(d: &Difference, all: bool) -> String {
    let (b, n) = (d.base.join(", "), d.new.join(", "));
    let services = if all { String::new() } else { format!(" for {}", d.services.join(", ")) };
    let sides = format!("(BASE: {b}; NEW: {n}){services}");
    match d.setting {
        "scenario" => {
            format!("BASE and NEW ran different scenarios {sides}: their requests differ, so do their figures.")
        }
        "profile" => format!(
            "BASE and NEW were measured with different profiles {sides}: other load steps give other figures, so a \
             difference may be the profile's, not the code's."
        ),
        "steps" => format!(
            "BASE and NEW ran their profile's steps differently {sides} (--step-duration or --mix): a difference \
             may be the steps', not the code's."
        ),
        "limits" => {
            format!("BASE and NEW were measured under different limits {sides}: a difference may be the limits', not the code's.")
        }
        "load generator" => format!(
            "BASE and NEW drove the load differently {sides}: a difference may be the generator's, not the code's."
        ),
        _ => format!(
            "BASE and NEW left steps out at different machine-speed drifts (--probe-tolerance) {sides}: they quote \
             different steps."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_network_is_described_without_its_addresses() {
        assert_eq!(
            mask_addresses("namespaces (client 10.213.7.2, service 10.213.7.3); links: none"),
            "namespaces (client ADDR, service ADDR); links: none"
        );
        assert_eq!(mask_addresses("loopback; 2 generator agents"), "loopback; 2 generator agents");
        assert_eq!(mask_addresses("delay:2.5ms"), "delay:2.5ms");
    }
}

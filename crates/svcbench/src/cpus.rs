//! CPU sets: parsing "0-3,6", the default split that keeps the service away from the load generator
//! and dependencies (on 2 cores: service on CPU 1, the rest on CPU 0), and the split a session asks for,
//! checked before any work.
use anyhow::{bail, Result};

/// Parses "0-2,5" (the load generator's parser), sorted and without repeats.
pub fn parse(set: &str) -> Result<Vec<usize>> {
    let mut out = loadgen::limits::parse_cpu_list(set)?;
    if out.is_empty() {
        bail!("CPU set {set:?} is empty; write e.g. \"1\" or \"2-3\"");
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

pub fn count(set: &str) -> usize {
    parse(set).map(|v| v.len()).unwrap_or(1)
}

pub fn format(cpus: &[usize]) -> String {
    cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",")
}

/// Splits the CPUs this process may use: the service gets the upper half, the generator and dependencies
/// the lower half. With one CPU both share it (and the report says the client may interfere).
pub fn default_split(allowed: &[usize]) -> (Vec<usize>, Vec<usize>) {
    if allowed.len() < 2 {
        return (allowed.to_vec(), allowed.to_vec());
    }
    let half = allowed.len() / 2;
    (allowed[half..].to_vec(), allowed[..half].to_vec())
}

/// Resolves the CPU split: the service's cpuset (from --cpuset or the default split) and the generator's.
/// Refuses, before any work, CPUs that do not exist here, a generator sharing the service's CPUs when the
/// user chose either set, a quota the service's CPUs could never reach and one below the kernel's smallest.
/// `cpuset` is the service's (normalised in place), `quota` its CPU quota.
pub fn cpu_split(cpuset: &mut Option<String>, quota: Option<f64>, loadgen_cpuset: Option<&str>) -> Result<Vec<usize>> {
    split_cpus(cpuset, quota, loadgen_cpuset, &allowed(), &CpuKeys::flags())
}

/// What the CPU settings are called where they were given, for the refusals to name: the command line's
/// flags, or a study file's keys.
#[derive(Debug, Clone)]
pub struct CpuKeys {
    pub cpus: String,
    pub cpuset: String,
    pub loadgen_cpuset: String,
}

impl CpuKeys {
    /// `--cpus`, `--cpuset`, `--loadgen-cpuset`.
    pub fn flags() -> CpuKeys {
        CpuKeys { cpus: "--cpus".into(), cpuset: "--cpuset".into(), loadgen_cpuset: "--loadgen-cpuset".into() }
    }

    /// A study file's keys of the table `table` (`limits`, `quick.limits`): `[limits] cpus`, ….
    pub fn table(table: &str) -> CpuKeys {
        let key = |k: &str| format!("[{table}] {k}");
        CpuKeys { cpus: key("cpus"), cpuset: key("cpuset"), loadgen_cpuset: key("loadgen_cpuset") }
    }
}

/// The smallest CPU quota a cgroup holds: the kernel refuses a CFS quota below 1 ms per period, and both
/// cgroup backends use a 100 ms period (sandbox/cgroup_v1.rs, cgroup_v2.rs).
pub const MIN_QUOTA: f64 = 0.01;

/// Refuses a quota the kernel would not take, before any work: written to the cgroup, it would fail and
/// the session would be refused later as a machine that cannot hold limits at all.
pub fn check_quota_floor(quota: f64, keys: &CpuKeys) -> Result<()> {
    if quota < MIN_QUOTA {
        bail!(
            "{} {quota} is below {MIN_QUOTA}, the smallest CPU quota the kernel holds (1 ms of every 100 ms); raise {} \
             to {MIN_QUOTA} or more",
            keys.cpus,
            keys.cpus
        );
    }
    Ok(())
}

/// The CPUs this process may run on.
pub fn allowed() -> Vec<usize> {
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return (0..std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)).collect();
        }
        (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect()
    }
}

/// [`cpu_split`] on the CPUs `allowed`, its refusals naming the settings as `keys` says (a study checks its
/// own so before it plans, as its session will).
pub fn split_cpus(
    cpuset: &mut Option<String>,
    quota: Option<f64>,
    loadgen_cpuset: Option<&str>,
    allowed: &[usize],
    keys: &CpuKeys,
) -> Result<Vec<usize>> {
    let (svc_default, gen_default) = default_split(allowed);
    let all = format(allowed);
    let chosen = cpuset.is_some() || loadgen_cpuset.is_some();
    let check = |option: &str, set: &[usize]| -> Result<()> {
        if let Some(c) = set.iter().find(|c| !allowed.contains(c)) {
            bail!(
                "{option} names CPU {c}, which this machine does not have or does not allow svcbench (allowed: {all})"
            );
        }
        Ok(())
    };
    let svc = match cpuset.as_deref() {
        Some(s) => parse(s)?,
        None => svc_default,
    };
    check(&keys.cpuset, &svc)?;
    *cpuset = Some(format(&svc));
    let gen = match loadgen_cpuset {
        Some(s) => parse(s)?,
        None => {
            let rest: Vec<usize> = allowed.iter().copied().filter(|c| !svc.contains(c)).collect();
            if rest.is_empty() && chosen {
                bail!(
                    "{} {} takes every CPU here ({all}), leaving none for the load generator: give the service \
                     fewer CPUs",
                    keys.cpuset,
                    format(&svc)
                );
            }
            if rest.is_empty() {
                gen_default
            } else {
                rest
            }
        }
    };
    check(&keys.loadgen_cpuset, &gen)?;
    if chosen {
        if let Some(c) = gen.iter().find(|c| svc.contains(c)) {
            bail!(
                "{} {} and {} {} share CPU {c}: the generator would take the service's CPU time; give them \
                 disjoint sets",
                keys.cpuset,
                format(&svc),
                keys.loadgen_cpuset,
                format(&gen)
            );
        }
    }
    if let Some(q) = quota {
        check_quota_floor(q, keys)?;
        if q > svc.len() as f64 {
            bail!(
                "{} {q} is more than the {} CPU(s) of the service's cpuset ({}): the quota could never be reached; \
                 lower {} or widen {}",
                keys.cpus,
                svc.len(),
                format(&svc),
                keys.cpus,
                keys.cpuset
            );
        }
    }
    Ok(gen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_splits() {
        assert_eq!(parse("0-2,5").unwrap(), vec![0, 1, 2, 5]);
        assert!(parse("3-1").is_err());
        assert!(parse("x").unwrap_err().to_string().contains("'x'"));
        assert_eq!(default_split(&[0, 1]), (vec![1], vec![0]));
        assert_eq!(default_split(&[0, 1, 2, 3]), (vec![2, 3], vec![0, 1]));
    }

    fn split(cpuset: Option<&str>, cpus: Option<f64>, gen: Option<&str>) -> Result<(String, Vec<usize>)> {
        let mut set = cpuset.map(String::from);
        let g = split_cpus(&mut set, cpus, gen, &[0, 1], &CpuKeys::flags())?;
        Ok((set.unwrap(), g))
    }

    #[test]
    fn cpu_sets_are_checked_before_any_work() {
        assert_eq!(split(None, None, None).unwrap(), ("1".into(), vec![0]));
        assert_eq!(split(Some("0"), Some(1.0), None).unwrap(), ("0".into(), vec![1]));
        let err = |c, q, g| split(c, q, g).unwrap_err().to_string();
        assert!(err(Some("7"), None, None).contains("CPU 7"));
        assert!(err(None, None, Some("5")).contains("--loadgen-cpuset names CPU 5"));
        assert!(err(Some("0-1"), None, None).contains("leaving none for the load generator"));
        assert!(err(Some("1"), None, Some("0-1")).contains("share CPU 1"));
        assert!(err(Some("1"), Some(999.0), None).contains("--cpus 999 is more than the 1 CPU(s)"));
        assert!(err(Some("1"), Some(1.5), None).contains("could never be reached"));
        assert_eq!(
            err(None, Some(0.001), None),
            "--cpus 0.001 is below 0.01, the smallest CPU quota the kernel holds (1 ms of every 100 ms); raise \
             --cpus to 0.01 or more"
        );
        assert!(split(None, Some(0.01), None).is_ok());
    }
}

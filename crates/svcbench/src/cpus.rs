//! CPU sets: parsing "0-3,6", and the default split that keeps the service away from the load generator
//! and dependencies (on 2 cores: service on CPU 1, the rest on CPU 0).
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
}

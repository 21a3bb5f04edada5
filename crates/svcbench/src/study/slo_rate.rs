//! Whether a study's profile can reach its SLO's rate at all. A profile whose every step offers a rate
//! below `slo.at_rps` has no step the sizing could judge: every cell would read "not reached", the
//! service's failure, when the study asked for a load it never drives.
use super::file::Slo;
use crate::profile::Profile;
use anyhow::{bail, Result};
use loadgen::{LoadAxis, LoadModel};

/// Refuses, naming the study file, an SLO rate above every rate its profile offers. A closed-model step
/// answers as fast as the service goes, so a profile with one may reach any rate.
pub fn check_reachable(study: &str, slo: &Slo, profile: &Profile) -> Result<()> {
    let offered: Option<Vec<f64>> =
        profile.steps.iter().map(|s| (s.load.axis() == LoadAxis::OfferedRate).then(|| s.load.load())).collect();
    let Some(highest) = offered.and_then(|rates| rates.into_iter().reduce(f64::max)) else { return Ok(()) };
    if !slo.reached_by_offered(highest) {
        bail!(
            "{study}: slo.at_rps {} is above every rate profile `{}` offers (at most {} req/s; a step whose rate \
             ramps is judged at its start), so no run could be judged; lower slo.at_rps or use a profile with a step \
             at that rate",
            slo.at_rps,
            profile.name,
            highest
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(steps: &str) -> Profile {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("p.toml");
        std::fs::write(&f, format!("name = \"p\"\ndescription = \"d\"\n{steps}")).unwrap();
        Profile::load(&f).unwrap()
    }

    fn slo(at_rps: f64) -> Slo {
        Slo { at_rps, p99_ms: Some(10.0), success: None }
    }

    #[test]
    fn an_slo_rate_above_every_offered_rate_is_refused_naming_the_highest() {
        let open = profile("[[step]]\nrate = [500, 1000]\nduration = \"1s\"\n");
        let e = check_reachable("s.toml", &slo(5000.0), &open).unwrap_err().to_string();
        assert_eq!(
            e,
            "s.toml: slo.at_rps 5000 is above every rate profile `p` offers (at most 1000 req/s; a step whose rate \
             ramps is judged at its start), so no run could be judged; lower slo.at_rps or use a profile with a step \
             at that rate"
        );
        // The sizing takes a step within 1 % of the rate as reaching it.
        assert!(check_reachable("s.toml", &slo(1000.0), &open).is_ok());
        assert!(check_reachable("s.toml", &slo(1010.0), &open).is_ok());
        let ramp = profile("[[step]]\nramp = [100, 6000]\nduration = \"1s\"\n");
        assert!(check_reachable("s.toml", &slo(5000.0), &ramp).is_ok());
        // A closed-model step may answer any rate.
        let mixed = profile("[[step]]\nrate = 100\nduration = \"1s\"\n[[step]]\nconnections = 8\nduration = \"1s\"\n");
        assert!(check_reachable("s.toml", &slo(5000.0), &mixed).is_ok());
    }
}

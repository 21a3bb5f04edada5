//! Load profiles (`profiles/<name>.toml`): lists of load steps, each with its load model's keys (read by
//! loadgen's models: `connections`, `rate`, `rate_range`, …) and the keys every step has. Users add their
//! own files; `--profile` takes a name or a path. The bounds every profile keeps are in limits.rs.
pub mod limits;

use anyhow::{bail, Result};
use loadgen::LoadModel;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProfileFile {
    name: String,
    #[serde(default)]
    description: String,
    /// Per-request timeout; a request slower than this counts as a `request_timeout` error.
    #[serde(default)]
    request_timeout: Option<String>,
    /// Stop the run after the first step whose success ratio is below this (seed 004's rule: 0.9).
    #[serde(default)]
    stop_below_success: Option<f64>,
    step: Vec<StepFile>,
}

/// A step: the keys every step has, and its load's (the model's own, which refuses keys it does not know).
#[derive(Debug, Clone, Deserialize)]
struct StepFile {
    /// The load model's keys (`connections`, `rate`, `max_connections`, …).
    #[serde(flatten)]
    load: toml::Table,
    duration: String,
    #[serde(default = "one")]
    repeat: usize,
    #[serde(default)]
    mix: Option<String>,
    /// Delay of the scenario's mock upstream during this step (upstream scenario).
    #[serde(default)]
    upstream_delay_ms: Option<OneOrList<u64>>,
    /// Restart the service (a fresh process) before this step (seed 004's resource table).
    #[serde(default)]
    fresh_start: bool,
    /// Persistent connections (the default) or `Connection: close` on every request; a list
    /// runs the step once per value (seed 001's keep-alive round).
    #[serde(default)]
    keepalive: Option<OneOrList<bool>>,
    /// Open model: how the generator waits for a send (`timer`, or `spin`: a whole CPU per
    /// generator thread, for a lower schedule lag at low rates).
    #[serde(default)]
    pacing: Option<loadgen::Pacing>,
}

/// The keys every step has, beside its load model's.
const COMMON_STEP_KEYS: &[&str] =
    &["duration", "repeat", "mix", "upstream_delay_ms", "fresh_start", "keepalive", "pacing"];

/// "unknown key `keepalvie`: did you mean `keepalive`?" for a step key no one reads but one close to it is.
fn misspelt_key(load: &toml::Table) -> Option<String> {
    let known = loadgen::Model::step_keys();
    let key = load.keys().find(|k| !known.contains(&k.as_str()))?;
    let best = crate::toml_file::closest_key(key, known.into_iter().chain(COMMON_STEP_KEYS.iter().copied()))?;
    Some(format!("unknown key `{key}`: did you mean `{best}`?"))
}

fn one() -> usize {
    1
}

#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum OneOrList<T> {
    One(T),
    List(Vec<T>),
}

impl<T: Clone> OneOrList<T> {
    fn to_vec(&self) -> Vec<T> {
        match self {
            OneOrList::One(x) => vec![x.clone()],
            OneOrList::List(v) => v.clone(),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Step {
    pub load: loadgen::Model,
    pub duration: Duration,
    pub mix: Option<String>,
    pub upstream_delay_ms: Option<u64>,
    pub fresh_start: bool,
    pub keepalive: bool,
    pub pacing: loadgen::Pacing,
}

impl Step {
    /// The mix this step runs: its own, else the run's `--mix`, else the scenario's `default`.
    pub fn mix_name<'a>(&'a self, run_mix: Option<&'a str>) -> &'a str {
        self.mix.as_deref().or(run_mix).unwrap_or("default")
    }

    /// A short label for progress lines and the store: `c=64`, `r=200/s`, `r=100→1000/s`.
    pub fn label(&self) -> String {
        let base = self.load.label();
        let base = match (self.upstream_delay_ms, &self.mix) {
            (Some(d), _) => format!("{base} delay={d}ms"),
            (None, Some(m)) => format!("{base} mix={m}"),
            _ => base,
        };
        // Connection: close is a different load on the wire, so it is a different step.
        if self.keepalive {
            base
        } else {
            format!("{base} close")
        }
    }
}

/// The longest step a profile may hold: a day.
pub const MAX_STEP: Duration = Duration::from_secs(86_400);

#[derive(Debug, Clone)]
pub struct Profile {
    pub name: String,
    pub description: String,
    pub path: PathBuf,
    pub request_timeout: Duration,
    pub stop_below_success: Option<f64>,
    pub steps: Vec<Step>,
}

/// Default open-model connection cap: enough for a slow service to hold thousands of requests in flight.
const DEFAULT_MAX_CONNECTIONS: usize = 10_000;

impl Profile {
    /// `name_or_path`: a `.toml` path, or a name looked up in the `profiles/` folders upwards from the
    /// current folder, then among the bundled ones.
    pub fn find(name_or_path: &str) -> Result<Profile> {
        let p = Path::new(name_or_path);
        if p.extension().is_some_and(|e| e == "toml") || p.is_file() {
            return Profile::load(p);
        }
        // A `profiles/` folder of one's own (upwards from here) adds profiles; it does not hide the bundled
        // ones (`quick`, the default, among them).
        let file = format!("{name_or_path}.toml");
        let cwd = std::env::current_dir()?;
        let mut dirs: Vec<PathBuf> = cwd.ancestors().map(|a| a.join("profiles")).filter(|d| d.is_dir()).collect();
        dirs.extend(crate::paths::bundled_dir("profiles"));
        // From inside the checkout its own profiles/ is found both ways.
        let mut seen = std::collections::BTreeSet::new();
        dirs.retain(|d| seen.insert(d.canonicalize().unwrap_or_else(|_| d.clone())));
        if let Some(path) = dirs.iter().map(|d| d.join(&file)).find(|f| f.is_file()) {
            return Profile::load(&path);
        }
        let mut known: Vec<String> = dirs
            .iter()
            .flat_map(|d| crate::paths::names_in(d, |p| p.file_stem().map(|s| s.to_string_lossy().into_owned())))
            .collect();
        known.sort();
        known.dedup();
        let looked: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        bail!(
            "profile `{name_or_path}` not found in {}; known: {} (or give a profile file's path)",
            if looked.is_empty() { "any profiles/ folder".to_string() } else { looked.join(" or ") },
            known.join(", ")
        );
    }

    pub fn load(path: &Path) -> Result<Profile> {
        let f: ProfileFile = crate::toml_file::read(path)?;
        let at = |msg: String| anyhow::anyhow!("{}: {msg}", path.display());
        let mut steps = Vec::new();
        for (i, s) in f.step.iter().enumerate() {
            let n = i + 1;
            let duration = humantime::parse_duration(&s.duration)
                .map_err(|e| at(format!("step {n}: duration {:?}: {e} (write e.g. \"10s\")", s.duration)))?;
            if duration.is_zero() || duration > MAX_STEP {
                return Err(at(format!("step {n}: duration {:?} must be above 0 and at most a day", s.duration)));
            }
            misspelt_key(&s.load).map_or(Ok(()), |m| Err(at(format!("step {n}: {m}"))))?;
            let mut load = s.load.clone();
            if let Some(p) = s.pacing {
                // Read above; given to the model too, which says whether it paces its sends.
                load.insert("pacing".into(), p.name().into());
            }
            let loads = loadgen::Model::from_step(&load, DEFAULT_MAX_CONNECTIONS)
                .map_err(|e| at(format!("step {n}: {e:#}")))?;
            let delays: Vec<Option<u64>> = match &s.upstream_delay_ms {
                Some(d) => d.to_vec().into_iter().map(Some).collect(),
                None => vec![None],
            };
            let keepalives = s.keepalive.as_ref().map_or(vec![true], OneOrList::to_vec);
            limits::check_repeat(s.repeat).map_err(|e| at(format!("step {n}: {e}")))?;
            limits::check_step_count(steps.len(), &[s.repeat, loads.len(), delays.len(), keepalives.len()])
                .map_err(|e| at(format!("step {n}: {e}")))?;
            for _ in 0..s.repeat {
                for load in &loads {
                    for d in &delays {
                        for &keepalive in &keepalives {
                            steps.push(Step {
                                load: load.clone(),
                                duration,
                                mix: s.mix.clone(),
                                upstream_delay_ms: *d,
                                fresh_start: s.fresh_start,
                                keepalive,
                                pacing: s.pacing.unwrap_or_default(),
                            });
                        }
                    }
                }
            }
        }
        if steps.is_empty() {
            return Err(at("no steps; add at least one [[step]]".into()));
        }
        let request_timeout = match &f.request_timeout {
            Some(t) => humantime::parse_duration(t).map_err(|e| at(format!("request_timeout {t:?}: {e}")))?,
            None => Duration::from_secs(10),
        };
        if request_timeout.is_zero() || request_timeout > limits::MAX_REQUEST_TIMEOUT {
            return Err(at("request_timeout must be above 0 and at most an hour (e.g. \"10s\")".into()));
        }
        if let Some(x) = f.stop_below_success {
            if !(x > 0.0 && x <= 1.0) {
                return Err(at(format!(
                    "stop_below_success = {x}: a share of successful requests, above 0 and at most 1 (e.g. 0.5)"
                )));
            }
        }
        Ok(Profile {
            name: f.name,
            description: f.description,
            path: path.to_path_buf(),
            request_timeout,
            stop_below_success: f.stop_below_success,
            steps,
        })
    }

    /// `--step-duration`: the same profile with shorter (or longer) steps, e.g. a CI variant. The override
    /// meets the bound every step of a profile file meets.
    pub fn with_step_duration(mut self, d: Duration) -> Result<Profile> {
        if d.is_zero() || d > MAX_STEP {
            bail!("step duration {}: must be above 0 and at most a day", humantime::format_duration(d));
        }
        for s in &mut self.steps {
            s.duration = d;
        }
        Ok(self)
    }

    /// Every step that names no mix becomes one step per mix in `mixes`, in order.
    pub fn with_step_mixes(mut self, mixes: &[String]) -> Profile {
        self.steps = self
            .steps
            .into_iter()
            .flat_map(|s| match s.mix {
                Some(_) => vec![s],
                None => mixes.iter().map(|m| Step { mix: Some(m.clone()), ..s.clone() }).collect(),
            })
            .collect();
        self
    }

    pub fn total_duration(&self) -> Duration {
        self.steps.iter().map(|s| s.duration).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<Profile> {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("p.toml");
        std::fs::write(&p, text).unwrap();
        Profile::load(&p)
    }

    #[test]
    fn a_misspelt_step_key_is_named_with_the_key_it_likely_meant() {
        let e = load("name='t'\n[[step]]\nconections=4\nduration='1s'\n").unwrap_err().to_string();
        assert!(e.ends_with("step 1: unknown key `conections`: did you mean `connections`?"), "{e}");
        let e = load("name='t'\n[[step]]\nconnections=4\nkeepalvie=false\nduration='1s'\n").unwrap_err().to_string();
        assert!(e.ends_with("step 1: unknown key `keepalvie`: did you mean `keepalive`?"), "{e}");
        let e = load("name='t'\n[[step]]\nconnections=4\nimage='x'\nduration='1s'\n").unwrap_err().to_string();
        assert!(e.contains("step 1: unknown key `image`: a step's load is one of"), "{e}");
    }

    #[test]
    fn seed_shape_expands() {
        let p = load("name='s'\n[[step]]\nconnections=1\nduration='10s'\nrepeat=5\n[[step]]\nconnections=[2,4,8]\nduration='10s'\n").unwrap();
        assert_eq!(p.steps.len(), 8);
        assert_eq!(p.steps[5].load, loadgen::Model::closed(2));
        assert_eq!(p.total_duration(), Duration::from_secs(80));
    }

    #[test]
    fn open_steps_and_ranges() {
        let p = load(
            "name='o'\n[[step]]\nrate_range=[100,300,100]\nduration='3m'\n[[step]]\nrate='10:20'\nduration='1s'\n",
        )
        .unwrap();
        assert_eq!(p.steps.len(), 4);
        assert!(matches!(p.steps[2].load, loadgen::Model::Open(o) if o.rate.start == 300.0));
        assert!(matches!(p.steps[3].load, loadgen::Model::Open(o) if o.rate.start == 10.0 && o.rate.end == 20.0));
    }

    #[test]
    fn a_ramp_step_reads_and_plans() {
        let p = load("name='r'\n[[step]]\nramp=[1000,20000]\nduration='20s'\nmax_connections=500\n").unwrap();
        assert_eq!(p.steps.len(), 1);
        let ramp = loadgen::models::Ramp { from: 1000.0, to: 20000.0, max_connections: 500 };
        assert_eq!(p.steps[0].load, loadgen::Model::Ramp(ramp));
        assert_eq!((p.steps[0].label(), p.total_duration()), ("ramp=1000→20000/s".into(), Duration::from_secs(20)));
        let e = load("name='r'\n[[step]]\nramp=[1000]\nduration='1s'\n").unwrap_err().to_string();
        assert!(e.contains("step 1") && e.contains("[from, to]") && !e.contains('\n'), "{e}");
    }

    #[test]
    fn upstream_delays_expand_and_label() {
        let p = load("name='u'\n[[step]]\nrate=100\nupstream_delay_ms=[1000,2000]\nduration='1s'\n").unwrap();
        assert_eq!(p.steps.len(), 2);
        assert_eq!(p.steps[1].label(), "r=100/s delay=2000ms");
    }

    #[test]
    fn keepalive_lists_expand_and_pacing_is_read() {
        let p = load("name='k'\n[[step]]\nconnections=[1,2]\nkeepalive=[true,false]\nduration='1s'\n[[step]]\nrate=10\npacing='spin'\nduration='1s'\n").unwrap();
        let labels: Vec<_> = p.steps.iter().map(Step::label).collect();
        assert_eq!(labels, ["c=1", "c=1 close", "c=2", "c=2 close", "r=10/s"]);
        assert!(!p.steps[1].keepalive && p.steps[2].keepalive);
        assert_eq!(p.steps[0].pacing, loadgen::Pacing::Timer);
        assert_eq!(p.steps[4].pacing, loadgen::Pacing::Spin);
        let e = load("name='k'\n[[step]]\nconnections=1\npacing='spin'\nduration='1s'\n").unwrap_err().to_string();
        assert!(e.contains("pacing is for open-model steps"), "{e}");
        let e = format!("{:#}", load("name='k'\n[[step]]\nrate=1\npacing='fast'\nduration='1s'\n").unwrap_err());
        assert!(e.contains("fast") && e.contains("spin"), "{e}");
    }

    #[test]
    fn step_mixes_multiply_steps_without_a_mix() {
        let p =
            load("name='m'\n[[step]]\nconnections=1\nduration='1s'\n[[step]]\nconnections=2\nduration='1s'\nmix='x'\n")
                .unwrap();
        let p = p.with_step_mixes(&["a".into(), "b".into()]);
        let mixes: Vec<_> = p.steps.iter().map(|s| s.mix.clone().unwrap()).collect();
        assert_eq!(mixes, ["a", "b", "x"]);
    }

    #[test]
    fn bad_steps_are_named() {
        let e = load("name='b'\n[[step]]\nduration='1s'\n").unwrap_err().to_string();
        assert!(e.contains("step 1") && e.contains("connections"), "{e}");
        let e = load("name='b'\n[[step]]\nconnections=1\nduration='ten'\n").unwrap_err().to_string();
        assert!(e.contains("duration"), "{e}");
    }

    #[test]
    fn values_that_cannot_work_are_refused_when_read() {
        let cases = [
            ("name='b'\n[[step]]\nconnections=1\nduration='0s'\n", "must be above 0"),
            ("name='b'\n[[step]]\nconnections=1\nduration='1000days'\n", "at most a day"),
            ("name='b'\n[[step]]\nconnections=0\nduration='1s'\n", "connections = 0"),
            ("name='b'\n[[step]]\nconnections=100000000\nduration='1s'\n", "between 1 and"),
            ("name='b'\n[[step]]\nrate=100\nmax_connections=0\nduration='1s'\n", "max_connections = 0"),
            ("name='b'\n[[step]]\nrate=1e300\nduration='1s'\n", "at most 10,000,000"),
            ("name='b'\nstop_below_success=2.5\n[[step]]\nconnections=1\nduration='1s'\n", "stop_below_success = 2.5"),
            ("name='b'\nstop_below_success=0\n[[step]]\nconnections=1\nduration='1s'\n", "stop_below_success = 0"),
            (
                "name='b'\nrequest_timeout='0s'\n[[step]]\nconnections=1\nduration='1s'\n",
                "request_timeout must be above 0",
            ),
            ("name='b'\nrequest_timeout='1000years'\n[[step]]\nconnections=1\nduration='1s'\n", "at most an hour"),
            ("name='b'\n[[step]]\nrate_range=[1.0, inf, 1.0]\nduration='1s'\n", "finite"),
            ("name='b'\n[[step]]\nrate_range=[1e16, 2e16, 1]\nduration='1s'\n", "at most 10000000"),
            ("name='b'\n[[step]]\nrate_range=[1, 100000, 1]\nduration='1s'\n", "at most 1000"),
            ("name='b'\n[[step]]\nconnections=1\nrepeat=1000000000000\nduration='1s'\n", "repeat = 1000000000000"),
            ("name='b'\n[[step]]\nconnections=1\nrepeat=0\nduration='1s'\n", "repeat = 0"),
            (
                "name='b'\n[[step]]\nconnections=[1,2,3,4,5,6,7,8,9,10]\nkeepalive=[true,false]\nrepeat=100\nduration='1s'\n",
                "more than 1000 steps",
            ),
        ];
        for (text, want) in cases {
            let e = load(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
            assert!(!e.contains('\n'), "one line: {e}");
        }
    }
}

//! Property tests over every parser of user input (profiles, studies, manifests, hosts files, durations,
//! rates, memory sizes, links): whatever the input (arbitrary text, or well-formed TOML holding extreme
//! numbers: inf, NaN, 1e300, negatives, huge counts), each gives a value or a one-line error, never a
//! panic, and within a second, the plan built from it included.
use crate::manifest::Service;
use crate::profile::Profile;
use crate::remote::hosts_file::HostsPlan;
use crate::study::file::Study;
use anyhow::Result;
use loadgen::limits::ThreadCpuClock;
use proptest::prelude::*;
use std::time::Duration;

/// Every case must end well within this much CPU time of its thread.
const CASE_LIMIT: Duration = Duration::from_secs(1);

/// Few enough cases that the whole suite takes seconds in the ci profile.
fn config() -> ProptestConfig {
    ProptestConfig { cases: 128, failure_persistence: None, ..ProptestConfig::default() }
}

/// A value (`Some`), or an error of one line (`None`); and within [`CASE_LIMIT`]. Any other outcome fails
/// the case.
fn one_line<T>(what: &str, started: ThreadCpuClock, r: Result<T>) -> Result<Option<T>, TestCaseError> {
    if let Err(e) = &r {
        let text = format!("{e:#}");
        prop_assert!(!text.contains('\n'), "{what}: error of several lines: {text:?}");
        prop_assert!(!text.is_empty(), "{what}: empty error");
    }
    prop_assert!(started.elapsed() < CASE_LIMIT, "{what} took {:?}", started.elapsed());
    Ok(r.ok())
}

/// Numbers as TOML writes them, from the ordinary to the absurd.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("inf".to_string()),
        Just("-inf".to_string()),
        Just("nan".to_string()),
        Just("1e300".to_string()),
        Just("-1".to_string()),
        Just("0".to_string()),
        Just("0.0".to_string()),
        Just("1e16".to_string()),
        Just("9223372036854775807".to_string()),
        Just("4294967296".to_string()),
        Just("1e-300".to_string()),
        (1u32..100_000).prop_map(|n| n.to_string()),
        (0.001f64..1e7).prop_map(|x| format!("{x:?}")),
    ]
}

/// Durations as a user (or a typo) writes them.
fn duration_text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("1s".to_string()),
        Just("0s".to_string()),
        Just("1000000000years".to_string()),
        Just("99999999999999999999s".to_string()),
        Just("1e20".to_string()),
        Just("".to_string()),
        (1u64..100_000).prop_map(|n| format!("{n}ms")),
        "[0-9a-z. ]{0,12}",
    ]
}

fn write(dir: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// A `[[step]]` with some of its keys, each holding extreme values.
fn step() -> impl Strategy<Value = String> {
    (
        prop_oneof![
            number().prop_map(|n| format!("connections = {n}")),
            proptest::collection::vec(number(), 0..4).prop_map(|v| format!("connections = [{}]", v.join(", "))),
            number().prop_map(|n| format!("rate = {n}")),
            (number(), number()).prop_map(|(a, b)| format!("rate = \"{a}:{b}\"")),
            (number(), number(), number()).prop_map(|(a, b, c)| format!("rate_range = [{a}, {b}, {c}]")),
        ],
        duration_text(),
        proptest::option::of(number()),
        proptest::option::of(number()),
        proptest::option::of(proptest::collection::vec(number(), 0..4)),
        proptest::option::of(Just("keepalive = [true, false]")),
    )
        .prop_map(|(load, duration, repeat, max_conn, delays, keepalive)| {
            let mut s = format!("[[step]]\n{load}\nduration = {duration:?}\n");
            if let Some(r) = repeat {
                s.push_str(&format!("repeat = {r}\n"));
            }
            if let Some(m) = max_conn {
                s.push_str(&format!("max_connections = {m}\n"));
            }
            if let Some(d) = delays {
                s.push_str(&format!("upstream_delay_ms = [{}]\n", d.join(", ")));
            }
            if let Some(k) = keepalive {
                s.push_str(&format!("{k}\n"));
            }
            s
        })
}

fn profile_text() -> impl Strategy<Value = String> {
    (proptest::collection::vec(step(), 0..4), proptest::option::of(duration_text()), proptest::option::of(number()))
        .prop_map(|(steps, timeout, stop)| {
            let mut s = "name = \"p\"\n".to_string();
            if let Some(t) = timeout {
                s.push_str(&format!("request_timeout = {t:?}\n"));
            }
            if let Some(x) = stop {
                s.push_str(&format!("stop_below_success = {x}\n"));
            }
            s + &steps.join("")
        })
}

fn study_text() -> impl Strategy<Value = String> {
    (
        number(),
        proptest::collection::vec(number(), 0..5),
        proptest::collection::vec(prop_oneof![Just("512M".to_string()), Just("none".to_string()), number()], 0..5),
        proptest::option::of((number(), number(), number())),
        proptest::option::of((duration_text(), number())),
    )
        .prop_map(|(runs, cpus, memory, slo, quick)| {
            let mut s = format!(
                "title = \"t\"\nquestion = \"q\"\nservices = [\"a\"]\nprofile = \"p\"\nruns = {runs}\n[limits]\ncpus = [{}]\n\
                 memory = [{}]\n",
                cpus.join(", "),
                memory.iter().map(|m| format!("{m:?}")).collect::<Vec<_>>().join(", ")
            );
            if let Some((r, p, ok)) = slo {
                s.push_str(&format!("[slo]\nat_rps = {r}\np99_ms = {p}\nsuccess = {ok}\n"));
            }
            if let Some((d, r)) = quick {
                s.push_str(&format!("[quick]\nstep_duration = {d:?}\nruns = {r}\n"));
            }
            s
        })
}

/// A profile and the plan it makes: every step, the total duration, the step mixes.
fn profile_and_plan(path: &std::path::Path) -> Result<usize> {
    let p = Profile::load(path)?;
    let _ = p.total_duration();
    let p = p.with_step_mixes(&["a".into(), "b".into()]);
    Ok(p.steps.len())
}

/// A study and its plan: every cell, and the runs still to do of each service in each.
fn study_and_plan(path: &std::path::Path, quick: bool) -> Result<usize> {
    let s = Study::load(path, quick)?;
    let keys: Vec<String> = s.cells.iter().map(crate::cell::AxisCell::key).collect();
    let names = vec!["a".to_string(), "b".to_string()];
    Ok(crate::runner::plan(&names, &keys, s.runs, &Default::default()).len())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn profiles_of_any_text_or_extreme_numbers_load_or_refuse_in_one_line(
        text in prop_oneof![profile_text(), "[ -~\n]{0,200}"],
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "p.toml", &text);
        let started = ThreadCpuClock::start();
        if let Some(steps) = one_line("profile", started, profile_and_plan(&path))? {
            prop_assert!((1..=2 * crate::profile::limits::MAX_STEPS).contains(&steps));
        }
    }

    #[test]
    fn studies_of_any_text_or_extreme_numbers_load_or_refuse_in_one_line(
        text in prop_oneof![study_text(), "[ -~\n]{0,200}"],
        quick in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "s.toml", &text);
        let started = ThreadCpuClock::start();
        if let Some(runs) = one_line("study", started, study_and_plan(&path, quick))? {
            prop_assert!(runs <= 2 * crate::study::file::MAX_CELLS * crate::study::file::MAX_RUNS as usize);
        }
    }

    #[test]
    fn manifests_of_any_text_or_name_load_or_refuse_in_one_line(
        name in prop_oneof!["[ -~]{0,80}", "[a-z0-9._-]{1,70}"],
        text in "[ -~\n]{0,200}",
        whole in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let manifest = if whole {
            text
        } else {
            crate::manifest::test_manifest(&name, "hello", "run = \"x\"\nreadiness = \"/\"\n")
        };
        write(dir.path(), "svcbench.toml", &manifest);
        let started = ThreadCpuClock::start();
        if let Some(s) = one_line("manifest", started, Service::load(dir.path()))? {
            prop_assert!(crate::manifest::check_name(s.name()).is_ok(), "{:?}", s.name());
        }
    }

    #[test]
    fn hosts_files_of_any_text_load_or_refuse_in_one_line(
        text in prop_oneof![
            "[ -~\n]{0,200}",
            ("[ -~]{0,30}", "[ -~]{0,30}", "[ -~]{0,20}").prop_map(|(at, dir, addr)| format!(
                "[store]\nat = {at:?}\ndir = {dir:?}\naddress = {addr:?}\n[[generator]]\nat = \"ssh://{at}\"\n"
            )),
        ],
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "hosts.toml", &text);
        let started = ThreadCpuClock::start();
        one_line("hosts file", started, HostsPlan::load(&path))?;
    }

    #[test]
    fn durations_rates_sizes_and_links_parse_or_refuse_in_one_line(
        s in prop_oneof![duration_text(), number(), "[ -~]{0,24}", (number(), "[KMGkmg]?").prop_map(|(n, u)| n + &u)],
    ) {
        let started = ThreadCpuClock::start();
        let max = loadgen::MAX_DURATION;
        if let Some(d) = one_line("duration", started, loadgen::cli::parse_duration_within(&s, max, "a day")
            .map_err(anyhow::Error::msg))?
        {
            prop_assert!(d <= max);
        }
        if let Some(Some(bytes)) = one_line("memory", started, crate::options::parse_memory(&s))? {
            prop_assert!((crate::options::MIN_MEMORY..=1 << 50).contains(&bytes));
        }
        if let Some(r) = one_line("rate", started, loadgen::RateRamp::parse(&s))? {
            prop_assert!(r.start.is_finite() && r.end.is_finite() && r.start.max(r.end) <= loadgen::MAX_RATE);
        }
        if let Some(p) = one_line("probe tolerance", started, crate::options::parse_probe_tolerance(&s)
            .map_err(anyhow::Error::msg))?
        {
            prop_assert!(p.is_finite() && p > 0.0);
        }
        one_line("statuses", started, loadgen::StatusSet::parse(&s))?;
        one_line("link", started, crate::network::Link::parse(&format!("client-service={s}")))?;
    }
}

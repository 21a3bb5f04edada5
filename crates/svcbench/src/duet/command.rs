//! `svcbench duet A B`: its arguments, the checks made before anything starts, the pairs one after the
//! other (early stop at `--precision`), the verdict table and the store.
use super::pair::{a_first, run_pair};
use super::setup::DuetSetup;
use super::slices::{log_ratios_by_pair, Metric, Slice};
use super::verdict::{verdicts, Line, PairedRatio, Verdict};
use crate::manifest::Service;
use crate::options::{parse_precision, LimitsArgs, MAX_PAIRS};
use crate::profile::Profile;
use crate::sandbox::{CgroupChoice, Limits};
use crate::scenario::Scenario;
use crate::store::{DuetLineRow, DuetMode, DuetRecord, DuetSliceRow, Store};
use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

impl DuetMode {
    /// Each side's default CPU quota, per service CPU: side by side, two of them fit on the CPUs they share
    /// with room to spare; in turns, only one side takes load at a time and may have nearly all of them.
    pub fn default_share(self) -> f64 {
        match self {
            DuetMode::SideBySide => 0.45,
            DuetMode::Alternating => 0.9,
        }
    }

    /// How many sides' quotas must fit on the service CPUs at once.
    fn sides_at_once(self) -> f64 {
        match self {
            DuetMode::SideBySide => 2.0,
            DuetMode::Alternating => 1.0,
        }
    }
}

/// Where a duet's logs go by default (`--work-dir`; a study's duet too).
pub const WORK_DIR: &str = "results/work/duet";

#[derive(clap::Args, Debug)]
pub struct DuetArgs {
    /// The first service, A (`dir` or `dir@variant`).
    pub a: PathBuf,
    /// The second service, B; ratios are B/A. The same as A for an A/A duet.
    pub b: PathBuf,
    #[arg(long)]
    pub scenario: Option<String>,
    /// Load profile: a name from profiles/ or a .toml path; every step is driven at both sides at once.
    #[arg(long, default_value = "duet")]
    pub profile: String,
    /// Override every step's duration (whole seconds: a step is cut into 1 s slices).
    #[arg(long, value_parser = crate::options::parse_step_duration)]
    pub step_duration: Option<std::time::Duration>,
    /// Fresh pairs of instances, sides swapped every other pair (at least 3 for a verdict).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=MAX_PAIRS as i64))]
    pub pairs: u32,
    /// Drive the sides in turns, 1 s slots in a random order per round, instead of both at once: for quotas
    /// that do not fit side by side (e.g. --cpus 1 --cpuset 1). Each side's default quota is then 0.9 per
    /// service CPU.
    #[arg(long)]
    pub alternate: bool,
    /// Stop after the pair at which every interval lies within ± this of its ratio (e.g. 2%).
    #[arg(long, value_parser = parse_precision)]
    pub precision: Option<f64>,
    /// Each side's limits; --cpus is each side's quota (default 0.45 per service CPU), and both quotas
    /// must fit on the service CPUs together.
    #[command(flatten)]
    pub limits: LimitsArgs,
    /// CPUs of the generators (default: the CPUs the services do not get).
    #[arg(long)]
    pub loadgen_cpuset: Option<String>,
    #[arg(long, value_enum, default_value = "auto")]
    pub cgroup: CgroupChoice,
    /// The store (SQLite).
    #[arg(long, default_value = "results/svcbench.db")]
    pub db: PathBuf,
    #[arg(long)]
    pub label: Option<String>,
    /// Request mix of the scenario for steps that name none.
    #[arg(long)]
    pub mix: Option<String>,
    #[arg(long, default_value_t = crate::runner::SEED)]
    pub seed: u64,
    /// Use the services as they are built (skip their build commands).
    #[arg(long)]
    pub no_build: bool,
    /// Wait for another measurement on this machine to end instead of refusing.
    #[arg(long)]
    pub wait_lock: bool,
    /// Where logs go.
    #[arg(long, default_value = WORK_DIR)]
    pub work_dir: PathBuf,
}

/// One service of a duet: exactly one variant.
fn one_service(spec: &std::path::Path) -> Result<Service> {
    let mut list = Service::load_spec(&spec.to_string_lossy())?;
    if list.len() != 1 {
        bail!("a duet compares two services: name one variant of {} (dir@variant), not dir@*", spec.display());
    }
    Ok(list.remove(0))
}

/// The verdict lines of the slices so far: per step and metric, B/A over pairs, Holm over all lines.
pub fn lines_of(slices: &[Slice], steps: usize) -> Lines {
    let keys: Vec<(u32, Metric)> =
        (0..steps as u32).flat_map(|s| Metric::ALL.into_iter().map(move |m| (s, m))).collect();
    let pairs: Vec<Vec<Vec<f64>>> = keys.iter().map(|&(s, m)| log_ratios_by_pair(slices, s, m)).collect();
    let lines: Vec<Line> =
        keys.iter().zip(&pairs).map(|(&(_, m), p)| Line { pairs: p, higher_is_better: m.higher_is_better() }).collect();
    keys.into_iter().zip(verdicts(&lines)).map(|((s, m), (r, v))| (s, m, r, v)).collect()
}

/// A duet's inputs as they resolve, every one checked before anything is built or started.
struct Checked {
    services: [Service; 2],
    scenario: Scenario,
    profile: Profile,
    limits: Limits,
    /// The generators' CPUs.
    gen: Vec<usize>,
    mode: DuetMode,
    /// Each side's CPU quota.
    quota: f64,
}

fn check(a: &DuetArgs) -> Result<Checked> {
    let services = [one_service(&a.a)?, one_service(&a.b)?];
    let (_, scenario) = crate::runner::load_services(std::slice::from_ref(&a.a), a.scenario.as_deref())?;
    if services[1].manifest.scenario != services[0].manifest.scenario && a.scenario.is_none() {
        bail!(
            "{} is scenario `{}`, {} is `{}`: a duet compares two services of one scenario",
            services[0].name(),
            services[0].manifest.scenario,
            services[1].name(),
            services[1].manifest.scenario
        );
    }
    // A's were checked as it loaded; B's placeholders too, before anything is built.
    let kinds: Vec<&str> = scenario.file.dependency.iter().map(|d| d.kind.as_str()).collect();
    services[1].check_placeholders(&kinds)?;
    let mut profile = Profile::find(&a.profile)?;
    if let Some(d) = a.step_duration {
        profile = profile.with_step_duration(d)?;
    }
    if let Some(s) = profile.steps.iter().find(|s| s.duration.as_secs() < 2 || s.duration.subsec_nanos() != 0) {
        bail!(
            "a step of {:?} cannot be cut into whole 1 s slices: give steps of 2 s or more in whole seconds (--step-duration 5s)",
            s.duration
        );
    }
    let mut limits = a.limits.limits()?;
    let gen = crate::cpus::cpu_split(&mut limits.cpuset, None, a.loadgen_cpuset.as_deref())?;
    let mode = if a.alternate { DuetMode::Alternating } else { DuetMode::SideBySide };
    let quota = fitting_quota(&mut limits, mode)?;
    Ok(Checked { services, scenario, profile, limits, gen, mode, quota })
}

/// Each side's quota (the mode's default share when none is given), refused when the sides that take load
/// at once do not fit on the service CPUs together.
fn fitting_quota(limits: &mut Limits, mode: DuetMode) -> Result<f64> {
    let service_cpus = limits.cpuset.as_deref().map(crate::cpus::parse).transpose()?.map_or(1, |c| c.len());
    let quota = *limits.cpus.get_or_insert(mode.default_share() * service_cpus as f64);
    crate::cpus::check_quota_floor(quota, &crate::cpus::CpuKeys::flags())?;
    if mode.sides_at_once() * quota > service_cpus as f64 + 1e-9 {
        bail!(
            "--cpus {quota}: {} not fit on the {service_cpus} service CPU(s) ({}); give at most {} each{}, or a wider --cpuset",
            match mode {
                DuetMode::Alternating => format!("a side's quota of {quota} CPUs does"),
                DuetMode::SideBySide => format!("two sides of {quota} CPUs do"),
            },
            limits.cpuset.as_deref().unwrap_or("?"),
            service_cpus as f64 / mode.sides_at_once(),
            if mode == DuetMode::SideBySide { " (or --alternate, the sides in turns)" } else { "" }
        );
    }
    Ok(quota)
}

/// A duet's verdict lines: per step and metric, B/A over the pairs so far and its verdict.
pub type Lines = Vec<(u32, Metric, Option<PairedRatio>, Verdict)>;

/// Asked after every pair with the lines so far and the seconds since the first pair began: a reason to
/// stop there (a gate that has decided, its time spent), or None to go on.
pub type StopRule<'a> = dyn Fn(&Lines, f64) -> Option<String> + 'a;

/// What a duet measured, for a command built on it (the gate).
pub struct Outcome {
    pub duet: i64,
    /// The exit code of `svcbench duet` ([`crate::exit::DONE`] or [`crate::exit::INTERRUPTED`]).
    pub code: i32,
    pub labels: Vec<String>,
    pub lines: Lines,
    pub machine_s: f64,
}

/// `svcbench duet`.
pub fn run(a: DuetArgs, stop: Arc<AtomicBool>) -> Result<i32> {
    measure(&a, stop, &|_, _| None).map(|o| o.code)
}

/// A duet as `svcbench duet` runs it, asking `rule` after every pair whether to stop there.
pub fn measure(a: &DuetArgs, stop: Arc<AtomicBool>, rule: &StopRule) -> Result<Outcome> {
    let c = check(a)?;
    crate::safe_fs::Folder::make(&a.work_dir).context("--work-dir")?;
    let work_dir = std::path::absolute(&a.work_dir)?;
    let _machine = crate::guard::machine_lock::acquire("duet", a.wait_lock)?;
    // What a killed svcbench left goes before anything is built or started, as for run.
    for line in crate::teardown::leftovers::clean(a.db.parent().unwrap_or(std::path::Path::new("."))) {
        crate::errln!("{line}");
    }
    // From here on something runs: a failure is the duet's (exit 1), not a refusal.
    for svc in c.services.iter() {
        crate::service::build::build(svc, &work_dir, a.no_build)
            .map_err(|e| crate::exit::after_start(e, stop.load(Ordering::Relaxed)))?;
    }
    let store = Store::open(&a.db)?;
    let cgroup = if a.cgroup == CgroupChoice::Auto { crate::sandbox::cgroup::detect() } else { a.cgroup };
    // Started once for the whole duet (a store restored from its snapshot takes a while), stopped on return.
    let mut deps = super::deps::DuetDeps::start(&c.scenario, &work_dir, &c.gen, cgroup)
        .map_err(|e| crate::exit::after_start(e, stop.load(Ordering::Relaxed)))?;
    let store_probes = deps.store_probes();
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let names = [c.services[0].name(), c.services[1].name()];
    let duet = store.create_duet(&DuetRecord {
        label: a.label.as_deref(),
        command: &command,
        scenario: c.scenario.name(),
        profile: &c.profile.name,
        services: names,
        limit_cpus: Some(c.quota),
        limit_memory_mib: c.limits.memory_bytes.map(|b| b as f64 / 1048576.0),
        service_cpuset: c.limits.cpuset.as_deref(),
        loadgen_cpuset: &crate::cpus::format(&c.gen),
        cgroup_version: &format!("{cgroup:?}").to_lowercase(),
        pairs_asked: a.pairs,
        precision: a.precision,
        mode: c.mode,
    })?;
    let labels: Vec<String> = c.profile.steps.iter().map(|s| s.label()).collect();
    // A folder per duet of a store, as a session's: the next duet's logs do not overwrite these.
    let logs = work_dir.join(format!("{}-duet-{duet}", crate::paths::store_name(&a.db)));
    crate::safe_fs::Folder::make(&logs)?;
    let setup = DuetSetup {
        services: [&c.services[0], &c.services[1]],
        scenario: &c.scenario,
        profile: &c.profile,
        limits: &c.limits,
        cgroup,
        gen_cpus: &c.gen,
        work_dir: &logs,
        mix: a.mix.as_deref(),
        seed: a.seed,
        mode: c.mode,
        store: &store_probes,
        store_cpus: deps.store_cpus(c.gen.len()),
    };
    crate::errln!(
        "svcbench: duet {duet}: A = {}, B = {}, {}, each --cpus {} on CPUs {}, generators on {}; up to {} pairs of {}",
        names[0],
        names[1],
        c.mode.describe(),
        c.quota,
        c.limits.cpuset.as_deref().unwrap_or("any"),
        crate::cpus::format(&c.gen),
        a.pairs,
        labels.join(", ")
    );
    let t0 = Instant::now();
    let (slices, failure) = run_pairs(&setup, &mut deps, a, (&store, duet), &labels, t0, &stop, rule)?;
    let machine_s = t0.elapsed().as_secs_f64();
    let lines = lines_of(&slices, labels.len());
    let rows: Vec<DuetLineRow> = lines
        .iter()
        .map(|(s, m, r, v)| DuetLineRow {
            step: *s,
            step_label: &labels[*s as usize],
            metric: m.key(),
            result: r.clone(),
            verdict: v.key(),
        })
        .collect();
    let interrupted = stop.load(Ordering::Relaxed);
    let status = match (&failure, interrupted) {
        (Some(_), _) => "failed",
        (None, true) => "interrupted",
        (None, false) => "done",
    };
    store.end_duet(duet, status, machine_s, failure.as_deref(), &rows)?;
    crate::out!("{}", super::table::render(names, &labels, &lines, &slices, machine_s));
    let invalid = slices.iter().filter(|s| s.invalid.is_some()).count();
    let invalid = match invalid {
        0 => String::new(),
        n => format!(" ({n} of {} slices not valid, left out of the verdicts)", slices.len()),
    };
    crate::errln!(
        "svcbench: duet {duet} {status}{invalid}; slices and verdicts in {}, logs in {}",
        a.db.display(),
        logs.display()
    );
    if let Some(f) = failure {
        return Err(crate::exit::Failed(format!("duet {duet} failed: {f}")).into());
    }
    Ok(Outcome {
        duet,
        code: if interrupted { crate::exit::INTERRUPTED } else { crate::exit::DONE },
        labels,
        lines,
        machine_s,
    })
}

/// The pairs one after the other, each one's slices stored as it ends. Stops after the pair at which every
/// interval is within `--precision` or `rule` gives a reason, at Ctrl-C, or at a pair that failed (returned
/// as the duet's failure, so the slices measured before it are kept and judged). `t0`: the duet's start,
/// which the progress counts from.
#[allow(clippy::too_many_arguments)]
fn run_pairs(
    setup: &DuetSetup,
    deps: &mut super::deps::DuetDeps,
    a: &DuetArgs,
    (store, duet): (&Store, i64),
    labels: &[String],
    t0: Instant,
    stop: &Arc<AtomicBool>,
    rule: &StopRule,
) -> Result<(Vec<Slice>, Option<String>)> {
    let mut slices: Vec<Slice> = Vec::new();
    for pair in 0..a.pairs {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        match run_pair(setup, deps, pair, stop) {
            Ok(mut got) => {
                store.add_duet_pair(duet, labels, &slice_rows(&got))?;
                let invalid = got.iter().filter(|s| s.invalid.is_some()).count();
                slices.append(&mut got);
                let lines = lines_of(&slices, labels.len());
                crate::errln!("{}", progress_line(pair, &slices, invalid, &lines, t0));
                if let Some(p) = a
                    .precision
                    .filter(|&p| lines.iter().all(|(_, _, r, _)| r.as_ref().is_some_and(|r| r.precise_to(p))))
                {
                    crate::errln!("svcbench: every interval within ±{:.1} %: stopping early", p * 100.0);
                    break;
                }
                if let Some(why) = rule(&lines, t0.elapsed().as_secs_f64()) {
                    crate::errln!("svcbench: stopping after pair {}: {why}", pair + 1);
                    break;
                }
            }
            // A Ctrl-C during a start ends that start with an error: the duet was interrupted, not failed.
            Err(_) if stop.load(Ordering::Relaxed) => break,
            Err(e) => return Ok((slices, Some(format!("pair {}: {e:#}", pair + 1)))),
        }
    }
    Ok((slices, None))
}

/// The slices as the store takes them.
fn slice_rows(slices: &[Slice]) -> Vec<DuetSliceRow<'_>> {
    slices
        .iter()
        .map(|s| DuetSliceRow {
            pair: s.pair,
            a_first: s.a_first,
            step: s.step,
            second: s.second,
            seconds: s.seconds,
            a: s.a,
            b: s.b,
            generator_busy: s.generator_busy,
            invalid: s.invalid.as_deref(),
        })
        .collect()
}

fn progress_line(
    pair: u32,
    slices: &[Slice],
    invalid: usize,
    lines: &[(u32, Metric, Option<PairedRatio>, Verdict)],
    t0: Instant,
) -> String {
    let cpu = lines
        .iter()
        .filter(|l| l.1 == Metric::CpuUsPerReq)
        .filter_map(|l| l.2.as_ref().map(|r| format!("{:.3} [{:.3}, {:.3}]", r.ratio, r.ci[0], r.ci[1])))
        .next_back()
        .unwrap_or_else(|| {
            format!(
                "not yet (it needs {} pairs of {} valid slices or more)",
                super::verdict::MIN_PAIRS,
                super::verdict::MIN_SLICES
            )
        });
    format!(
        "svcbench: pair {} done ({} started first, {} of its slices invalid); {} slices so far; CPU/req B/A at the last step {cpu}; {:.0} s",
        pair + 1,
        if a_first(pair) { "A" } else { "B" },
        invalid,
        slices.len(),
        t0.elapsed().as_secs_f64()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quota_the_kernel_would_not_hold_is_refused_before_anything_starts() {
        let mut limits = Limits { cpus: Some(0.005), memory_bytes: None, cpuset: Some("1".into()), pids: None };
        let e = fitting_quota(&mut limits, DuetMode::SideBySide).unwrap_err().to_string();
        assert!(e.contains("--cpus 0.005 is below 0.01"), "{e}");
        let mut limits = Limits { cpus: Some(0.45), memory_bytes: None, cpuset: Some("1".into()), pids: None };
        assert_eq!(fitting_quota(&mut limits, DuetMode::SideBySide).unwrap(), 0.45);
    }

    #[test]
    fn the_progress_says_what_a_ratio_still_needs_before_it_has_one() {
        let line = progress_line(0, &[], 0, &[], Instant::now());
        assert!(line.starts_with("svcbench: pair 1 done (A started first"), "{line}");
        assert!(
            line.contains("CPU/req B/A at the last step not yet (it needs 3 pairs of 2 valid slices or more)"),
            "{line}"
        );
    }
}

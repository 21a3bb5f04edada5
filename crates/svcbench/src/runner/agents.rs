//! A step driven by several generator agents (`--generators N`): each agent is a `svcbench load`
//! process on its generator host (a namespace of its own under `--net`), with its share of the
//! connections, or the whole rate with its share of the schedule (loadgen's `--agent I/N`). They start
//! at one agreed time, each writes its JSON report, and the reports merge exactly: counts add up and
//! the latency percentiles come from the sum of the agents' HDR histograms. Every agent's worker
//! threads stay in the merged report, so one starved agent invalidates the step.
//!
//! Each agent's report and log stay in the run's work folder (`agents/step-<seq>-agent-<i>.json`).
use crate::network::Host;
use anyhow::{bail, Context, Result};
use loadgen::{LoadConfig, LoadReport, MixSpec, Model};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// How long before the agreed start the agents are launched: time for the processes to start.
const START_MARGIN: Duration = Duration::from_millis(500);
/// After the load and the open model's drain, how long agents get to write their reports.
const REPORT_MARGIN: Duration = Duration::from_secs(30);

/// What the agents of one step share.
pub struct AgentStep<'a> {
    /// The step's load as one generator would run it (model, duration, timeouts, threads, CPUs).
    pub config: &'a LoadConfig,
    /// The step's mix with its seed, and the folder its files are relative to.
    pub mix: &'a MixSpec,
    pub mix_dir: &'a Path,
    pub url: String,
    /// Where this step's mix file, reports and logs go.
    pub dir: PathBuf,
    pub seq: u32,
}

/// Runs the step on `hosts.len()` agents and merges their reports. `stops`: any of them set ends the
/// agents early (SIGINT: each still writes what it measured).
pub fn run(step: &AgentStep, hosts: &[&Host], stops: &[&AtomicBool]) -> Result<LoadReport> {
    std::fs::create_dir_all(&step.dir).with_context(|| format!("cannot create {}", step.dir.display()))?;
    let mix_path = step.dir.join(format!("step-{}-mix.toml", step.seq));
    std::fs::write(&mix_path, mix_file(step.mix, step.mix_dir)?)
        .with_context(|| format!("cannot write {}", mix_path.display()))?;
    let exe = std::env::current_exe().context("cannot find svcbench's own executable for the agents")?;
    let start_at = SystemTime::now() + START_MARGIN;
    let n = hosts.len();
    let mut agents = Vec::new();
    for (i, host) in hosts.iter().enumerate() {
        let out = step.dir.join(format!("step-{}-agent-{}.json", step.seq, i + 1));
        let log = step.dir.join(format!("step-{}-agent-{}.log", step.seq, i + 1));
        let args = agent_args(step.config, &step.url, &mix_path, i, n, start_at);
        let child = crate::sandbox::process::spawn_program(
            &exe,
            &args,
            host.netns.as_ref().map(|ns| ns.fd()),
            std::fs::File::create(&out).with_context(|| format!("cannot create {}", out.display()))?,
            std::fs::File::create(&log).with_context(|| format!("cannot create {}", log.display()))?,
        )?;
        agents.push((child, out, log));
    }
    let deadline = Instant::now() + START_MARGIN + step.config.duration + step.config.request_timeout + REPORT_MARGIN;
    let mut status: Vec<Option<std::process::ExitStatus>> = vec![None; n];
    let mut stopped = false;
    while status.iter().any(Option::is_none) && Instant::now() < deadline {
        for (i, (child, _, _)) in agents.iter_mut().enumerate() {
            if status[i].is_none() {
                status[i] = child.try_wait()?;
            }
        }
        if stops.iter().any(|s| s.load(Ordering::Relaxed)) && !stopped {
            // All of them at once: each ends its load and still writes what it measured.
            stopped = true;
            for (child, _, _) in &agents {
                crate::sandbox::process::signal_pids(&[child.id() as i32], libc::SIGINT);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // None is left running, whatever happens next.
    for (i, (child, _, _)) in agents.iter_mut().enumerate() {
        if status[i].is_none() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
    let mut reports = Vec::new();
    for (i, (_, out, log)) in agents.into_iter().enumerate() {
        let why = || last_line(&log);
        match status[i] {
            Some(s) if s.success() => {}
            Some(s) => bail!("generator agent {} of {n} failed ({s}): {}", i + 1, why()),
            None => bail!("generator agent {} of {n} did not finish in time: {}", i + 1, why()),
        }
        let text = std::fs::read_to_string(&out).with_context(|| format!("cannot read {}", out.display()))?;
        let report: LoadReport = serde_json::from_str(&text)
            .with_context(|| format!("generator agent {} of {n} wrote no report ({})", i + 1, out.display()))?;
        reports.push(report);
    }
    loadgen::merge_reports(&reports).context("the agents' reports do not merge")
}

/// The `svcbench load` arguments of agent `i` of `n`.
fn agent_args(c: &LoadConfig, url: &str, mix: &Path, i: usize, n: usize, start_at: SystemTime) -> Vec<String> {
    let secs = |d: Duration| format!("{}s", d.as_secs_f64());
    let mut a: Vec<String> =
        vec!["load".into(), url.into(), "--json".into(), "--mix".into(), mix.display().to_string()];
    a.extend(["-d".into(), secs(c.duration), "--timeout".into(), secs(c.request_timeout)]);
    a.extend(["--connect-timeout".into(), secs(c.connect_timeout), "--success".into(), c.success.to_string()]);
    a.extend(["-t".into(), c.threads.to_string()]);
    if let Some(cpus) = &c.cpu_affinity {
        a.extend(["--cpus".into(), cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",")]);
    }
    match &c.model {
        Model::Closed { connections } => a.extend(["-c".into(), share(*connections, n, i).max(1).to_string()]),
        Model::Open { rate, max_connections } => {
            // The whole rate: agent i sends its own share of one schedule.
            let rate = if rate.is_constant() { rate.start.to_string() } else { format!("{}:{}", rate.start, rate.end) };
            a.extend(["--rate".into(), rate, "--pacing".into(), pacing(c.pacing).into()]);
            a.extend(["--max-connections".into(), share(*max_connections, n, i).max(c.threads).to_string()]);
        }
    }
    if !c.keepalive {
        a.push("--no-keepalive".into());
    }
    let at = start_at.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_secs_f64();
    a.extend(["--agent".into(), format!("{}/{n}", i + 1), "--start-at".into(), format!("{at:.6}")]);
    a
}

fn pacing(p: loadgen::Pacing) -> &'static str {
    match p {
        loadgen::Pacing::Timer => "timer",
        loadgen::Pacing::Spin => "spin",
    }
}

/// `total` split in `parts`, the first ones one more when it does not divide.
fn share(total: usize, parts: usize, i: usize) -> usize {
    total / parts + usize::from(i < total % parts)
}

/// The step's mix as a mix file for `svcbench load --mix`, its files named by absolute paths.
fn mix_file(mix: &MixSpec, dir: &Path) -> Result<String> {
    let mut mix = mix.clone();
    for v in mix.values.values_mut() {
        if let Some(f) = &v.file {
            v.file = Some(dir.join(f));
        }
    }
    for r in &mut mix.request {
        if let Some(f) = &r.body_file {
            r.body_file = Some(dir.join(f));
        }
    }
    toml::to_string(&mix).context("cannot write the step's mix for the agents")
}

/// The last non-empty line of an agent's log (its error), for messages.
fn last_line(log: &Path) -> String {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no output")
        .to_string()
}

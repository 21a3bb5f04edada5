//! A step driven by several generator agents (`--generators N`): each agent is a `svcbench load`
//! process on its generator host (a namespace of its own under `--net`), with its share of the
//! connections, or the whole rate with its share of the schedule (loadgen's `--agent I/N`). They start
//! at one agreed time, each writes its JSON report, and the reports merge exactly: counts add up and
//! the latency percentiles come from the sum of the agents' HDR histograms. Every agent's worker
//! threads stay in the merged report, so one starved agent invalidates the step.
//!
//! An agent on another machine (the hosts file's `ssh://` generators) is the same command through
//! OpenSSH: the step's mix is copied there first (value lists and bodies inlined, so the other machine
//! needs no scenario files), the agent ends when its ssh connection does (`--exit-with-stdin`), and its
//! report comes back on ssh's standard output.
//!
//! Each agent's report and log stay in the run's work folder (`agents/step-<seq>-agent-<i>.json`).
use crate::network::Host;
use crate::remote::hosts_file::Place;
use crate::sandbox::process::shell_quote;
use anyhow::{bail, Context, Result};
use loadgen::{LoadConfig, LoadModel, LoadReport, MixSpec};
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

/// Refuses a closed-model step with fewer connections than agents: an agent without a connection would
/// still open one, and the step would run more connections than its profile asks for. The message names
/// the bundled profiles (in `bundled`) that `agents` agents can share, or says to write one.
pub fn check_split(profile: &str, steps: &[crate::profile::Step], agents: usize, bundled: Option<&Path>) -> Result<()> {
    let Some((step, e)) = steps.iter().find_map(|s| s.load.check_agents(agents).err().map(|e| (s, e))) else {
        return Ok(());
    };
    let fits = bundled.map(|dir| closed_profiles_for(dir, agents)).unwrap_or_default();
    let such = match fits.as_slice() {
        [] => " (none is bundled: write one, docs/profile.md)".to_string(),
        names => {
            format!(" (bundled: {})", names.iter().map(|n| format!("--profile {n}")).collect::<Vec<_>>().join(", "))
        }
    };
    bail!(
        "profile `{profile}`, step {}: {e}; --generators {agents} needs a profile whose every step has at least {agents} \
         connections{such} or an open-model one (a rate, shared at any count), or fewer agents",
        step.label()
    )
}

/// The bundled closed-model profiles whose every step `agents` agents can share, by name.
fn closed_profiles_for(dir: &Path, agents: usize) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| crate::profile::Profile::load(&e.path()).ok())
        .filter(|p| {
            p.steps.iter().any(|s| s.load.axis() == loadgen::LoadAxis::Connections)
                && p.steps.iter().all(|s| s.load.check_agents(agents).is_ok())
        })
        .map(|p| p.name)
        .collect();
    names.sort();
    names
}

/// Where one agent runs: a host of this machine (loopback, or a `--net` namespace), or another machine.
pub enum AgentAt<'a> {
    Here(&'a Host),
    Ssh(&'a Place),
}

/// Runs the step on one agent per place and merges their reports. `stops`: any of them set ends the agents
/// early (each still writes what it measured).
pub fn run(step: &AgentStep, places: &[AgentAt], stops: &[&AtomicBool]) -> Result<LoadReport> {
    let mix_path = step.dir.join(format!("step-{}-mix.toml", step.seq));
    crate::safe_fs::write_file(&mix_path, mix_file(step.mix, step.mix_dir)?)?;
    // Copies to other machines first, so that the agreed start is not spent on them. Each goes into a
    // private folder there, removed when `remote_mix` drops unless its agent's script already did.
    let mut remote_mix = Vec::new();
    for at in places {
        remote_mix.push(match at {
            AgentAt::Ssh(place) => Some(upload(place, &mix_path)?),
            AgentAt::Here(_) => None,
        });
    }
    let mut agents = spawn_all(step, places, &mix_path, &remote_mix)?;
    let status = wait_all(step, &mut agents, stops)?;
    for (mix, status) in remote_mix.iter_mut().zip(&status) {
        // ssh ends with the script's code once the script ran to its end (its removal included); 255 is
        // ssh's own failure.
        if let (Some(mix), Some(code)) = (mix, status.and_then(|s| s.code())) {
            mix.removed = code != 255;
        }
    }
    let n = places.len();
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

/// A started agent: its process, its report file and its log.
type Spawned = (std::process::Child, PathBuf, PathBuf);

/// Starts every agent, here or over ssh, all agreed on one start time.
fn spawn_all(
    step: &AgentStep,
    places: &[AgentAt],
    mix_path: &Path,
    remote_mix: &[Option<RemoteMix>],
) -> Result<Vec<Spawned>> {
    let exe = std::env::current_exe().context("cannot find svcbench's own executable for the agents")?;
    let n = places.len();
    let start_at = SystemTime::now() + START_MARGIN;
    let mut agents = Vec::new();
    for (i, at) in places.iter().enumerate() {
        let out = step.dir.join(format!("step-{}-agent-{}.json", step.seq, i + 1));
        let log = step.dir.join(format!("step-{}-agent-{}.log", step.seq, i + 1));
        let (out_file, log_file) = (crate::safe_fs::create_file(&out)?, crate::safe_fs::create_file(&log)?);
        let child = match (at, &remote_mix[i]) {
            (AgentAt::Ssh(place @ Place::Ssh { svcbench, .. }), Some(remote)) => {
                let args = agent_args(step.config, &step.url, &remote.file(), (i, n), start_at, Remote::Yes);
                let script = format!(
                    "{} {}; rc=$?; {}; exit $rc",
                    shell_quote(svcbench),
                    args.iter().map(|a| shell_quote(a)).collect::<Vec<_>>().join(" "),
                    remove_command(&remote.dir)
                );
                crate::sandbox::process::spawn_program(
                    Path::new("ssh"),
                    &place.ssh_args(&script),
                    crate::child::Needs::Ssh,
                    None,
                    std::process::Stdio::piped(),
                    out_file,
                    log_file,
                )?
            }
            (AgentAt::Here(host), _) => {
                let args = agent_args(step.config, &step.url, mix_path, (i, n), start_at, Remote::No);
                let ns = host.netns.as_ref().map(|ns| ns.fd());
                crate::sandbox::process::spawn_program(
                    &exe,
                    &args,
                    crate::child::Needs::Nothing,
                    ns,
                    std::process::Stdio::null(),
                    out_file,
                    log_file,
                )?
            }
            _ => bail!("generator agent {}: no place to run it", i + 1),
        };
        agents.push((child, out, log));
    }
    Ok(agents)
}

/// Waits for every agent up to the step's end plus its margins; a stop ends them all at once (each still
/// writes what it measured); none is left running, whatever happens.
fn wait_all(
    step: &AgentStep,
    agents: &mut [Spawned],
    stops: &[&AtomicBool],
) -> Result<Vec<Option<std::process::ExitStatus>>> {
    let deadline = Instant::now() + START_MARGIN + step.config.duration + step.config.request_timeout + REPORT_MARGIN;
    let mut status: Vec<Option<std::process::ExitStatus>> = vec![None; agents.len()];
    let mut stopped = false;
    while status.iter().any(Option::is_none) && Instant::now() < deadline {
        for (i, (child, _, _)) in agents.iter_mut().enumerate() {
            if status[i].is_none() {
                status[i] = child.try_wait()?;
            }
        }
        if stops.iter().any(|s| s.load(Ordering::Relaxed)) && !stopped {
            stopped = true;
            for (child, _, _) in agents.iter_mut() {
                // Here: SIGINT. Over ssh: closing its input ends the remote agent (--exit-with-stdin).
                drop(child.stdin.take());
                crate::sandbox::process::signal_pids(&[child.id() as i32], libc::SIGINT);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for (i, (child, _, _)) in agents.iter_mut().enumerate() {
        if status[i].is_none() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
    Ok(status)
}

/// Whether an agent runs on another machine.
#[derive(Clone, Copy, PartialEq)]
enum Remote {
    Yes,
    No,
}

/// The `svcbench load` arguments of agent `i` of `n`. On another machine the agent is not pinned to this
/// one's CPUs, and it ends when its ssh connection closes.
fn agent_args(
    c: &LoadConfig,
    url: &str,
    mix: &Path,
    (i, n): (usize, usize),
    start_at: SystemTime,
    remote: Remote,
) -> Vec<String> {
    let secs = |d: Duration| format!("{}s", d.as_secs_f64());
    let mut a: Vec<String> =
        vec!["load".into(), url.into(), "--json".into(), "--mix".into(), mix.display().to_string()];
    a.extend(["-d".into(), secs(c.duration), "--timeout".into(), secs(c.request_timeout)]);
    a.extend(["--connect-timeout".into(), secs(c.connect_timeout), "--success".into(), c.success.to_string()]);
    // Every agent runs the same number of threads, so that their shares of the `{unique}` numbers (and of
    // the open model's schedule) never overlap: in the closed model no more than the smallest agent's
    // connections allow (`svcbench load` runs no thread without a connection).
    let threads = c.model.agent_threads(c.threads, n);
    a.extend(["-t".into(), threads.to_string()]);
    match (&c.cpu_affinity, remote) {
        (Some(cpus), Remote::No) => {
            a.extend(["--cpus".into(), cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",")])
        }
        (_, Remote::Yes) => a.push("--exit-with-stdin".into()),
        (None, Remote::No) => {}
    }
    // The model's share of the load for agent i.
    a.extend(c.model.agent_args(n, i, c.threads, c.pacing));
    if !c.keepalive {
        a.push("--no-keepalive".into());
    }
    let at = start_at.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_secs_f64();
    a.extend(["--agent".into(), format!("{}/{n}", i + 1), "--start-at".into(), format!("{at:.6}")]);
    a
}

/// The step's mix as a self-contained mix file for `svcbench load --mix`: value files become lists and
/// body files bodies, so an agent on another machine needs nothing else.
fn mix_file(mix: &MixSpec, dir: &Path) -> Result<String> {
    let mut mix = mix.clone();
    for (name, v) in mix.values.iter_mut() {
        if let Some(f) = v.file.take() {
            v.list = Some(loadgen::ValueList::from_file(name, &dir.join(f), v.order)?.values);
        }
    }
    for r in &mut mix.request {
        if let Some(f) = r.body_file.take() {
            let path = dir.join(f);
            let body = std::fs::read(&path).with_context(|| format!("cannot read body file {}", path.display()))?;
            r.body = Some(
                String::from_utf8(body).with_context(|| format!("{}: an agent's body must be text", path.display()))?,
            );
        }
    }
    toml::to_string(&mix).context("cannot write the step's mix for the agents")
}

/// A step's mix on another machine: a private folder there (`mktemp -d`, mode 0700) holding `mix.toml`,
/// removed over ssh when dropped unless the agent's own script removed it.
struct RemoteMix {
    place: Place,
    dir: String,
    removed: bool,
}

impl RemoteMix {
    fn file(&self) -> PathBuf {
        Path::new(&self.dir).join("mix.toml")
    }
}

impl Drop for RemoteMix {
    fn drop(&mut self) {
        if !self.removed {
            let _ = crate::child::helper("ssh", crate::child::Needs::Ssh)
                .args(self.place.ssh_args(&remove_command(&self.dir)))
                .stdin(std::process::Stdio::null())
                .output();
        }
    }
}

/// The remote command that makes a private folder with a random name, copies its input into `mix.toml`
/// there and prints the folder; a failed copy leaves nothing behind.
const UPLOAD_COMMAND: &str = "umask 077; d=$(mktemp -d \"${TMPDIR:-/tmp}/svcbench-mix.XXXXXXXXXX\") || exit 1; \
     if cat > \"$d/mix.toml\"; then printf '%s\\n' \"$d\"; else rm -rf -- \"$d\"; exit 1; fi";

/// The remote command that removes an uploaded mix's folder.
fn remove_command(dir: &str) -> String {
    format!("rm -rf -- {}", shell_quote(dir))
}

/// Copies the mix file to a private folder on `place`.
fn upload(place: &Place, mix: &Path) -> Result<RemoteMix> {
    let out = crate::child::helper("ssh", crate::child::Needs::Ssh)
        .args(place.ssh_args(UPLOAD_COMMAND))
        .stdin(std::fs::File::open(mix)?)
        .output()
        .context("cannot run ssh (install OpenSSH's client) for a generator on another host")?;
    let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || !dir.starts_with('/') || dir.contains('\n') {
        let err = String::from_utf8_lossy(&out.stderr).trim().replace('\n', " ");
        bail!("generator host {}: cannot copy the step's mix there: {err}", place.describe());
    }
    Ok(RemoteMix { place: place.clone(), dir, removed: false })
}

/// The last non-empty line of an agent's log (its error), for messages.
fn last_line(log: &Path) -> String {
    crate::bounded::last_lines(log, 1, crate::bounded::MESSAGE_LINE_CHARS).pop().unwrap_or_else(|| "no output".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use loadgen::Model;

    #[test]
    fn a_remote_mix_goes_into_a_private_folder_of_its_own_and_is_removed_whole() {
        assert!(!UPLOAD_COMMAND.contains("/tmp/svcbench-agent"), "a predictable path: {UPLOAD_COMMAND}");
        assert!(UPLOAD_COMMAND.starts_with("umask 077;") && UPLOAD_COMMAND.contains("mktemp -d"));
        assert!(UPLOAD_COMMAND.contains("cat > \"$d/mix.toml\""), "{UPLOAD_COMMAND}");
        // Run here as a remote shell would: the folder is private, holds the input, and is printed.
        let out = std::process::Command::new("sh")
            .args(["-c", UPLOAD_COMMAND])
            .stdin(std::fs::File::open("Cargo.toml").unwrap())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let dir = String::from_utf8(out.stdout).unwrap().trim().to_string();
        let m = std::fs::symlink_metadata(&dir).unwrap();
        assert_eq!(std::os::unix::fs::PermissionsExt::mode(&m.permissions()) & 0o777, 0o700);
        assert_eq!(std::fs::read("Cargo.toml").unwrap(), std::fs::read(Path::new(&dir).join("mix.toml")).unwrap());
        let removed = std::process::Command::new("sh").args(["-c", &remove_command(&dir)]).status().unwrap();
        assert!(removed.success() && !Path::new(&dir).exists());
    }

    #[test]
    fn shell_quoting_keeps_every_argument_whole() {
        assert_eq!(shell_quote("/usr/bin/svcbench"), "/usr/bin/svcbench");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn an_agent_elsewhere_is_not_pinned_here_and_ends_with_its_connection() {
        let mix = loadgen::RequestMix { templates: vec![], values: vec![], seed: 1 };
        let target = loadgen::Target { host: "h".into(), port: 1 };
        let mut c = LoadConfig::new(target, mix, Model::closed(4));
        c.cpu_affinity = Some(vec![0]);
        let at = SystemTime::UNIX_EPOCH;
        let here = agent_args(&c, "http://h:1/", Path::new("m.toml"), (0, 2), at, Remote::No);
        let there = agent_args(&c, "http://h:1/", Path::new("m.toml"), (1, 2), at, Remote::Yes);
        assert!(here.windows(2).any(|w| w == ["--cpus", "0"]) && !here.contains(&"--exit-with-stdin".to_string()));
        assert!(!there.contains(&"--cpus".to_string()) && there.contains(&"--exit-with-stdin".to_string()));
        assert!(here.windows(2).any(|w| w == ["-c", "2"]) && there.windows(2).any(|w| w == ["--agent", "2/2"]));
    }

    #[test]
    fn agents_run_equal_threads_and_every_one_gets_a_connection() {
        let mix = loadgen::RequestMix { templates: vec![], values: vec![], seed: 1 };
        let target = loadgen::Target { host: "h".into(), port: 1 };
        // 3 connections, 2 threads, 2 agents: 2 and 1 connections, so one thread each, or the second
        // agent would number its requests as if it had one thread and the first two.
        let mut c = LoadConfig::new(target, mix, Model::closed(3));
        c.threads = 2;
        let at = SystemTime::UNIX_EPOCH;
        for (i, conns) in [(0, "2"), (1, "1")] {
            let a = agent_args(&c, "http://h:1/", Path::new("m.toml"), (i, 2), at, Remote::No);
            assert!(a.windows(2).any(|w| w == ["-t", "1"]) && a.windows(2).any(|w| w == ["-c", conns]), "{a:?}");
        }
        let step = |connections| crate::profile::Step {
            load: Model::closed(connections),
            duration: Duration::from_secs(1),
            mix: None,
            upstream_delay_ms: None,
            fresh_start: false,
            keepalive: true,
            pacing: loadgen::Pacing::Timer,
        };
        let bundled = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../profiles");
        let e = check_split("quick", &[step(4), step(1)], 2, Some(&bundled)).unwrap_err().to_string();
        assert!(e.contains("`quick`, step c=1") && e.contains("2 generator agents"), "{e}");
        // It names the fix: the bundled profiles two agents can share, the others, or fewer agents.
        assert!(e.contains("at least 2 connections (bundled: --profile attempts, --profile replay)"), "{e}");
        assert!(e.contains("open-model") && e.contains("fewer agents") && !e.contains('\n'), "{e}");
        let e = check_split("quick", &[step(1)], 2, Some(Path::new("/nonexistent"))).unwrap_err().to_string();
        assert!(e.contains("write one, docs/profile.md"), "{e}");
        assert!(check_split("p", &[step(2)], 2, None).is_ok() && check_split("p", &[step(1)], 1, None).is_ok());
    }
}

//! The sandbox a service (or a dependency) runs in: a cgroup (v2 or v1) with CPU quota, memory cap, CPU
//! pinning and a process limit, plus its own process group. It knows nothing of HTTP. Teardown — on
//! success, error, Ctrl-C or crash — kills the whole process group and the whole cgroup at once (v2's
//! `cgroup.kill`, v1's freezer), then removes it.
pub mod cgroup;
pub mod cgroup_v1;
pub mod cgroup_v2;
pub mod container;
pub mod kernel_log;
pub mod listen_queue;
pub mod listening;
pub mod process;
pub mod procfs;
pub mod quiet_cpus;
pub mod sampler;
pub mod service_user;

use cgroup::CgroupBackend;
pub use cgroup::{CgroupChoice, Limits};
use process::Exit;
use sampler::Sample;
use std::fs::File;
use std::path::Path;
use std::process::Child;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Parent folder of every svcbench group in each hierarchy.
pub const CGROUP_PARENT: &str = "svcbench";
/// How long the processes of a group killed at once may take to be gone before they are killed one by one.
const WHOLE_KILL_WAIT: Duration = Duration::from_millis(300);

/// Reads a sandbox's figures at one moment.
pub trait Probe: Send + Sync {
    fn sample(&self) -> Sample;
    /// Seconds the sandbox's threads have waited for a CPU so far (read per step, not per sample: it
    /// walks every thread).
    fn runqueue_wait_s(&self) -> Option<f64> {
        None
    }
    /// The open files of the sandbox's process nearest its open-file limit; None where they cannot be read.
    fn open_files(&self) -> Option<sampler::OpenFiles> {
        None
    }
    /// Connection attempts dropped so far at the full accept queues of the sandbox's listening sockets
    /// (read around each step); None where they cannot be read.
    fn listen_drops(&self) -> Option<u64> {
        None
    }
    /// On every how many samples the sampler reads `open_files`: each one where the kernel counts a
    /// process's descriptors, once a second where they must be listed.
    fn open_files_every(&self) -> u64 {
        if procfs::fd_count_is_cheap() {
            1
        } else {
            sampler::SAMPLES_PER_SECOND
        }
    }
    /// One sample, with the open files when `open_files` (the sampler's turn for them). A probe that pays
    /// per question (another host's) answers both at once.
    fn sample_with_open_files(&self, open_files: bool) -> Sample {
        let mut s = self.sample();
        if open_files {
            s.open_files = self.open_files();
        }
        s
    }
}

pub(crate) struct CgroupProbe {
    pub(crate) cg: Arc<dyn CgroupBackend>,
    pub(crate) main_pid: i32,
}

impl Probe for CgroupProbe {
    fn sample(&self) -> Sample {
        let c = self.cg.counters();
        let pids = self.cg.pids();
        let p = procfs::totals(&pids);
        let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
        Sample {
            t_s: 0.0,
            cpu_s: c.cpu_ns.map(|n| n as f64 / 1e9).unwrap_or(p.cpu_ticks as f64 / procfs::ticks_per_second()),
            mem_mib: mib(c.mem_bytes.unwrap_or(p.rss_bytes)),
            rss_mib: mib(p.rss_bytes),
            threads: p.threads,
            throttled_s: c.throttled_ns.map(|n| n as f64 / 1e9).unwrap_or(0.0),
            oom_kills: c.oom_kills.unwrap_or(0),
            alive: procfs::stat(self.main_pid).is_some_and(|s| !s.zombie),
            open_files: None,
        }
    }

    fn runqueue_wait_s(&self) -> Option<f64> {
        Some(procfs::runqueue_wait_ns(&self.cg.pids()) as f64 / 1e9)
    }

    fn open_files(&self) -> Option<sampler::OpenFiles> {
        procfs::open_files(&self.cg.pids())
    }

    fn listen_drops(&self) -> Option<u64> {
        listen_queue::drops(&self.cg.pids())
    }
}

/// Without a cgroup: the process group's processes, from /proc (CPU time of processes that already ended
/// is lost, which is one reason this is only a fallback).
struct GroupProbe {
    pgid: i32,
}

impl Probe for GroupProbe {
    fn sample(&self) -> Sample {
        let p = procfs::totals(&procfs::group_pids(self.pgid));
        let mib = p.rss_bytes as f64 / (1024.0 * 1024.0);
        Sample {
            cpu_s: p.cpu_ticks as f64 / procfs::ticks_per_second(),
            mem_mib: mib,
            rss_mib: mib,
            threads: p.threads,
            alive: procfs::stat(self.pgid).is_some_and(|s| !s.zombie),
            ..Sample::default()
        }
    }

    fn open_files(&self) -> Option<sampler::OpenFiles> {
        procfs::open_files(&procfs::group_pids(self.pgid))
    }

    fn listen_drops(&self) -> Option<u64> {
        listen_queue::drops(&procfs::group_pids(self.pgid))
    }
}

/// Why a sandbox runs without a cgroup, naming the machine (the service's may be another host).
fn no_cgroup_warning(asked_none: bool, host: &str) -> String {
    let why = if asked_none { "--cgroup none" } else { "no cgroup hierarchy is mounted there" };
    format!("no cgroup in use on {host} ({why}): running WITHOUT CPU or memory limits")
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct StopOutcome {
    pub exit: Option<Exit>,
    /// From SIGTERM to exit (or to the kill when it did not exit in time).
    pub elapsed: Duration,
    /// Exited by itself within the grace period, without dying of a signal.
    pub graceful: bool,
}

pub struct Sandbox {
    name: String,
    cgroup: Option<Arc<dyn CgroupBackend>>,
    child: Option<Child>,
    pgid: i32,
    exit: Option<Exit>,
    /// The network namespace the processes start in (`--net`); None: svcbench's own.
    netns: Option<Arc<crate::network::NsHandle>>,
    /// The user the processes run as (uid, gid); None: svcbench's own.
    run_as: Option<(u32, u32)>,
    /// Loud, stored with the results: limits that could not be applied, and why.
    pub warnings: Vec<String>,
}

impl Sandbox {
    /// Creates the cgroup; where that is impossible (no cgroup, no write access) the sandbox runs without
    /// limits and says so in `warnings` — the run goes on, its figures flagged.
    pub fn new(name: &str, limits: &Limits, choice: CgroupChoice) -> Sandbox {
        let mut warnings = Vec::new();
        let asked = choice;
        let choice = if choice == CgroupChoice::Auto { cgroup::detect() } else { choice };
        let created: anyhow::Result<Option<Arc<dyn CgroupBackend>>> = match choice {
            CgroupChoice::V1 => cgroup_v1::CgroupV1::create(CGROUP_PARENT, name, limits, &mut warnings)
                .map(|g| Some(Arc::new(g) as Arc<dyn CgroupBackend>)),
            CgroupChoice::V2 => match cgroup::v2_mount() {
                Some(m) => cgroup_v2::CgroupV2::create(&m, CGROUP_PARENT, name, limits, &mut warnings)
                    .map(|g| Some(Arc::new(g) as Arc<dyn CgroupBackend>)),
                None => Err(anyhow::anyhow!("no cgroup v2 hierarchy is mounted")),
            },
            _ => Ok(None),
        };
        let cgroup = match created {
            Ok(c) => c,
            Err(e) => {
                warnings.push(format!("cgroup {choice:?} unusable ({e}): running WITHOUT CPU or memory limits"));
                None
            }
        };
        if cgroup.is_none() && choice == CgroupChoice::None {
            let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
            warnings.push(no_cgroup_warning(asked == CgroupChoice::None, host.trim()));
        }
        Sandbox {
            name: name.to_string(),
            cgroup,
            child: None,
            pgid: 0,
            exit: None,
            netns: None,
            run_as: None,
            warnings,
        }
    }

    /// Processes started from now on run on `host`'s network (its namespace, under `--net`).
    pub fn place_on(&mut self, host: &crate::network::Host) {
        self.netns = host.netns.clone();
    }

    /// Moves the running processes to other CPUs (cpu list syntax, "0" or "0-1"): a store that starts
    /// and loads its data on every CPU, then is measured on the generator's.
    pub fn pin(&self, set: &str) -> anyhow::Result<()> {
        self.cgroup.as_ref().map_or(Ok(()), |c| c.pin(set))
    }

    /// Processes started from now on run as this user (uid, gid): a store that refuses root.
    pub fn run_as(&mut self, ids: (u32, u32)) {
        self.run_as = Some(ids);
    }

    /// The limits the service really runs under, and how they differ from `asked` (empty: as asked).
    pub fn limits_held(&self, asked: &Limits) -> (cgroup::Applied, Vec<String>) {
        let Some(cg) = &self.cgroup else {
            let asked_any = asked.cpus.is_some() || asked.memory_bytes.is_some() || asked.cpuset.is_some();
            let why = if asked_any {
                vec!["no cgroup: no CPU quota, memory cap, cpuset or process limit held".to_string()]
            } else {
                vec![]
            };
            return (cgroup::Applied::default(), why);
        };
        let held = cg.applied();
        let mut mismatches = cgroup::mismatches(asked, &held);
        mismatches.extend(cgroup::pids_mismatch(asked, &held));
        (held, mismatches)
    }

    /// Forks and new threads refused so far at the cgroup's process limit; None without a count to read.
    pub fn pids_refused(&self) -> Option<u64> {
        self.cgroup.as_ref()?.counters().pids_refused
    }

    pub fn cgroup_version(&self) -> &'static str {
        self.cgroup.as_ref().map_or("none", |c| c.version())
    }

    pub fn start(
        &mut self,
        command: impl Into<process::StartCommand>,
        dir: &Path,
        env: &[(String, String)],
        log: File,
    ) -> anyhow::Result<()> {
        let files = self.cgroup.as_ref().map(|c| c.procs_files()).unwrap_or_default();
        let placement =
            process::Placement { procs_files: &files, netns: self.netns.as_ref().map(|n| n.fd()), run_as: self.run_as };
        let child = process::spawn(&command.into(), dir, env, &placement, log)?;
        self.pgid = child.id() as i32;
        self.child = Some(child);
        self.exit = None;
        self.register();
        Ok(())
    }

    /// Records the running part where a second Ctrl-C and a later svcbench can find it (guard/).
    fn register(&self) {
        crate::guard::register(crate::guard::Part {
            name: self.name.clone(),
            pgid: self.pgid,
            cgroups: self.cgroup.as_ref().map(|c| c.dirs()).unwrap_or_default(),
            engine: Vec::new(),
        });
    }

    #[cfg(test)]
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// The sandbox's live processes: its cgroup's, else its process group's.
    pub fn pids(&self) -> Vec<i32> {
        match &self.cgroup {
            Some(cg) => cg.pids(),
            None => procfs::group_pids(self.pgid),
        }
    }

    pub fn probe(&self) -> Arc<dyn Probe> {
        match &self.cgroup {
            Some(cg) => Arc::new(CgroupProbe { cg: cg.clone(), main_pid: self.pgid }),
            None => Arc::new(GroupProbe { pgid: self.pgid }),
        }
    }

    pub fn sample(&self) -> Sample {
        self.probe().sample()
    }

    /// Restarts the kernel's memory high-water mark; false where only the sampler's maximum is available.
    pub fn reset_peak(&self) -> bool {
        self.cgroup.as_ref().is_some_and(|c| c.reset_peak())
    }

    /// The kernel's memory high-water mark, where it keeps one that can be reset per step (v1).
    pub fn kernel_peak_mib(&self) -> Option<f64> {
        let c = self.cgroup.as_ref()?;
        if c.version() != "v1" {
            return None;
        }
        c.counters().mem_peak_bytes.map(|b| b as f64 / (1024.0 * 1024.0))
    }

    /// The exit of the main process, once it has ended.
    pub fn try_exit(&mut self) -> Option<Exit> {
        if self.exit.is_none() {
            if let Some(c) = self.child.as_mut() {
                if let Ok(Some(s)) = c.try_wait() {
                    self.exit = Some(s.into());
                }
            }
        }
        self.exit
    }

    /// Waits up to `timeout` for the main process to end by itself.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<Exit> {
        if self.exit.is_none() {
            if let Some(c) = self.child.as_mut() {
                self.exit = process::wait_timeout(c, timeout).ok().flatten();
            }
        }
        self.exit
    }

    /// SIGTERM to the process group, up to `grace` for it to end, then SIGKILL to everything.
    pub fn stop(&mut self, grace: Duration) -> StopOutcome {
        if let Some(exit) = self.try_exit() {
            self.kill_all();
            return StopOutcome { exit: Some(exit), elapsed: Duration::ZERO, graceful: false };
        }
        let t0 = Instant::now();
        process::signal_group(self.pgid, libc::SIGTERM);
        // In slices, so that a Ctrl-C cuts the grace short (the run is interrupted anyway).
        let mut exit = None;
        while exit.is_none() && t0.elapsed() < grace && !crate::guard::signals::interrupted() {
            exit = self.wait_exit(Duration::from_millis(100).min(grace.saturating_sub(t0.elapsed())));
        }
        let elapsed = t0.elapsed();
        self.kill_all();
        let graceful = exit.is_some_and(|e| e.signal.is_none());
        StopOutcome { exit: exit.or(self.exit), elapsed, graceful }
    }

    /// SIGKILL to the process group and to the whole cgroup at once, then waits (about a second at most)
    /// for them to be gone and reaps the main process. Where the kernel cannot kill the group at once, what
    /// `cgroup.procs` lists is killed again on each turn until nothing is left (and so it is after the
    /// kill at once, should a process outlive it).
    pub fn kill_all(&mut self) {
        let t0 = Instant::now();
        process::signal_group(self.pgid, libc::SIGKILL);
        let whole = self.cgroup.as_ref().is_some_and(|c| c.kill_whole());
        crate::poll::until(Duration::from_secs(1), Duration::from_millis(10), || {
            if !whole || t0.elapsed() > WHOLE_KILL_WAIT {
                process::signal_group(self.pgid, libc::SIGKILL);
                let pids = self.cgroup.as_ref().map(|c| c.pids()).unwrap_or_default();
                process::signal_pids(&pids, libc::SIGKILL);
            }
            if let Some(c) = self.child.as_mut() {
                if let Ok(Some(s)) = c.try_wait() {
                    self.exit.get_or_insert(s.into());
                }
            }
            let group_left = self.pgid > 1 && !procfs::group_pids(self.pgid).is_empty();
            let cg_left = self.cgroup.as_ref().is_some_and(|c| !c.pids().is_empty());
            let main_left = self.child.is_some() && self.exit.is_none();
            (!group_left && !cg_left && !main_left).then_some(())
        });
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        self.kill_all();
        if let Some(c) = &self.cgroup {
            if let Err(e) = c.remove() {
                crate::errln!("svcbench: warning: {e}");
            }
        }
        crate::guard::unregister(&self.name);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log() -> File {
        tempfile::tempfile().unwrap()
    }

    /// The sandbox's process group once its shell has a child (so the shell has run its first commands, its
    /// traps set): waited for, bounded, since a busy machine may take a while.
    fn group_with_a_child(sb: &Sandbox) -> i32 {
        let pgid = sb.pid().unwrap() as i32;
        crate::poll::until(Duration::from_secs(10), Duration::from_millis(20), || {
            (procfs::group_pids(pgid).len() >= 2).then_some(())
        });
        pgid
    }

    #[test]
    fn no_cgroup_names_the_machine_and_points_at_the_option_only_when_it_was_given() {
        let found_none = no_cgroup_warning(false, "bench5");
        assert!(found_none.contains("on bench5 (no cgroup hierarchy is mounted there)"), "{found_none}");
        assert!(!found_none.contains("--cgroup"), "{found_none}");
        assert!(no_cgroup_warning(true, "bench5").contains("on bench5 (--cgroup none)"));
    }

    #[test]
    fn stop_kills_the_whole_group_and_reports_graceful_exit() {
        let mut sb = Sandbox::new(&format!("unit-{}-a", std::process::id()), &Limits::default(), CgroupChoice::Auto);
        // A shell that traps TERM and exits 0, with a child that ignores TERM: the group kill must get it.
        sb.start(
            "sh -c 'trap \"exit 0\" TERM; (trap \"\" TERM; sleep 60) & while true; do sleep 0.05; done'",
            Path::new("/"),
            &[],
            log(),
        )
        .unwrap();
        let pgid = group_with_a_child(&sb);
        assert!(procfs::group_pids(pgid).len() >= 2);
        std::thread::sleep(Duration::from_millis(100));
        let out = sb.stop(Duration::from_secs(10));
        assert!(out.graceful, "{out:?}");
        assert!(procfs::group_pids(pgid).is_empty(), "processes left in the group");
    }

    /// A service that keeps starting processes which leave its process group (`(sleep &)`) from ever more
    /// processes, in a group of the cgroup version given; None where that version cannot be made here.
    fn forking(version: CgroupChoice, tag: &str) -> Option<(Sandbox, Arc<dyn CgroupBackend>)> {
        let limits = Limits { pids: Some(400), ..Limits::default() };
        let mut sb = Sandbox::new(&format!("unit-{}-{tag}", std::process::id()), &limits, version);
        let cg = sb.cgroup.clone()?;
        // Forkers that start forkers: whichever is killed last has forked again meanwhile.
        let forker = "while :; do (sleep 6011 &); done";
        sb.start(&format!("sh -c 'while :; do sh -c \"{forker}\" & sleep 0.01; done'"), Path::new("/"), &[], log())
            .unwrap();
        let many = crate::poll::until(Duration::from_secs(10), Duration::from_millis(5), || {
            (cg.pids().len() >= 300).then_some(())
        });
        assert!(many.is_some(), "{version:?}: the service did not fork");
        Some((sb, cg))
    }

    #[test]
    fn a_forking_group_is_killed_whole_in_one_pass() {
        for (version, tag) in [(CgroupChoice::V1, "fork1"), (CgroupChoice::V2, "fork2")] {
            let Some((mut sb, cg)) = forking(version, tag) else {
                eprintln!("skipped {version:?}: no such cgroup here");
                continue;
            };
            let t0 = Instant::now();
            assert!(cg.kill_whole(), "{version:?}: neither cgroup.kill nor the freezer");
            // Nothing more is sent: what the one kill missed would stay.
            let gone = crate::poll::until(Duration::from_secs(3), Duration::from_millis(2), || {
                let _ = sb.try_exit();
                cg.pids().is_empty().then_some(())
            });
            let took = t0.elapsed();
            let left = cg.pids().len();
            drop(sb);
            assert!(gone.is_some(), "{version:?}: {left} processes survived the kill");
            assert!(took < Duration::from_millis(500), "{version:?}: took {took:?}");
            eprintln!("{version:?}: removed whole in {took:?}");
        }
    }

    #[test]
    fn stop_of_a_process_ignoring_term_kills_it_after_grace() {
        let mut sb = Sandbox::new(&format!("unit-{}-b", std::process::id()), &Limits::default(), CgroupChoice::Auto);
        sb.start("sh -c 'trap \"\" TERM; while true; do sleep 0.05; done'", Path::new("/"), &[], log()).unwrap();
        // Its first `sleep` means the trap is set (a fixed pause could end before the shell ran it).
        group_with_a_child(&sb);
        let out = sb.stop(Duration::from_millis(300));
        assert!(!out.graceful);
        assert!(out.elapsed >= Duration::from_millis(300));
        assert_eq!(out.exit.and_then(|e| e.signal), Some(9));
    }
}

//! One service as a container: the engine runs the image in the foreground (its exit is the container's,
//! its output the service's log) under the run's CPU quota, memory cap (swap equal to it), CPU set and pids
//! limit, confined whatever its image holds (confinement.rs: no capability but those asked, no new
//! privileges, a read-only root, a non-root user; read back from its process, or the start is refused),
//! in a cgroup parent of svcbench's own (`/svcbench/<run's sandbox name>`). The container's cgroup is
//! read back from the kernel (/proc/<pid>/cgroup of the process found in it), so the sampler, the per-step
//! high-water mark, CPU time and the limits held come from the same files as for a process.
use super::confinement;
use super::engine::{Engine, Kind, COMMAND_TIMEOUT};
use super::kube;
use super::spec::{container_name, ContainerSpec};
use crate::guard::{EngineKind, EngineObject};
use crate::sandbox::cgroup::{self, Applied, CgroupBackend};
use crate::sandbox::process::Exit;
use crate::sandbox::sampler::Sample;
use crate::sandbox::{CgroupProbe, Limits, Probe, StopOutcome, CGROUP_PARENT};
use anyhow::{bail, Result};
use std::fs::File;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// What the sampler's probe and the sandbox share: the container's cgroup once found, its last sample (kept
/// when the engine removes the group with the container) and what the engine says of its end.
#[derive(Default)]
struct Shared {
    group: Mutex<Option<(Arc<dyn CgroupBackend>, i32)>>,
    applied: Mutex<Option<Applied>>,
    /// What the kernel held the container's process to when it was found (None: it was gone by then).
    confinement: Mutex<Option<confinement::Held>>,
    /// Where the container's process was when its limits did not settle (for the warning).
    unsettled: Mutex<Option<String>>,
    last: Mutex<Sample>,
    ended: AtomicBool,
    /// An OOM kill known at the container's end (the engine's verdict or the kernel's log), its group gone.
    oom_at_exit: AtomicU64,
    /// A played pod's `kube play`, until it ends, and its end when it failed (the container never ran).
    play: Mutex<Option<Child>>,
    play_failed: Mutex<Option<Exit>>,
    /// A played pod's `podman wait` on its container: its end is the container's.
    waiter: Mutex<Option<Child>>,
}

/// Where the container's cgroup is: its parent, relative to each hierarchy's root, and in a pod the name
/// of the container's own group (the pod's infra container has one beside it).
#[derive(Debug, Clone)]
struct Place {
    parent: std::path::PathBuf,
    only: Option<String>,
}

impl Place {
    /// `<engine> run --cgroup-parent=/svcbench/<run>`: the one group holding a process under it.
    fn of_run(name: &str) -> Place {
        Place { parent: std::path::Path::new(CGROUP_PARENT).join(name), only: None }
    }
}

struct ContainerProbe {
    shared: Arc<Shared>,
}

impl Probe for ContainerProbe {
    fn sample(&self) -> Sample {
        let found = self.shared.group.lock().unwrap().clone();
        let exit_ooms = self.shared.oom_at_exit.load(Ordering::Relaxed);
        let mut last = self.shared.last.lock().unwrap();
        let Some((cg, pid)) = found else {
            // Not started yet: alive, nothing counted.
            return Sample { alive: !self.shared.ended.load(Ordering::Relaxed), ..Sample::default() };
        };
        if cg.counters().cpu_ns.is_none() {
            // The engine removed the group with the container: its last figures stand.
            return Sample { alive: false, oom_kills: last.oom_kills.max(exit_ooms), ..last.clone() };
        }
        let mut s = CgroupProbe { cg: cg.clone(), main_pid: pid }.sample();
        s.oom_kills = s.oom_kills.max(exit_ooms);
        // Alive while anything runs in the container's group: the pid it was found by may be the
        // runtime's, gone once the service runs.
        s.alive = !self.shared.ended.load(Ordering::Relaxed) && !cg.pids().is_empty();
        *last = s.clone();
        s
    }

    fn runqueue_wait_s(&self) -> Option<f64> {
        let (cg, _) = self.shared.group.lock().unwrap().clone()?;
        Some(crate::sandbox::procfs::runqueue_wait_ns(&cg.pids()) as f64 / 1e9)
    }

    fn open_files(&self) -> Option<crate::sandbox::sampler::OpenFiles> {
        let (cg, _) = self.shared.group.lock().unwrap().clone()?;
        crate::sandbox::procfs::open_files(&cg.pids())
    }

    fn listen_drops(&self) -> Option<u64> {
        let (cg, _) = self.shared.group.lock().unwrap().clone()?;
        crate::sandbox::listen_queue::drops(&cg.pids())
    }
}

pub struct ContainerSandbox {
    engine: Engine,
    spec: ContainerSpec,
    /// The container's name for the engine's commands.
    container: String,
    /// The engine's `run`, in the foreground: its end is the container's (None for a played pod).
    child: Mutex<Option<Child>>,
    /// A played pod (`--runtime kube`): its name and the service's log, which gets the container's output.
    kube: Option<(String, Mutex<File>)>,
    exit: Mutex<Option<Exit>>,
    shared: Arc<Shared>,
    removed: bool,
    pub warnings: Vec<String>,
}

/// The run's cgroup parent, from each hierarchy's root: the engine puts the container's group under it,
/// and the kernel names it in an OOM kill's record.
fn group_of_run(name: &str) -> String {
    format!("/{CGROUP_PARENT}/{name}")
}

/// The words of `run` for a spec.
fn run_args(engine: &Engine, spec: &ContainerSpec) -> Result<Vec<String>> {
    let mut a: Vec<String> = vec!["run".into(), "--name".into(), container_name(&spec.name)];
    a.push(format!("--cgroup-parent={}", group_of_run(&spec.name)));
    if let Some(c) = spec.limits.cpus {
        a.push(format!("--cpus={c}"));
    }
    if let Some(b) = spec.limits.memory_bytes {
        // Swap equal to the cap: no swap, as for a process.
        a.push(format!("--memory={b}"));
        a.push(format!("--memory-swap={b}"));
    }
    if let Some(set) = &spec.limits.cpuset {
        a.push(format!("--cpuset-cpus={set}"));
    }
    a.push(format!("--pids-limit={}", spec.pids_limit));
    match (&spec.netns, engine.kind) {
        (None, _) => a.push("--network=host".into()),
        (Some(ns), Kind::Podman) => a.push(format!("--network=ns:/run/netns/{ns}")),
        (Some(_), Kind::Docker) => bail!(
            "a container under --net needs Podman (Docker cannot join a namespace by its path): write engine = \
             \"podman\" in the manifest's [container], or run without --net"
        ),
    }
    // Confined whatever the image holds (confinement.rs): no capability but those asked, no way back to
    // root through a setuid file, nothing written outside /tmp and the dependencies' folders.
    a.push(format!("--user={}", spec.user));
    a.push("--cap-drop=ALL".into());
    for c in &spec.capabilities {
        a.push(format!("--cap-add={c}"));
    }
    a.push("--security-opt=no-new-privileges".into());
    a.push("--read-only".into());
    a.push(format!("--tmpfs={}:{}", confinement::TMP_MOUNT, confinement::TMP_OPTIONS));
    for m in &spec.mounts {
        a.push(format!("--volume={m}:{m}"));
    }
    for (k, v) in &spec.labels {
        a.push(format!("--label={k}={v}"));
    }
    for (k, v) in &spec.env {
        a.push("--env".into());
        a.push(format!("{k}={v}"));
    }
    a.push(spec.image.clone());
    a.extend(spec.args.iter().cloned());
    Ok(a)
}

/// Every cgroup hierarchy's folder for this run's cgroup parent (the engine makes them in each one).
fn parent_dirs(name: &str) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for (fs, mount, _) in cgroup::mounts() {
        if fs == "cgroup" || fs == "cgroup2" {
            let d = mount.join(CGROUP_PARENT).join(name);
            if !out.contains(&d) {
                out.push(d);
            }
        }
    }
    out
}

/// Removes the run's cgroup parent in every hierarchy, its leftover children first (Podman's `conmon`).
pub fn remove_parent_groups(name: &str) {
    for d in parent_dirs(name) {
        if let Ok(rd) = std::fs::read_dir(&d) {
            for e in rd.flatten().filter(|e| e.file_type().is_ok_and(|t| t.is_dir())) {
                let _ = cgroup::rmdir_retry(&e.path());
            }
        }
        let _ = cgroup::rmdir_retry(&d);
    }
}

/// The container's own group, found as the group under the run's parent that holds a process, then read
/// back from that process's /proc/<pid>/cgroup.
fn find_group(place: &Place) -> Option<(Arc<dyn CgroupBackend>, i32)> {
    let pid = find_process(place)?;
    group_of(pid).map(|g| (g, pid))
}

/// A process in the container's group (not the runtime's own), found in the memory hierarchy (v1) or the
/// unified one.
fn find_process(place: &Place) -> Option<i32> {
    let v1 = cgroup::v1_mount("memory");
    let base = match &v1 {
        Some(m) => m.join(&place.parent),
        None => cgroup::v2_mount()?.join(&place.parent),
    };
    for e in std::fs::read_dir(&base).ok()?.flatten() {
        if e.file_name() == "conmon" || !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        if place.only.as_ref().is_some_and(|only| e.file_name().to_str() != Some(only.as_str())) {
            continue;
        }
        let Some(&pid) = cgroup::read_pids(&e.path().join("cgroup.procs")).first() else { continue };
        // The runtime's init joins the group before it sets the limits, and execs the service after.
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if !comm.is_empty() && !comm.starts_with("runc") {
            return Some(pid);
        }
    }
    None
}

/// The process's group in every hierarchy it is in, as /proc/<pid>/cgroup says now.
fn group_of(pid: i32) -> Option<Arc<dyn CgroupBackend>> {
    if cgroup::v1_mount("memory").is_some() {
        crate::sandbox::cgroup_v1::CgroupV1::of_process(pid).map(|g| Arc::new(g) as _)
    } else {
        crate::sandbox::cgroup_v2::CgroupV2::of_process(pid).map(|g| Arc::new(g) as _)
    }
}

/// The container's process and its groups, as /proc says, for a warning about limits that did not settle.
fn whereabouts(pid: i32) -> String {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    let groups = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).unwrap_or_default();
    let groups: Vec<&str> = groups.lines().filter(|l| l.contains("cpu") || l.contains("memory")).collect();
    format!("the container's process {pid} ({}) is in {}", comm.trim(), groups.join(", "))
}

/// The container's process, its groups and the limits they hold once the runtime has set them. The
/// runtime joins a process of its own to the groups before it writes the limits, one hierarchy after
/// another (memory before cpu under v1), and that process may end before the service's starts: the
/// process is found again, with its groups and their limits, until they hold what was asked, or for
/// [`SETTLE`], so that a real mismatch is still seen as one.
type Settled = (Arc<dyn CgroupBackend>, i32, Applied);

fn settled_limits(place: &Place, found: (Arc<dyn CgroupBackend>, i32), asked: &Limits) -> Settled {
    let now = || {
        let pid = find_process(place)?;
        let g = group_of(pid)?;
        let held = g.applied();
        Some((g, pid, held))
    };
    crate::poll::until(SETTLE, Duration::from_millis(2), || {
        now().filter(|(_, _, held)| cgroup::mismatches(asked, held).is_empty())
    })
    .or_else(now)
    .unwrap_or_else(|| {
        let held = found.0.applied();
        (found.0, found.1, held)
    })
}

/// Finds the container's group (bounded) and reads its limits once they have settled, for the probe and
/// the sandbox (on the starter's own thread, so that the readiness wait starts at once).
fn find_and_settle(finder: &Shared, place: &Place, asked: &Limits, pids_limit: u32, capabilities: &[String]) {
    let t0 = Instant::now();
    while t0.elapsed() < FIND_TIMEOUT && !finder.ended.load(Ordering::Relaxed) {
        if let Some((g, pid)) = find_group(place) {
            let (g, pid, applied) = settled_limits(place, (g, pid), asked);
            *finder.confinement.lock().unwrap() = settled_confinement(place, pids_limit, capabilities);
            if !cgroup::mismatches(asked, &applied).is_empty() {
                let mut unsettled = finder.unsettled.lock().unwrap();
                let before = unsettled.take().map(|w| format!("{w}; ")).unwrap_or_default();
                *unsettled = Some(format!("{before}{}", whereabouts(pid)));
            }
            *finder.applied.lock().unwrap() = Some(applied);
            *finder.group.lock().unwrap() = Some((g, pid));
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// What the container's process is held to (confinement.rs) once it runs the image's program: a process
/// found while the runtime is still setting the container up (uid 0, every capability, the host's mounts)
/// is found again until what it holds is what was asked, or for [`SETTLE`], so that a container that is
/// not confined is still seen as one.
fn settled_confinement(place: &Place, pids_limit: u32, capabilities: &[String]) -> Option<confinement::Held> {
    let now = || confinement::held(find_process(place)?);
    crate::poll::until(SETTLE, Duration::from_millis(2), || {
        now().filter(|h| confinement::shortfalls(h, capabilities, pids_limit).is_empty())
    })
    .or_else(now)
}

/// How long the runtime may take to write the limits once the container's process is in its group.
const SETTLE: Duration = Duration::from_secs(5);

/// How long the container's group may take to appear after `run` (the engine's own set-up).
const FIND_TIMEOUT: Duration = Duration::from_secs(60);

impl ContainerSandbox {
    /// Starts the container; its output goes to `log`.
    pub fn start(engine: &Engine, spec: ContainerSpec, log: File) -> Result<ContainerSandbox> {
        let args = run_args(engine, &spec)?;
        let err = log.try_clone()?;
        let program = std::path::PathBuf::from(&engine.program);
        let child = crate::sandbox::process::spawn_program(
            &program,
            &args,
            crate::child::Needs::Engine,
            None,
            Stdio::null(),
            log,
            err,
        )?;
        let container = container_name(&spec.name);
        crate::guard::register(crate::guard::Part {
            name: spec.name.clone(),
            pgid: child.id() as i32,
            engine: vec![EngineObject { kind: EngineKind::Container, name: container.clone(), id: None }],
            ..Default::default()
        });
        let shared = Arc::new(Shared::default());
        // Found on a thread of its own, so that the readiness wait starts at once.
        let (finder, place, asked) = (shared.clone(), Place::of_run(&spec.name), spec.limits.clone());
        let (engine2, part, pids_limit, caps) =
            (engine.clone(), spec.name.clone(), spec.pids_limit, spec.capabilities.clone());
        std::thread::spawn(move || {
            find_and_settle(&finder, &place, &asked, pids_limit, &caps);
            // It exists once its process runs: its id is what a later svcbench removes.
            if let Ok(id) = engine2.run(&["inspect", "--format", "{{.Id}}", &container], COMMAND_TIMEOUT) {
                crate::guard::record_engine_id(&part, &container, id.trim());
            }
        });
        Ok(ContainerSandbox {
            engine: engine.clone(),
            container: container_name(&spec.name),
            spec,
            child: Mutex::new(Some(child)),
            kube: None,
            exit: Mutex::new(None),
            shared,
            removed: false,
            warnings: Vec::new(),
        })
    }

    /// Plays the Pod spec written at `pod_file` (named `pod`) with `podman kube play`; its output, then the
    /// container's, goes to `log`.
    pub fn start_kube(engine: &Engine, spec: ContainerSpec, pod: &str, pod_file: &Path, log: File) -> Result<Self> {
        kube::check_engine(engine)?;
        let play = kube::play(engine, pod_file, &log)?;
        crate::guard::register(crate::guard::Part {
            name: spec.name.clone(),
            pgid: play.id() as i32,
            engine: vec![EngineObject { kind: EngineKind::Pod, name: pod.to_string(), id: None }],
            ..Default::default()
        });
        let shared = Arc::new(Shared::default());
        *shared.play.lock().unwrap() = Some(play);
        let (finder, engine2, pod2, asked) = (shared.clone(), engine.clone(), pod.to_string(), spec.limits.clone());
        let (pids_limit, part, caps) = (spec.pids_limit, spec.name.clone(), spec.capabilities.clone());
        std::thread::spawn(move || {
            // The pod's ids, and so its cgroup, are known once the play has ended.
            let played = crate::poll::until(FIND_TIMEOUT, Duration::from_millis(5), || {
                let mut play = finder.play.lock().unwrap();
                let status = play.as_mut()?.try_wait().ok().flatten()?;
                play.take();
                Some(status)
            });
            let failed = |why: String, code: Option<i32>| {
                *finder.unsettled.lock().unwrap() = Some(why);
                *finder.play_failed.lock().unwrap() = Some(container_exit(code));
            };
            // Made (whole or in part) once the play has ended: its id is what a later svcbench removes.
            if let Ok(id) = engine2.run(&["pod", "inspect", "--format", "{{.Id}}", &pod2], COMMAND_TIMEOUT) {
                crate::guard::record_engine_id(&part, &pod2, id.trim());
            }
            match played {
                Some(s) if s.success() => {}
                Some(s) => return failed(format!("`podman kube play` failed ({s})"), s.code()),
                None => return failed("`podman kube play` did not end".into(), None),
            }
            let place = match kube::placement(&engine2, &pod2) {
                Ok((parent, only)) => Place { parent, only: Some(only) },
                Err(e) => return failed(format!("the played pod's container was not found: {e:#}"), None),
            };
            match kube::waiter(&engine2, &pod2) {
                Ok(w) => *finder.waiter.lock().unwrap() = Some(w),
                Err(e) => return failed(format!("{e:#}"), None),
            }
            if let Err(e) = kube::apply_beyond_spec(&engine2, &pod2, &asked) {
                *finder.unsettled.lock().unwrap() = Some(format!("the CPU set could not be set: {e:#}"));
            }
            // A Pod cannot ask for a pids limit (a kubelet's podPidsLimit): written as a kubelet does, on
            // the container's own group, then read back with the rest of its confinement.
            kube::hold_pids(&place.parent, place.only.as_deref().unwrap_or_default(), pids_limit);
            find_and_settle(&finder, &place, &asked, pids_limit, &caps);
        });
        Ok(ContainerSandbox {
            engine: engine.clone(),
            container: kube::container_of(pod),
            spec,
            child: Mutex::new(None),
            kube: Some((pod.to_string(), Mutex::new(log))),
            exit: Mutex::new(None),
            shared,
            removed: false,
            warnings: Vec::new(),
        })
    }

    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// The engine's `run` once it has ended (kept: a child is reaped once).
    fn ended(&self) -> Option<Exit> {
        let mut exit = self.exit.lock().unwrap();
        if exit.is_some() {
            return *exit;
        }
        if let Some(child) = self.child.lock().unwrap().as_mut() {
            if let Ok(Some(status)) = child.try_wait() {
                *exit = Some(container_exit(status.code()));
            }
        } else if let Some(failed) = *self.shared.play_failed.lock().unwrap() {
            *exit = Some(failed);
        } else if let Some(w) = self.shared.waiter.lock().unwrap().as_mut() {
            if let Ok(Some(status)) = w.try_wait() {
                *exit = Some(container_exit(kube::waited_code(w).or(status.code())));
            }
        }
        *exit
    }

    /// Waits (bounded) for the container's group to be found; false when it never was.
    fn wait_found(&self) -> bool {
        crate::poll::until(FIND_TIMEOUT, Duration::from_millis(2), || {
            if self.shared.group.lock().unwrap().is_some() {
                return Some(true);
            }
            self.ended().map(|_| false)
        })
        .unwrap_or(false)
    }

    /// The limits the container's cgroup holds, as read back when it was found (it may be gone since).
    pub fn limits_held(&self, asked: &Limits) -> (Applied, Vec<String>) {
        if !self.wait_found() {
            return (
                Applied::default(),
                vec!["the container's cgroup was never found: no limit could be read back".into()],
            );
        }
        let held = self.shared.applied.lock().unwrap().clone().unwrap_or_default();
        let mut mismatches = cgroup::mismatches(asked, &held);
        if let (false, Some(w)) = (mismatches.is_empty(), self.shared.unsettled.lock().unwrap().clone()) {
            mismatches.push(w);
        }
        (held, mismatches)
    }

    /// The one line refusing a container that is not confined as asked (confinement.rs), read from its
    /// process when it was found; None when it is, or when it ended before it was found (its exit says why).
    pub fn confinement_refusal(&self) -> Option<String> {
        if !self.wait_found() {
            return None;
        }
        let held = self.shared.confinement.lock().unwrap().clone();
        let shortfalls = match held {
            Some(h) => confinement::shortfalls(&h, &self.spec.capabilities, self.spec.pids_limit),
            None => vec!["its process could not be read".into()],
        };
        (!shortfalls.is_empty()).then(|| confinement::refusal(&self.container, &shortfalls))
    }

    pub fn cgroup_version(&self) -> &'static str {
        self.shared.group.lock().unwrap().as_ref().map_or("none", |(g, _)| g.version())
    }

    pub fn probe(&self) -> Arc<dyn Probe> {
        Arc::new(ContainerProbe { shared: self.shared.clone() })
    }

    pub fn reset_peak(&self) -> bool {
        self.shared.group.lock().unwrap().as_ref().is_some_and(|(g, _)| g.reset_peak())
    }

    pub fn kernel_peak_mib(&self) -> Option<f64> {
        let found = self.shared.group.lock().unwrap().clone();
        let (g, _) = found?;
        (g.version() == "v1").then(|| g.counters().mem_peak_bytes.map(|b| b as f64 / 1048576.0)).flatten()
    }

    pub fn pids(&self) -> Vec<i32> {
        self.shared.group.lock().unwrap().as_ref().map(|(g, _)| g.pids()).unwrap_or_default()
    }

    /// When the engine says the container started (its `StartedAt`).
    pub fn engine_started_at(&self) -> Option<SystemTime> {
        let text =
            self.engine.run(&["inspect", "--format", "{{.State.StartedAt}}", &self.container], COMMAND_TIMEOUT).ok()?;
        parse_engine_time(&text)
    }

    /// The container's end, once `run` has returned: its exit code, or the signal that ended it (an engine
    /// reports a death by signal N as code 128+N). The engine's OOM verdict is read then, before the
    /// container (and its cgroup's counter) are removed.
    pub fn try_exit(&mut self) -> Option<Exit> {
        let exit = self.ended()?;
        if !self.shared.ended.swap(true, Ordering::Relaxed) {
            {
                let oom =
                    self.engine.run(&["inspect", "--format", "{{.State.OOMKilled}}", &self.container], COMMAND_TIMEOUT);
                // The kernel's log as well: the engine's verdict misses some kills at the cap.
                let group = group_of_run(&self.spec.name);
                if oom.is_ok_and(|t| t.trim() == "true") || crate::sandbox::kernel_log::oom_kill_in(&group) {
                    self.shared.oom_at_exit.store(1, Ordering::Relaxed);
                }
            }
        }
        Some(exit)
    }

    pub fn wait_exit(&mut self, timeout: Duration) -> Option<Exit> {
        crate::poll::until(timeout, Duration::from_millis(5), || self.try_exit())
    }

    /// `stop` with the grace in whole seconds (the engine's unit), then the container removed.
    pub fn stop(&mut self, grace: Duration) -> StopOutcome {
        if let Some(exit) = self.try_exit() {
            self.remove();
            return StopOutcome { exit: Some(exit), elapsed: Duration::ZERO, graceful: false };
        }
        let t0 = Instant::now();
        let secs = grace.as_secs_f64().ceil().max(1.0) as u64;
        let name = self.container.clone();
        let _ = self.engine.run(&["stop", "-t", &secs.to_string(), &name], grace + COMMAND_TIMEOUT);
        let exit = self.wait_exit(Duration::from_secs(10));
        let elapsed = t0.elapsed();
        self.remove();
        let graceful = exit.is_some_and(|e| e.code == Some(0)) && elapsed <= grace + Duration::from_millis(500);
        StopOutcome { exit, elapsed, graceful }
    }

    /// Removes the container (the engine ends it first if it runs) and the run's cgroup parent.
    fn remove(&mut self) {
        if self.removed {
            return;
        }
        self.removed = true;
        let _ = self.try_exit();
        self.shared.ended.store(true, Ordering::Relaxed);
        if let Some((pod, log)) = &self.kube {
            self.remove_pod(pod, log);
            crate::guard::unregister(&self.spec.name);
            return;
        }
        let _ = self.engine.run(&["rm", "-f", &self.container], COMMAND_TIMEOUT);
        if self.ended().is_none() {
            if let Some(child) = self.child.lock().unwrap().as_mut() {
                let _ = child.kill();
                if let Ok(status) = child.wait() {
                    self.exit.lock().unwrap().get_or_insert(container_exit(status.code()));
                }
            }
        }
        remove_parent_groups(&self.spec.name);
        crate::guard::unregister(&self.spec.name);
    }

    /// A played pod's end: the play ended if it still runs, the container's output kept in the service's
    /// log, then the pod removed with its containers and cgroup (Podman's own, `/libpod_parent/<pod id>`).
    fn remove_pod(&self, pod: &str, log: &Mutex<File>) {
        if let Some(mut play) = self.shared.play.lock().unwrap().take() {
            let _ = play.kill();
            let _ = play.wait();
        }
        kube::save_logs(&self.engine, pod, &mut log.lock().unwrap());
        kube::remove(&self.engine, pod);
        // `podman wait` ends with the container; the pod's removal ends it otherwise.
        if let Some(mut w) = self.shared.waiter.lock().unwrap().take() {
            if crate::poll::until(Duration::from_secs(10), Duration::from_millis(10), || w.try_wait().ok().flatten())
                .is_none()
            {
                let _ = w.kill();
                let _ = w.wait();
            }
        }
    }

    /// The last lines of the container's output, from the engine.
    pub fn log_tail(&self, lines: usize) -> Option<String> {
        let text = self.engine.run(&["logs", "--tail", &lines.to_string(), &self.container], COMMAND_TIMEOUT).ok()?;
        let tail: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        (!tail.is_empty()).then(|| tail.join(" | "))
    }
}

impl Drop for ContainerSandbox {
    fn drop(&mut self) {
        self.remove();
    }
}

/// An engine's exit code as an exit: 128+N is death by signal N (the shell's and the engines' convention).
fn container_exit(code: Option<i32>) -> Exit {
    match code {
        Some(c) if (129..=159).contains(&c) => Exit { code: None, signal: Some(c - 128) },
        _ => Exit { code, signal: None },
    }
}

/// The engines' `StartedAt`: Podman's "2026-11-26 20:03:34.44827249 +0000 UTC" or Docker's RFC 3339.
pub fn parse_engine_time(text: &str) -> Option<SystemTime> {
    let t = text.trim();
    let parsed = chrono::DateTime::parse_from_rfc3339(t)
        .ok()
        .or_else(|| chrono::DateTime::parse_from_str(t.trim_end_matches(" UTC"), "%Y-%m-%d %H:%M:%S%.f %z").ok())?;
    Some(SystemTime::from(parsed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::container::spec::LABEL_SESSION;

    #[test]
    fn both_engines_start_times_are_read() {
        let podman = parse_engine_time("2026-11-26 20:03:34.44827249 +0000 UTC").unwrap();
        let docker = parse_engine_time("2026-11-26T20:03:34.44827249Z").unwrap();
        assert_eq!(podman, docker);
        assert!(parse_engine_time("0001-01-01 00:00:00 +0000 UTC").is_some());
        assert!(parse_engine_time("yesterday").is_none());
    }

    #[test]
    fn a_death_by_signal_is_told_from_an_exit_code() {
        assert_eq!(container_exit(Some(137)), Exit { code: None, signal: Some(9) });
        assert_eq!(container_exit(Some(0)), Exit { code: Some(0), signal: None });
        assert_eq!(container_exit(Some(2)), Exit { code: Some(2), signal: None });
    }

    #[test]
    fn limits_and_network_reach_the_engine() {
        let spec = ContainerSpec {
            name: "1-x".into(),
            image: "img:1".into(),
            args: vec!["--flag".into()],
            env: vec![("PORT".into(), "8080".into())],
            limits: Limits { cpus: Some(0.5), memory_bytes: Some(64 << 20), cpuset: Some("1".into()), pids: None },
            pids_limit: 512,
            capabilities: vec!["NET_BIND_SERVICE".into()],
            netns: Some("svcb-1-svc".into()),
            user: "65534:65534".into(),
            labels: vec![(LABEL_SESSION.into(), "7".into())],
            mounts: vec!["/tmp/svcbench-sqlite-x".into()],
        };
        let podman = Engine { kind: Kind::Podman, program: "podman".into() };
        let a = run_args(&podman, &spec).unwrap().join(" ");
        for want in [
            "--cgroup-parent=/svcbench/1-x",
            "--cpus=0.5",
            "--memory=67108864 --memory-swap=67108864",
            "--cpuset-cpus=1",
            "--pids-limit=512",
            "--network=ns:/run/netns/svcb-1-svc",
            "--user=65534:65534 --cap-drop=ALL --cap-add=NET_BIND_SERVICE --security-opt=no-new-privileges --read-only",
            "--tmpfs=/tmp:rw,nosuid,nodev,mode=1777",
            "--label=svcbench.session=7",
            "--env PORT=8080",
            "--volume=/tmp/svcbench-sqlite-x:/tmp/svcbench-sqlite-x",
            "img:1 --flag",
        ] {
            assert!(a.contains(want), "{want} missing from {a}");
        }
        let docker = Engine { kind: Kind::Docker, program: "docker".into() };
        assert!(run_args(&docker, &spec).is_err(), "Docker cannot join a namespace by path");
    }
}

//! Building a service with its own build command (cargo, go, mvn, npm), once per session and only when its
//! inputs changed since the last successful build (build_stamp.rs), timed, with its output kept in a log
//! file (shown in part when it fails). A build runs as svcbench's user (it needs that user's toolchains and
//! caches), with the toolchains' variables alone of its environment, in a session of its own (no terminal)
//! whose process group is ended whole at its `build_timeout` and on Ctrl-C.
use super::build_stamp;
use crate::manifest::Service;
use crate::sandbox::process::{signal_group, wait_timeout};
use crate::sandbox::service_user;
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long a build ended by svcbench has between SIGTERM and SIGKILL.
const BUILD_STOP_GRACE: Duration = Duration::from_secs(5);

pub struct Built {
    pub seconds: f64,
    /// None when the manifest names no artifacts.
    pub artifact_bytes: Option<u64>,
}

/// What the service ships, in bytes: its artifacts, or its image for a container service (built or pulled
/// here where missing).
pub fn artifact_bytes(svc: &Service, log_dir: &Path) -> Result<Option<u64>> {
    if svc.manifest.container.is_some() {
        return super::container_start::ensure_image(svc, log_dir).map(Some);
    }
    svc.artifact_bytes()
}

pub fn build(svc: &Service, log_dir: &Path, skip: bool) -> Result<Built> {
    // Before any build: a service its user cannot reach would fail only at its start (a container's
    // user is inside its image), and a container's image needs the local base it builds on.
    match &svc.manifest.container {
        None => service_user::check_reachable(
            service_user::for_service(svc.manifest.run_as, service_user::Account::Main)?.as_ref(),
            &svc.dir,
            None,
            "",
        )?,
        Some(_) => super::container_start::check_bases(svc, &super::container_start::engine(svc)?)?,
    }
    let mut seconds = 0.0;
    if let (Some(cmd), false) = (&svc.manifest.build, skip) {
        if let Some(stamp) = build_stamp::fresh(svc) {
            crate::errln!(
                "svcbench: {} is up to date: its files, build command and environment are as its build of {:.1} s \
                 left them ({})",
                svc.name(),
                stamp.seconds,
                stamp.built_at
            );
            return Ok(Built { seconds: stamp.seconds, artifact_bytes: artifact_bytes(svc, log_dir)? });
        }
        build_stamp::remove(svc);
        let log_path = log_dir.join(format!("build-{}.log", svc.name()));
        let log = crate::safe_fs::create_file(&log_path)?;
        let env: Vec<String> = svc.manifest.build_env.iter().map(|(k, v)| format!("{k}={v} ")).collect();
        crate::errln!("svcbench: building {} ({}{cmd})", svc.name(), env.concat());
        let (t0, started) = (Instant::now(), build_stamp::file_clock_now());
        // A session of its own (no terminal, its own process group, ended whole); svcbench's user's
        // toolchain settings, not its whole environment (child.rs); the manifest's build_env on top.
        let child = crate::child::part("/bin/sh", crate::child::Needs::Toolchains)
            .arg("-c")
            .arg(cmd)
            .current_dir(&svc.dir)
            .envs(&svc.manifest.build_env)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("cannot run the build of {}", svc.name()))?;
        let status = wait_bounded(child, svc, &log_path)?;
        seconds = t0.elapsed().as_secs_f64();
        if !status.success() {
            let tail = crate::bounded::last_lines(&log_path, 3, crate::bounded::MESSAGE_LINE_CHARS);
            bail!("build of {} failed ({status}): {} (full log: {})", svc.name(), tail.join(" | "), log_path.display());
        }
        crate::errln!("svcbench: built {} in {seconds:.1} s", svc.name());
        // Only a cache: without a stamp (an artifact missing, a read-only folder) the next run builds again.
        let _ = build_stamp::write(svc, seconds, started);
    }
    Ok(Built { seconds, artifact_bytes: artifact_bytes(svc, log_dir)? })
}

/// Waits for the build, ending its whole process group at the build's time limit or when svcbench is
/// asked to stop; registered meanwhile, so that a second Ctrl-C ends it with everything else.
fn wait_bounded(mut child: Child, svc: &Service, log_path: &Path) -> Result<ExitStatus> {
    let pgid = child.id() as i32;
    let part = format!("build-{}-{pgid}", svc.name());
    crate::guard::register(crate::guard::Part { name: part.clone(), pgid, ..Default::default() });
    let limit = svc.build_timeout();
    let ended = crate::poll::until(limit, Duration::from_millis(50), || {
        if crate::guard::signals::interrupted() {
            return Some(None);
        }
        child.try_wait().transpose().map(Some)
    });
    let why = match ended {
        Some(Some(status)) => {
            // The build's own leftovers (a compiler server, a daemon it forked) end with it.
            signal_group(pgid, libc::SIGKILL);
            crate::guard::unregister(&part);
            return status.context("cannot wait for the build");
        }
        Some(None) => "svcbench was asked to stop".to_string(),
        None => format!(
            "it ran past its build_timeout of {} (raise build_timeout in its manifest if it needs longer)",
            humantime::format_duration(limit)
        ),
    };
    signal_group(pgid, libc::SIGTERM);
    let _ = wait_timeout(&mut child, BUILD_STOP_GRACE);
    // What is left of the group after the grace (or after the shell alone ended on SIGTERM).
    signal_group(pgid, libc::SIGKILL);
    let _ = child.wait();
    crate::guard::unregister(&part);
    bail!("build of {} ended: {why} (log so far: {})", svc.name(), log_path.display())
}

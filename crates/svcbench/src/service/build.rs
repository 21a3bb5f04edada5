//! Building a service with its own build command (cargo, go, mvn, npm), once per session and only when its
//! inputs changed since the last successful build (build_stamp.rs), timed, with its output kept in a log
//! file (shown in part when it fails).
use super::build_stamp;
use crate::manifest::Service;
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

pub struct Built {
    pub seconds: f64,
    pub artifact_bytes: u64,
}

pub fn build(svc: &Service, log_dir: &Path, skip: bool) -> Result<Built> {
    let mut seconds = 0.0;
    if let (Some(cmd), false) = (&svc.manifest.build, skip) {
        if let Some(stamp) = build_stamp::fresh(svc) {
            eprintln!(
                "svcbench: {} is up to date: its files, build command and environment are as its build of {:.1} s \
                 left them ({})",
                svc.name(),
                stamp.seconds,
                stamp.built_at
            );
            return Ok(Built { seconds: stamp.seconds, artifact_bytes: svc.artifact_bytes()? });
        }
        build_stamp::remove(svc);
        std::fs::create_dir_all(log_dir)?;
        let log_path = log_dir.join(format!("build-{}.log", svc.name()));
        let log = std::fs::File::create(&log_path)?;
        let env: Vec<String> = svc.manifest.build_env.iter().map(|(k, v)| format!("{k}={v} ")).collect();
        eprintln!("svcbench: building {} ({}{cmd})", svc.name(), env.concat());
        let t0 = Instant::now();
        let status = Command::new("/bin/sh")
            .arg("-c")
            .arg(cmd)
            .current_dir(&svc.dir)
            .envs(&svc.manifest.build_env)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .status()
            .with_context(|| format!("cannot run the build of {}", svc.name()))?;
        seconds = t0.elapsed().as_secs_f64();
        if !status.success() {
            let text = std::fs::read_to_string(&log_path).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(3).collect::<Vec<_>>().into_iter().rev().collect();
            bail!("build of {} failed ({status}): {} (full log: {})", svc.name(), tail.join(" | "), log_path.display());
        }
        eprintln!("svcbench: built {} in {seconds:.1} s", svc.name());
        // Only a cache: without a stamp (an artifact missing, a read-only folder) the next run builds again.
        let _ = build_stamp::write(svc, seconds);
    }
    Ok(Built { seconds, artifact_bytes: svc.artifact_bytes()? })
}

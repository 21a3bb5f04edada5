//! A container service as a Kubernetes Pod played by Podman (`run --runtime kube`, docs/kubernetes.md):
//! the spec pod_spec.rs writes, given to `podman kube play` as it is, then the few engine calls around it
//! (which pod and container it made, the container's end, its output, the pod's removal).
//!
//! Podman 4.3's `kube play` takes no cgroup parent: the pod's cgroup is Podman's own,
//! `/libpod_parent/<pod id>`, with the service's container in `libpod-<container id>` beside the pod's infra
//! container and `conmon`. It is read there, and the pod is removed with it.
use super::engine::{Engine, Kind, COMMAND_TIMEOUT};
use crate::sandbox::Limits;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};

/// Podman names a pod's container `<pod>-<container>`.
pub fn container_of(pod: &str) -> String {
    format!("{pod}-{}", super::pod_spec::CONTAINER)
}

/// Only Podman plays a Pod spec; Docker has no `kube play`.
pub fn check_engine(engine: &Engine) -> Result<()> {
    if engine.kind != Kind::Podman {
        bail!(
            "--runtime kube plays the Pod spec with `podman kube play`, and the engine here is Docker: install Podman \
             (scripts/setup.sh) and write engine = \"podman\" in the manifest's [container], or drop --runtime kube"
        );
    }
    Ok(())
}

/// `podman kube play FILE` in the background, its output to the service's log: it returns once the pod's
/// containers have started, which the readiness wait does not wait for.
pub fn play(engine: &Engine, file: &Path, log: &std::fs::File) -> Result<Child> {
    let args = ["kube".to_string(), "play".into(), file.to_string_lossy().to_string()];
    let program = PathBuf::from(&engine.program);
    crate::sandbox::process::spawn_program(
        &program,
        &args,
        crate::child::Needs::Engine,
        None,
        Stdio::null(),
        log.try_clone()?,
        log.try_clone()?,
    )
}

/// Where the pod's container is: the pod's cgroup (relative to each hierarchy's root) and the container's
/// own group's name in it, from one engine call (the readiness wait waits for it).
pub fn placement(engine: &Engine, pod: &str) -> Result<(PathBuf, String)> {
    let path = engine.run(&["inspect", "--format", "{{.State.CgroupPath}}", &container_of(pod)], COMMAND_TIMEOUT)?;
    let path = Path::new(path.trim().trim_start_matches('/'));
    match (path.parent(), path.file_name().and_then(|n| n.to_str())) {
        (Some(parent), Some(own)) if !parent.as_os_str().is_empty() && !path.to_string_lossy().contains("..") => {
            Ok((parent.to_path_buf(), own.to_string()))
        }
        _ => bail!("Podman gave {} as the cgroup of pod {pod}'s container", path.display()),
    }
}

/// What a Pod spec cannot ask for, set on the played container as the kubelet's CPU manager does through
/// the runtime (an update of the container's resources): the CPU set, and swap equal to the memory cap (no
/// swap, as for a process; a kubelet runs with swap off or NoSwap).
pub fn apply_beyond_spec(engine: &Engine, pod: &str, limits: &Limits) -> Result<()> {
    let mut args: Vec<String> = vec!["update".into()];
    if let Some(set) = &limits.cpuset {
        args.push(format!("--cpuset-cpus={set}"));
    }
    if let Some(b) = limits.memory_bytes {
        args.push(format!("--memory={b}"));
        args.push(format!("--memory-swap={b}"));
    }
    if args.len() == 1 {
        return Ok(());
    }
    args.push(container_of(pod));
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    engine.run(&words, COMMAND_TIMEOUT).map(drop)
}

/// Writes the pids limit into the played container's own group (`parent/own`, from each hierarchy's
/// root) in the pids hierarchy (v1) or the unified one, where Podman's `kube play` sets none. Not checked
/// here: the confinement read back from the container's process says whether it holds.
pub fn hold_pids(parent: &Path, own: &str, limit: u32) {
    let base = crate::sandbox::cgroup::v1_mount("pids").or_else(crate::sandbox::cgroup::v2_mount);
    if let Some(base) = base {
        let _ = std::fs::write(base.join(parent).join(own).join("pids.max"), limit.to_string());
    }
}

/// `podman wait` on the pod's container: it ends when the container does, printing its exit code.
pub fn waiter(engine: &Engine, pod: &str) -> Result<Child> {
    let mut c = engine.command();
    c.args(["wait", &container_of(pod)]).stdout(Stdio::piped()).stderr(Stdio::null());
    c.spawn().with_context(|| format!("cannot run {} wait", engine.program))
}

/// The container's exit code as `podman wait` printed it (a number: no more is read).
pub fn waited_code(child: &mut Child) -> Option<i32> {
    let out = child.stdout.take()?;
    let text = super::engine::read_tail(std::io::Read::take(out, 64), 64);
    String::from_utf8_lossy(&text).trim().parse().ok()
}

/// Appends the container's output to the service's log (a played container's output stays with Podman):
/// its last [`super::engine::OUTPUT_MAX`] bytes of each stream, the image's to fill.
pub fn save_logs(engine: &Engine, pod: &str, log: &mut std::fs::File) {
    use std::io::Write;
    let mut c = engine.command();
    c.args(["logs", &container_of(pod)]).stdout(Stdio::piped()).stderr(Stdio::piped());
    let Ok(child) = c.spawn() else { return };
    if let Some(out) = super::engine::wait_output(child, COMMAND_TIMEOUT) {
        let _ = log.write_all(&out.stdout);
        let _ = log.write_all(&out.stderr);
    }
}

/// Removes the pod, its containers and its cgroup; a container still running is killed after a second.
pub fn remove(engine: &Engine, pod: &str) {
    let _ = engine.run(&["pod", "rm", "-f", "-t", "1", pod], COMMAND_TIMEOUT);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_podman_plays_a_pod_and_docker_is_refused_in_one_line() {
        let docker = Engine { kind: Kind::Docker, program: "docker".into() };
        let e = check_engine(&docker).unwrap_err().to_string();
        assert!(e.contains("podman kube play") && !e.contains('\n'), "{e}");
        assert!(check_engine(&Engine { kind: Kind::Podman, program: "podman".into() }).is_ok());
        assert_eq!(container_of("svcbench-1-x"), "svcbench-1-x-service");
    }
}

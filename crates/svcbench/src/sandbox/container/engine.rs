//! The container engine svcbench talks to: Docker where one answers (`docker info`), else Podman, or the
//! one a manifest names. Every call is one CLI command, bounded in time, so a hung engine cannot hang a run.
use anyhow::{bail, Context, Result};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

/// How long an ordinary engine command (inspect, stop, rm, ps) may take.
pub const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// The most svcbench keeps of what one engine command prints on each of its outputs: the last bytes.
/// Much of it is the image's (its logs, its labels and env in `inspect`), so no more is read into memory.
pub const OUTPUT_MAX: usize = 64 << 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Docker,
    Podman,
}

#[derive(Debug, Clone)]
pub struct Engine {
    pub kind: Kind,
    /// The CLI program (`docker`, `podman`; podman-docker's `docker` is a Podman).
    pub program: String,
}

/// Whether `program info` answers within a few seconds (a Docker client without its daemon does not).
fn answers(program: &str) -> bool {
    let child = crate::child::helper(program, crate::child::Needs::Engine)
        .arg("info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else { return false };
    let ended =
        crate::poll::until(Duration::from_secs(10), Duration::from_millis(20), || child.try_wait().ok().flatten());
    if ended.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    ended.is_some_and(|s| s.success())
}

/// Whether `program` is Podman (podman-docker's `docker` says so in its version).
fn is_podman(program: &str) -> bool {
    crate::child::helper(program, crate::child::Needs::Engine)
        .arg("--version")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).to_lowercase().contains("podman"))
}

impl Engine {
    /// The engine to use: `wanted` ("docker" or "podman") when given, else Docker where its daemon answers,
    /// else Podman. None answering is one line saying how to get one. An engine found is kept for the rest of
    /// this svcbench (the build, the store's runtime, every run's start), so each choice costs one `info`.
    pub fn detect(wanted: Option<&str>) -> Result<Engine> {
        static FOUND: Mutex<Vec<(Option<String>, Engine)>> = Mutex::new(Vec::new());
        let key = wanted.map(str::to_string);
        if let Some((_, e)) = FOUND.lock().unwrap().iter().find(|(k, _)| *k == key) {
            return Ok(e.clone());
        }
        let engine = Self::find(wanted)?;
        FOUND.lock().unwrap().push((key, engine.clone()));
        Ok(engine)
    }

    fn find(wanted: Option<&str>) -> Result<Engine> {
        let candidates: Vec<&str> = match wanted {
            Some(w @ ("docker" | "podman")) => vec![w],
            Some(other) => {
                bail!("container engine {other:?} is not one svcbench knows; write engine = \"docker\" or \"podman\"")
            }
            None => vec!["docker", "podman"],
        };
        for program in &candidates {
            if answers(program) {
                let kind = if is_podman(program) { Kind::Podman } else { Kind::Docker };
                return Ok(Engine { kind, program: program.to_string() });
            }
        }
        bail!(
            "no container engine answers here ({} tried): run scripts/setup.sh (it installs Podman and the settings \
             this machine needs) or start Docker; services that run as processes need none",
            candidates.join(", ")
        )
    }

    pub fn command(&self) -> Command {
        // A short command waited on: a Ctrl-C at the terminal ends it with svcbench.
        let mut c = crate::child::helper(&self.program, crate::child::Needs::Engine);
        c.stdin(Stdio::null());
        c
    }

    /// Runs `args` to its end within `timeout`; its standard output, or an error with its last words.
    pub fn run(&self, args: &[&str], timeout: Duration) -> Result<String> {
        let mut cmd = self.command();
        cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
        let child = cmd.spawn().with_context(|| format!("cannot run {}", self.program))?;
        let out = wait_output(child, timeout)
            .with_context(|| format!("`{} {}` did not end within {timeout:?}", self.program, args.join(" ")))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            bail!("`{} {}` failed: {}", self.program, args.join(" "), err.trim());
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }
}

/// Reads `from` to its end (so that the writer never blocks on a full pipe), keeping its last `max` bytes.
pub fn read_tail(mut from: impl std::io::Read, max: usize) -> Vec<u8> {
    let mut kept: Vec<u8> = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                kept.extend_from_slice(&buf[..n]);
                if kept.len() > 2 * max {
                    kept.drain(..kept.len() - max);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    if kept.len() > max {
        kept.drain(..kept.len() - max);
    }
    kept
}

/// Collects the last [`OUTPUT_MAX`] bytes of a child's outputs, killing it at `timeout` (its pipes are read
/// on threads so that it never blocks on a full one).
pub fn wait_output(mut child: std::process::Child, timeout: Duration) -> Option<std::process::Output> {
    use std::io::Read;
    let reader = |p: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || p.map(|p| read_tail(p, OUTPUT_MAX)).unwrap_or_default())
    };
    let t_out = reader(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let t_err = reader(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let status = crate::poll::until(timeout, Duration::from_millis(5), || child.try_wait().ok().flatten());
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        return None;
    };
    Some(std::process::Output {
        status,
        stdout: t_out.join().unwrap_or_default(),
        stderr: t_err.join().unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_engine_s_output_is_read_to_its_end_but_only_its_tail_is_kept() {
        // A real child printing 1 MiB and then a last line: the pipe is drained, the tail kept.
        let child = std::process::Command::new("sh")
            .args(["-c", "head -c 1048576 /dev/zero | tr '\\0' x; echo; echo the-end"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let out = wait_output(child, Duration::from_secs(20)).expect("ended");
        assert!(out.status.success());
        assert_eq!(out.stdout.len(), OUTPUT_MAX);
        assert!(String::from_utf8_lossy(&out.stdout).ends_with("x\nthe-end\n"));
        assert_eq!(read_tail(&b"abcdef"[..], 4), b"cdef");
    }
}

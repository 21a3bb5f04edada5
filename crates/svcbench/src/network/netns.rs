//! Network namespaces through iproute2 (`ip`), and entering one: a thread of svcbench (the load
//! generator's) or a child process between fork and exec (a service, a dependency).
use anyhow::{bail, Context, Result};
use std::os::fd::{AsRawFd, RawFd};
use std::path::PathBuf;

/// `prog` from the system folders, where a user's PATH often lacks /usr/sbin.
pub fn program(prog: &str) -> PathBuf {
    ["/usr/sbin", "/sbin", "/usr/bin", "/bin"]
        .iter()
        .map(|d| PathBuf::from(d).join(prog))
        .find(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(prog))
}

/// Runs `prog args…` and fails with its own error text on one line.
pub fn run(prog: &str, args: &[&str]) -> Result<()> {
    let out = crate::child::helper(program(prog), crate::child::Needs::Nothing)
        .args(args)
        .output()
        .with_context(|| format!("cannot run `{prog}`: install iproute2 (apt install iproute2), which --net needs"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr).trim().replace('\n', " ");
        bail!("`{prog} {}` failed: {err}", args.join(" "));
    }
    Ok(())
}

/// The output of `prog args…` (empty when it fails).
pub fn output(prog: &str, args: &[&str]) -> String {
    crate::child::helper(program(prog), crate::child::Needs::Nothing)
        .args(args)
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
        .unwrap_or_default()
}

/// `ip -n NS …`: a command run inside a namespace.
pub fn ip_in(ns: &str, args: &[&str]) -> Result<()> {
    let mut all = vec!["-n", ns];
    all.extend_from_slice(args);
    run("ip", &all)
}

/// An open handle on a named namespace (`/run/netns/NAME`), to enter it.
#[derive(Debug)]
pub struct NsHandle {
    pub name: String,
    file: std::fs::File,
}

impl NsHandle {
    pub fn open(name: &str) -> Result<NsHandle> {
        let path = PathBuf::from("/run/netns").join(name);
        let file = std::fs::File::open(&path).with_context(|| format!("cannot open {}", path.display()))?;
        Ok(NsHandle { name: name.to_string(), file })
    }

    pub fn fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }

    /// Moves the calling thread into the namespace: sockets it opens from now on, and threads it starts,
    /// are there.
    pub fn enter(&self) -> std::io::Result<()> {
        enter_fd(self.fd())
    }
}

/// setns(2) on a namespace file descriptor; async-signal-safe, so usable between fork and exec.
pub fn enter_fd(fd: RawFd) -> std::io::Result<()> {
    // SAFETY: setns only reads the descriptor; a failure is reported through errno.
    if unsafe { libc::setns(fd, libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Runs `f` on a thread inside the namespace (the caller's thread stays where it is), or right here
/// when there is none.
pub fn within<T: Send>(ns: Option<&NsHandle>, f: impl FnOnce() -> T + Send) -> Result<T> {
    let Some(ns) = ns else { return Ok(f()) };
    std::thread::scope(|s| {
        s.spawn(|| {
            ns.enter().with_context(|| format!("cannot enter network namespace {}", ns.name))?;
            Ok(f())
        })
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

//! Starting a service as its own process group inside its cgroup, and stopping it: SIGTERM, a grace
//! period, then SIGKILL to the whole group and to anything left in the cgroup.
use anyhow::{Context, Result};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Duration;

/// Where a process is placed before its first instruction: its cgroups (their `cgroup.procs` files), its
/// network namespace (an open namespace file, under `--net`) and the user it runs as (OpenSearch refuses
/// root).
#[derive(Default)]
pub struct Placement<'a> {
    pub procs_files: &'a [std::path::PathBuf],
    pub netns: Option<std::os::fd::RawFd>,
    /// (uid, gid); None: svcbench's own user.
    pub run_as: Option<(u32, u32)>,
}

/// What a sandbox starts: a program with its words (no shell), or a command line for `sh -c 'exec …'`
/// (a manifest's `run` with shell syntax, whose placeholders were quoted for that shell).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartCommand {
    Direct(Vec<String>),
    Shell(String),
}

impl From<&str> for StartCommand {
    fn from(command: &str) -> StartCommand {
        StartCommand::Shell(command.to_string())
    }
}

impl From<&String> for StartCommand {
    fn from(command: &String) -> StartCommand {
        StartCommand::Shell(command.clone())
    }
}

impl std::fmt::Display for StartCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartCommand::Direct(words) => {
                let quoted: Vec<String> = words.iter().map(|w| shell_quote(w)).collect();
                f.write_str(&quoted.join(" "))
            }
            StartCommand::Shell(line) => f.write_str(line),
        }
    }
}

/// Spawns `command` (directly, or via `sh -c 'exec …'`) in a session of its own (no controlling terminal,
/// its own process group), the open-file limit raised to the hard limit, and its placement taken before
/// exec, so that not a single instruction of the service runs outside its limits, its network or as
/// another user. Its environment is `env` and nothing else (child.rs gives the allow-lists).
pub fn spawn(
    command: &StartCommand,
    dir: &std::path::Path,
    env: &[(String, String)],
    placement: &Placement,
    log: File,
) -> Result<Child> {
    let mut cmd = match command {
        StartCommand::Direct(words) => {
            let Some((program, args)) = words.split_first() else { anyhow::bail!("an empty command cannot start") };
            // A relative program with a folder part (`target/release/x`) is the service folder's.
            let program = if program.contains('/') { dir.join(program) } else { program.into() };
            let mut cmd = Command::new(program);
            cmd.args(args);
            cmd
        }
        StartCommand::Shell(line) => {
            let mut cmd = Command::new("/bin/sh");
            cmd.arg("-c").arg(format!("exec {line}"));
            cmd
        }
    };
    cmd.current_dir(dir).stdin(Stdio::null()).env_clear();
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = log.try_clone()?;
    spawn_placed(cmd, placement, out, log).with_context(|| format!("cannot start `{command}` in {}", dir.display()))
}

/// `s` as one word for a POSIX shell (`sh -c` here, the remote side of ssh there).
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./=:,@%+".contains(&b)) {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// Spawns `program args…` (no shell) the same way, outside any cgroup: a generator agent, whose
/// stdout (its JSON report) and stderr go to files of their own, or a container engine's `run`.
pub fn spawn_program(
    program: &std::path::Path,
    args: &[String],
    needs: crate::child::Needs,
    netns: Option<std::os::fd::RawFd>,
    stdin: Stdio,
    stdout: File,
    stderr: File,
) -> Result<Child> {
    let mut cmd = Command::new(program);
    cmd.args(args).stdin(stdin).env_clear().envs(crate::child::env(needs));
    spawn_placed(cmd, &Placement { netns, ..Placement::default() }, stdout, stderr)
        .with_context(|| format!("cannot start {}", program.display()))
}

fn spawn_placed(mut cmd: Command, placement: &Placement, stdout: File, stderr: File) -> Result<Child> {
    let (netns, run_as) = (placement.netns, placement.run_as);
    let procs: Vec<File> = placement
        .procs_files
        .iter()
        .map(|p| {
            std::fs::OpenOptions::new().write(true).open(p).with_context(|| format!("cannot open {}", p.display()))
        })
        .collect::<Result<_>>()?;
    let fds: Vec<i32> = procs.iter().map(|f| f.as_raw_fd()).collect();
    cmd.stdout(stdout).stderr(stderr);
    unsafe {
        cmd.pre_exec(move || {
            // Only async-signal-safe calls here: we are between fork and exec. A session of its own first:
            // no controlling terminal (nothing typed into or read from svcbench's), its own process group.
            crate::child::new_session()?;
            for &fd in &fds {
                // "0" means the writing process itself, in v1 and v2 alike.
                if libc::write(fd, b"0".as_ptr().cast(), 1) != 1 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            if let Some(fd) = netns {
                crate::network::netns::enter_fd(fd)?;
            }
            // Only getrlimit/setrlimit: safe between fork and exec.
            let _ = loadgen::limits::raise_nofile_limit();
            // The change of user comes last but one: entering the namespace needs root. Supplementary
            // groups go first (root's would stay otherwise), then the group, then the user.
            if let Some((uid, gid)) = run_as {
                if libc::setgroups(0, std::ptr::null()) != 0 || libc::setgid(gid) != 0 || libc::setuid(uid) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            // Neither setuid programs nor file capabilities give the service back what it was not given.
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // Dies with svcbench (set after the change of user, which clears it). The kernel sends it when
            // the thread that forked ends: services are started from the main thread, which lives as long
            // as svcbench. Grandchildren do not inherit it; the cgroup and the work folder's lock file
            // catch those (guard/).
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn()?;
    drop(procs);
    Ok(child)
}

pub fn signal_group(pgid: i32, sig: i32) {
    if pgid > 1 {
        unsafe {
            libc::kill(-pgid, sig);
        }
    }
}

pub fn signal_pids(pids: &[i32], sig: i32) {
    for &p in pids {
        if p > 1 {
            unsafe {
                libc::kill(p, sig);
            }
        }
    }
}

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Exit {
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

impl From<ExitStatus> for Exit {
    fn from(s: ExitStatus) -> Exit {
        Exit { code: s.code(), signal: s.signal() }
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.code, self.signal) {
            (Some(c), _) => write!(f, "exit code {c}"),
            (_, Some(9)) => write!(f, "killed by SIGKILL"),
            (_, Some(s)) => write!(f, "killed by signal {s}"),
            _ => write!(f, "ended"),
        }
    }
}

/// Waits up to `timeout` for the child to end on its own.
pub fn wait_timeout(child: &mut Child, timeout: Duration) -> Result<Option<Exit>> {
    let ended = crate::poll::until(timeout, Duration::from_millis(2), || child.try_wait().transpose());
    Ok(ended.transpose()?.map(Exit::from))
}

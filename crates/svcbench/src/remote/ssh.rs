//! A svcbench command on another machine, over ssh, whose lifetime is its connection's: started, kept
//! alive by heartbeats, ended by closing its input; and the far side's half of it.
use super::hosts_file::Place;
use anyhow::{Context, Result};
use std::time::Duration;

/// How often this side writes an empty line to a [`FarProcess`], so the far side knows it is still there…
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(10);
/// …and how long the far side waits without a line before it takes this side for lost and stops what it
/// started: sshd may not notice a vanished client for hours (its keep-alives are its own configuration).
pub const CONTROLLER_SILENCE_LIMIT: Duration = Duration::from_secs(45);
/// The longest line read from the other side (a request, an answer, a line of its stderr): the longest
/// answer svcbench sends is a few KiB; beyond this a line is cut (an answer then fails to parse) instead of
/// growing without bound.
pub const MAX_LINE_BYTES: usize = 1 << 20;
/// A svcbench command on another machine whose lifetime is its ssh connection's: it reads its standard
/// input until it closes, then stops and removes what it started. Closing the input (drop) therefore ends
/// it at the end of a session, on Ctrl-C and on an error; when this svcbench is killed, the connection
/// closes all the same.
pub struct FarProcess {
    ssh: std::process::Child,
    /// Shared with the heartbeat thread; None once closed.
    input: std::sync::Arc<std::sync::Mutex<Option<std::process::ChildStdin>>>,
    /// Dropped with this, which ends the heartbeat thread.
    _heartbeat: std::sync::mpsc::Sender<()>,
    /// Where it runs, for messages (`ssh://bench@10.0.0.9`).
    pub place: String,
    /// What that machine is to the run (`store`, `service`), for messages.
    role: &'static str,
    last_words: std::sync::Arc<std::sync::Mutex<String>>,
    /// Its standard output, line by line.
    pub lines: std::sync::mpsc::Receiver<String>,
}

/// How long the other machine may take to stop what it started once its input closes.
const FAR_STOP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

impl FarProcess {
    /// Runs `command` there; what it says on stderr is passed on, prefixed with its role and place.
    pub fn spawn(place: &Place, command: &str, role: &'static str) -> Result<FarProcess> {
        use std::process::Stdio;
        // A session of its own, not in svcbench's process group: a Ctrl-C at the terminal must not cut the
        // connection before svcbench has told the other machine to stop (by closing its input) and heard
        // that it did.
        let mut ssh = crate::child::part("ssh", crate::child::Needs::Ssh)
            .args(place.ssh_args(command))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot run ssh (install OpenSSH's client) for the {role} on another host"))?;
        let input = std::sync::Arc::new(std::sync::Mutex::new(ssh.stdin.take()));
        let heartbeat = heartbeat(input.clone());
        let last_words = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (err, last, who) = (ssh.stderr.take().expect("piped"), last_words.clone(), place.describe());
        std::thread::spawn(move || {
            for line in crate::bounded::lines(std::io::BufReader::new(err), MAX_LINE_BYTES) {
                crate::errln!("  [{role} {who}] {line}");
                *last.lock().unwrap() = line;
            }
        });
        let (tx, lines) = std::sync::mpsc::channel();
        let out = ssh.stdout.take().expect("piped");
        std::thread::spawn(move || {
            for line in crate::bounded::lines(std::io::BufReader::new(out), MAX_LINE_BYTES) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(FarProcess { ssh, input, _heartbeat: heartbeat, place: place.describe(), role, last_words, lines })
    }

    /// One line on its standard input.
    pub fn send(&mut self, line: &str) -> Result<()> {
        use std::io::Write;
        let mut input = self.input.lock().unwrap();
        let input = input.as_mut().context("the connection is closed")?;
        writeln!(input, "{line}").and_then(|_| input.flush()).with_context(|| {
            format!("{} host {}: the connection was lost: {}", self.role, self.place, self.last_words())
        })
    }

    /// The last line it said on stderr (why it failed, usually).
    pub fn last_words(&self) -> String {
        // The stderr thread may still be passing on the last lines.
        std::thread::sleep(std::time::Duration::from_millis(200));
        self.last_words.lock().unwrap().clone()
    }

    /// How it ended, once it has.
    pub fn ended(&mut self) -> Option<String> {
        self.ssh.try_wait().ok().flatten().map(|s| s.to_string())
    }

    /// How it ended, for a message once its output has closed: ` (exit status: 1)`, waited for a moment
    /// (its output closes just before it exits), or nothing when it has not ended yet.
    pub fn how_it_ended(&mut self) -> String {
        let status = crate::poll::until(Duration::from_secs(2), Duration::from_millis(20), || self.ended());
        in_parentheses(status)
    }
}

/// ` (…)`, or nothing for nothing.
fn in_parentheses(what: Option<String>) -> String {
    what.filter(|w| !w.is_empty()).map(|w| format!(" ({w})")).unwrap_or_default()
}

impl Drop for FarProcess {
    /// Closes its input, which stops what it started there, and waits for it to finish removing it.
    fn drop(&mut self) {
        drop(self.input.lock().unwrap().take());
        let poll_every = std::time::Duration::from_millis(100);
        if crate::poll::until(FAR_STOP_TIMEOUT, poll_every, || self.ssh.try_wait().ok().flatten()).is_some() {
            crate::errln!("svcbench: the {} machine {} stopped what it ran", self.role, self.place);
            return;
        }
        crate::errln!(
            "svcbench: WARNING: the {} machine {} did not confirm it stopped within {} s; closing the connection",
            self.role,
            self.place,
            FAR_STOP_TIMEOUT.as_secs()
        );
        let _ = self.ssh.kill();
        let _ = self.ssh.wait();
    }
}

/// Writes an empty line to `input` every [`HEARTBEAT_EVERY`] until the returned sender is dropped or the
/// input is closed.
fn heartbeat(input: std::sync::Arc<std::sync::Mutex<Option<std::process::ChildStdin>>>) -> std::sync::mpsc::Sender<()> {
    use std::io::Write;
    use std::sync::mpsc::RecvTimeoutError;
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        while let Err(RecvTimeoutError::Timeout) = rx.recv_timeout(HEARTBEAT_EVERY) {
            let mut input = input.lock().unwrap();
            let Some(w) = input.as_mut() else { return };
            if writeln!(w).and_then(|_| w.flush()).is_err() {
                return;
            }
        }
    });
    tx
}

/// What the far side of a [`FarProcess`] (`serve-deps`, `serve-service`) does first: checks that `listen`
/// is an address of this machine, makes its work folder (returned absolute), removes what a killed svcbench
/// left on this machine, and reads its input ([`far_side_input`]), its log named after `what`.
pub fn far_side_setup(
    listen: std::net::Ipv4Addr,
    work_dir: &std::path::Path,
    what: &str,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> Result<(std::path::PathBuf, std::sync::mpsc::Receiver<String>)> {
    std::net::TcpListener::bind((listen, 0))
        .map_err(|e| anyhow::anyhow!("--listen {listen}: not an address of this machine ({e})"))?;
    crate::safe_fs::Folder::make(work_dir).context("--work-dir")?;
    let work_dir = std::path::absolute(work_dir)?;
    // results/work/<part> → the results folder, whose work/ holds the lock files of killed sessions.
    let results_dir = work_dir.parent().and_then(|p| p.parent()).unwrap_or(&work_dir);
    for line in crate::teardown::leftovers::clean(results_dir) {
        crate::errln!("{line}");
    }
    let log = work_dir.join(format!("{what}-{}.log", std::process::id()));
    let input = far_side_input(stop, log);
    Ok((work_dir, input))
}

/// The far side of a [`FarProcess`]: its standard input, line by line. When it closes (svcbench on the
/// other end stopped, was killed, or lost the connection) `stop` is set, and what is said from then on goes
/// to `log`: writing to a closed connection would end this process before it has stopped what it started.
pub fn far_side_input(
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    log: std::path::PathBuf,
) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let lost = pass_on_lines(std::io::BufReader::new(std::io::stdin()), CONTROLLER_SILENCE_LIMIT, &tx);
        if let Ok(f) = crate::safe_fs::create_file(&log) {
            use std::os::fd::AsRawFd;
            // SAFETY: dup2 onto the standard descriptors; `f` stays open until both are replaced.
            unsafe {
                libc::dup2(f.as_raw_fd(), 1);
                libc::dup2(f.as_raw_fd(), 2);
            }
        }
        if lost {
            crate::errln!(
                "svcbench: no word from the controlling svcbench for {} s: its machine or the connection is lost; \
                 stopping",
                CONTROLLER_SILENCE_LIMIT.as_secs()
            );
        }
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    rx
}

/// Passes the lines of `input` on to `tx`, all but the controller's empty heartbeat lines, until it closes
/// (false) or stays silent for `silence` (true: the controller is lost).
fn pass_on_lines(
    input: impl std::io::BufRead + Send + 'static,
    silence: Duration,
    tx: &std::sync::mpsc::Sender<String>,
) -> bool {
    use std::sync::mpsc::RecvTimeoutError;
    let (raw_tx, raw) = std::sync::mpsc::channel();
    // A blocking read cannot time out: it runs on its own, and is left behind when the controller is lost.
    std::thread::spawn(move || {
        for line in crate::bounded::lines(input, MAX_LINE_BYTES) {
            if raw_tx.send(line).is_err() {
                break;
            }
        }
    });
    loop {
        match raw.recv_timeout(silence) {
            Ok(line) if line.is_empty() => {}
            Ok(line) => {
                let _ = tx.send(line);
            }
            Err(RecvTimeoutError::Timeout) => return true,
            Err(RecvTimeoutError::Disconnected) => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn an_unknown_end_leaves_no_empty_parentheses() {
        assert_eq!(in_parentheses(None), "");
        assert_eq!(in_parentheses(Some("exit status: 1".into())), " (exit status: 1)");
    }

    #[test]
    fn the_far_side_passes_on_requests_skips_heartbeats_and_stops_when_the_controller_falls_silent() {
        use std::io::Write;
        use std::os::unix::net::UnixStream;
        let (mut controller, far) = UnixStream::pair().unwrap();
        controller.write_all(b"{\"a\":1}\n\n\n{\"b\":2}\n").unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let t0 = Instant::now();
        let lost = pass_on_lines(std::io::BufReader::new(far), Duration::from_millis(400), &tx);
        assert!(lost && t0.elapsed() < Duration::from_secs(3), "silence noticed after {:?}", t0.elapsed());
        assert_eq!(rx.try_iter().collect::<Vec<_>>(), ["{\"a\":1}", "{\"b\":2}"]);
        // Heartbeats keep it going past the limit; a closed input ends it as closed, not lost.
        let (mut controller, far) = UnixStream::pair().unwrap();
        std::thread::spawn(move || {
            for _ in 0..6 {
                controller.write_all(b"\n").unwrap();
                std::thread::sleep(Duration::from_millis(150));
            }
        });
        let t0 = Instant::now();
        let lost = pass_on_lines(std::io::BufReader::new(far), Duration::from_millis(400), &tx);
        assert!(!lost && t0.elapsed() >= Duration::from_millis(700), "{lost} after {:?}", t0.elapsed());
    }
}

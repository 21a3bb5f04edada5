//! What svcbench asks of another machine over ssh before it relies on it.
use super::hosts_file::Place;
use crate::sandbox::process::shell_quote;
use anyhow::{bail, Context, Result};
use std::time::Duration;

/// How long ssh may take to connect: the TCP handshake and the other side's first words (its banner).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// How often ssh asks the other side, inside the encrypted connection, whether it is still there…
pub const ALIVE_INTERVAL: Duration = Duration::from_secs(10);
/// …and how many questions may go unanswered before it ends the connection: a machine or network lost
/// mid-run ends every ssh within `ALIVE_INTERVAL × ALIVE_COUNT_MAX` (30 s).
pub const ALIVE_COUNT_MAX: u32 = 3;
/// How long `svcbench host-facts` there may take in all, the connection included.
pub const HOST_FACTS_TIMEOUT: Duration = Duration::from_secs(30);
/// How often this side writes an empty line to a [`FarProcess`], so the far side knows it is still there…
pub const HEARTBEAT_EVERY: Duration = Duration::from_secs(10);
/// …and how long the far side waits without a line before it takes this side for lost and stops what it
/// started: sshd may not notice a vanished client for hours (its keep-alives are its own configuration).
pub const CONTROLLER_SILENCE_LIMIT: Duration = Duration::from_secs(45);
/// The longest line read from the other side (a request, an answer, a line of its stderr): the longest
/// answer svcbench sends is a few KiB; beyond this a line is cut (an answer then fails to parse) instead of
/// growing without bound.
pub const MAX_LINE_BYTES: usize = 1 << 20;
/// The most a short command over ssh (`host-facts`) may print on each of stdout and stderr.
const MAX_OUTPUT_BYTES: u64 = 1 << 20;

/// The `-o` options every ssh of svcbench gets after the hosts file's own `ssh_options` (ssh keeps the
/// first value it is given, so a hosts file may set other ones).
pub fn wait_options() -> Vec<String> {
    [
        format!("ConnectTimeout={}", CONNECT_TIMEOUT.as_secs()),
        format!("ServerAliveInterval={}", ALIVE_INTERVAL.as_secs()),
        format!("ServerAliveCountMax={ALIVE_COUNT_MAX}"),
    ]
    .into_iter()
    .flat_map(|o| ["-o".to_string(), o])
    .collect()
}

/// Runs `cmd` to its end, its output collected, or kills it after `limit` (None).
fn output_within(cmd: &mut std::process::Command, limit: Duration) -> std::io::Result<Option<std::process::Output>> {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    let read_all = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = (&mut r).take(MAX_OUTPUT_BYTES).read_to_end(&mut v);
            // What passes the bound is read and dropped, so that the far side is never blocked writing.
            let _ = std::io::copy(&mut r, &mut std::io::sink());
            v
        })
    };
    let out = read_all(Box::new(child.stdout.take().expect("piped")));
    let err = read_all(Box::new(child.stderr.take().expect("piped")));
    let status = crate::poll::until(limit, Duration::from_millis(50), || child.try_wait().ok().flatten());
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        return Ok(None);
    };
    let (stdout, stderr) = (out.join().unwrap_or_default(), err.join().unwrap_or_default());
    Ok(Some(std::process::Output { status, stdout, stderr }))
}

/// The facts of the machine at `place`, as svcbench there reads them (`svcbench host-facts`). Asked before
/// anything is built, it is also the first proof that ssh and svcbench work there.
pub fn remote_facts(place: &Place, role: &str) -> Result<crate::host::HostFacts> {
    let Place::Ssh { svcbench, .. } = place else { return Ok(crate::host::facts()) };
    let mut ssh = crate::child::helper("ssh", crate::child::Needs::Ssh);
    ssh.args(place.ssh_args(&format!("{} host-facts", shell_quote(svcbench)))).stdin(std::process::Stdio::null());
    let out = output_within(&mut ssh, HOST_FACTS_TIMEOUT)
        .with_context(|| format!("cannot run ssh (install OpenSSH's client) for the {role} on another host"))?;
    let Some(out) = out else {
        bail!(
            "{role} host {}: `{svcbench} host-facts` did not answer within {} s over ssh; check that svcbench \
             there runs (try the same ssh command by hand)",
            place.describe(),
            HOST_FACTS_TIMEOUT.as_secs()
        );
    };
    let err = String::from_utf8_lossy(&out.stderr).trim().replace('\n', " ");
    if !out.status.success() {
        bail!(
            "{role} host {}: cannot run `{svcbench} host-facts` there over ssh ({err}); {}",
            place.describe(),
            hint(place, &err)
        );
    }
    serde_json::from_slice(&out.stdout).with_context(|| {
        format!(
            "{role} host {}: `{svcbench} host-facts` answered no facts; is it the same svcbench version?",
            place.describe()
        )
    })
}

/// What to do about a failed ssh, from ssh's own words `err`: a host key this machine does not know (ssh
/// runs with BatchMode, so it cannot ask) or one that changed, else the hosts file's usual suspects.
fn hint(place: &Place, err: &str) -> String {
    let Place::Ssh { destination, port, .. } = place else { return String::new() };
    let host = destination.rsplit_once('@').map_or(destination.as_str(), |(_, h)| h);
    let keyscan = match port {
        Some(p) => format!("ssh-keyscan -p {p} {host}"),
        None => format!("ssh-keyscan {host}"),
    };
    let known = match port {
        Some(p) => format!("[{host}]:{p}"),
        None => host.to_string(),
    };
    if err.contains("IDENTIFICATION HAS CHANGED") {
        format!(
            "its host key is not the one known_hosts holds: if the machine was reinstalled, remove the old key \
             (`ssh-keygen -R '{known}'`) and add the new one after checking its fingerprint (`{keyscan} >> \
             ~/.ssh/known_hosts`)"
        )
    } else if err.contains("Host key verification failed") {
        format!(
            "its host key is not in known_hosts here (ssh runs with BatchMode=yes, so it cannot ask): add it, after \
             checking its fingerprint (`{keyscan} >> ~/.ssh/known_hosts` as the user svcbench runs as), or give \
             ssh_options = [\"-o\", \"StrictHostKeyChecking=accept-new\"] (or UserKnownHostsFile=…) in the hosts file"
        )
    } else {
        "check the hosts file's address, key and svcbench path (the same svcbench version must be installed there)"
            .into()
    }
}

/// Every other machine of the hosts file, checked and described: the store's (which must be able to move
/// there), then each generator's.
pub fn other_hosts(
    plan: &super::hosts_file::HostsPlan,
    scenario: &crate::scenario::Scenario,
    given: &crate::deps::GivenDeps,
) -> Result<Vec<crate::host::OtherHost>> {
    let mut other = Vec::new();
    if let Some(at) = &plan.store {
        if let Some(why) = crate::remote::serve_deps::not_placeable(scenario) {
            bail!("the hosts file's [store]: {why}");
        }
        if !given.urls.is_empty() {
            bail!("--dep and the hosts file's [store] both say where the store is: give one or the other");
        }
        let facts = remote_facts(&at.place, "store")?;
        other.push(crate::host::OtherHost { role: "store".into(), place: at.place.describe(), facts });
    }
    if let Some(at) = &plan.service_at {
        if let Some(why) = unreachable_dependencies(plan, scenario, given) {
            bail!("the hosts file's [service] is on another host, {why}");
        }
        let facts = remote_facts(&at.place, "service")?;
        other.push(crate::host::OtherHost { role: "service".into(), place: at.place.describe(), facts });
    }
    for (i, place) in plan.generators.iter().enumerate() {
        if let Place::Ssh { .. } = place {
            let facts = remote_facts(place, "generator")?;
            other.push(crate::host::OtherHost { role: format!("generator {}", i + 1), place: place.describe(), facts });
        }
    }
    Ok(other)
}

/// Why a service on another machine could not reach its scenario's dependencies; None when it can: they run
/// on a machine of the hosts file (`[store]`), or are given by URLs that are not this machine's loopback.
fn unreachable_dependencies(
    plan: &super::hosts_file::HostsPlan,
    scenario: &crate::scenario::Scenario,
    given: &crate::deps::GivenDeps,
) -> Option<String> {
    let deps = &scenario.file.dependency;
    if deps.is_empty() || plan.store.is_some() {
        return None;
    }
    let missing: Vec<&str> = deps.iter().map(|d| d.kind.as_str()).filter(|k| !given.urls.contains_key(*k)).collect();
    if !missing.is_empty() {
        return Some(format!(
            "where scenario `{}`'s {} would run here, out of its reach: place them with [store], or give --dep \
             KIND=URL at an address that host reaches",
            scenario.name(),
            missing.join(", ")
        ));
    }
    let local = given.urls.iter().find(|(_, u)| u.contains("://127.") || u.contains("://localhost"));
    local.map(|(k, u)| format!("where --dep {k}={u} is this machine's loopback: give an address that host reaches"))
}

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
    fn an_unknown_host_key_is_named_with_how_to_add_it() {
        let place = |port| Place::Ssh {
            destination: "bench@10.0.0.7".into(),
            port,
            options: vec![],
            svcbench: "svcbench".into(),
        };
        let h = hint(&place(Some(2222)), "Host key verification failed.");
        assert!(h.contains("known_hosts") && h.contains("ssh-keyscan -p 2222 10.0.0.7"), "{h}");
        assert!(h.contains("StrictHostKeyChecking=accept-new") && !h.contains('\n'), "{h}");
        let changed = "@@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@ … Host key verification failed.";
        assert!(hint(&place(None), changed).contains("ssh-keygen -R '10.0.0.7'"));
        let denied = hint(&place(None), "bench@10.0.0.7: Permission denied (publickey).");
        assert!(denied.contains("address, key and svcbench path") && !denied.contains("known_hosts"), "{denied}");
    }

    #[test]
    fn every_ssh_gets_the_time_limits_after_the_hosts_files_own_options() {
        let place = Place::Ssh {
            destination: "bench@10.0.0.9".into(),
            port: None,
            options: vec!["-o".into(), "ConnectTimeout=99".into()],
            svcbench: "svcbench".into(),
        };
        let a = place.ssh_args("true");
        let at = |o: &str| a.iter().position(|x| x.starts_with(o)).unwrap_or_else(|| panic!("no {o} in {a:?}"));
        assert!(a[..2] == ["-o", "BatchMode=yes"], "{a:?}");
        assert_eq!(a[at("ConnectTimeout=")], "ConnectTimeout=99", "ssh keeps the first value: the hosts file's");
        assert!(a.contains(&"ConnectTimeout=15".to_string()) && at("ServerAliveInterval=10") < at("bench@"));
        assert!(at("ServerAliveCountMax=3") < at("bench@"), "options go before the destination: {a:?}");
    }

    #[test]
    fn a_one_shot_command_that_hangs_is_killed_at_its_limit() {
        let t0 = Instant::now();
        let out = output_within(std::process::Command::new("sleep").arg("30"), Duration::from_millis(300)).unwrap();
        assert!(out.is_none() && t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
        let out = output_within(std::process::Command::new("echo").arg("facts"), Duration::from_secs(10)).unwrap();
        assert_eq!(out.unwrap().stdout, b"facts\n");
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

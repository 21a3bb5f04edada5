//! What svcbench asks of another machine over ssh before it relies on it.
use super::hosts_file::Place;
use crate::sandbox::process::shell_quote;
use anyhow::{bail, Context, Result};

/// The facts of the machine at `place`, as svcbench there reads them (`svcbench host-facts`). Asked before
/// anything is built, it is also the first proof that ssh and svcbench work there.
pub fn remote_facts(place: &Place, role: &str) -> Result<crate::host::HostFacts> {
    let Place::Ssh { svcbench, .. } = place else { return Ok(crate::host::facts()) };
    let out = std::process::Command::new("ssh")
        .args(place.ssh_args(&format!("{} host-facts", shell_quote(svcbench))))
        .stdin(std::process::Stdio::null())
        .output()
        .with_context(|| format!("cannot run ssh (install OpenSSH's client) for the {role} on another host"))?;
    let err = String::from_utf8_lossy(&out.stderr).trim().replace('\n', " ");
    if !out.status.success() {
        bail!(
            "{role} host {}: cannot run `{svcbench} host-facts` there over ssh ({err}); check the hosts file's \
             address, key and svcbench path (the same svcbench version must be installed there)",
            place.describe()
        );
    }
    serde_json::from_slice(&out.stdout).with_context(|| {
        format!(
            "{role} host {}: `{svcbench} host-facts` answered no facts; is it the same svcbench version?",
            place.describe()
        )
    })
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
    input: Option<std::process::ChildStdin>,
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
        use std::io::BufRead;
        use std::os::unix::process::CommandExt;
        use std::process::Stdio;
        let mut ssh = std::process::Command::new("ssh")
            .args(place.ssh_args(command))
            // Not in svcbench's process group: a Ctrl-C at the terminal must not cut the connection before
            // svcbench has told the other machine to stop (by closing its input) and heard that it did.
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot run ssh (install OpenSSH's client) for the {role} on another host"))?;
        let input = ssh.stdin.take();
        let last_words = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (err, last, who) = (ssh.stderr.take().expect("piped"), last_words.clone(), place.describe());
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(err).lines().map_while(|l| l.ok()) {
                eprintln!("  [{role} {who}] {line}");
                *last.lock().unwrap() = line;
            }
        });
        let (tx, lines) = std::sync::mpsc::channel();
        let out = ssh.stdout.take().expect("piped");
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines().map_while(|l| l.ok()) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(FarProcess { ssh, input, place: place.describe(), role, last_words, lines })
    }

    /// One line on its standard input.
    pub fn send(&mut self, line: &str) -> Result<()> {
        use std::io::Write;
        let input = self.input.as_mut().context("the connection is closed")?;
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
}

impl Drop for FarProcess {
    /// Closes its input, which stops what it started there, and waits for it to finish removing it.
    fn drop(&mut self) {
        drop(self.input.take());
        let poll_every = std::time::Duration::from_millis(100);
        if crate::poll::until(FAR_STOP_TIMEOUT, poll_every, || self.ssh.try_wait().ok().flatten()).is_some() {
            eprintln!("svcbench: the {} machine {} stopped what it ran", self.role, self.place);
            return;
        }
        eprintln!(
            "svcbench: WARNING: the {} machine {} did not confirm it stopped within {} s; closing the connection",
            self.role,
            self.place,
            FAR_STOP_TIMEOUT.as_secs()
        );
        let _ = self.ssh.kill();
        let _ = self.ssh.wait();
    }
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
    std::fs::create_dir_all(work_dir)?;
    let work_dir = std::path::absolute(work_dir)?;
    // results/work/<part> → the results folder, whose work/ holds the lock files of killed sessions.
    let results_dir = work_dir.parent().and_then(|p| p.parent()).unwrap_or(&work_dir);
    for line in crate::guard::leftovers::clean(results_dir) {
        eprintln!("{line}");
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
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines().map_while(|l| l.ok()) {
            let _ = tx.send(line);
        }
        if let Ok(f) = std::fs::File::create(&log) {
            use std::os::fd::AsRawFd;
            // SAFETY: dup2 onto the standard descriptors; `f` stays open until both are replaced.
            unsafe {
                libc::dup2(f.as_raw_fd(), 1);
                libc::dup2(f.as_raw_fd(), 2);
            }
        }
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
    });
    rx
}

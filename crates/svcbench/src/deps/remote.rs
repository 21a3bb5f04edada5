//! The scenario's dependencies on another machine (a hosts file's `[store]`): svcbench there starts them
//! over ssh (`svcbench serve-deps`, serve.rs) and this side then uses them as given ones (`--dep KIND=URL`):
//! checked, data completed, the store's CPU read from its own statistics. They end when the ssh connection
//! does: at the end of the session, on Ctrl-C, on an error, and when this svcbench is killed.
use super::serve::READY;
use super::GivenDeps;
use crate::network::hosts_file::{Place, StorePlace};
use crate::sandbox::process::shell_quote;
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long the store's machine may take to start the dependencies and load their data (a first dataset
/// build included).
const START_TIMEOUT: Duration = Duration::from_secs(20 * 60);
/// How long it may take to stop them once its input closes.
const STOP_TIMEOUT: Duration = Duration::from_secs(60);

pub struct RemoteDeps {
    ssh: Child,
    /// Closing it (drop) tells svcbench there to stop.
    input: Option<ChildStdin>,
    pub place: String,
    /// Kind → URL, as svcbench there printed them.
    pub urls: BTreeMap<String, String>,
}

impl RemoteDeps {
    /// Starts them and waits until they are up; svcbench there prints its progress on our stderr.
    pub fn start(at: &StorePlace, scenario: &str, for_load: bool, stop: &AtomicBool) -> Result<RemoteDeps> {
        let Place::Ssh { svcbench, .. } = &at.place else { bail!("[store] at = \"local\" starts nothing remote") };
        let place = at.place.describe();
        let command = format!(
            "cd {} && exec {} serve-deps --scenario {} --listen {}{}",
            shell_quote(&at.dir),
            shell_quote(svcbench),
            shell_quote(scenario),
            at.address,
            if for_load { " --for-load" } else { "" }
        );
        eprintln!("svcbench: starting the scenario's dependencies on {place} (listening on {})", at.address);
        use std::os::unix::process::CommandExt;
        let mut ssh = Command::new("ssh")
            .args(at.place.ssh_args(&command))
            // Not in svcbench's process group: a Ctrl-C at the terminal must not cut the connection before
            // svcbench has told the store's machine to stop (by closing its input) and heard that it did.
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("cannot run ssh (install OpenSSH's client) for the store on another host")?;
        let input = ssh.stdin.take();
        let last_err = Arc::new(Mutex::new(String::new()));
        // svcbench there reports its progress on stderr: passed on, named, and its last line kept for errors.
        let (err, last, who) = (ssh.stderr.take().expect("piped"), last_err.clone(), place.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(|l| l.ok()) {
                eprintln!("  [store {who}] {line}");
                *last.lock().unwrap() = line;
            }
        });
        let (tx, rx) = mpsc::channel();
        let out = ssh.stdout.take().expect("piped");
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(|l| l.ok()) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut me = RemoteDeps { ssh, input, place, urls: BTreeMap::new() };
        let started = Instant::now();
        loop {
            if stop.load(Ordering::Relaxed) {
                bail!("interrupted while the store's machine started the dependencies");
            }
            if started.elapsed() > START_TIMEOUT {
                bail!(
                    "store host {}: the dependencies were not up within {} min; last words: {}",
                    me.place,
                    START_TIMEOUT.as_secs() / 60,
                    last_err.lock().unwrap()
                );
            }
            match rx.recv_timeout(Duration::from_millis(200)) {
                Ok(line) if line == READY => break,
                Ok(line) => {
                    if let Some((key, url)) = line.split_once(' ') {
                        if let Some(kind) = key.strip_prefix("dep.").and_then(|k| k.strip_suffix(".url")) {
                            me.urls.insert(kind.to_string(), url.to_string());
                        }
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = me.ssh.wait().map(|s| s.to_string()).unwrap_or_default();
                    // The stderr thread may still be passing on the last lines.
                    std::thread::sleep(Duration::from_millis(200));
                    bail!(
                        "store host {}: `svcbench serve-deps` there ended before the dependencies were up ({status}): {}; \
                         check the hosts file's [store] dir (a svcbench checkout there) and svcbench path",
                        me.place,
                        last_err.lock().unwrap()
                    );
                }
            }
        }
        eprintln!(
            "svcbench: the store's machine runs {}",
            me.urls.iter().map(|(k, u)| format!("{k} at {u}")).collect::<Vec<_>>().join(", ")
        );
        Ok(me)
    }

    /// The user's `--dep` values with these added: the run then uses them as given dependencies.
    pub fn given(&self, base: &GivenDeps) -> GivenDeps {
        let mut g = base.clone();
        g.urls.extend(self.urls.clone());
        g
    }
}

impl Drop for RemoteDeps {
    /// Closes svcbench's input there, which stops the dependencies, and waits for it to finish removing them.
    fn drop(&mut self) {
        drop(self.input.take());
        let until = Instant::now() + STOP_TIMEOUT;
        while Instant::now() < until {
            if let Ok(Some(_)) = self.ssh.try_wait() {
                eprintln!("svcbench: the store's machine {} stopped its dependencies", self.place);
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!(
            "svcbench: WARNING: the store's machine {} did not confirm the dependencies stopped within {} s; closing the connection",
            self.place,
            STOP_TIMEOUT.as_secs()
        );
        let _ = self.ssh.kill();
        let _ = self.ssh.wait();
    }
}

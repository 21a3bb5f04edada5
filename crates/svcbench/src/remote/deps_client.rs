//! The scenario's dependencies on another machine (a hosts file's `[store]`): svcbench there starts them
//! over ssh (`svcbench serve-deps`, serve.rs) and this side then uses them as given ones (`--dep KIND=URL`):
//! checked, data completed, the store's CPU read from its own statistics. They end when the ssh connection
//! does: at the end of the session, on Ctrl-C, on an error, and when this svcbench is killed.
use super::serve_deps::READY;
use crate::deps::GivenDeps;
use crate::remote::hosts_file::{Place, RemotePlace};
use crate::remote::ssh::FarProcess;
use crate::sandbox::process::shell_quote;
use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long the store's machine may take to start the dependencies and load their data (a first dataset
/// build included).
const START_TIMEOUT: Duration = Duration::from_secs(20 * 60);

pub struct RemoteDeps {
    /// Dropping it tells svcbench there to stop them, and waits until it has.
    far: FarProcess,
    /// Kind → URL, as svcbench there printed them.
    pub urls: BTreeMap<String, String>,
}

impl RemoteDeps {
    /// Starts them and waits until they are up; svcbench there prints its progress on our stderr.
    pub fn start(at: &RemotePlace, scenario: &str, for_load: bool, stop: &AtomicBool) -> Result<RemoteDeps> {
        let Place::Ssh { svcbench, .. } = &at.place else { bail!("[store] at = \"local\" starts nothing remote") };
        let command = format!(
            "cd {} && exec {} serve-deps --scenario {} --listen {}{}",
            shell_quote(&at.dir),
            shell_quote(svcbench),
            shell_quote(scenario),
            at.address,
            if for_load { " --for-load" } else { "" }
        );
        crate::errln!(
            "svcbench: starting the scenario's dependencies on {} (listening on {})",
            at.place.describe(),
            at.address
        );
        let mut me = RemoteDeps { far: FarProcess::spawn(&at.place, &command, "store")?, urls: BTreeMap::new() };
        let started = Instant::now();
        loop {
            if stop.load(Ordering::Relaxed) {
                bail!("interrupted while the store's machine started the dependencies");
            }
            if started.elapsed() > START_TIMEOUT {
                bail!(
                    "store host {}: the dependencies were not up within {} min; last words: {}",
                    me.far.place,
                    START_TIMEOUT.as_secs() / 60,
                    me.far.last_words()
                );
            }
            match me.far.lines.recv_timeout(Duration::from_millis(200)) {
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
                    let status = me.far.how_it_ended();
                    bail!(
                        "store host {}: `svcbench serve-deps` there ended before the dependencies were up{status}: {}; \
                         check the hosts file's [store] dir (a svcbench checkout there) and svcbench path",
                        me.far.place,
                        me.far.last_words()
                    );
                }
            }
        }
        crate::errln!(
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

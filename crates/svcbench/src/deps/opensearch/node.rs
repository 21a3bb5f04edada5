//! One OpenSearch node started by svcbench: a fresh instance folder per start, the node started through
//! the ordinary sandbox like any service (its own process group and cgroup on the generator's CPUs, in
//! the store's network namespace under `--net`, as the dependencies' unprivileged user: OpenSearch refuses
//! root, and a service must not reach it),
//! ready when its cluster health is yellow; stopped as a sandbox stops (SIGTERM, then SIGKILL to the
//! group and the cgroup).
use super::distribution::{ensure_distribution, ensure_reachable, find_java, write_instance_config, RUN_AS};
use super::options::OpenSearchOptions;
use super::ownership::hand_over;
use super::snapshot::Snapshots;
use crate::sandbox::{process::shell_quote, Probe, Sandbox};
use anyhow::{bail, Context, Result};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::sleep;
use std::time::{Duration, Instant};

/// How long a start may take (OpenSearch needs ~20 s on an idle 2-core machine); the environment
/// variable SVCBENCH_OPENSEARCH_READY_S overrides it for slow or busy machines.
const READY_TIMEOUT: Duration = Duration::from_secs(120);
const STOP_TIMEOUT: Duration = Duration::from_secs(20);

pub struct OpenSearch {
    // Field order matters: the node stops before its instance folder goes.
    sandbox: Sandbox,
    url: String,
    /// Fresh per start: config/, data/, logs/, tmp/; removed on stop (and when dropped, whatever happens).
    instance_dir: PathBuf,
    _instance: tempfile::TempDir,
    /// Its `path.repo`: where the scenario's data is kept between starts (snapshot.rs).
    snapshots: Snapshots,
}

impl OpenSearch {
    /// Finds Java >= 21, downloads and unpacks the distribution once, starts a fresh node in `sandbox`
    /// (its limits and network already set) and waits until it is ready (the data is the loader's). On
    /// error nothing is left running.
    pub fn start(opts: &OpenSearchOptions, mut sandbox: Sandbox) -> Result<OpenSearch> {
        let java_home = find_java()?;
        let home = ensure_distribution(&opts.version, &opts.cache_dir, &java_home)?;
        let owner = node_user()?;
        if owner.is_some() {
            ensure_reachable(&home, RUN_AS)?;
        }
        let snapshots = Snapshots::prepare(&opts.cache_dir, owner)?;
        if std::net::TcpListener::bind(("127.0.0.1", opts.port)).is_err() {
            bail!("cannot start OpenSearch: port {} on 127.0.0.1 is already in use", opts.port);
        }

        let instance = instance_folder(opts.port)?;
        let instance_dir = instance.path().to_path_buf();
        write_instance_config(&home, &instance_dir, opts, snapshots.folder())?;
        // The log is made while only root can enter the instance folder, and read through a handle of its
        // own: once the folder is the node's user's, that user could put a link in its name.
        let logs = crate::safe_fs::Folder::make(&instance_dir.join("logs"))?;
        let log = logs.create("console.log")?;
        let log_reader = logs.open("console.log")?;
        if let Some((uid, gid)) = owner {
            hand_over(&instance_dir, uid, gid)?;
        }
        if let Some(ids) = owner {
            sandbox.run_as(ids);
        }
        // The allow-list and the node's own settings: nothing else of svcbench's environment (its
        // credentials) is in the node's /proc/PID/environ.
        let mut env = crate::child::env(crate::child::Needs::Nothing);
        env.extend(node_env(&java_home, &instance_dir));
        let started = Instant::now();
        // bin/opensearch execs the JVM: the sandbox's main process is the node itself.
        let command = shell_quote(&home.join("bin/opensearch").display().to_string());
        sandbox.start(&command, &instance_dir, &env, log)?;
        // From here on, dropping `node` stops the process and removes the instance folder.
        let url = format!("http://{}:{}", opts.bind, opts.port);
        let mut node = OpenSearch { sandbox, url, instance_dir, _instance: instance, snapshots };
        node.wait_ready(&log_reader)?;
        crate::errln!(
            "svcbench: OpenSearch {} ready on {} in {:.1} s",
            opts.version,
            node.url,
            started.elapsed().as_secs_f64()
        );
        Ok(node)
    }

    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// Where the node keeps and finds the scenario's data between starts.
    pub fn snapshots(&self) -> &Snapshots {
        &self.snapshots
    }

    /// Moves the node to these CPUs (cpu list syntax).
    pub fn pin(&self, set: &str) -> Result<()> {
        self.sandbox.pin(set)
    }

    /// The node's CPU, memory and run-queue wait, read from its sandbox.
    pub fn probe(&self) -> Arc<dyn Probe> {
        self.sandbox.probe()
    }

    /// Stops the node as a sandbox stops (SIGTERM, 20 s, SIGKILL), then removes the instance folder.
    pub fn stop(&mut self) -> Result<()> {
        let out = self.sandbox.stop(STOP_TIMEOUT);
        if out.exit.is_some() && !out.graceful && out.elapsed >= STOP_TIMEOUT {
            crate::errln!("svcbench: OpenSearch did not stop within {} s; it was killed", STOP_TIMEOUT.as_secs());
        }
        match fs::remove_dir_all(&self.instance_dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("cannot remove {}", self.instance_dir.display()))
            }
            _ => Ok(()),
        }
    }

    fn wait_ready(&mut self, log: &fs::File) -> Result<()> {
        // Each health question waits at most 5 s (it asks the node to answer within 2 s).
        let agent = crate::http_client::builder(Duration::from_secs(5)).timeout(Duration::from_secs(5)).build();
        let health = format!("{}/_cluster/health?wait_for_status=yellow&timeout=2s", self.url);
        let timeout = std::env::var("SVCBENCH_OPENSEARCH_READY_S")
            .ok()
            .and_then(|s| s.parse().ok())
            .map_or(READY_TIMEOUT, Duration::from_secs);
        let started = Instant::now();
        let mut next_note = Duration::from_secs(10);
        loop {
            if let Some(exit) = self.sandbox.try_exit() {
                bail!("OpenSearch exited ({exit}) before it was ready; its log ends with:\n{}", tail(log, 20));
            }
            if crate::guard::signals::interrupted() {
                bail!("interrupted while OpenSearch was starting");
            }
            let answer = agent
                .get(&health)
                .call()
                .ok()
                .and_then(|r| crate::bounded::json_body(r, crate::http_client::MAX_SHORT_ANSWER_BYTES).ok());
            if answer.is_some_and(|v| matches!(v["status"].as_str(), Some("yellow" | "green"))) {
                return Ok(());
            }
            let waited = started.elapsed();
            if waited >= timeout {
                bail!(
                    "OpenSearch was not ready within {} s (SVCBENCH_OPENSEARCH_READY_S sets another limit); its log ends with:\n{}",
                    timeout.as_secs(),
                    tail(log, 20)
                );
            }
            if waited >= next_note {
                crate::errln!("svcbench: waiting for OpenSearch on {} ({} s)…", self.url, waited.as_secs());
                next_note += Duration::from_secs(10);
            }
            sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for OpenSearch {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// The node's user (uid, gid) when svcbench is root: the dependencies' own, never a service's, so that no
/// service can signal the node, trace it or read its /proc/PID/environ; None keeps svcbench's own.
fn node_user() -> Result<Option<(u32, u32)>> {
    Ok(crate::sandbox::service_user::for_store()?.map(|u| (u.uid, u.gid)))
}

/// The node's own variables: its Java, its configuration, its temporary folder, HOME (its instance
/// folder), and no JVM options but the instance's jvm.options.
fn node_env(java_home: &Path, instance_dir: &Path) -> Vec<(String, String)> {
    [
        ("JAVA_HOME", java_home.display().to_string()),
        ("OPENSEARCH_JAVA_HOME", java_home.display().to_string()),
        ("OPENSEARCH_PATH_CONF", instance_dir.join("config").display().to_string()),
        ("OPENSEARCH_TMPDIR", instance_dir.join("tmp").display().to_string()),
        ("HOME", instance_dir.display().to_string()),
        // The node's JVM options are the instance's jvm.options, not whatever svcbench's caller set.
        ("OPENSEARCH_JAVA_OPTS", String::new()),
    ]
    .map(|(k, v)| (k.to_string(), v))
    .to_vec()
}

/// A fresh instance folder with a random name, made exclusively with mode 0700: nothing anyone planted
/// under /tmp is reused. It goes when the value drops, whatever happens.
fn instance_folder(port: u16) -> Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    tempfile::Builder::new()
        .prefix(&format!("svcbench-opensearch-{port}-"))
        .permissions(fs::Permissions::from_mode(0o700))
        .tempdir()
        .context("cannot create OpenSearch's instance folder")
}

fn tail(f: &fs::File, lines: usize) -> String {
    crate::bounded::last_lines_of(f, lines, 1000).join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn the_node_runs_as_the_dependencies_user_with_its_own_variables_only() {
        if let Some((uid, _)) = node_user().unwrap() {
            let store = nix::unistd::User::from_name(crate::sandbox::service_user::STORE_USER).unwrap().unwrap();
            let service = crate::sandbox::service_user::for_service(
                crate::manifest::RunAs::Svcbench,
                crate::sandbox::service_user::Account::Main,
            )
            .unwrap()
            .unwrap();
            assert_eq!(uid, store.uid.as_raw());
            assert_ne!(uid, service.uid, "the node and the services must not share a user");
        }
        let env = node_env(Path::new("/jdk"), Path::new("/tmp/i"));
        let keys: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "JAVA_HOME",
                "OPENSEARCH_JAVA_HOME",
                "OPENSEARCH_PATH_CONF",
                "OPENSEARCH_TMPDIR",
                "HOME",
                "OPENSEARCH_JAVA_OPTS"
            ]
        );
    }

    #[test]
    fn the_instance_folder_is_private_fresh_and_removed() {
        // The name the folder had before (port and pid) planted as a link: it is not used.
        let planted = std::env::temp_dir().join(format!("svcbench-opensearch-9200-{}", std::process::id()));
        let _ = fs::remove_file(&planted);
        std::os::unix::fs::symlink("/etc", &planted).unwrap();
        let (a, b) = (instance_folder(9200).unwrap(), instance_folder(9200).unwrap());
        assert!(a.path() != b.path() && a.path() != planted && b.path() != planted);
        let m = fs::symlink_metadata(a.path()).unwrap();
        assert!(m.is_dir() && m.mode() & 0o777 == 0o700, "mode {:o}", m.mode());
        let path = a.path().to_path_buf();
        fs::write(path.join("left"), "").unwrap();
        drop(a);
        assert!(!path.exists());
        fs::remove_file(&planted).unwrap();
    }
}

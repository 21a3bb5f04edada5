//! One OpenSearch node started by svcbench: a fresh instance folder per start, the node run as an
//! unprivileged user (OpenSearch refuses root) in its own process group, in the store's network
//! namespace under `--net`, ready when its cluster health is yellow; stopped with SIGTERM, then SIGKILL.
use super::distribution::{
    chown_tree, ensure_distribution, ensure_reachable, ensure_user, find_java, write_instance_config, RUN_AS,
};
use anyhow::{bail, Context, Result};
use std::fs;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// How long a start may take (OpenSearch needs ~20 s on an idle 2-core machine); the environment
/// variable SVCBENCH_OPENSEARCH_READY_S overrides it for slow or busy machines.
const READY_TIMEOUT: Duration = Duration::from_secs(120);
const STOP_TIMEOUT: Duration = Duration::from_secs(20);

pub struct OpenSearchOptions {
    /// OpenSearch version, e.g. "3.6.0".
    pub version: String,
    pub heap_mb: u32,
    pub port: u16,
    /// The address it listens on: loopback, or the store's address under `--net`.
    pub bind: std::net::Ipv4Addr,
    /// The network namespace it runs in (`--net`).
    pub netns: Option<std::sync::Arc<crate::network::NsHandle>>,
    /// Where the distribution is downloaded and unpacked once. When svcbench runs as root it must be
    /// readable by the unprivileged user, e.g. /var/cache/svcbench/opensearch (not under /root).
    pub cache_dir: PathBuf,
}

pub struct OpenSearch {
    child: Option<Child>,
    url: String,
    /// Fresh per start: config/, data/, logs/, tmp/; removed on stop.
    instance_dir: PathBuf,
    jvm_pid: u32,
}

impl OpenSearch {
    /// Finds Java >= 21, downloads and unpacks the distribution once, starts a fresh node and waits until
    /// it is ready (the data is the loader's). On error nothing is left running.
    pub fn start(opts: &OpenSearchOptions) -> Result<OpenSearch> {
        let java_home = find_java()?;
        let home = ensure_distribution(&opts.version, &opts.cache_dir, &java_home)?;
        let owner = if unsafe { libc::geteuid() } == 0 {
            let ids = ensure_user(RUN_AS)?;
            ensure_reachable(&home, RUN_AS)?;
            Some(ids)
        } else {
            None
        };
        if std::net::TcpListener::bind(("127.0.0.1", opts.port)).is_err() {
            bail!("cannot start OpenSearch: port {} on 127.0.0.1 is already in use", opts.port);
        }

        let instance_dir =
            std::env::temp_dir().join(format!("svcbench-opensearch-{}-{}", opts.port, std::process::id()));
        let _ = fs::remove_dir_all(&instance_dir);
        let prepared = write_instance_config(&home, &instance_dir, opts)
            .and_then(|()| owner.map_or(Ok(()), |(uid, gid)| chown_tree(&instance_dir, uid, gid)));
        if let Err(e) = prepared {
            let _ = fs::remove_dir_all(&instance_dir);
            return Err(e);
        }

        let log_path = instance_dir.join("logs/console.log");
        let log = fs::File::create(&log_path).with_context(|| format!("cannot create {}", log_path.display()))?;
        let mut cmd = Command::new(home.join("bin/opensearch"));
        cmd.current_dir(&instance_dir)
            .env("OPENSEARCH_JAVA_HOME", &java_home)
            .env("OPENSEARCH_PATH_CONF", instance_dir.join("config"))
            .env("OPENSEARCH_TMPDIR", instance_dir.join("tmp"))
            .env("HOME", &instance_dir)
            .env_remove("OPENSEARCH_JAVA_OPTS")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0);
        // Between fork and exec, in this order: into the store's namespace while still root (setns needs
        // it), then the change of user, then the death signal (a change of user clears it).
        let netns = opts.netns.as_ref().map(|n| n.fd());
        unsafe {
            use std::os::unix::process::CommandExt as _;
            cmd.pre_exec(move || {
                if let Some(fd) = netns {
                    crate::network::netns::enter_fd(fd)?;
                }
                if let Some((uid, gid)) = owner {
                    if libc::setgroups(0, std::ptr::null()) != 0 || libc::setgid(gid) != 0 || libc::setuid(uid) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let started = Instant::now();
        let child = cmd.spawn().with_context(|| format!("cannot start {}", home.join("bin/opensearch").display()))?;
        let jvm_pid = child.id();
        // From here on, dropping `node` stops the process and removes the instance folder.
        let mut node = OpenSearch {
            child: Some(child),
            url: format!("http://{}:{}", opts.bind, opts.port),
            instance_dir,
            jvm_pid,
        };
        node.wait_ready(&log_path)?;
        node.jvm_pid = find_jvm_pid(node.jvm_pid);
        eprintln!(
            "svcbench: OpenSearch {} ready on {} in {:.1} s (pid {})",
            opts.version,
            node.url,
            started.elapsed().as_secs_f64(),
            node.jvm_pid
        );
        Ok(node)
    }

    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// The JVM's pid (`bin/opensearch` execs the JVM, so it is the process-group leader).
    pub fn pid(&self) -> u32 {
        self.jvm_pid
    }

    /// SIGTERM to the process group, SIGKILL after 20 s, then removes the instance folder.
    pub fn stop(&mut self) -> Result<()> {
        let Some(mut child) = self.child.take() else { return self.remove_instance_dir() };
        let pgid = child.id() as i32;
        unsafe { libc::kill(-pgid, libc::SIGTERM) };
        let deadline = Instant::now() + STOP_TIMEOUT;
        let mut exited = false;
        while Instant::now() < deadline {
            if child.try_wait()?.is_some() {
                exited = true;
                break;
            }
            sleep(Duration::from_millis(100));
        }
        if !exited {
            eprintln!("svcbench: OpenSearch did not stop within {} s; killing it", STOP_TIMEOUT.as_secs());
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
            child.wait()?;
        }
        // Anything else left in the group (there should be nothing) goes too.
        if !group_members(pgid).is_empty() {
            unsafe { libc::kill(-pgid, libc::SIGKILL) };
        }
        self.remove_instance_dir()
    }

    fn remove_instance_dir(&self) -> Result<()> {
        match fs::remove_dir_all(&self.instance_dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("cannot remove {}", self.instance_dir.display()))
            }
            _ => Ok(()),
        }
    }

    fn wait_ready(&mut self, log_path: &Path) -> Result<()> {
        let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(5)).build();
        let health = format!("{}/_cluster/health?wait_for_status=yellow&timeout=2s", self.url);
        let timeout = std::env::var("SVCBENCH_OPENSEARCH_READY_S")
            .ok()
            .and_then(|s| s.parse().ok())
            .map_or(READY_TIMEOUT, Duration::from_secs);
        let started = Instant::now();
        let mut next_note = Duration::from_secs(10);
        loop {
            if let Some(status) = self.child.as_mut().expect("running").try_wait()? {
                self.child = None;
                bail!("OpenSearch exited ({status}) before it was ready; its log ends with:\n{}", tail(log_path, 20));
            }
            let answer = agent
                .get(&health)
                .call()
                .ok()
                .and_then(|r| serde_json::from_reader::<_, serde_json::Value>(r.into_reader()).ok());
            if answer.is_some_and(|v| matches!(v["status"].as_str(), Some("yellow" | "green"))) {
                return Ok(());
            }
            let waited = started.elapsed();
            if waited >= timeout {
                bail!(
                    "OpenSearch was not ready within {} s (SVCBENCH_OPENSEARCH_READY_S sets another limit); its log ends with:\n{}",
                    timeout.as_secs(),
                    tail(log_path, 20)
                );
            }
            if waited >= next_note {
                eprintln!("svcbench: waiting for OpenSearch on {} ({} s)…", self.url, waited.as_secs());
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

/// pids whose process group is `pgid`, read from /proc.
fn group_members(pgid: i32) -> Vec<u32> {
    let Ok(entries) = fs::read_dir("/proc") else { return vec![] };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            stat_pgrp(&stat) == Some(pgid)
        })
        .collect()
}

/// Process group from a /proc/<pid>/stat line (the fifth field; the name in parentheses may hold spaces).
fn stat_pgrp(stat: &str) -> Option<i32> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(2)?.parse().ok()
}

/// `bin/opensearch` execs the JVM, so the leader is the JVM; should a wrapper stay in between, take the
/// group's `java` process instead.
fn find_jvm_pid(leader: u32) -> u32 {
    let is_java = |pid: u32| fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "java");
    if is_java(leader) {
        return leader;
    }
    group_members(leader as i32).into_iter().find(|&p| is_java(p)).unwrap_or(leader)
}

fn tail(path: &Path, lines: usize) -> String {
    let mut text = String::new();
    if let Ok(mut f) = fs::File::open(path) {
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        let _ = f.seek(SeekFrom::Start(len.saturating_sub(16 * 1024)));
        let _ = f.read_to_string(&mut text);
    }
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_process_group() {
        assert_eq!(stat_pgrp("4242 (java) S 4200 4242 4242 0 -1 4194560"), Some(4242));
        assert_eq!(stat_pgrp("77 (a b) c) R 1 70 70 0"), Some(70));
    }
}

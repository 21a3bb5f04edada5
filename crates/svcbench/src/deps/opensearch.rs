//! The `opensearch` dependency: a real single-node OpenSearch for the `locations` scenario.
//!
//! The distribution (the plugin-less `integ-test-zip`, so no security plugin) is fetched once with
//! Maven into a cache folder and unpacked there; every start gets a fresh instance folder (config, data,
//! logs) in the temp folder, runs the node as an unprivileged user (OpenSearch refuses root) in its own
//! process group, creates the scenario's indices from `store/*.json`, and bulk-loads the conformance
//! sample and, when asked, the load dataset of `dataset/` (built with `dataset/build.py` if missing).
use anyhow::{anyhow, bail, Context, Result};
use std::fs;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

const MAVEN_ARTIFACT: &str = "org.opensearch.distribution.integ-test-zip:opensearch";
const MIN_JAVA: u32 = 21;
/// The user the node runs as when svcbench runs as root.
const RUN_AS: &str = "svcbench";
/// How long a start may take (OpenSearch needs ~20 s on an idle 2-core machine); the environment
/// variable SVCBENCH_OPENSEARCH_READY_S overrides it for slow or busy machines.
const READY_TIMEOUT: Duration = Duration::from_secs(120);
const STOP_TIMEOUT: Duration = Duration::from_secs(20);
/// Bulk requests are cut at about this size: big enough to be quick, small enough for a 512 MiB heap.
const BULK_BYTES: usize = 4 << 20;
/// Versioned indices and the files (in `<scenario>/store/`) that hold their settings, mappings and alias.
const INDICES: [&str; 2] = ["region_v1", "city_v1"];
/// Bulk files in load order (regions first, as cities refer to them).
const BULK_FILES: [&str; 2] = ["region.ndjson", "city.ndjson"];

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
    /// The scenario folder (`scenarios/locations`): `store/*.json`, `dataset/`.
    pub scenario_dir: PathBuf,
    /// The conformance sample (`city.ndjson`, `region.ndjson`), if it should be loaded.
    pub sample_dir: Option<PathBuf>,
    /// Also load the load dataset (`<scenario>/dataset/out/`).
    pub load_dataset: bool,
}

pub struct OpenSearch {
    child: Option<Child>,
    url: String,
    /// Fresh per start: config/, data/, logs/, tmp/; removed on stop.
    instance_dir: PathBuf,
    jvm_pid: u32,
}

impl OpenSearch {
    /// Finds Java >= 21, downloads and unpacks the distribution once, starts a fresh node, waits until
    /// it is ready, creates the indices and loads the data. On error nothing is left running.
    pub fn start(opts: &OpenSearchOptions) -> Result<OpenSearch> {
        let java_home = find_java()?;
        // Data first: a dataset that cannot be built should fail before a node is started for it.
        let mut files = Vec::new();
        if let Some(sample) = &opts.sample_dir {
            files.extend(BULK_FILES.iter().map(|f| sample.join(f)));
        }
        if opts.load_dataset {
            let out = ensure_dataset(&opts.scenario_dir.join("dataset"))?;
            files.extend(BULK_FILES.iter().map(|f| out.join(f)));
        }
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

        node.create_indices(&opts.scenario_dir.join("store"))?;
        node.load(&files)?;
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

    fn create_indices(&self, store_dir: &Path) -> Result<()> {
        for index in INDICES {
            let path = store_dir.join(format!("{index}.json"));
            let body = fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
            request(ureq::put(&format!("{}/{index}", self.url)).set("Content-Type", "application/json"), Some(&body))
                .with_context(|| format!("cannot create index {index} from {}", path.display()))?;
        }
        Ok(())
    }

    /// Bulk-loads the files in order with refreshes off, then refreshes once and checks the counts.
    fn load(&self, files: &[PathBuf]) -> Result<()> {
        if files.is_empty() {
            return Ok(());
        }
        self.set_refresh_interval(Some("-1"))?;
        let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(600)).build();
        let bulk_url = format!("{}/_bulk?filter_path=errors,items.*.error", self.url);
        let mut total = 0;
        for path in files {
            let started = Instant::now();
            let docs = bulk_file(&agent, &bulk_url, path)?;
            total += docs;
            eprintln!(
                "svcbench: loaded {docs} documents from {} in {:.1} s",
                path.display(),
                started.elapsed().as_secs_f64()
            );
        }
        self.set_refresh_interval(None)?;
        request(ureq::post(&format!("{}/_refresh", self.url)), None)?;
        let count = |index: &str| -> Result<u64> {
            let v = request(ureq::get(&format!("{}/{index}/_count", self.url)), None)?;
            v["count"].as_u64().ok_or_else(|| anyhow!("no count in {v}"))
        };
        let stored = count("city")? + count("region")?;
        if stored != total {
            bail!("OpenSearch holds {stored} documents after loading {total}");
        }
        Ok(())
    }

    /// `None` restores the default.
    fn set_refresh_interval(&self, value: Option<&str>) -> Result<()> {
        let body = serde_json::json!({"index": {"refresh_interval": value}}).to_string();
        request(
            ureq::put(&format!("{}/city_v1,region_v1/_settings", self.url)).set("Content-Type", "application/json"),
            Some(&body),
        )?;
        Ok(())
    }
}

impl Drop for OpenSearch {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

/// Sends `body` (if any) and returns the JSON answer; a non-2xx answer is an error carrying
/// OpenSearch's reason.
fn request(req: ureq::Request, body: Option<&str>) -> Result<serde_json::Value> {
    let sent = match body {
        Some(body) => req.send_string(body),
        None => req.call(),
    };
    match sent {
        Ok(resp) => Ok(serde_json::from_reader(resp.into_reader())?),
        Err(ureq::Error::Status(code, resp)) => {
            let text = resp.into_string().unwrap_or_default();
            bail!("OpenSearch answered {code}: {}", text.chars().take(500).collect::<String>())
        }
        Err(e) => Err(e.into()),
    }
}

/// Sends an NDJSON bulk file (action line, document line, …) in pieces of about BULK_BYTES; returns
/// the number of documents. Any item error fails the load.
fn bulk_file(agent: &ureq::Agent, bulk_url: &str, path: &Path) -> Result<u64> {
    let file = fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut lines = BufReader::new(file).lines();
    let (mut chunk, mut docs) = (String::new(), 0u64);
    loop {
        let action = lines.next().transpose()?;
        if let Some(action) = &action {
            if action.trim().is_empty() {
                continue;
            }
            let doc = lines
                .next()
                .transpose()?
                .ok_or_else(|| anyhow!("{}: action line without a document", path.display()))?;
            chunk.push_str(action);
            chunk.push('\n');
            chunk.push_str(&doc);
            chunk.push('\n');
            docs += 1;
        }
        if (action.is_none() && !chunk.is_empty()) || chunk.len() >= BULK_BYTES {
            let resp = request(agent.post(bulk_url).set("Content-Type", "application/x-ndjson"), Some(&chunk))
                .with_context(|| format!("bulk load of {} failed", path.display()))?;
            if resp["errors"].as_bool() != Some(false) {
                let first = resp["items"].as_array().and_then(|items| items.first()).cloned().unwrap_or_default();
                bail!("bulk load of {} failed: {first}", path.display());
            }
            chunk.clear();
        }
        if action.is_none() {
            return Ok(docs);
        }
    }
}

// ---------------------------------------------------------------- Java

/// JAVA_HOME if it is Java >= 21, else the newest such JDK under /usr/lib/jvm.
fn find_java() -> Result<PathBuf> {
    let mut seen = Vec::new();
    if let Some(home) = std::env::var_os("JAVA_HOME").map(PathBuf::from) {
        if let Some(v) = java_version(&home) {
            if v >= MIN_JAVA {
                return Ok(home);
            }
            seen.push(format!("{v} at {}", home.display()));
        }
    }
    let mut best: Option<(u32, PathBuf)> = None;
    if let Ok(entries) = fs::read_dir("/usr/lib/jvm") {
        let mut homes: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| !p.is_symlink()).collect();
        homes.sort();
        for home in homes {
            let Some(v) = java_version(&home) else { continue };
            seen.push(format!("{v} at {}", home.display()));
            if v >= MIN_JAVA && best.as_ref().is_none_or(|(b, _)| v > *b) {
                best = Some((v, home));
            }
        }
    }
    best.map(|(_, home)| home).ok_or_else(|| {
        let found = if seen.is_empty() { "none".to_string() } else { seen.join(", ") };
        anyhow!("OpenSearch needs Java {MIN_JAVA} or newer, found in JAVA_HOME and /usr/lib/jvm: {found}; install a JDK {MIN_JAVA}+ or set JAVA_HOME")
    })
}

/// Major version of the JDK at `home`: from its `release` file, else from `bin/java -version`.
fn java_version(home: &Path) -> Option<u32> {
    if !home.join("bin/java").is_file() {
        return None;
    }
    if let Some(v) = fs::read_to_string(home.join("release")).ok().and_then(|s| parse_release_file(&s)) {
        return Some(v);
    }
    let out = Command::new(home.join("bin/java")).arg("-version").output().ok()?;
    parse_version_output(&String::from_utf8_lossy(&out.stderr))
}

/// `JAVA_VERSION="25.0.1"` in a JDK's `release` file.
fn parse_release_file(text: &str) -> Option<u32> {
    let line = text.lines().find_map(|l| l.strip_prefix("JAVA_VERSION="))?;
    parse_major(line.trim().trim_matches('"'))
}

/// `openjdk version "21.0.2" 2024-01-16` (first line of `java -version`).
fn parse_version_output(text: &str) -> Option<u32> {
    let start = text.find("version \"")? + "version \"".len();
    let rest = &text[start..];
    parse_major(&rest[..rest.find('"')?])
}

/// "25.0.1" → 25, "21" → 21, "22-ea" → 22, "17.0.2+8" → 17, legacy "1.8.0_292" → 8.
fn parse_major(version: &str) -> Option<u32> {
    let mut parts = version.split(|c: char| !c.is_ascii_digit());
    let first: u32 = parts.next()?.parse().ok()?;
    if first == 1 {
        parts.next()?.parse().ok()
    } else {
        Some(first)
    }
}

// ---------------------------------------------------------------- distribution

/// `<cache>/opensearch-<version>/`, downloaded with Maven and unpacked on first use.
fn ensure_distribution(version: &str, cache_dir: &Path, java_home: &Path) -> Result<PathBuf> {
    let home = cache_dir.join(format!("opensearch-{version}"));
    if home.join("bin/opensearch").is_file() && home.join("lib").is_dir() {
        return Ok(home);
    }
    fs::create_dir_all(cache_dir).with_context(|| format!("cannot create {}", cache_dir.display()))?;
    let zip = cache_dir.join(format!("opensearch-{version}.zip"));
    if !zip.is_file() {
        let started = Instant::now();
        eprintln!("svcbench: downloading OpenSearch {version} with Maven (once) into {}", cache_dir.display());
        let tmp = cache_dir.join(format!(".download-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        let out = Command::new("mvn")
            .args(["-q", "-B", "-Dstyle.color=never", "dependency:copy"])
            .arg(format!("-Dartifact={MAVEN_ARTIFACT}:{version}:zip"))
            .arg(format!("-DoutputDirectory={}", tmp.display()))
            .current_dir(cache_dir)
            .output()
            .context("cannot run `mvn` (Maven is needed once, to download OpenSearch)")?;
        let fetched = tmp.join(format!("opensearch-{version}.zip"));
        if !out.status.success() || !fetched.is_file() {
            let _ = fs::remove_dir_all(&tmp);
            let said = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
            // Maven's first error line says what went wrong; the rest is advice on Maven itself.
            let first_error = said.lines().find_map(|l| l.find("[ERROR]").map(|i| &l[i..])).unwrap_or("no error line");
            bail!("Maven could not download {MAVEN_ARTIFACT}:{version}:zip ({}): {first_error}", out.status);
        }
        fs::rename(&fetched, &zip)?;
        let _ = fs::remove_dir_all(&tmp);
        eprintln!("svcbench: downloaded {} in {:.1} s", zip.display(), started.elapsed().as_secs_f64());
    }

    // Unpack beside the final place, then rename, so an interrupted unpack is never taken as done.
    let tmp = cache_dir.join(format!(".unpack-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp)?;
    let unzip = Command::new("unzip").arg("-q").arg(&zip).arg("-d").arg(&tmp).status();
    match unzip {
        Ok(s) if s.success() => {}
        Ok(s) => bail!("unzip of {} failed ({s})", zip.display()),
        Err(_) => {
            // No unzip on this machine: the JDK's jar tool unpacks too, but loses the executable bits.
            let s = Command::new(java_home.join("bin/jar")).arg("xf").arg(&zip).current_dir(&tmp).status()?;
            if !s.success() {
                bail!("unpacking {} with jar failed ({s})", zip.display());
            }
            for entry in fs::read_dir(tmp.join(format!("opensearch-{version}/bin")))? {
                let path = entry?.path();
                fs::set_permissions(&path, fs::Permissions::from_mode(0o755))?;
            }
        }
    }
    let unpacked = tmp.join(format!("opensearch-{version}"));
    if !unpacked.join("bin/opensearch").is_file() {
        bail!("{} does not hold opensearch-{version}/bin/opensearch", zip.display());
    }
    if let Err(e) = fs::rename(&unpacked, &home) {
        // Another svcbench may have unpacked it meanwhile.
        if !home.join("bin/opensearch").is_file() {
            return Err(e).with_context(|| format!("cannot move the distribution to {}", home.display()));
        }
    }
    let _ = fs::remove_dir_all(&tmp);
    Ok(home)
}

/// Config folder copied from the distribution, with our node settings and heap; empty data/logs/tmp.
fn write_instance_config(home: &Path, dir: &Path, opts: &OpenSearchOptions) -> Result<()> {
    for sub in ["data", "logs", "tmp"] {
        fs::create_dir_all(dir.join(sub)).with_context(|| format!("cannot create {}", dir.join(sub).display()))?;
    }
    copy_tree(&home.join("config"), &dir.join("config"))?;
    let yml = format!(
        "cluster.name: svcbench\n\
         node.name: svcbench-{port}\n\
         discovery.type: single-node\n\
         network.host: {bind}\n\
         http.port: {port}\n\
         path.data: {data}\n\
         path.logs: {logs}\n\
         # A full disk on a dev machine must not turn the store read-only in the middle of a benchmark.\n\
         cluster.routing.allocation.disk.threshold_enabled: false\n",
        port = opts.port,
        bind = opts.bind,
        data = dir.join("data").display(),
        logs = dir.join("logs").display(),
    );
    fs::write(dir.join("config/opensearch.yml"), yml)?;
    // bin/opensearch runs from the (read-only) distribution folder: point jvm.options' relative paths
    // (GC log, heap dumps, JVM error files) into the instance.
    let jvm_options = dir.join("config/jvm.options");
    let text = fs::read_to_string(&jvm_options).with_context(|| format!("cannot read {}", jvm_options.display()))?;
    fs::write(&jvm_options, absolute_jvm_paths(&text, dir))?;
    let options_dir = dir.join("config/jvm.options.d");
    fs::create_dir_all(&options_dir)?;
    // Files here come after jvm.options, so these win over its -Xms1g/-Xmx1g.
    fs::write(options_dir.join("svcbench.options"), format!("-Xms{0}m\n-Xmx{0}m\n", opts.heap_mb))?;
    Ok(())
}

fn absolute_jvm_paths(jvm_options: &str, dir: &Path) -> String {
    let (logs, data) = (dir.join("logs"), dir.join("data"));
    jvm_options
        .replace("file=logs/", &format!("file={}/", logs.display()))
        .replace("HeapDumpPath=data", &format!("HeapDumpPath={}", data.display()))
        .replace("ErrorFile=logs/", &format!("ErrorFile={}/", logs.display()))
}

fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from).with_context(|| format!("cannot read {}", from.display()))? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

fn chown_tree(path: &Path, uid: u32, gid: u32) -> Result<()> {
    std::os::unix::fs::chown(path, Some(uid), Some(gid)).with_context(|| format!("cannot chown {}", path.display()))?;
    if path.is_dir() && !path.is_symlink() {
        for entry in fs::read_dir(path)? {
            chown_tree(&entry?.path(), uid, gid)?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- users and processes

/// uid and gid of `name`, creating it as a system user without home or shell if missing.
fn ensure_user(name: &str) -> Result<(u32, u32)> {
    if let Some(ids) = lookup_user(name)? {
        return Ok(ids);
    }
    let status = Command::new("useradd")
        .args(["--system", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", name])
        .status()
        .context("cannot run useradd")?;
    if !status.success() {
        bail!("useradd {name} failed ({status}); OpenSearch refuses to run as root and needs an unprivileged user");
    }
    lookup_user(name)?.ok_or_else(|| anyhow!("user {name} missing after useradd"))
}

fn lookup_user(name: &str) -> Result<Option<(u32, u32)>> {
    let passwd = fs::read_to_string("/etc/passwd").context("cannot read /etc/passwd")?;
    Ok(parse_passwd(&passwd, name))
}

fn parse_passwd(passwd: &str, name: &str) -> Option<(u32, u32)> {
    passwd.lines().find_map(|line| {
        let f: Vec<&str> = line.split(':').collect();
        (f.len() >= 4 && f[0] == name).then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))?
    })
}

/// The unprivileged user must be able to reach the distribution: every folder above it searchable by
/// others (the user owns none of them).
fn ensure_reachable(home: &Path, user: &str) -> Result<()> {
    for dir in home.ancestors() {
        let mode = fs::metadata(dir).with_context(|| format!("cannot stat {}", dir.display()))?.permissions().mode();
        if mode & 0o001 == 0 {
            bail!(
                "{} is not reachable by the unprivileged user `{user}` that runs OpenSearch ({} has mode {:o}); \
                 use a cache folder such as /var/cache/svcbench/opensearch",
                home.display(),
                dir.display(),
                mode & 0o777
            );
        }
    }
    Ok(())
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

// ---------------------------------------------------------------- load dataset

/// `<dataset>/out/`, built with `build.py` in a private virtualenv when its files are missing.
fn ensure_dataset(dataset_dir: &Path) -> Result<PathBuf> {
    let out = dataset_dir.join("out");
    let complete = |out: &Path| BULK_FILES.iter().chain(["city-ids.txt"].iter()).all(|f| out.join(f).is_file());
    if complete(&out) {
        return Ok(out);
    }
    let started = Instant::now();
    eprintln!("svcbench: building the load dataset with {} (once)", dataset_dir.join("build.py").display());
    let venv = dataset_dir.join(".venv");
    let python = venv.join("bin/python");
    if !python.is_file() {
        run(Command::new("python3").arg("-m").arg("venv").arg(&venv), "python3 -m venv")?;
    }
    run(
        Command::new(&python).args(["-m", "pip", "install", "-q", "-r"]).arg(dataset_dir.join("requirements.txt")),
        "pip install -r requirements.txt",
    )?;
    run(Command::new(&python).arg(dataset_dir.join("build.py")).arg("--out").arg(&out), "build.py")?;
    if !complete(&out) {
        bail!("{} ran but {} is incomplete", dataset_dir.join("build.py").display(), out.display());
    }
    eprintln!("svcbench: built the load dataset in {:.0} s", started.elapsed().as_secs_f64());
    Ok(out)
}

fn run(cmd: &mut Command, what: &str) -> Result<()> {
    let status = cmd.status().with_context(|| format!("cannot run {what}"))?;
    if !status.success() {
        bail!("{what} failed ({status})");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_major_versions() {
        assert_eq!(parse_major("25.0.1"), Some(25));
        assert_eq!(parse_major("21"), Some(21));
        assert_eq!(parse_major("22-ea"), Some(22));
        assert_eq!(parse_major("17.0.2+8"), Some(17));
        assert_eq!(parse_major("1.8.0_292"), Some(8));
        assert_eq!(parse_major("abc"), None);
    }

    #[test]
    fn java_version_sources() {
        assert_eq!(parse_release_file("IMPLEMENTOR=\"Eclipse Adoptium\"\nJAVA_VERSION=\"25.0.1\"\n"), Some(25));
        assert_eq!(parse_release_file("OS_NAME=\"Linux\"\n"), None);
        let out = "openjdk version \"17.0.9\" 2023-10-17\nOpenJDK Runtime Environment (build 17.0.9+9)\n";
        assert_eq!(parse_version_output(out), Some(17));
        assert_eq!(parse_version_output("java version \"1.8.0_292\"\n"), Some(8));
        assert_eq!(parse_version_output("garbage"), None);
    }

    #[test]
    fn jvm_option_paths_point_into_the_instance() {
        let text =
            "-XX:HeapDumpPath=data\n-XX:ErrorFile=logs/hs_err_pid%p.log\n9-:-Xlog:gc*:file=logs/gc.log:utctime\n";
        let fixed = absolute_jvm_paths(text, Path::new("/tmp/i"));
        assert_eq!(fixed, "-XX:HeapDumpPath=/tmp/i/data\n-XX:ErrorFile=/tmp/i/logs/hs_err_pid%p.log\n9-:-Xlog:gc*:file=/tmp/i/logs/gc.log:utctime\n");
    }

    #[test]
    fn passwd_and_proc_stat() {
        let passwd = "root:x:0:0:root:/root:/bin/bash\nsvcbench:x:999:995::/nonexistent:/usr/sbin/nologin\n";
        assert_eq!(parse_passwd(passwd, "svcbench"), Some((999, 995)));
        assert_eq!(parse_passwd(passwd, "nobody"), None);
        assert_eq!(stat_pgrp("4242 (java) S 4200 4242 4242 0 -1 4194560"), Some(4242));
        assert_eq!(stat_pgrp("77 (a b) c) R 1 70 70 0"), Some(70));
    }
}

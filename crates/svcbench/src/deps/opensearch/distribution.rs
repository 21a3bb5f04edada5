//! The OpenSearch distribution: Java 21 or newer found on this machine, the plugin-less
//! `integ-test-zip` (no security plugin) fetched once with Maven into a cache folder and unpacked there,
//! an instance folder's configuration, and the unprivileged user the node runs as.
use anyhow::{anyhow, bail, Context, Result};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Instant;

use super::options::OpenSearchOptions;

const MAVEN_ARTIFACT: &str = "org.opensearch.distribution.integ-test-zip:opensearch";
const MIN_JAVA: u32 = 21;
/// The user the node runs as when svcbench runs as root: the dependencies' own, not the services'.
pub(super) const RUN_AS: &str = crate::sandbox::service_user::STORE_USER;

/// JAVA_HOME if it is Java >= 21, else the newest such JDK under /usr/lib/jvm.
pub(super) fn find_java() -> Result<PathBuf> {
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
    let out =
        crate::child::helper(home.join("bin/java"), crate::child::Needs::Nothing).arg("-version").output().ok()?;
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

/// The distribution of `version` in `cache_dir`, downloaded and unpacked first if it is not there, with
/// the Java it needs found: what a node's start does before anything else, for a machine that fetches it
/// for another one sharing its cache (a store host without a way out).
pub fn prepare(version: &str, cache_dir: &Path) -> Result<PathBuf> {
    ensure_distribution(version, cache_dir, &find_java()?)
}

/// `<cache>/opensearch-<version>/`, downloaded with Maven and unpacked on first use.
pub(super) fn ensure_distribution(version: &str, cache_dir: &Path, java_home: &Path) -> Result<PathBuf> {
    // Root copies the distribution's config and the node runs its programs: another user must not be able
    // to swap what is in the cache.
    crate::safe_fs::Folder::make(cache_dir).context("OpenSearch's cache folder (SVCBENCH_CACHE)")?;
    let home = cache_dir.join(format!("opensearch-{version}"));
    if home.join("bin/opensearch").is_file() && home.join("lib").is_dir() {
        return Ok(home);
    }
    let zip = cache_dir.join(format!("opensearch-{version}.zip"));
    if !zip.is_file() {
        let started = Instant::now();
        crate::errln!("svcbench: downloading OpenSearch {version} with Maven (once) into {}", cache_dir.display());
        let tmp = cache_dir.join(format!(".download-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        let out = crate::child::helper("mvn", crate::child::Needs::Toolchains)
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
            bail!(
                "Maven could not download {MAVEN_ARTIFACT}:{version}:zip ({}): {first_error}; on a machine without access to Maven's repository, copy opensearch-{version}.zip there into {}",
                out.status,
                cache_dir.display()
            );
        }
        fs::rename(&fetched, &zip)?;
        let _ = fs::remove_dir_all(&tmp);
        crate::errln!("svcbench: downloaded {} in {:.1} s", zip.display(), started.elapsed().as_secs_f64());
    }

    // Unpack beside the final place, then rename, so an interrupted unpack is never taken as done.
    let tmp = cache_dir.join(format!(".unpack-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp)?;
    // Helpers' output goes to stderr: stdout is for what svcbench prints (`svcbench up`'s URLs).
    let unzip = crate::child::helper("unzip", crate::child::Needs::Nothing)
        .arg("-q")
        .arg(&zip)
        .arg("-d")
        .arg(&tmp)
        .stdout(Stdio::from(std::io::stderr()))
        .status();
    match unzip {
        Ok(s) if s.success() => {}
        Ok(s) => bail!("unzip of {} failed ({s})", zip.display()),
        Err(_) => {
            // No unzip on this machine: the JDK's jar tool unpacks too, but loses the executable bits.
            let s = crate::child::helper(java_home.join("bin/jar"), crate::child::Needs::Nothing)
                .arg("xf")
                .arg(&zip)
                .current_dir(&tmp)
                .stdout(Stdio::from(std::io::stderr()))
                .status()?;
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
/// `snapshots` is the only folder the node may register snapshot repositories in (`path.repo`).
pub(super) fn write_instance_config(home: &Path, dir: &Path, opts: &OpenSearchOptions, snapshots: &Path) -> Result<()> {
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
         path.repo: [{repo}]\n\
         # A restore of the store's data goes through the recovery throttle (40 MiB/s): 7 s instead of 2.\n\
         indices.recovery.max_bytes_per_sec: 0\n\
         # A full disk on a dev machine must not turn the store read-only in the middle of a benchmark.\n\
         cluster.routing.allocation.disk.threshold_enabled: false\n",
        port = opts.port,
        bind = opts.bind,
        data = dir.join("data").display(),
        logs = dir.join("logs").display(),
        // A JSON string is a YAML one: the folder's name cannot end the list or the line.
        repo = serde_json::Value::from(snapshots.display().to_string()),
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

// ---------------------------------------------------------------- users and processes

/// The unprivileged user must be able to reach the distribution: every folder above it searchable by
/// others (the user owns none of them).
pub(super) fn ensure_reachable(home: &Path, user: &str) -> Result<()> {
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
    fn the_node_may_keep_snapshots_only_in_the_snapshots_folder() {
        let (home, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        fs::create_dir_all(home.path().join("config")).unwrap();
        fs::write(home.path().join("config/jvm.options"), "-Xms1g\n").unwrap();
        let opts = OpenSearchOptions {
            version: "3.6.0".into(),
            heap_mb: 512,
            port: 9200,
            bind: std::net::Ipv4Addr::LOCALHOST,
            cache_dir: PathBuf::from("/var/cache/svcbench/opensearch"),
        };
        write_instance_config(home.path(), dir.path(), &opts, Path::new("/var/cache/a b/snapshots")).unwrap();
        let yml = fs::read_to_string(dir.path().join("config/opensearch.yml")).unwrap();
        assert!(yml.lines().any(|l| l == "path.repo: [\"/var/cache/a b/snapshots\"]"), "{yml}");
    }
}

//! Skipping a build whose inputs are unchanged since it last succeeded. A stamp in the service's
//! `.svcbench/` folder holds what the build depended on (its command and environment, every source file's
//! path, size and modification time, and the artifacts it left) and what it took. Cargo and Go notice an
//! unchanged tree in a second; Maven repackages every jar in 15 s or more, on every run of a JVM service.
//!
//! What the build wrote is not an input: the stamp records the files and folders written during the build
//! (modified after it started), the artifacts among them, and leaves exactly those out. A folder is never
//! left out for holding an artifact: TechEmpower's go-std builds `src/app` beside its sources in `src/`,
//! and leaving `src/` out measured the old binary after a source edit.
use crate::manifest::Service;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

/// The folder of stamps inside a service folder; never an input itself.
const STAMP_DIR: &str = ".svcbench";

#[derive(Debug, Serialize, Deserialize)]
pub struct Stamp {
    inputs: u64,
    artifacts: u64,
    /// What the build wrote, relative to the service folder: files, or folders it wrote whole (`target`).
    /// A stamp of an earlier svcbench has none, so its inputs no longer match: it builds once more.
    #[serde(default)]
    outputs: Vec<String>,
    /// What the build that left these artifacts took.
    pub seconds: f64,
    pub built_at: String,
}

fn path_of(svc: &Service) -> PathBuf {
    let mut h = DefaultHasher::new();
    svc.build_key().hash(&mut h);
    svc.dir.join(STAMP_DIR).join(format!("build-{:016x}.json", h.finish()))
}

/// The stamp of the last successful build, whether or not its inputs changed since.
pub fn last(svc: &Service) -> Option<Stamp> {
    serde_json::from_slice(&std::fs::read(path_of(svc)).ok()?).ok()
}

/// Whether the build `stamp` records is still current: its inputs and artifacts exactly as it left them.
pub fn holds(svc: &Service, stamp: &Stamp) -> bool {
    let now = || Some((inputs_hash(svc, &stamp.outputs).ok()?, artifacts_hash(svc)?));
    now() == Some((stamp.inputs, stamp.artifacts))
}

/// The stamp of the last successful build, if that build's inputs and artifacts are exactly as it left them.
pub fn fresh(svc: &Service) -> Option<Stamp> {
    last(svc).filter(|stamp| holds(svc, stamp))
}

/// Now, for the start of a build: a file written before it reads as no later than this (the kernel stamps
/// files from a coarse clock, or a finer one that never runs ahead of this one), and one the build writes
/// after its first clock tick reads as later. A file written in that first tick counts as an input: at worst
/// one more build, never a stale binary.
pub fn file_clock_now() -> SystemTime {
    SystemTime::now()
}

/// Records a successful build of `seconds` that started at `started` ([`file_clock_now`]).
pub fn write(svc: &Service, seconds: f64, started: SystemTime) -> Result<()> {
    let artifacts = artifacts_hash(svc).context("an artifact is missing after the build")?;
    let outputs = written_since(svc, started)?;
    let stamp = Stamp {
        inputs: inputs_hash(svc, &outputs)?,
        artifacts,
        outputs,
        seconds,
        built_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    };
    let path = path_of(svc);
    std::fs::create_dir_all(path.parent().unwrap_or(&svc.dir))?;
    std::fs::write(&path, serde_json::to_vec(&stamp)?).with_context(|| format!("cannot write {}", path.display()))
}

/// Forgets the last build (before building again: a failed or interrupted build leaves no stamp).
pub fn remove(svc: &Service) {
    let _ = std::fs::remove_file(path_of(svc));
}

/// The build command, its environment and every file the build may read: the service folder (without the
/// stamps, what the build wrote (`outputs`), and the artifacts of the folder's every build, so that a
/// variant's binary beside the base's rebuilds neither) and the manifest's `build_inputs`. Files by path,
/// size and modification time: a second to check, where reading them would take longer.
fn inputs_hash(svc: &Service, outputs: &[String]) -> Result<u64> {
    let mut h = DefaultHasher::new();
    (&svc.manifest.build, &svc.manifest.build_env).hash(&mut h);
    let mut skip = written_by_builds(svc);
    skip.extend(outputs.iter().map(|o| svc.dir.join(o)));
    let mut files = Vec::new();
    walk(&svc.dir, &skip, &mut files)?;
    for root in svc.manifest.build_inputs.iter().map(|extra| svc.dir.join(extra)) {
        walk(&root, &skip, &mut files)?;
    }
    for file in files {
        file_hash(&file, &mut h)?;
    }
    Ok(h.finish())
}

/// The artifacts of every build of the service's folder (the base's and each variant's), as paths.
fn written_by_builds(svc: &Service) -> Vec<PathBuf> {
    svc.folder_artifacts.iter().map(|a| svc.dir.join(a)).collect()
}

/// What in the service folder was written after `since` (the build's start), relative to the folder:
/// a folder whose every file was (cargo's `target/`, a fresh `node_modules/`) as the folder, other files
/// one by one; and the service's artifacts, also where a build that found nothing to do left them as they
/// were.
fn written_since(svc: &Service, since: SystemTime) -> Result<Vec<String>> {
    let mut files = Vec::new();
    walk(&svc.dir, &written_by_builds(svc), &mut files)?;
    let written = |f: &PathBuf| std::fs::symlink_metadata(f).and_then(|m| m.modified()).is_ok_and(|t| t > since);
    let (new, old): (Vec<PathBuf>, Vec<PathBuf>) = files.into_iter().partition(written);
    let relative = |f: &Path| f.strip_prefix(&svc.dir).unwrap_or(f).to_path_buf();
    // A folder holding any file older than the build is not the build's whole.
    let mixed: std::collections::HashSet<PathBuf> =
        old.iter().flat_map(|f| relative(f).ancestors().skip(1).map(Path::to_path_buf).collect::<Vec<_>>()).collect();
    let mut outputs: std::collections::BTreeSet<String> = new
        .iter()
        .map(|f| {
            let rel = relative(f);
            // The highest folder above the file (below the service folder) that holds only new files.
            let whole = rel.ancestors().skip(1).filter(|a| !a.as_os_str().is_empty() && !mixed.contains(*a)).last();
            whole.unwrap_or(&rel).to_string_lossy().into_owned()
        })
        .collect();
    outputs.extend(svc.manifest.artifacts.iter().cloned());
    Ok(outputs.into_iter().collect())
}

/// The files a study's code fingerprint is made of, in name order, each with its name as the manifest sees
/// it (relative to the service folder, `build_inputs` entries as written) and its path: the folder without
/// its artifacts' top folders, as its stored fingerprints were made (content is read, so a build's whole
/// `target/` cannot be in it; a source beside an artifact, as go-std's `src/`, is not either).
pub(crate) fn input_files(svc: &Service) -> Result<Vec<(String, PathBuf)>> {
    let mut skip = Vec::new();
    for a in &svc.manifest.artifacts {
        if let Some(top) = Path::new(a).components().next() {
            skip.push(svc.dir.join(top));
        }
    }
    let mut files = Vec::new();
    walk(&svc.dir, &skip, &mut files)?;
    let mut named: Vec<(String, PathBuf)> = files.into_iter().map(|f| (relative(&svc.dir, &f, ""), f)).collect();
    for extra in &svc.manifest.build_inputs {
        let root = svc.dir.join(extra);
        let mut files = Vec::new();
        walk(&root, &skip, &mut files)?;
        named.extend(files.into_iter().map(|f| (relative(&root, &f, extra), f)));
    }
    Ok(named)
}

/// `file`'s name under `root`, behind `prefix`.
fn relative(root: &Path, file: &Path, prefix: &str) -> String {
    let rest = file.strip_prefix(root).unwrap_or(file);
    Path::new(prefix).join(rest).to_string_lossy().into_owned()
}

fn artifacts_hash(svc: &Service) -> Option<u64> {
    let mut h = DefaultHasher::new();
    for a in &svc.manifest.artifacts {
        let mut files = Vec::new();
        walk(&svc.dir.join(a), &[], &mut files).ok()?;
        for f in files {
            file_hash(&f, &mut h).ok()?;
        }
    }
    Some(h.finish())
}

/// Path, size and modification time of one file.
fn file_hash(file: &Path, h: &mut DefaultHasher) -> Result<()> {
    let meta = std::fs::symlink_metadata(file).with_context(|| format!("cannot read {}", file.display()))?;
    let mtime = meta.modified()?.duration_since(UNIX_EPOCH).unwrap_or_default();
    (file, meta.len(), mtime.as_nanos()).hash(h);
    Ok(())
}

/// Every file under `root` (or `root` itself), in name order, without `skip` and any folder of stamps or
/// of Git.
fn walk(root: &Path, skip: &[PathBuf], out: &mut Vec<PathBuf>) -> Result<()> {
    let name = root.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if skip.iter().any(|s| s == root) || name == STAMP_DIR || name == ".git" {
        return Ok(());
    }
    let meta = std::fs::symlink_metadata(root).with_context(|| format!("cannot read {}", root.display()))?;
    if meta.is_dir() {
        let mut entries: Vec<PathBuf> =
            std::fs::read_dir(root)?.map(|e| e.map(|e| e.path())).collect::<Result<_, _>>()?;
        entries.sort();
        for e in entries {
            walk(&e, skip, out)?;
        }
    } else {
        out.push(root.to_path_buf());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A service whose build appends a line to a log outside its folder, so builds can be counted.
    fn service(dir: &Path, build_env: &str, extra: &str) -> Service {
        std::fs::write(
            dir.join("svcbench.toml"),
            crate::manifest::test_manifest(
                "s",
                "hello",
                &format!(
                    "build = \"mkdir -p out && cat src.txt > out/bin && echo b >> ../builds.log\"\n\
                 build_env = {{ {build_env} }}\n{extra}run = \"out/bin\"\nartifacts = [\"out/bin\"]\nreadiness = \"/\"\n"
                ),
            ),
        )
        .unwrap();
        Service::load(dir).unwrap()
    }

    fn builds(tmp: &Path, svc: &Service) -> usize {
        crate::service::build::build(svc, &tmp.join("logs"), false).unwrap();
        std::fs::read_to_string(tmp.join("builds.log")).unwrap_or_default().lines().count()
    }

    #[test]
    fn a_build_is_skipped_until_a_source_the_environment_an_input_or_the_artifact_changes() {
        let tmp = tempfile::tempdir().unwrap();
        let (dir, other) = (tmp.path().join("svc"), tmp.path().join("shared"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(dir.join("src.txt"), "one").unwrap();
        std::fs::write(other.join("lib.txt"), "x").unwrap();
        let svc = service(&dir, "", "build_inputs = [\"../shared\"]\n");
        assert_eq!(builds(tmp.path(), &svc), 1);
        assert_eq!(builds(tmp.path(), &svc), 1, "nothing changed: the stamp stands for the build");
        // Each change also changes a size: file times may not tick between two writes this close.
        std::fs::write(dir.join("src.txt"), "second").unwrap();
        assert_eq!(builds(tmp.path(), &svc), 2, "a source changed");
        assert_eq!(std::fs::read_to_string(dir.join("out/bin")).unwrap(), "second");
        std::fs::write(other.join("lib.txt"), "yy").unwrap();
        assert_eq!(builds(tmp.path(), &svc), 3, "a build input outside the folder changed");
        std::fs::write(dir.join("out/bin"), "tampered").unwrap();
        assert_eq!(builds(tmp.path(), &svc), 4, "the artifact is not the one the build left");
        std::fs::remove_dir_all(dir.join("out")).unwrap();
        assert_eq!(builds(tmp.path(), &svc), 5, "the artifact is gone");
        let other_env = service(&dir, "MODE = \"fast\"", "build_inputs = [\"../shared\"]\n");
        assert_eq!(builds(tmp.path(), &other_env), 6, "another build environment has its own stamp");
        assert_eq!(builds(tmp.path(), &other_env), 6);
        let stamp = fresh(&other_env).expect("a stamp for the last build");
        assert!(stamp.seconds > 0.0);
        // A failing build leaves no stamp behind: the next run builds again.
        std::fs::remove_file(dir.join("src.txt")).unwrap();
        assert!(crate::service::build::build(&other_env, &tmp.path().join("logs"), false).is_err());
        assert!(fresh(&other_env).is_none());
    }

    #[test]
    fn a_source_beside_an_artifact_is_an_input_and_what_the_build_wrote_is_not() {
        // TechEmpower's go-std builds `src/app` beside its sources in `src/`; its tools' own files (here
        // `cache/`) are written by the build too. The pause keeps the build's writes out of the clock tick
        // it started in (such a write would count as an input: one more build, never a stale one).
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("svc");
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("src/main.txt"), "one").unwrap();
        std::fs::write(
            dir.join("svcbench.toml"),
            crate::manifest::test_manifest(
                "s",
                "hello",
                "build = \"sleep 0.05 && mkdir -p cache && echo o > cache/objects && cat src/main.txt > src/app && \
                 echo b >> ../builds.log\"\nrun = \"src/app\"\nartifacts = [\"src/app\"]\nreadiness = \"/\"\n",
            ),
        )
        .unwrap();
        let svc = Service::load(&dir).unwrap();
        assert_eq!(builds(tmp.path(), &svc), 1);
        assert_eq!(builds(tmp.path(), &svc), 1, "nothing changed");
        std::fs::write(dir.join("cache/objects"), "rewritten by the tool").unwrap();
        assert_eq!(builds(tmp.path(), &svc), 1, "a file the build wrote is not a source");
        std::fs::write(dir.join("src/main.txt"), "second").unwrap();
        assert_eq!(builds(tmp.path(), &svc), 2, "a source in the artifact's folder changed");
        assert_eq!(std::fs::read_to_string(dir.join("src/app")).unwrap(), "second", "the binary is the new one");
        std::fs::write(dir.join("src/extra.txt"), "new file").unwrap();
        assert_eq!(builds(tmp.path(), &svc), 3, "a new source beside the artifact");
    }

    #[test]
    fn a_variants_binary_beside_the_bases_does_not_make_either_build_again() {
        // `go build -o bin` and a variant's `go build -o bin-slow` in one folder: each build writes a file
        // the other would otherwise read as a changed source.
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("svc");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("src.txt"), "one").unwrap();
        std::fs::write(
            dir.join("svcbench.toml"),
            crate::manifest::test_manifest(
                "s",
                "hello",
                "build = \"cat src.txt > bin && echo b >> ../builds.log\"\nrun = \"./bin\"\n\
                 artifacts = [\"bin\"]\nreadiness = \"/\"\n[variant.slow]\n\
                 build = \"cat src.txt > bin-slow && echo v >> ../builds.log\"\nrun = \"./bin-slow\"\nartifacts = [\"bin-slow\"]\n",
            ),
        )
        .unwrap();
        let base = Service::load(&dir).unwrap();
        let slow = base.with_variant("slow").unwrap();
        assert_eq!(builds(tmp.path(), &base), 1);
        assert_eq!(builds(tmp.path(), &slow), 2);
        assert_eq!(builds(tmp.path(), &base), 2, "the variant's binary is not a source of the base");
        assert_eq!(builds(tmp.path(), &slow), 2, "nor the base's of the variant");
    }
}

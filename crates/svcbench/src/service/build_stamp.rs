//! Skipping a build whose inputs are unchanged since it last succeeded. A stamp in the service's
//! `.svcbench/` folder holds what the build depended on (its command and environment, every source file's
//! path, size and modification time, and the artifacts it left) and what it took. Cargo and Go notice an
//! unchanged tree in a second; Maven repackages every jar in 15 s or more, on every run of a JVM service.
use crate::manifest::Service;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// The folder of stamps inside a service folder; never an input itself.
const STAMP_DIR: &str = ".svcbench";

#[derive(Debug, Serialize, Deserialize)]
pub struct Stamp {
    inputs: u64,
    artifacts: u64,
    /// What the build that left these artifacts took.
    pub seconds: f64,
    pub built_at: String,
}

fn path_of(svc: &Service) -> PathBuf {
    let mut h = DefaultHasher::new();
    svc.build_key().hash(&mut h);
    svc.dir.join(STAMP_DIR).join(format!("build-{:016x}.json", h.finish()))
}

/// The stamp of the last successful build, if that build's inputs and artifacts are exactly as it left them.
pub fn fresh(svc: &Service) -> Option<Stamp> {
    let stamp: Stamp = serde_json::from_slice(&std::fs::read(path_of(svc)).ok()?).ok()?;
    let now = (inputs_hash(svc).ok()?, artifacts_hash(svc)?);
    (now == (stamp.inputs, stamp.artifacts)).then_some(stamp)
}

/// Records a successful build of `seconds`.
pub fn write(svc: &Service, seconds: f64) -> Result<()> {
    let artifacts = artifacts_hash(svc).context("an artifact is missing after the build")?;
    let stamp = Stamp {
        inputs: inputs_hash(svc)?,
        artifacts,
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

/// What the service's build depends on, as a hex hash of [`inputs_hash`]: a study records it to tell, when
/// resumed, whether a service's code changed since its earlier runs. The hash is the standard library's
/// (stable within one svcbench build; a toolchain upgrade may change it and so report a change).
pub fn code_fingerprint(svc: &Service) -> Result<String> {
    Ok(format!("{:016x}", inputs_hash(svc)?))
}

/// The build command, its environment and every file the build may read: the service folder (without the
/// stamps and without the artifacts' top folders, which the build writes) and the manifest's `build_inputs`.
fn inputs_hash(svc: &Service) -> Result<u64> {
    let mut h = DefaultHasher::new();
    (&svc.manifest.build, &svc.manifest.build_env).hash(&mut h);
    let mut skip = Vec::new();
    for a in &svc.manifest.artifacts {
        if let Some(top) = Path::new(a).components().next() {
            skip.push(svc.dir.join(top));
        }
    }
    hash_tree(&svc.dir, &skip, &mut h)?;
    for extra in &svc.manifest.build_inputs {
        hash_tree(&svc.dir.join(extra), &skip, &mut h)?;
    }
    Ok(h.finish())
}

fn artifacts_hash(svc: &Service) -> Option<u64> {
    let mut h = DefaultHasher::new();
    for a in &svc.manifest.artifacts {
        hash_tree(&svc.dir.join(a), &[], &mut h).ok()?;
    }
    Some(h.finish())
}

/// Path, size and modification time of every file under `root` (or of `root` itself), in name order,
/// without `skip` and any folder of stamps or of Git.
fn hash_tree(root: &Path, skip: &[PathBuf], h: &mut DefaultHasher) -> Result<()> {
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
            hash_tree(&e, skip, h)?;
        }
    } else {
        let mtime = meta.modified()?.duration_since(UNIX_EPOCH).unwrap_or_default();
        (root, meta.len(), mtime.as_nanos()).hash(h);
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
            format!(
                "name = \"s\"\nscenario = \"hello\"\nlanguage = \"sh\"\nframework = \"sh\"\nframework_version = \"1\"\n\
                 model = \"blocking\"\nbuild = \"mkdir -p out && cat src.txt > out/bin && echo b >> ../builds.log\"\n\
                 build_env = {{ {build_env} }}\n{extra}run = \"out/bin\"\nartifacts = [\"out/bin\"]\nreadiness = \"/\"\n"
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
}

//! What a study records of each service's code, to tell when it is resumed whether the code changed since
//! its earlier runs: a SHA-256 of the build command, its environment and the content of every file the build
//! may read (the build stamp's set of files), each by its name relative to the service folder. Content, not
//! file times as the build stamp uses: a study's store is committed and resumed from another clone, on
//! another machine, where every file is new and nothing changed.
use crate::manifest::Service;
use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

/// How fingerprints of this kind begin; an earlier svcbench recorded a hash of file times without it.
pub const KIND: &str = "content:";

/// The service's code fingerprint, `content:` and 32 hex digits.
pub fn code_fingerprint(svc: &Service) -> Result<String> {
    let mut h = Sha256::new();
    let build = serde_json::to_string(&(&svc.manifest.build, &svc.manifest.build_env))?;
    h.update(build.as_bytes());
    for (name, file) in super::build_stamp::input_files(svc)? {
        let meta = std::fs::symlink_metadata(&file).with_context(|| format!("cannot read {}", file.display()))?;
        // A link is its target's name, as Git keeps it.
        let content = if meta.file_type().is_symlink() {
            std::fs::read_link(&file)?.to_string_lossy().into_owned().into_bytes()
        } else {
            std::fs::read(&file).with_context(|| format!("cannot read {}", file.display()))?
        };
        // Name and length first, so no two file sets run together into one byte stream.
        h.update(format!("\n{name}\n{}\n", content.len()).as_bytes());
        h.update(&content);
    }
    let digest = h.finalize();
    Ok(format!("{KIND}{}", digest.iter().take(16).map(|b| format!("{b:02x}")).collect::<String>()))
}

/// Whether a recorded fingerprint is of this kind, so comparable with one made now.
pub fn comparable(recorded: &str) -> bool {
    recorded.starts_with(KIND)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn service(dir: &Path, build_env: &str) -> Service {
        std::fs::write(
            dir.join("svcbench.toml"),
            crate::manifest::test_manifest(
                "s",
                "hello",
                &format!(
                    "build = \"mkdir -p out && cat src.txt > out/bin\"\nbuild_env = {{ {build_env} }}\n\
                 build_inputs = [\"../shared\"]\nrun = \"out/bin\"\nartifacts = [\"out/bin\"]\nreadiness = \"/\"\n"
                ),
            ),
        )
        .unwrap();
        Service::load(dir).unwrap()
    }

    /// Two clones of one service: the same files, other folders and other file times.
    fn clone(root: &Path) -> std::path::PathBuf {
        let (dir, shared) = (root.join("svc"), root.join("shared"));
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::create_dir_all(&shared).unwrap();
        std::fs::write(dir.join("src.txt"), "one").unwrap();
        std::fs::write(dir.join("src/main.txt"), "main").unwrap();
        std::fs::write(shared.join("lib.txt"), "x").unwrap();
        dir
    }

    #[test]
    fn the_fingerprint_follows_content_not_place_or_file_times() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let first = code_fingerprint(&service(&clone(a.path()), "")).unwrap();
        assert!(comparable(&first) && first.len() == KIND.len() + 32, "{first}");
        std::thread::sleep(std::time::Duration::from_millis(20));
        let other = clone(b.path());
        let svc = service(&other, "");
        assert_eq!(code_fingerprint(&svc).unwrap(), first, "another clone, written later, is the same code");
        // What the build writes (its artifacts' folder) and svcbench's own stamps are not code.
        std::fs::create_dir_all(other.join("out")).unwrap();
        std::fs::write(other.join("out/bin"), "built").unwrap();
        crate::service::build_stamp::write(&svc, 1.0, std::time::SystemTime::now()).unwrap();
        assert_eq!(code_fingerprint(&svc).unwrap(), first);
        // Same size, other content: file times and sizes would not tell.
        std::fs::write(other.join("src.txt"), "two").unwrap();
        assert_ne!(code_fingerprint(&svc).unwrap(), first, "a source changed");
        std::fs::write(other.join("src.txt"), "one").unwrap();
        std::fs::write(b.path().join("shared/lib.txt"), "y").unwrap();
        assert_ne!(code_fingerprint(&svc).unwrap(), first, "a build input outside the folder changed");
        std::fs::write(b.path().join("shared/lib.txt"), "x").unwrap();
        assert_eq!(code_fingerprint(&svc).unwrap(), first);
        std::fs::rename(other.join("src/main.txt"), other.join("src/other.txt")).unwrap();
        assert_ne!(code_fingerprint(&svc).unwrap(), first, "a file renamed");
        std::fs::rename(other.join("src/other.txt"), other.join("src/main.txt")).unwrap();
        assert_ne!(code_fingerprint(&service(&other, "MODE = \"fast\"")).unwrap(), first, "another build environment");
        assert!(!comparable("00ff00ff00ff00ff"), "a time-based fingerprint of an earlier svcbench");
    }
}

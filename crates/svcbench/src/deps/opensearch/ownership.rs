//! Handing an instance folder made by root to the node's unprivileged user without following a link
//! planted in it.
use anyhow::{Context, Result};
use std::fs;
use std::path::Path;

/// Gives the instance folder and everything in it to the unprivileged user, never following a symlink (a
/// link is handed over itself, its target left as it is). The folder itself goes last: until then only
/// root can enter it, so nothing is swapped in under the walk.
pub(super) fn hand_over(dir: &Path, uid: u32, gid: u32) -> Result<()> {
    fn inside(dir: &Path, uid: u32, gid: u32) -> Result<()> {
        for entry in fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
            let entry = entry?;
            let path = entry.path();
            // file_type() is the entry's own (lstat): a symlink to a folder is not walked into.
            if entry.file_type()?.is_dir() {
                inside(&path, uid, gid)?;
            }
            std::os::unix::fs::lchown(&path, Some(uid), Some(gid))
                .with_context(|| format!("cannot hand {} to uid {uid}", path.display()))?;
        }
        Ok(())
    }
    inside(dir, uid, gid)?;
    std::os::unix::fs::lchown(dir, Some(uid), Some(gid))
        .with_context(|| format!("cannot hand {} to uid {uid}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn a_symlink_planted_in_the_instance_folder_does_not_hand_over_its_target() {
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: handing files to another user needs root");
            return;
        }
        let outside = tempfile::tempdir().unwrap();
        let target = outside.path().join("root-only");
        let target_dir = outside.path().join("root-folder");
        fs::write(&target, "secret").unwrap();
        fs::create_dir(&target_dir).unwrap();
        fs::write(target_dir.join("inner"), "secret").unwrap();
        let instance = tempfile::Builder::new().prefix("svcbench-opensearch-test-").tempdir().unwrap();
        fs::create_dir(instance.path().join("logs")).unwrap();
        fs::write(instance.path().join("logs/console.log"), "").unwrap();
        std::os::unix::fs::symlink(&target, instance.path().join("logs/gc.log")).unwrap();
        std::os::unix::fs::symlink(&target_dir, instance.path().join("data")).unwrap();
        let (uid, gid) = (65534, 65534);
        hand_over(instance.path(), uid, gid).unwrap();
        for root_owned in [&target, &target_dir, &target_dir.join("inner")] {
            let m = fs::metadata(root_owned).unwrap();
            assert_eq!((m.uid(), m.gid()), (0, 0), "{} was handed over through a link", root_owned.display());
        }
        for given in ["", "logs", "logs/console.log", "logs/gc.log", "data"] {
            let m = fs::symlink_metadata(instance.path().join(given)).unwrap();
            assert_eq!((m.uid(), m.gid()), (uid, gid), "{given} was not handed over");
        }
    }
}

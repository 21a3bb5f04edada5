//! The copies of commits' trees, one folder per commit under [`super::copies_dir`]: made once (written
//! aside, then renamed into place, so a half-written copy is never taken for one), reused while the commit
//! is among the [`KEEP`] most recently used (a copy's build outputs stay with it, so a commit measured
//! again is not built again), the others removed when a new one is made.
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// How many commits' copies are kept.
pub const KEEP: usize = 6;

/// The folder holding `commit`'s tree of the repository `repo`, made when missing.
pub fn copy_of(repo: &Path, commit: &str) -> Result<PathBuf> {
    let root = crate::safe_fs::Folder::make(&super::copies_dir()).context("the revisions' folder")?;
    let dir = root.path().join(commit);
    if dir.is_dir() {
        touch(&dir);
        return Ok(dir);
    }
    let aside = format!(".{commit}.{}", std::process::id());
    let partial = root.path().join(&aside);
    let _ = std::fs::remove_dir_all(&partial);
    root.folder(Path::new(&aside))?;
    let written = super::tree_copy::write_tree(repo, commit, &partial);
    if let Err(e) = written {
        let _ = std::fs::remove_dir_all(&partial);
        return Err(e);
    }
    if let Err(e) = std::fs::rename(&partial, &dir) {
        let _ = std::fs::remove_dir_all(&partial);
        // Another svcbench made the same copy meanwhile: it is the same tree.
        if !dir.is_dir() {
            return Err(e).with_context(|| format!("cannot move the copy into {}", dir.display()));
        }
    }
    remove_least_recent(root.path(), KEEP);
    Ok(dir)
}

/// Marks a copy used now (its folder's modification time).
fn touch(dir: &Path) {
    if let Ok(f) = std::fs::File::open(dir) {
        let _ = f.set_modified(SystemTime::now());
    }
}

/// Leaves the `keep` most recently used copies; a copy another svcbench is still writing (a name
/// starting with '.') is not one of them.
fn remove_least_recent(root: &Path, keep: usize) {
    let mut copies: Vec<(SystemTime, PathBuf)> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter_map(|e| Some((e.metadata().ok()?.modified().ok()?, e.path())))
        .collect();
    copies.sort_by_key(|c| std::cmp::Reverse(c.0));
    for (_, old) in copies.into_iter().skip(keep) {
        let _ = std::fs::remove_dir_all(old);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_most_recently_used_copies_are_left() {
        let d = tempfile::tempdir().unwrap();
        for (i, name) in ["a", "b", "c", ".d.123"].iter().enumerate() {
            std::fs::create_dir(d.path().join(name)).unwrap();
            let f = std::fs::File::open(d.path().join(name)).unwrap();
            f.set_modified(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1000 * (i as u64 + 1))).unwrap();
        }
        touch(&d.path().join("a"));
        remove_least_recent(d.path(), 2);
        let left = crate::paths::names_in(d.path(), |p| Some(p.file_name()?.to_string_lossy().into_owned()));
        assert_eq!(left, [".d.123", "a", "c"], "a was used last, c made last, b removed; one being written stays");
    }
}

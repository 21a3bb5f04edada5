//! A service at a git revision (`FOLDER#REV`, `FOLDER#REV@VARIANT`): the folder as it was in that commit,
//! built and run from a clean copy of the commit's tree (tree_copy.rs), kept per commit and reused while it
//! is among the most recently used (copies.rs). A session records the commit and the revision as given.
mod copies;
mod tree_copy;

use anyhow::{bail, Result};
use std::path::{Path, PathBuf};

/// The commit a service was taken from, and how its user named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revision {
    /// As given after `#`: `main`, `HEAD~3`, a tag, a SHA.
    pub given: String,
    /// The full SHA it named when the command started.
    pub commit: String,
}

impl Revision {
    /// The part of a service's name that says which commit it is (`hello-go-nethttp#1a2b3c4d`): two
    /// revisions of one service are two services in a session or a duet.
    pub fn name_suffix(&self) -> String {
        format!("#{}", &self.commit[..SHORT])
    }
}

/// How many hex digits of a commit a service's name carries.
const SHORT: usize = 8;

/// Splits a service argument (its `@variant` already split off) into its folder and revision: the text
/// after the first `#` whose left side is a folder that exists, or whose left side is in a repository (a
/// folder removed since the revision). A path that exists as given is never split.
pub fn split(spec: &str) -> (&str, Option<&str>) {
    if Path::new(spec).exists() {
        return (spec, None);
    }
    match spec.split_once('#') {
        Some((folder, rev)) if !folder.is_empty() => (folder, Some(rev)),
        _ => (spec, None),
    }
}

/// Where a folder named at a revision is: its repository's top folder, the folder's path inside it, and
/// the commit the revision names.
pub struct Located {
    pub top: PathBuf,
    pub inside: PathBuf,
    pub commit: String,
}

/// Finds `folder`'s repository and the commit `rev` names there, without copying anything. Refused in one
/// line when the folder is in no repository or the revision names no commit.
pub fn locate(folder: &Path, rev: &str) -> Result<Located> {
    let spec = format!("{}#{rev}", folder.display());
    // The folder may be gone from the working tree (removed after the revision): its repository is found
    // from the nearest folder above it that is there.
    let absolute = std::path::absolute(folder)?;
    let Some(existing) = absolute.ancestors().find(|a| a.is_dir()) else {
        bail!("{spec}: no folder of this path exists to find its repository");
    };
    let Some((top, prefix)) = crate::git::place(existing) else {
        bail!("{spec}: {} is in no git repository (a revision needs one), or git refuses it", existing.display());
    };
    let below = absolute.strip_prefix(existing).unwrap_or(Path::new(""));
    let mut inside = PathBuf::from(prefix.trim_end_matches('/'));
    if !below.as_os_str().is_empty() {
        inside.push(below);
    }
    let commit = crate::git::resolve(&top, rev)
        .map_err(|why| anyhow::anyhow!("{spec}: {why} ({}); name a branch, tag, SHA or e.g. HEAD~1", top.display()))?;
    Ok(Located { top, inside, commit })
}

/// The folder `folder` as it is at `rev`: where its copy is, and the commit. Refused in one line, before
/// anything is built, as [`locate`] refuses, or when the folder is not a service folder in that commit.
pub fn check_out(folder: &Path, rev: &str) -> Result<(PathBuf, Revision)> {
    let Located { top, inside, commit } = locate(folder, rev)?;
    let dir = copies::copy_of(&top, &commit)?.join(&inside);
    if !dir.join("svcbench.toml").is_file() {
        bail!(
            "{}#{rev}: {} has no svcbench.toml at commit {} (the folder is not a service folder there)",
            folder.display(),
            inside.display(),
            &commit[..SHORT]
        );
    }
    Ok((dir, Revision { given: rev.to_string(), commit }))
}

/// Where the copies are: `SVCBENCH_REVISIONS`, else `results/revisions` in the current folder.
pub fn copies_dir() -> PathBuf {
    std::env::var_os("SVCBENCH_REVISIONS").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("results/revisions"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_revision_is_split_off_a_folder_and_a_path_that_exists_is_not() {
        assert_eq!(split("services/x#main"), ("services/x", Some("main")));
        assert_eq!(split("services/x#feature/y"), ("services/x", Some("feature/y")));
        assert_eq!(split("services/x#HEAD~3"), ("services/x", Some("HEAD~3")));
        assert_eq!(split("services/x"), ("services/x", None));
        assert_eq!(split("#main"), ("#main", None));
        let d = tempfile::tempdir().unwrap();
        let odd = d.path().join("a#b");
        std::fs::create_dir(&odd).unwrap();
        assert_eq!(split(odd.to_str().unwrap()), (odd.to_str().unwrap(), None));
    }
}

//! What git says of a folder: the commit its repository is at and whether the folder holds changes not
//! committed. A session records it per service, so a figure can be traced to the code that made it.
//! git is asked with a clean environment, no terminal and the repository's fsmonitor hook off: a folder
//! under test must not get a command run as root by asking where it stands.
use std::path::Path;
use std::process::{Command, Stdio};

/// A folder's place in its repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    /// The full SHA of HEAD.
    pub commit: String,
    /// Whether the folder (tracked or untracked files, outside what .gitignore leaves out) differs from it.
    pub dirty: bool,
}

/// `dir`'s state; None when it is in no repository, git is missing, or git refuses the repository (one
/// owned by another user is "dubious" to git, and not trusted here either).
pub fn state(dir: &Path) -> Option<State> {
    let commit = git(dir, &["rev-parse", "--verify", "HEAD"])?;
    let commit = commit.trim();
    if commit.len() < 40 || !commit.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let changes = git(dir, &["status", "--porcelain", "--untracked-files=normal", "--", "."])?;
    Some(State { commit: commit.to_string(), dirty: !changes.trim().is_empty() })
}

/// The commits of `repo`'s history up to HEAD, oldest first, every parent before its children
/// (`git rev-list --topo-order --reverse HEAD`); None when `repo` is in no repository or git refuses it.
pub fn history(repo: &Path) -> Option<Vec<String>> {
    let out = git(repo, &["rev-list", "--topo-order", "--reverse", "HEAD"])?;
    Some(out.lines().map(|l| l.trim().to_string()).filter(|l| !l.is_empty()).collect())
}

/// The repository `dir` is in: its top folder and `dir`'s path inside it (empty at the top, else ending in
/// '/'); None outside a repository.
pub fn place(dir: &Path) -> Option<(std::path::PathBuf, String)> {
    let top = git(dir, &["rev-parse", "--show-toplevel"])?;
    let prefix = git(dir, &["rev-parse", "--show-prefix"])?;
    Some((top.trim_end_matches('\n').into(), prefix.trim_end_matches('\n').to_string()))
}

/// The full SHA of the commit `rev` (a branch, tag, SHA, `HEAD~3`) names in the repository at `dir`, or
/// why not in one line.
pub fn resolve(dir: &Path, rev: &str) -> Result<String, String> {
    if rev.is_empty() || rev.starts_with('-') || rev.contains(['\n', '\0']) {
        return Err(format!("{rev:?} is not a revision"));
    }
    let target = format!("{rev}^{{commit}}");
    match git(dir, &["rev-parse", "--verify", "--quiet", "--end-of-options", &target]).map(|o| o.trim().to_string()) {
        Some(sha) if sha.len() >= 40 => Ok(sha),
        _ => Err(format!("no commit `{rev}` in this repository")),
    }
}

/// git asked of `dir` as every call here asks it: a clean environment, no terminal prompt or input, no
/// fsmonitor or hooks (a repository under test must not get a command run as root by being asked).
pub fn command(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.arg("-C")
        .arg(dir)
        .args(["-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "--no-optional-locks"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into()))
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    c
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = command(dir).args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// git ARGS in `dir` with a test identity, for the tests that make repositories; fails when git fails.
#[cfg(test)]
pub fn run_for_test(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"])
        .args(args)
        .stdout(Stdio::null())
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

#[cfg(test)]
mod tests {
    use super::*;
    use run_for_test as run;

    #[test]
    fn a_folder_reads_as_its_commit_and_is_dirty_only_with_its_own_changes() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path();
        assert_eq!(state(repo), None, "not a repository yet");
        std::fs::create_dir_all(repo.join("svc")).unwrap();
        std::fs::create_dir_all(repo.join("other")).unwrap();
        std::fs::write(repo.join("svc/main.go"), "package main").unwrap();
        std::fs::write(repo.join("other/x"), "x").unwrap();
        run(repo, &["init", "-q"]);
        run(repo, &["add", "."]);
        run(repo, &["commit", "-qm", "one"]);
        let clean = state(&repo.join("svc")).expect("a commit");
        assert_eq!(clean.commit.len(), 40);
        assert!(!clean.dirty);
        std::fs::write(repo.join("other/x"), "changed elsewhere").unwrap();
        assert!(!state(&repo.join("svc")).unwrap().dirty, "a change outside the folder is not the service's");
        std::fs::write(repo.join("svc/main.go"), "package main // edited").unwrap();
        let dirty = state(&repo.join("svc")).unwrap();
        assert!(dirty.dirty && dirty.commit == clean.commit);
        run(repo, &["commit", "-qam", "two"]);
        let next = state(&repo.join("svc")).unwrap();
        assert!(!next.dirty && next.commit != clean.commit);
        std::fs::write(repo.join("svc/new.go"), "package main").unwrap();
        assert!(state(&repo.join("svc")).unwrap().dirty, "an untracked file is a change");
        assert_eq!(history(repo).unwrap(), [clean.commit, next.commit], "oldest first");
    }
}

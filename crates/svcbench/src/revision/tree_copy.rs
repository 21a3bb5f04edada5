//! A commit's tree written out as files, read from git's objects (`ls-tree`, `cat-file --batch`) rather
//! than checked out: no hook, filter or attribute of the repository runs, whatever the commit holds. The
//! folders are made fresh, so a link in the tree is only ever a leaf; git's own rules (no `..`, no `.git`
//! entry) are checked again here. Submodules are left out.
use anyhow::{bail, Context, Result};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path};
use std::process::Stdio;

/// One file of the tree.
struct Entry {
    mode: String,
    object: String,
    path: String,
}

/// Writes `commit`'s whole tree into the empty folder `into`.
pub fn write_tree(repo: &Path, commit: &str, into: &Path) -> Result<usize> {
    let entries = list(repo, commit)?;
    let mut cat = crate::git::command(repo)
        .args(["cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot run git cat-file")?;
    let mut input = cat.stdin.take().expect("piped");
    let objects: Vec<String> = entries.iter().map(|e| e.object.clone()).collect();
    // Fed from a thread: git answers while it reads, and a full pipe either way would stop both.
    let feeder = std::thread::spawn(move || -> std::io::Result<()> {
        for o in objects {
            writeln!(input, "{o}")?;
        }
        Ok(())
    });
    let mut out = BufReader::new(cat.stdout.take().expect("piped"));
    for e in &entries {
        let body = next_object(&mut out, &e.object)?;
        write_entry(into, e, &body).with_context(|| format!("cannot write {} of commit {commit}", e.path))?;
    }
    feeder.join().map_err(|_| anyhow::anyhow!("git cat-file's feeder panicked"))??;
    if !cat.wait()?.success() {
        bail!("git cat-file failed reading commit {commit}");
    }
    Ok(entries.len())
}

/// The blobs and links of the tree (`ls-tree -r -z`: `MODE TYPE OBJECT\tPATH\0`).
fn list(repo: &Path, commit: &str) -> Result<Vec<Entry>> {
    let out = crate::git::command(repo)
        .args(["ls-tree", "-r", "-z", "--full-tree", commit])
        .output()
        .context("cannot run git ls-tree")?;
    if !out.status.success() {
        bail!("git ls-tree cannot read commit {commit}");
    }
    let mut entries = Vec::new();
    for record in out.stdout.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        let record = String::from_utf8_lossy(record);
        let Some((head, path)) = record.split_once('\t') else { bail!("git ls-tree: unexpected line {record:?}") };
        let mut parts = head.split(' ');
        let (Some(mode), Some(kind), Some(object)) = (parts.next(), parts.next(), parts.next()) else {
            bail!("git ls-tree: unexpected line {record:?}")
        };
        if kind == "commit" {
            continue; // a submodule: its commit is another repository's
        }
        check_path(path)?;
        entries.push(Entry { mode: mode.into(), object: object.into(), path: path.into() });
    }
    Ok(entries)
}

fn check_path(path: &str) -> Result<()> {
    let fine = Path::new(path).components().all(|c| match c {
        Component::Normal(n) => !n.eq_ignore_ascii_case(".git"),
        _ => false,
    });
    if !fine {
        bail!("the commit holds a path git itself would refuse to check out: {path:?}");
    }
    Ok(())
}

/// One answer of `cat-file --batch`: `OBJECT TYPE SIZE\n`, the content, `\n`.
fn next_object(out: &mut impl BufRead, object: &str) -> Result<Vec<u8>> {
    let mut header = String::new();
    out.read_line(&mut header)?;
    let fields: Vec<&str> = header.split_whitespace().collect();
    let [got, _, size] = fields[..] else { bail!("git cat-file: unexpected header {header:?} for {object}") };
    if got != object {
        bail!("git cat-file answered {got} for {object}");
    }
    let mut body = vec![0; size.parse().with_context(|| format!("git cat-file: size {size:?}"))?];
    out.read_exact(&mut body)?;
    let mut newline = [0u8; 1];
    out.read_exact(&mut newline)?;
    Ok(body)
}

fn write_entry(into: &Path, e: &Entry, body: &[u8]) -> Result<()> {
    let path = into.join(&e.path);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    match e.mode.as_str() {
        "120000" => std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(body), &path)?,
        mode => {
            std::fs::write(&path, body)?;
            let executable = mode == "100755";
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(if executable { 0o755 } else { 0o644 }))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::run_for_test as git;

    #[test]
    fn a_commit_is_written_with_its_modes_and_links_and_without_later_changes() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        std::fs::create_dir_all(repo.join("svc/src")).unwrap();
        std::fs::write(repo.join("svc/src/main.go"), "package main\n").unwrap();
        std::fs::write(repo.join("svc/run.sh"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(repo.join("svc/run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink("src/main.go", repo.join("svc/link")).unwrap();
        // An attribute asking for a filter: never run, since nothing is checked out.
        std::fs::write(repo.join(".gitattributes"), "* filter=evil\n").unwrap();
        git(&repo, &["init", "-q"]);
        git(&repo, &["config", "filter.evil.smudge", "touch /tmp/svcbench-evil-filter-ran; cat"]);
        git(&repo, &["add", "."]);
        git(&repo, &["commit", "-qm", "one"]);
        let commit = crate::git::resolve(&repo, "HEAD").unwrap();
        std::fs::write(repo.join("svc/src/main.go"), "package main // later\n").unwrap();
        let into = tmp.path().join("copy");
        std::fs::create_dir(&into).unwrap();
        assert_eq!(write_tree(&repo, &commit, &into).unwrap(), 4);
        assert_eq!(std::fs::read_to_string(into.join("svc/src/main.go")).unwrap(), "package main\n");
        let mode = |p: &str| std::fs::metadata(into.join(p)).unwrap().permissions().mode() & 0o777;
        assert_eq!((mode("svc/run.sh"), mode("svc/src/main.go")), (0o755, 0o644));
        assert_eq!(std::fs::read_link(into.join("svc/link")).unwrap(), Path::new("src/main.go"));
        assert!(!into.join(".git").exists());
        assert!(!Path::new("/tmp/svcbench-evil-filter-ran").exists(), "a filter ran");
    }

    #[test]
    fn paths_git_refuses_are_refused() {
        for bad in ["../x", "a/../../x", ".git/hooks/pre-commit", "a/.GIT/config", "/etc/passwd"] {
            assert!(check_path(bad).is_err(), "{bad}");
        }
        assert!(check_path("a/b.git/c").is_ok());
    }
}

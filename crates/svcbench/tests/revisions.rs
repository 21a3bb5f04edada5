//! Services named at git revisions (`FOLDER#REV`): each is built and run from its commit's own tree, the
//! store says which commit and revision each was and that only the working tree was dirty; a revision
//! that names no commit, or a commit where the folder is no service, is refused before anything starts.
mod common;
use common::*;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// A repository holding the tests' fixtures, whose steady service builds `built.txt` from `version.txt`:
/// commit one says "one", commit two "two", and the working tree "three" (not committed).
fn repo(tmp: &Path) -> (PathBuf, [String; 2]) {
    let repo = tmp.join("repo");
    copy_fixtures(&repo);
    let svc = repo.join("services/steady");
    let manifest = std::fs::read_to_string(svc.join("svcbench.toml")).unwrap();
    let manifest = manifest.replace(
        "artifacts = [\"../../testservice.py\"]",
        "build = \"cp version.txt built.txt\"\nartifacts = [\"../../testservice.py\", \"built.txt\"]",
    );
    std::fs::write(svc.join("svcbench.toml"), manifest).unwrap();
    std::fs::write(repo.join(".gitignore"), "built.txt\n").unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    let mut commits = Vec::new();
    for v in ["one", "two"] {
        std::fs::write(svc.join("version.txt"), v).unwrap();
        git(&repo, &["add", "."]);
        git(&repo, &["commit", "-qm", v]);
        commits.push(git(&repo, &["rev-parse", "HEAD"]));
    }
    std::fs::write(svc.join("version.txt"), "three").unwrap();
    (repo, commits.try_into().unwrap())
}

fn run(args: &[&str], cwd: &Path, revisions: &Path) -> std::process::Output {
    let out = locked(args, cwd).env("SVCBENCH_REVISIONS", revisions).output().unwrap();
    eprintln!("--- svcbench {args:?}\n{}", String::from_utf8_lossy(&out.stderr));
    out
}

#[test]
fn services_at_two_revisions_and_the_working_tree_are_each_built_from_their_own_code_and_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (repo, [one, two]) = repo(tmp.path());
    let revisions = tmp.path().join("revisions");
    let prof = tmp.path().join("p.toml");
    std::fs::write(&prof, "name = \"t\"\n[[step]]\nconnections = 1\nduration = \"1s\"\n").unwrap();
    let db = tmp.path().join("s.db");
    let svc = repo.join("services/steady").display().to_string();
    let (old, head) = (format!("{svc}#HEAD~1"), format!("{svc}#main"));
    let args = ["run", &old, &head, &svc, "--profile", prof.to_str().unwrap(), "--runs", "1"];
    let out = run(&[&args[..], &["--db", db.to_str().unwrap()]].concat(), tmp.path(), &revisions);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));

    let s = stored(&db);
    let (at_one, at_two) = (format!("test-steady#{}", &one[..8]), format!("test-steady#{}", &two[..8]));
    let names: Vec<&str> = s.services().map(|x| x.name.as_str()).collect();
    assert_eq!(names.len(), 3, "{names:?}");
    for n in [at_one.as_str(), at_two.as_str(), "test-steady"] {
        assert!(names.contains(&n), "{n} not among {names:?}");
        assert_eq!(s.runs_of(n).filter(|r| r.status == "completed").count(), 1, "{n} measured once");
    }
    let seen = |n: &str| {
        let x = s.service(n);
        (x.git_commit.clone(), x.git_dirty, x.git_revision.clone())
    };
    assert_eq!(seen(&at_one), (Some(one.clone()), Some(false), Some("HEAD~1".into())));
    assert_eq!(seen(&at_two), (Some(two.clone()), Some(false), Some("main".into())));
    assert_eq!(seen("test-steady"), (Some(two.clone()), Some(true), None), "the working tree is dirty");

    // Each was built from its own commit's files, in a copy of that commit; the working tree from its own.
    let built = |commit: &str| std::fs::read_to_string(revisions.join(commit).join("services/steady/built.txt"));
    assert_eq!(built(&one).unwrap(), "one");
    assert_eq!(built(&two).unwrap(), "two");
    assert_eq!(std::fs::read_to_string(repo.join("services/steady/built.txt")).unwrap(), "three");
    assert!(!revisions.join(&one).join(".git").exists(), "a copy is the tree, not a repository");

    // The report says which code each was.
    let md = tmp.path().join("r.md");
    let out = svcbench(&["report", "--db", db.to_str().unwrap(), "-o", md.to_str().unwrap()], tmp.path());
    assert!(out.status.success());
    let md = std::fs::read_to_string(md).unwrap();
    for code in [format!("{} (HEAD~1)", &one[..7]), format!("{} (main)", &two[..7]), format!("{} + changes", &two[..7])]
    {
        assert!(md.contains(&code), "the report's services table names {code}:\n{md}");
    }
}

#[test]
fn a_revision_that_names_no_commit_or_no_service_is_refused_before_anything_starts() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (repo, _) = repo(tmp.path());
    let revisions = tmp.path().join("revisions");
    let db = tmp.path().join("s.db");
    let svc = repo.join("services/steady").display().to_string();
    // A folder added in the working tree only: no service at HEAD.
    let new = repo.join("services/new");
    std::fs::create_dir_all(&new).unwrap();
    std::fs::copy(repo.join("services/steady/svcbench.toml"), new.join("svcbench.toml")).unwrap();
    for (spec, says) in [
        (format!("{svc}#no-such-branch"), "no commit `no-such-branch` in this repository".to_string()),
        (format!("{svc}#HEAD~7"), "no commit `HEAD~7`".to_string()),
        (format!("{}#HEAD", new.display()), "services/new has no svcbench.toml at commit".to_string()),
        (format!("{}#HEAD", tmp.path().join("elsewhere").display()), "is in no git repository".to_string()),
    ] {
        for args in [vec!["run", &spec, "--db", db.to_str().unwrap()], vec!["check", &spec]] {
            let cmd = args[0];
            let out = run(&args, tmp.path(), &revisions);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{cmd} {spec}: {err}");
            assert!(err.contains(&says), "{cmd} {spec}: {err}");
            assert!(!err.contains("building"), "{cmd} {spec}: nothing is built: {err}");
        }
    }
    assert!(!db.exists() || stored(&db).sessions().next().is_none(), "no session was begun");
}

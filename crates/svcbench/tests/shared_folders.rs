//! Root is not tricked through the filesystem by another local user: a store in a folder others can write
//! is refused, and a link planted among the work folders' logs is never followed (docs/security.md,
//! "Work folders").
mod common;
use common::*;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

const SECRET: &str = "root's own file, not to be overwritten\n";

fn is_root() -> bool {
    unsafe { libc::geteuid() == 0 }
}

fn nobody() -> (u32, u32) {
    let u = nix::unistd::User::from_name("nobody").unwrap().expect("user nobody");
    (u.uid.as_raw(), u.gid.as_raw())
}

/// A root-owned file with known content, mode 0600, beside the store's folder.
fn root_file(tmp: &Path) -> PathBuf {
    let target = tmp.join("root-only");
    std::fs::write(&target, SECRET).unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
    target
}

/// What user nobody plants: `work/s-session-1/` (owned by `folder_owner`) and in it the first run's log of
/// hello-go-nethttp as a link to `target`, the link itself nobody's.
fn plant(store_dir: &Path, target: &Path, folder_owner: (u32, u32), session_mode: u32) -> PathBuf {
    let session = store_dir.join("work/s-session-1");
    std::fs::create_dir_all(&session).unwrap();
    for d in [store_dir.join("work"), session.clone()] {
        std::os::unix::fs::lchown(&d, Some(folder_owner.0), Some(folder_owner.1)).unwrap();
    }
    std::fs::set_permissions(&session, std::fs::Permissions::from_mode(session_mode)).unwrap();
    let link = session.join("hello-go-nethttp-run1.log");
    std::os::unix::fs::symlink(target, &link).unwrap();
    let (uid, gid) = nobody();
    std::os::unix::fs::lchown(&link, Some(uid), Some(gid)).unwrap();
    link
}

fn run_hello(tmp: &Path, db: &Path) -> std::process::Output {
    let prof = tmp.join("p.toml");
    std::fs::write(&prof, "name = \"t\"\n[[step]]\nconnections = 1\nduration = \"1s\"\n").unwrap();
    let hello = repo().join("services/hello/go-nethttp");
    let args = ["run", hello.to_str().unwrap(), "--profile", prof.to_str().unwrap(), "--runs", "1"];
    svcbench_locked(&[&args[..], &["--db", db.to_str().unwrap()]].concat(), tmp)
}

fn error_lines(out: &std::process::Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with("svcbench: error"))
        .map(String::from)
        .collect()
}

#[test]
fn a_store_in_a_world_writable_folder_is_refused_and_the_planted_link_is_not_followed() {
    if !is_root() {
        eprintln!("skipped: the attack is on root");
        return;
    }
    for mode in [0o1777, 0o777] {
        let tmp = tempfile::tempdir().unwrap();
        let shared = tmp.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(mode)).unwrap();
        let target = root_file(tmp.path());
        plant(&shared, &target, nobody(), 0o755);
        let out = run_hello(tmp.path(), &shared.join("s.db"));
        assert_eq!(std::fs::read_to_string(&target).unwrap(), SECRET, "the root-owned file was written through");
        assert!(!out.status.success());
        let said = error_lines(&out);
        assert_eq!(said.len(), 1, "one line: {said:?}");
        assert!(
            said[0].contains(&shared.display().to_string()) && said[0].contains("writable by other users"),
            "{said:?}"
        );
        assert!(said[0].contains("chmod go-w"), "the line says the fix: {said:?}");
        assert!(!shared.join("s.db").exists(), "nothing was stored there");
    }
}

#[test]
fn a_work_folder_of_another_user_is_refused() {
    if !is_root() {
        eprintln!("skipped: the attack is on root");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let target = root_file(tmp.path());
    // As if the store's folder had once been open to everyone: nobody made `work/` then.
    plant(&store, &target, nobody(), 0o755);
    let out = run_hello(tmp.path(), &store.join("s.db"));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), SECRET, "the root-owned file was written through");
    assert!(!out.status.success());
    let said = error_lines(&out);
    assert_eq!(said.len(), 1, "one line: {said:?}");
    let work = store.join("work");
    assert!(said[0].contains(&format!("{} is user nobody's", work.display())), "{said:?}");
    assert!(said[0].contains("remove it"), "the line says the fix: {said:?}");
}

#[test]
fn a_planted_link_in_a_work_folder_left_open_is_replaced_not_followed() {
    if !is_root() {
        eprintln!("skipped: the attack is on root");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    std::fs::create_dir(&store).unwrap();
    let target = root_file(tmp.path());
    // root's own session folder, left writable by everyone (an older svcbench, a umask of 000), nobody's link in it.
    let link = plant(&store, &target, (0, 0), 0o777);
    let out = run_hello(tmp.path(), &store.join("s.db"));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), SECRET, "the root-owned file was written through");
    assert!(out.status.success(), "the run goes on with its own log");
    let meta = std::fs::symlink_metadata(&link).unwrap();
    assert!(meta.file_type().is_file() && meta.uid() == 0, "the log is root's own file now");
    assert!(meta.len() > 0, "the service's output went to its log");
    let session = std::fs::metadata(link.parent().unwrap()).unwrap();
    assert_eq!(session.mode() & 0o7777, 0o755, "the session folder is narrowed to svcbench's own mode");
    assert_eq!(stored(&store.join("s.db")).run().status, "completed");
    assert_no_leftovers("hello-nethttp");
}

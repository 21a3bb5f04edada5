//! Who a service under test and the other parts of a measurement run as, and what a service is given:
//! when svcbench is root, the unprivileged system user `svcbench` (created if missing) unless its manifest
//! says `run_as = "root"`, `svcbench-peer` for the other side of a duet, and `svcbench-store` for the
//! dependencies svcbench starts, so that no part can signal, trace or read another; otherwise the invoking
//! user, as svcbench itself. A service's environment is only the allow-list below, a private HOME and what
//! its manifest and placeholders give it (docs/security.md).
use crate::manifest::RunAs;
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// The unprivileged user services run as; scripts/setup.sh creates it, like the two below.
pub const USER: &str = "svcbench";
/// The user the second side of a duet runs as: a user of its own, so neither side reaches the other.
pub const PEER_USER: &str = "svcbench-peer";
/// The user the dependencies svcbench starts run as (OpenSearch): out of the services' reach.
pub const STORE_USER: &str = "svcbench-store";

/// The only variables of svcbench's own environment a service gets (when set); HOME is its own private
/// folder and JAVA_HOME is added where its `run` uses `{java}`.
pub const ENV_ALLOW_LIST: &[&str] = crate::child::BASE;

/// Which of the services' users a start takes: the usual one, or the second side of a duet's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Account {
    Main,
    Peer,
}

impl Account {
    fn user(self) -> &'static str {
        match self {
            Account::Main => USER,
            Account::Peer => PEER_USER,
        }
    }
}

/// A user to switch to before exec.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

/// The user a service with this `run_as` runs as, on `account`: None keeps svcbench's own (svcbench is
/// not root, or the manifest asks for root).
pub fn for_service(run_as: RunAs, account: Account) -> Result<Option<User>> {
    if !nix::unistd::geteuid().is_root() || run_as == RunAs::Root {
        return Ok(None);
    }
    ensure(account.user()).map(Some)
}

/// The user a dependency svcbench starts runs as: None keeps svcbench's own (svcbench is not root).
pub fn for_store() -> Result<Option<User>> {
    if !nix::unistd::geteuid().is_root() {
        return Ok(None);
    }
    ensure(STORE_USER).map(Some)
}

/// The name stored with a run: the user switched to, or svcbench's own user's.
pub fn name_of(user: Option<&User>) -> String {
    match user {
        Some(u) => u.name.clone(),
        None => {
            let uid = nix::unistd::geteuid();
            nix::unistd::User::from_uid(uid).ok().flatten().map(|u| u.name).unwrap_or_else(|| uid.to_string())
        }
    }
}

/// `name`'s ids, creating it as a system user without home or login shell when missing.
pub fn ensure(name: &str) -> Result<User> {
    let lookup =
        || -> Result<Option<User>> {
            Ok(nix::unistd::User::from_name(name)
                .with_context(|| format!("cannot look up user {name}"))?
                .map(|u| User { name: u.name, uid: u.uid.as_raw(), gid: u.gid.as_raw() }))
        };
    if let Some(u) = lookup()? {
        return Ok(u);
    }
    let status = crate::child::helper("useradd", crate::child::Needs::Nothing)
        .args(["--system", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", name])
        .stdout(Stdio::null())
        .status()
        .context("cannot run useradd")?;
    // Another svcbench may have created it meanwhile: only a user still missing is an error.
    match lookup()? {
        Some(u) => Ok(u),
        None => {
            bail!("cannot create the unprivileged user {name} (useradd: {status}); create it (scripts/setup.sh does)")
        }
    }
}

/// The environment a service starts with: the allow-list's variables svcbench has, HOME, and JAVA_HOME
/// when `java_home` is given; the manifest's `[env]` comes on top.
pub fn base_env(home: &Path, java_home: Option<&str>) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> =
        ENV_ALLOW_LIST.iter().filter_map(|k| std::env::var(k).ok().map(|v| (k.to_string(), v))).collect();
    env.push(("HOME".into(), home.display().to_string()));
    if let Some(j) = java_home {
        env.push(("JAVA_HOME".into(), j.to_string()));
    }
    env
}

/// A private folder the service may write (its HOME, its database): in the system's temporary folder,
/// which every user can reach (a work folder under a 0700 one may not be), with a random name made by
/// exclusive creation, mode 0700, owned by `user`. Removed when dropped.
pub fn private_folder(what: &str, user: Option<&User>) -> Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix(&format!("svcbench-{what}-"))
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
        .with_context(|| format!("cannot create a {what} folder in {}", std::env::temp_dir().display()))?;
    hand_over(dir.path(), user)?;
    Ok(dir)
}

/// Hands a file or folder the service must write to its user (no-op when it runs as svcbench's own).
pub fn hand_over(path: &Path, user: Option<&User>) -> Result<()> {
    if let Some(u) = user {
        std::os::unix::fs::lchown(path, Some(u.uid), Some(u.gid))
            .with_context(|| format!("cannot hand {} to user {}", path.display(), u.name))?;
    }
    Ok(())
}

/// Fails with one line when `user` cannot reach `dir` (every folder above it needs the search bit for it)
/// or run `program` (a path, relative to `dir` when it has a folder part, or a name looked up on `path`).
/// Tested as that user itself (access(2) after setuid, in a child), so ACLs and groups count.
pub fn check_reachable(user: Option<&User>, dir: &Path, program: Option<&str>, path: &str) -> Result<()> {
    let Some(user) = user else { return Ok(()) };
    let mut folders: Vec<PathBuf> = dir.ancestors().map(Path::to_path_buf).collect();
    folders.reverse();
    let program = match program {
        Some(p) if p.contains('/') => dir.join(p.trim_start_matches("./")).display().to_string(),
        Some(p) => p.to_string(),
        None => String::new(),
    };
    // A fixed script; every path is an argument, never part of the script.
    const SCRIPT: &str = r#"prog=$1; shift
for d do [ -x "$d" ] || { printf '%s' "$d"; exit 3; }; done
case $prog in
  "") ;;
  */*) [ -x "$prog" ] || { printf '%s' "$prog"; exit 4; } ;;
  *) command -v -- "$prog" >/dev/null || { printf '%s' "$prog"; exit 5; } ;;
esac"#;
    let out = {
        use std::os::unix::process::CommandExt;
        crate::child::helper("/bin/sh", crate::child::Needs::Nothing)
            .arg("-c")
            .arg(SCRIPT)
            .arg("sh")
            .arg(&program)
            .args(&folders)
            .env_clear()
            .env("PATH", path)
            .current_dir("/")
            .uid(user.uid)
            .gid(user.gid)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .context("cannot test what the service's user can reach")?
    };
    let what = String::from_utf8_lossy(&out.stdout);
    match out.status.code() {
        Some(0) => Ok(()),
        // Not a search bit on the folder: on a home folder it would open every world-readable file there.
        Some(3) => bail!(
            "user {} (the service's) cannot enter {what}, above {}: keep the checkout (or the service) where every \
             user can enter each folder above it, e.g. git clone it to /srv/svcbench, not under a private home folder",
            user.name,
            dir.display()
        ),
        Some(4) => bail!(
            "user {} (the service's) cannot run {what}: make it executable by others (chmod o+rx), or give the \
             service run_as = \"root\" in its manifest",
            user.name
        ),
        Some(5) => bail!(
            "user {} (the service's) finds no `{what}` on PATH {path}: install it where others can run it (e.g. \
             /usr/local/bin), or name it by a path the user can reach",
            user.name
        ),
        _ => bail!("cannot test what user {} can reach ({})", user.name, out.status),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_is_the_allow_list_home_and_java_home_only() {
        let home = Path::new("/h");
        let env = base_env(home, Some("/opt/my jdk"));
        let keys: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert!(keys.iter().all(|k| ENV_ALLOW_LIST.contains(k) || *k == "HOME" || *k == "JAVA_HOME"), "{keys:?}");
        assert!(
            env.contains(&("HOME".into(), "/h".into())) && env.contains(&("JAVA_HOME".into(), "/opt/my jdk".into()))
        );
        assert!(!base_env(home, None).iter().any(|(k, _)| k == "JAVA_HOME"));
    }

    #[test]
    fn a_service_can_neither_read_nor_signal_a_dependency_or_the_other_side_of_a_duet() {
        if !nix::unistd::geteuid().is_root() {
            return; // Only root can switch user.
        }
        use std::os::unix::process::CommandExt;
        let store = for_store().unwrap().unwrap();
        let (main, peer) = (
            for_service(RunAs::Svcbench, Account::Main).unwrap().unwrap(),
            for_service(RunAs::Svcbench, Account::Peer).unwrap().unwrap(),
        );
        assert_eq!((main.name.as_str(), peer.name.as_str(), store.name.as_str()), (USER, PEER_USER, STORE_USER));
        assert!(main.uid != peer.uid && peer.uid != store.uid && main.uid != store.uid);
        // A dependency and a duet's second side, each as its own user, and the first side trying to reach them.
        for target in [&store, &peer] {
            let mut part = crate::child::part("sleep", crate::child::Needs::Nothing);
            let mut sleeper = part.arg("30").uid(target.uid).gid(target.gid).spawn().unwrap();
            let pid = sleeper.id();
            let tries = format!("cat /proc/{pid}/environ >/dev/null 2>&1 && echo read; kill -0 {pid} 2>/dev/null && echo signalled; echo done");
            let out = crate::child::helper("/bin/sh", crate::child::Needs::Nothing)
                .args(["-c", &tries])
                .uid(main.uid)
                .gid(main.gid)
                .output()
                .unwrap();
            let _ = sleeper.kill();
            let _ = sleeper.wait();
            assert_eq!(
                String::from_utf8_lossy(&out.stdout).trim(),
                "done",
                "user {} reached {}",
                main.name,
                target.name
            );
        }
    }

    #[test]
    fn a_private_folder_is_0700_and_its_users() {
        use std::os::unix::fs::MetadataExt;
        let user = for_service(RunAs::Svcbench, Account::Main).unwrap();
        let dir = private_folder("test", user.as_ref()).unwrap();
        let meta = std::fs::symlink_metadata(dir.path()).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o700);
        assert_eq!(meta.uid(), user.as_ref().map_or(nix::unistd::geteuid().as_raw(), |u| u.uid));
        let path = dir.path().to_path_buf();
        drop(dir);
        assert!(!path.exists());
    }

    #[test]
    fn an_unreachable_folder_is_named_with_its_fix() {
        if !nix::unistd::geteuid().is_root() {
            return; // Only root can switch user.
        }
        let user = ensure(USER).unwrap();
        let tmp = tempfile::tempdir().unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let locked = tmp.path().join("locked");
        let inner = locked.join("svc");
        std::fs::create_dir_all(&inner).unwrap();
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o700)).unwrap();
        let e = check_reachable(Some(&user), &inner, Some("./x"), "/usr/bin:/bin").unwrap_err().to_string();
        assert!(e.contains(&format!("cannot enter {}", locked.display())) && e.contains("/srv/svcbench"), "{e}");
        assert!(!e.contains("setfacl") && !e.contains("chmod"), "no advice to widen the folder: {e}");
        assert!(!e.contains('\n'), "one line: {e}");
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
        let e = check_reachable(Some(&user), &inner, Some("./x"), "/usr/bin:/bin").unwrap_err().to_string();
        assert!(e.contains("cannot run") && e.contains("svc/x"), "{e}");
        let e = check_reachable(Some(&user), &inner, Some("no-such-program-here"), "/usr/bin:/bin").unwrap_err();
        assert!(e.to_string().contains("finds no `no-such-program-here`"), "{e}");
        check_reachable(Some(&user), &inner, Some("sh"), "/usr/bin:/bin").unwrap();
        check_reachable(None, &locked, Some("./x"), "/usr/bin:/bin").unwrap();
    }
}

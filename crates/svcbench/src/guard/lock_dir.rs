//! The folder of the session lock files: what a later svcbench reads there decides what it kills, so only
//! the user svcbench runs as may write it. As root: /run/svcbench/sessions (root's, mode 0700, inside a
//! /run/svcbench of root's, mode 0700, beside the measurement lock); otherwise $XDG_RUNTIME_DIR/svcbench, else
//! <temp>/svcbench-<uid>. `SVCBENCH_SESSIONS_DIR` names another (tests keep theirs apart). Each is checked
//! to be a real folder (not a symlink), owned by that user, that nobody else can write.
use anyhow::{bail, Context, Result};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

pub fn sessions_dir() -> Result<PathBuf> {
    let uid = unsafe { libc::geteuid() };
    if let Some(dir) = std::env::var_os("SVCBENCH_SESSIONS_DIR") {
        let dir = PathBuf::from(dir);
        private_dir(&dir, uid, 0o700)?;
        return Ok(dir);
    }
    let run = runtime_dir()?;
    if uid == 0 {
        let dir = run.join("sessions");
        private_dir(&dir, 0, 0o700)?;
        return Ok(dir);
    }
    Ok(run)
}

/// svcbench's own folder for what only its user may open (the sessions folder, the measurement lock): as
/// root /run/svcbench (mode 0700: no other user opens the measurement lock there), otherwise the user's
/// own folder. No fallback into a shared folder another user could have made first.
pub fn runtime_dir() -> Result<PathBuf> {
    let uid = unsafe { libc::geteuid() };
    if uid == 0 {
        let run = Path::new("/run/svcbench");
        private_dir(run, 0, 0o700).with_context(|| {
            "svcbench keeps its measurement lock and session files there: fix /run (a tmpfs root can write), or \
             set SVCBENCH_LOCK_FILE and SVCBENCH_SESSIONS_DIR to a folder of root's own"
        })?;
        return Ok(run.to_path_buf());
    }
    let dir = match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| Path::new(d).is_absolute()) {
        Some(d) => PathBuf::from(d).join("svcbench"),
        None => std::env::temp_dir().join(format!("svcbench-{uid}")),
    };
    private_dir(&dir, uid, 0o700)?;
    Ok(dir)
}

/// Creates `dir` with `mode` if missing, then checks it is a real folder of `uid` that no one else can
/// write; a folder of `uid` with a wider mode is narrowed to `mode`.
pub fn private_dir(dir: &Path, uid: u32, mode: u32) -> Result<()> {
    match std::fs::DirBuilder::new().mode(mode).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e).with_context(|| format!("cannot create {}", dir.display())),
    }
    let m = std::fs::symlink_metadata(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    if !m.file_type().is_dir() {
        bail!(
            "{} is not a real folder (a symlink or a file): remove it so that svcbench can make its own",
            dir.display()
        );
    }
    if m.uid() != uid {
        bail!(
            "{} belongs to uid {}, not {uid}: svcbench keeps what it must clean up after only in a folder of its own \
             user; remove it",
            dir.display(),
            m.uid()
        );
    }
    if m.mode() & 0o7777 != mode {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode))
            .with_context(|| format!("cannot set {} to mode {mode:o}", dir.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_symlink_or_a_folder_others_may_write_is_not_taken_as_is() {
        let tmp = tempfile::tempdir().unwrap();
        let uid = unsafe { libc::geteuid() };
        let made = tmp.path().join("made");
        private_dir(&made, uid, 0o700).unwrap();
        assert_eq!(std::fs::metadata(&made).unwrap().mode() & 0o7777, 0o700);

        let wide = tmp.path().join("wide");
        std::fs::create_dir(&wide).unwrap();
        std::fs::set_permissions(&wide, std::fs::Permissions::from_mode(0o777)).unwrap();
        private_dir(&wide, uid, 0o700).unwrap();
        assert_eq!(std::fs::metadata(&wide).unwrap().mode() & 0o7777, 0o700);

        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&made, &link).unwrap();
        let e = private_dir(&link, uid, 0o700).unwrap_err().to_string();
        assert!(e.contains("not a real folder"), "{e}");

        let e = private_dir(&made, uid + 1, 0o700).unwrap_err().to_string();
        assert!(e.contains("belongs to uid"), "{e}");
    }
}

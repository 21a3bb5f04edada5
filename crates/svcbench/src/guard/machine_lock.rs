//! One measurement at a time on a machine: two `svcbench run` sharing the CPUs would each measure half a
//! machine and store it as clean (measured: 37,335 and 37,892 req/s at 64 connections, 75,433 alone). A
//! `flock` on one file held for the whole session; the holder writes who it is into the file. Only
//! svcbench's own user can open that file (docs/security.md): any other user who could would hold the lock
//! and block every measurement.
use anyhow::{bail, Context, Result};
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The lock file: `SVCBENCH_LOCK_FILE`; as root /run/svcbench/measure.lock, in root's own folder (mode
/// 0700); as another user, in that user's private folder (lock_dir.rs), shared by that user's measurements
/// alone. Never a shared temporary folder: whoever can open the file can hold the lock and stop every
/// measurement.
pub fn path() -> Result<PathBuf> {
    if let Ok(p) = std::env::var("SVCBENCH_LOCK_FILE") {
        return Ok(PathBuf::from(p));
    }
    Ok(super::lock_dir::runtime_dir()?.join(FILE_NAME))
}

/// The lock file's name in its folder (the sessions folder of a user other than root, whose lock files it
/// is not one of).
pub const FILE_NAME: &str = "measure.lock";

/// Held while it lives; the kernel releases it when svcbench ends, however it ends.
pub struct MachineLock {
    _file: File,
}

/// Takes the lock if it is free, without waiting.
fn try_flock(f: &File) -> bool {
    unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// Takes the lock, or refuses with one line naming the holder (or waits for it with `wait`, until Ctrl-C).
pub fn acquire(what: &str, wait: bool) -> Result<MachineLock> {
    acquire_at(&path()?, what, wait, &super::signals::interrupted)
}

/// How often a wait for the lock looks again, and at the stop flag.
const WAIT_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// Opens the lock file as svcbench's user alone may: never through a symlink, created mode 0600, refused
/// when it is not a regular file of this user. Returns it and whether its mode let others open it (an
/// older svcbench made it 0644): such a file is replaced once held, since another user may keep it open.
fn open_private(p: &Path) -> Result<(File, bool)> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(p)
        .with_context(|| {
            format!(
                "cannot open the measurement lock {} (a symlink is refused): remove it, or set SVCBENCH_LOCK_FILE to                  a file in a folder of your own",
                p.display()
            )
        })?;
    let m = f.metadata()?;
    let me = unsafe { libc::geteuid() };
    if !m.file_type().is_file() || m.uid() != me {
        bail!(
            "the measurement lock {} is not a regular file of uid {me} (uid {}): another user could hold it and block              every measurement; remove it (`rm {}`) so that svcbench makes its own",
            p.display(),
            m.uid(),
            p.display()
        );
    }
    Ok((f, m.mode() & 0o077 != 0))
}

/// A fresh lock file in place of one that others could open: made beside it (exclusively, 0600), locked,
/// then renamed over it, so that no descriptor another user opened earlier refers to the lock any more.
fn replace_with_fresh(p: &Path) -> Result<File> {
    let fresh = p.with_extension(format!("lock.new-{}", std::process::id()));
    let _ = std::fs::remove_file(&fresh);
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&fresh)
        .with_context(|| format!("cannot create {}", fresh.display()))?;
    // Whatever the umask made of it.
    f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    if !try_flock(&f) {
        bail!("cannot lock the fresh measurement lock {}", fresh.display());
    }
    std::fs::rename(&fresh, p).with_context(|| format!("cannot rename {} to {}", fresh.display(), p.display()))?;
    Ok(f)
}

/// [`acquire`] of the lock at `p`; a wait ends at once when `stopped` says so, with
/// [`super::signals::StoppedBeforeStart`]: nothing was started or stored yet.
fn acquire_at(p: &Path, what: &str, wait: bool, stopped: &dyn Fn() -> bool) -> Result<MachineLock> {
    if let Some(dir) = p.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let (mut f, open_to_others) = open_private(p)?;
    if !try_flock(&f) {
        let mut holder = String::new();
        let _ = f.read_to_string(&mut holder);
        let holder = holder.trim();
        if !wait {
            bail!(
                "another svcbench is measuring on this machine ({}); two measurements at once would each get half \
                 the CPUs: wait for it, or pass --wait-lock to queue behind it",
                if holder.is_empty() { "holder unknown" } else { holder }
            );
        }
        crate::errln!("svcbench: waiting for the other measurement to end ({holder}; Ctrl-C to give up)");
        // Not a blocking flock: Ctrl-C must end the wait at once, not after the other measurement.
        while !try_flock(&f) {
            if stopped() {
                return Err(super::signals::StoppedBeforeStart(
                    "interrupted while waiting for the other measurement: nothing was started or stored".into(),
                )
                .into());
            }
            std::thread::sleep(WAIT_POLL);
        }
    }
    if open_to_others {
        // Held, so no svcbench measures on the old file while it is replaced.
        f = replace_with_fresh(p)?;
    }
    f.set_len(0)?;
    f.rewind()?;
    let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let _ = write!(f, "pid {} `svcbench {what}` since {now}", std::process::id());
    let _ = f.flush();
    Ok(MachineLock { _file: f })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_for_the_lock_ends_at_once_when_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("measure.lock");
        let held = acquire_at(&p, "run", false, &|| false).unwrap();
        // Another open of the file is another holder for flock, as another svcbench would be.
        let e = acquire_at(&p, "run", false, &|| false).err().expect("refused while held");
        assert!(format!("{e:#}").contains("--wait-lock"), "{e:#}");
        let asked = std::cell::Cell::new(0);
        let e = acquire_at(&p, "run", true, &|| {
            asked.set(asked.get() + 1);
            asked.get() > 2
        })
        .err()
        .expect("the wait gives up once stopped");
        assert!(e.downcast_ref::<super::super::signals::StoppedBeforeStart>().is_some(), "{e:#}");
        assert_eq!(asked.get(), 3, "the stop flag is looked at while waiting");
        drop(held);
        assert!(acquire_at(&p, "run", true, &|| true).is_ok(), "a free lock is taken, stopped or not");
    }

    #[test]
    fn the_lock_is_a_file_only_its_user_can_open() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("measure.lock");
        let mode = |p: &Path| std::fs::symlink_metadata(p).unwrap().mode() & 0o7777;
        drop(acquire_at(&p, "run", false, &|| false).unwrap());
        assert_eq!(mode(&p), 0o600, "made private");
        // An older svcbench's 0644 file, which another user may hold open: replaced by a fresh private one.
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        let old_inode = std::fs::metadata(&p).unwrap().ino();
        let kept_open = File::open(&p).unwrap();
        let held = acquire_at(&p, "run", false, &|| false).unwrap();
        assert_eq!(mode(&p), 0o600);
        assert_ne!(std::fs::metadata(&p).unwrap().ino(), old_inode, "a fresh file, not the one others opened");
        assert!(try_flock(&kept_open), "the old file's lock is no longer the machine's");
        assert!(acquire_at(&p, "run", false, &|| false).is_err(), "the fresh one is held");
        drop(held);
        // A symlink is refused, not followed.
        let link = dir.path().join("link.lock");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        let e = format!("{:#}", acquire_at(&link, "run", false, &|| false).err().expect("a symlink is refused"));
        assert!(e.contains("a symlink is refused") && e.contains("SVCBENCH_LOCK_FILE"), "{e}");
        // Another user's file is refused with the fix (root can make one to try).
        if unsafe { libc::geteuid() } == 0 {
            let theirs = dir.path().join("theirs.lock");
            std::fs::write(&theirs, "").unwrap();
            std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
            let e = format!("{:#}", acquire_at(&theirs, "run", false, &|| false).err().expect("refused"));
            assert!(e.contains("not a regular file of uid 0 (uid 65534)") && e.contains("rm "), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}

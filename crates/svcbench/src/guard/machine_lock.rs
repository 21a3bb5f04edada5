//! One measurement at a time on a machine: two `svcbench run` sharing the CPUs would each measure half a
//! machine and store it as clean (measured: 37,335 and 37,892 req/s at 64 connections, 75,433 alone). A
//! `flock` on one file held for the whole session; the holder writes who it is into the file.
use anyhow::{bail, Context, Result};
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

/// The lock file: `SVCBENCH_LOCK_FILE`, else /run/svcbench/measure.lock (/tmp when /run is not writable).
pub fn path() -> PathBuf {
    if let Ok(p) = std::env::var("SVCBENCH_LOCK_FILE") {
        return PathBuf::from(p);
    }
    let run = PathBuf::from("/run/svcbench");
    if std::fs::create_dir_all(&run).is_ok() {
        run.join("measure.lock")
    } else {
        std::env::temp_dir().join("svcbench-measure.lock")
    }
}

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
    acquire_at(&path(), what, wait, &super::signals::interrupted)
}

/// How often a wait for the lock looks again, and at the stop flag.
const WAIT_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// [`acquire`] of the lock at `p`; a wait ends at once when `stopped` says so, with
/// [`super::signals::StoppedBeforeStart`]: nothing was started or stored yet.
fn acquire_at(p: &std::path::Path, what: &str, wait: bool, stopped: &dyn Fn() -> bool) -> Result<MachineLock> {
    if let Some(dir) = p.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    // flock needs no write access: a user who cannot write the file (root created it) still takes the lock,
    // only without naming itself in it.
    // Never through a symlink: in the shared temp folder (no /run) another user could plant one.
    let open = |write: bool| {
        std::fs::OpenOptions::new()
            .read(true)
            .write(write)
            .create(write)
            .truncate(false)
            .custom_flags(libc::O_NOFOLLOW)
            .open(p)
    };
    let (mut f, writable) = match open(true) {
        Ok(f) => (f, true),
        Err(_) => (open(false).with_context(|| format!("cannot open the measurement lock {}", p.display()))?, false),
    };
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
    if !writable {
        return Ok(MachineLock { _file: f });
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
}

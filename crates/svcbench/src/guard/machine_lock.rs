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

fn try_flock(f: &File, wait: bool) -> bool {
    let op = if wait { libc::LOCK_EX } else { libc::LOCK_EX | libc::LOCK_NB };
    unsafe { libc::flock(f.as_raw_fd(), op) == 0 }
}

/// Takes the lock, or refuses with one line naming the holder (or waits for it with `wait`).
pub fn acquire(what: &str, wait: bool) -> Result<MachineLock> {
    let p = path();
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
            .open(&p)
    };
    let (mut f, writable) = match open(true) {
        Ok(f) => (f, true),
        Err(_) => (open(false).with_context(|| format!("cannot open the measurement lock {}", p.display()))?, false),
    };
    if !try_flock(&f, false) {
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
        crate::errln!("svcbench: waiting for the other measurement to end ({holder})");
        if !try_flock(&f, true) {
            bail!("cannot take the measurement lock {}", p.display());
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

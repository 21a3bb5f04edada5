//! Folders and files svcbench (usually root) makes where another local user might have a say: the store's
//! work folders and their logs, a generated manifest, the store's own folder. Every folder on the way is
//! opened without following a link and must be root's or svcbench's user's, and not open to other users'
//! writes (a sticky folder, /tmp, may be crossed: others cannot replace what is in it); the folders svcbench
//! makes are its own, mode 0755. Files are made inside such a folder through its descriptor, any old entry
//! removed first and the new one made exclusively, so a planted link or hard link is replaced, never
//! written through (docs/security.md, "Work folders").
use anyhow::{bail, Context, Result};
use rustix::fs::{AtFlags, Mode, OFlags, Stat};
use rustix::io::Errno;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

/// The mode of the folders svcbench makes: others may read the logs, only svcbench writes.
const FOLDER_MODE: u32 = 0o755;
/// The mode of the files it makes in them.
const FILE_MODE: u32 = 0o644;

/// A folder opened without following links, each folder above it checked on the way.
pub struct Folder {
    fd: OwnedFd,
    path: PathBuf,
}

fn me() -> u32 {
    rustix::process::geteuid().as_raw()
}

fn user_name(uid: u32) -> String {
    match nix::unistd::User::from_uid(uid.into()) {
        Ok(Some(u)) => format!("user {}", u.name),
        _ => format!("uid {uid}"),
    }
}

/// Why another user could change what is in the folder at `path`, if one could (it is theirs, or open to
/// their writes and not sticky), as one line with the fix.
fn others_can_change(st: &Stat, path: &Path) -> Option<String> {
    let uid = st.st_uid;
    let mode = st.st_mode & 0o7777;
    let why = if uid != 0 && uid != me() {
        format!("is {}'s, so that user could swap what svcbench writes below it: remove it", user_name(uid))
    } else if mode & 0o022 != 0 && mode & 0o1000 == 0 {
        format!(
            "is writable by other users (mode {mode:04o}), who could swap what svcbench writes below it: `chmod go-w {}`",
            path.display()
        )
    } else {
        return None;
    };
    Some(format!(
        "{} {why}, or give svcbench a place whose folders only root (or svcbench's user) can change",
        path.display()
    ))
}

/// Refuses a link on the way that another user made (it could point anywhere); a folder is checked as
/// [`others_can_change`] says.
fn check_entry(path: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let m = path.symlink_metadata().with_context(|| format!("cannot find {}", path.display()))?;
    if m.file_type().is_symlink() {
        if m.uid() != 0 && m.uid() != me() {
            bail!(
                "{} is a link of {}'s, who could point it anywhere: remove it, or give svcbench the real path",
                path.display(),
                user_name(m.uid())
            );
        }
        return Ok(());
    }
    let fd =
        rustix::fs::open(path, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty())
            .with_context(|| format!("cannot open folder {}", path.display()))?;
    match others_can_change(&rustix::fs::fstat(&fd)?, path) {
        Some(why) => bail!("{why}"),
        None => Ok(()),
    }
}

fn open_dir(at: &OwnedFd, name: &Path, path: &Path) -> Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    rustix::fs::openat(at, name, flags, Mode::empty()).map_err(|e| match e {
        Errno::LOOP | Errno::NOTDIR => anyhow::anyhow!(
            "{} is a symlink or not a folder, where svcbench needs a folder of its own: remove it or choose another place",
            path.display()
        ),
        e => anyhow::anyhow!("cannot open folder {}: {e}", path.display()),
    })
}

impl Folder {
    /// An existing folder whose contents only root or svcbench's user can change, nor those of any folder
    /// above it: every folder on the path as given, and on its real path (links resolved once, each a link
    /// of root's or svcbench's user's), walked from `/` without following a link.
    pub fn trusted(path: &Path) -> Result<Folder> {
        let given = std::path::absolute(path).with_context(|| format!("cannot resolve {}", path.display()))?;
        for prefix in given.ancestors().collect::<Vec<_>>().into_iter().rev() {
            check_entry(prefix)?;
        }
        let real = std::fs::canonicalize(path).with_context(|| format!("cannot find folder {}", path.display()))?;
        let root = Path::new("/");
        let mut fd = rustix::fs::open(root, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
        let mut walked = PathBuf::from(root);
        for part in real.components().filter(|c| matches!(c, Component::Normal(_))) {
            walked.push(part);
            fd = open_dir(&fd, Path::new(part.as_os_str()), &walked)?;
            if let Some(why) = others_can_change(&rustix::fs::fstat(&fd)?, &walked) {
                bail!("{why}");
            }
        }
        Ok(Folder { fd, path: real })
    }

    /// `path` as a folder of svcbench's own, made where it is missing (its missing parents too), each
    /// folder above it [`trusted`](Folder::trusted). One that exists must be a real folder of svcbench's
    /// user; writable by others, it is narrowed to 0755.
    pub fn make(path: &Path) -> Result<Folder> {
        let path = std::path::absolute(path).with_context(|| format!("cannot resolve {}", path.display()))?;
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            return Folder::trusted(&path);
        };
        let parent = if parent.exists() { Folder::trusted(parent)? } else { Folder::make(parent)? };
        parent.folder(Path::new(name))
    }

    /// The folder `name` in this one, made with svcbench's mode when missing; see [`make`](Folder::make).
    pub fn folder(&self, name: &Path) -> Result<Folder> {
        let path = self.path.join(name);
        match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(FOLDER_MODE)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => bail!("cannot create {}: {e}", path.display()),
        }
        let fd = open_dir(&self.fd, name, &path)?;
        let st = rustix::fs::fstat(&fd)?;
        if st.st_uid != me() {
            bail!(
                "{} is {}'s folder, where svcbench writes its own files: remove it (another user could have planted \
                 links in it) or choose another place",
                path.display(),
                user_name(st.st_uid)
            );
        }
        if st.st_mode & 0o022 != 0 {
            rustix::fs::fchmod(&fd, Mode::from_raw_mode(st.st_mode & 0o7755))
                .with_context(|| format!("cannot narrow {} to mode 0755", path.display()))?;
        }
        Ok(Folder { fd, path })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A new, empty file `name` here, open for writing: whatever had that name (a file, a planted link) is
    /// removed first, and the file is made exclusively, never through a link.
    pub fn create(&self, name: &str) -> Result<std::fs::File> {
        let path = self.path.join(name);
        self.remove(name)?;
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.fd, name, flags, Mode::from_raw_mode(FILE_MODE))
            .with_context(|| format!("cannot create {}", path.display()))?;
        Ok(std::fs::File::from(fd))
    }

    /// [`create`](Folder::create) with this content.
    pub fn write(&self, name: &str, content: impl AsRef<[u8]>) -> Result<()> {
        use std::io::Write;
        self.create(name)?
            .write_all(content.as_ref())
            .with_context(|| format!("cannot write {}", self.path.join(name).display()))
    }

    /// Removes the entry `name` here (a link itself, not what it names); a missing one is no error.
    pub fn remove(&self, name: &str) -> Result<()> {
        match rustix::fs::unlinkat(&self.fd, name, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(e).with_context(|| format!("cannot remove {}", self.path.join(name).display())),
        }
    }

    /// Gives this folder, or the regular file `name` in it, to another user, never through a link.
    pub fn hand_over(&self, name: Option<&str>, uid: u32, gid: u32) -> Result<()> {
        let (uid, gid) = (rustix::fs::Uid::from_raw(uid), rustix::fs::Gid::from_raw(gid));
        let path = name.map_or(self.path.clone(), |n| self.path.join(n));
        match name {
            None => rustix::fs::fchown(&self.fd, Some(uid), Some(gid)),
            Some(n) => rustix::fs::fchown(self.open(n)?, Some(uid), Some(gid)),
        }
        .with_context(|| format!("cannot hand {} to uid {}", path.display(), uid.as_raw()))
    }

    /// Moves the entry `name` from here into `to` under the same name, replacing what `to` held there (a
    /// link itself, never what it names).
    pub fn move_into(&self, name: &str, to: &Folder) -> Result<()> {
        rustix::fs::renameat(&self.fd, name, &to.fd, name)
            .with_context(|| format!("cannot move {} into {}", self.path.join(name).display(), to.path.display()))
    }

    /// The size of the regular file `name` here (None: missing, a link, not a file).
    pub fn file_size(&self, name: &str) -> Option<u64> {
        let st = rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        rustix::fs::FileType::from_raw_mode(st.st_mode).is_file().then_some(st.st_size as u64)
    }

    /// An existing file `name` here, opened for reading only if it is a regular file (never through a link).
    pub fn open(&self, name: &str) -> Result<std::fs::File> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let fd = rustix::fs::openat(&self.fd, name, flags, Mode::empty())
            .with_context(|| format!("cannot open {}", self.path.join(name).display()))?;
        if !rustix::fs::FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode).is_file() {
            bail!("{} is not a regular file", self.path.join(name).display());
        }
        Ok(std::fs::File::from(fd))
    }
}

/// Splits a file's path into its folder, made as svcbench's own ([`Folder::make`]), and its name.
fn folder_of(path: &Path) -> Result<(Folder, &str)> {
    let name =
        path.file_name().and_then(|n| n.to_str()).with_context(|| format!("{} names no file", path.display()))?;
    Ok((Folder::make(path.parent().unwrap_or(Path::new(".")))?, name))
}

/// A new file at `path` in a folder of svcbench's own: see [`Folder::create`].
pub fn create_file(path: &Path) -> Result<std::fs::File> {
    let (folder, name) = folder_of(path)?;
    folder.create(name)
}

/// [`create_file`] with this content.
pub fn write_file(path: &Path, content: impl AsRef<[u8]>) -> Result<()> {
    let (folder, name) = folder_of(path)?;
    folder.write(name, content)
}

/// Refuses a store (the SQLite file `db`) that another user could swap or plant files beside: its folder
/// must be [`trusted`](Folder::trusted) and, sticky or not, writable by none but its owner, because
/// SQLite makes its journal files beside the store by name. The store itself, when it exists, must be a
/// regular file (not a link) of root's or svcbench's user's.
pub fn check_store(db: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let db = std::path::absolute(db).with_context(|| format!("cannot resolve {}", db.display()))?;
    let dir = db.parent().unwrap_or(Path::new("/"));
    let mode = std::fs::metadata(dir).with_context(|| format!("cannot find folder {}", dir.display()))?.mode() & 0o7777;
    if mode & 0o022 != 0 {
        bail!(
            "the store's folder {} is writable by other users (mode {mode:04o}), who could plant its journal or \
             work files: `chmod go-w {}`, or give --db a folder of its own (mkdir -m 755 DIR)",
            dir.display(),
            dir.display()
        );
    }
    Folder::trusted(dir)?;
    match db.symlink_metadata() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", db.display())),
        Ok(m) if !m.file_type().is_file() => {
            bail!("the store {} is a symlink or not a regular file: give --db the real file's path", db.display())
        }
        Ok(m) => {
            if m.uid() != 0 && m.uid() != me() {
                bail!(
                    "the store {} is {}'s, who could change it while svcbench reads it: copy it (cp, then use the copy)",
                    db.display(),
                    user_name(m.uid())
                );
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn is_root() -> bool {
        me() == 0
    }

    fn nobody() -> (u32, u32) {
        let u = nix::unistd::User::from_name("nobody").unwrap().expect("user nobody");
        (u.uid.as_raw(), u.gid.as_raw())
    }

    fn chmod(p: &Path, mode: u32) {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn make_creates_missing_folders_with_svcbench_s_mode() {
        let tmp = tempfile::tempdir().unwrap();
        let deep = tmp.path().join("a/b/c");
        let f = Folder::make(&deep).unwrap();
        assert_eq!(f.path(), deep);
        for d in ["a", "a/b", "a/b/c"] {
            assert_eq!(std::fs::metadata(tmp.path().join(d)).unwrap().mode() & 0o7777, 0o755, "{d}");
        }
    }

    #[test]
    fn an_own_folder_left_writable_is_narrowed() {
        let tmp = tempfile::tempdir().unwrap();
        let wide = tmp.path().join("wide");
        std::fs::create_dir(&wide).unwrap();
        chmod(&wide, 0o777);
        Folder::make(&wide).unwrap();
        assert_eq!(std::fs::metadata(&wide).unwrap().mode() & 0o7777, 0o755);
    }

    #[test]
    fn a_symlink_where_svcbench_makes_its_folder_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let parent = Folder::make(&tmp.path().join("work")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, parent.path().join("s-session-1")).unwrap();
        let e = parent.folder(Path::new("s-session-1")).err().expect("refused");
        assert!(format!("{e:#}").contains("is a symlink or not a folder"), "{e:#}");
    }

    #[test]
    fn a_link_on_the_way_is_followed_only_when_root_or_svcbench_s_user_made_it() {
        let tmp = tempfile::tempdir().unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let link = tmp.path().join("results");
        std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
        Folder::make(&link.join("work")).unwrap();
        assert!(elsewhere.join("work").is_dir(), "one's own link is one's own choice");
        if !is_root() {
            return eprintln!("skipped: only root can give a link away");
        }
        let (uid, gid) = nobody();
        std::os::unix::fs::lchown(&link, Some(uid), Some(gid)).unwrap();
        let e = Folder::make(&link.join("other")).err().expect("refused");
        assert!(format!("{e:#}").contains(&format!("{} is a link of user nobody's", link.display())), "{e:#}");
        assert!(!elsewhere.join("other").exists(), "nothing made through the link");
    }

    #[test]
    fn a_folder_of_another_user_is_refused() {
        if !is_root() {
            return eprintln!("skipped: only root can give a folder away");
        }
        let tmp = tempfile::tempdir().unwrap();
        let theirs = tmp.path().join("work");
        std::fs::create_dir(&theirs).unwrap();
        let (uid, gid) = nobody();
        std::os::unix::fs::lchown(&theirs, Some(uid), Some(gid)).unwrap();
        let e = Folder::make(&theirs).err().expect("refused");
        assert!(format!("{e:#}").contains("is user nobody's folder"), "{e:#}");
        // Above the folder svcbench makes, too: nobody could rename what is below.
        let e = Folder::make(&theirs.join("inner")).err().expect("refused");
        assert!(format!("{e:#}").contains(&format!("{} is user nobody's, so", theirs.display())), "{e:#}");
    }

    #[test]
    fn a_folder_above_open_to_all_is_refused_unless_sticky() {
        let tmp = tempfile::tempdir().unwrap();
        let open = tmp.path().join("open");
        std::fs::create_dir(&open).unwrap();
        chmod(&open, 0o777);
        let e = Folder::make(&open.join("work")).err().expect("refused");
        assert!(format!("{e:#}").contains("is writable by other users (mode 0777)"), "{e:#}");
        assert!(format!("{e:#}").contains(&format!("chmod go-w {}", open.display())), "{e:#}");
        chmod(&open, 0o1777);
        Folder::make(&open.join("work")).unwrap();
    }

    #[test]
    fn create_replaces_a_planted_link_and_a_hard_link_without_writing_through() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("target");
        std::fs::write(&target, "keep").unwrap();
        let work = Folder::make(&tmp.path().join("work")).unwrap();
        std::os::unix::fs::symlink(&target, work.path().join("a.log")).unwrap();
        std::fs::hard_link(&target, work.path().join("b.log")).unwrap();
        work.write("a.log", "log a").unwrap();
        work.write("b.log", "log b").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        for (name, text) in [("a.log", "log a"), ("b.log", "log b")] {
            let p = work.path().join(name);
            assert!(std::fs::symlink_metadata(&p).unwrap().file_type().is_file(), "{name}");
            assert_eq!(std::fs::read_to_string(&p).unwrap(), text);
        }
        // By path, as the logs are made.
        std::fs::remove_file(work.path().join("a.log")).unwrap();
        std::os::unix::fs::symlink(&target, work.path().join("a.log")).unwrap();
        write_file(&work.path().join("a.log"), "again").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    }

    #[test]
    fn open_refuses_a_link() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("target");
        std::fs::write(&target, "secret").unwrap();
        let work = Folder::make(&tmp.path().join("work")).unwrap();
        std::os::unix::fs::symlink(&target, work.path().join("console.log")).unwrap();
        assert!(work.open("console.log").is_err());
        work.write("console.log", "mine").unwrap();
        assert!(work.open("console.log").is_ok());
    }

    #[test]
    fn remove_takes_the_link_not_its_target() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("target");
        std::fs::write(&target, "keep").unwrap();
        let work = Folder::make(&tmp.path().join("work")).unwrap();
        std::os::unix::fs::symlink(&target, work.path().join("x")).unwrap();
        work.remove("x").unwrap();
        work.remove("x").unwrap();
        assert!(target.exists() && !work.path().join("x").exists());
    }

    #[test]
    fn a_store_is_refused_in_a_folder_others_write_even_sticky_and_as_a_link() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("store");
        std::fs::create_dir(&dir).unwrap();
        check_store(&dir.join("s.db")).unwrap();
        for mode in [0o777, 0o1777, 0o775] {
            chmod(&dir, mode);
            let e = check_store(&dir.join("s.db")).expect_err("refused");
            assert!(format!("{e:#}").contains(&format!("writable by other users (mode {mode:04o})")), "{e:#}");
            assert!(format!("{e:#}").contains(&format!("chmod go-w {}", dir.display())), "{e:#}");
        }
        chmod(&dir, 0o755);
        std::fs::write(tmp.path().join("real.db"), "").unwrap();
        std::os::unix::fs::symlink(tmp.path().join("real.db"), dir.join("s.db")).unwrap();
        let e = check_store(&dir.join("s.db")).expect_err("refused");
        assert!(format!("{e:#}").contains("is a symlink or not a regular file"), "{e:#}");
    }
}

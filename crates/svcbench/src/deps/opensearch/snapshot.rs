//! The scenario's data kept as an OpenSearch snapshot, so that only the first node svcbench starts pays
//! the bulk load (half a minute for the locations data) and every later one restores the indices in a few
//! seconds. Each snapshot is a filesystem repository of its own, `<cache>/snapshots/<key>/`, named by a
//! SHA-256 of what the data is made of (OpenSearch version, index definitions, data files), written once
//! under a `.partial-<pid>` name and renamed when complete, then only ever read (`readonly`). Only nodes
//! svcbench starts use it: a store given by URL is the user's, and no repository is registered on it.
use super::distribution::{ensure_reachable, RUN_AS};
use super::loader::{self, index_definition, request, Loader, INDICES};
use super::ownership::hand_over;
use anyhow::{anyhow, bail, Context, Result};
use sha2::{Digest, Sha256};
use std::fs;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Changes every key when what a snapshot holds changes in a way the inputs do not show.
const KEY_FORMAT: &str = "svcbench store snapshot 1";
/// The one snapshot in each repository.
const SNAPSHOT: &str = "data";
/// Written by svcbench into a finished snapshot's folder: a folder without it is not one svcbench finished.
const MARKER: &str = "svcbench-snapshot";
/// Names the repositories have on the node while it writes or reads them.
const TAKE_REPOSITORY: &str = "svcbench-take";
const RESTORE_REPOSITORY: &str = "svcbench-restore";
/// How long a snapshot or a restore (waited for to its end) may wait for each read of its answer.
const SNAPSHOT_TIMEOUT: Duration = Duration::from_secs(300);

/// The folder a node svcbench starts keeps its snapshots in (its `path.repo`), and the user the node runs
/// as (None: svcbench's own).
pub struct Snapshots {
    folder: PathBuf,
    node_user: Option<(u32, u32)>,
}

/// How a finished snapshot ended up in place.
#[derive(Debug, PartialEq)]
enum Kept {
    Ours,
    /// Another svcbench renamed its own copy there first; ours is dropped.
    Theirs,
}

impl Snapshots {
    /// `<cache>/snapshots`, made when missing and refused when it is a symlink or belongs to anyone but
    /// svcbench's user or the node's: whoever can swap its folders decides what later stores hold.
    pub fn prepare(cache_dir: &Path, node_user: Option<(u32, u32)>) -> Result<Snapshots> {
        let folder = folder(cache_dir)?;
        match fs::DirBuilder::new().mode(0o755).create(&folder) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
                return Err(e).with_context(|| format!("cannot create {}", folder.display()));
            }
            _ => {}
        }
        let own = nix::unistd::geteuid().as_raw();
        let owners: Vec<u32> = std::iter::once(own).chain(node_user.map(|(uid, _)| uid)).collect();
        check_folder(&folder, &owners)?;
        if node_user.is_some() {
            ensure_reachable(&folder, RUN_AS)?;
        }
        Ok(Snapshots { folder, node_user })
    }

    pub fn folder(&self) -> &Path {
        &self.folder
    }

    /// Puts the scenario's data in the node at `loader`: restored from its snapshot when one is complete,
    /// else bulk-loaded and kept as a snapshot for the next start. A snapshot that cannot be restored is
    /// said in one line, left as it is, and the data loaded. The counts are checked either way.
    pub fn fill(&self, loader: &Loader, version: &str, store_dir: &Path, files: &[PathBuf]) -> Result<()> {
        let started = Instant::now();
        let key = key(version, store_dir, files)?;
        let done = complete_folder(&self.folder, &key);
        if fs::symlink_metadata(&done).is_err() {
            return self.load_and_keep(loader, &key, version, store_dir, files);
        }
        if !is_complete(&done) {
            crate::errln!(
                "svcbench: {} is not a snapshot svcbench finished (no {MARKER} in it); loading the data, and keeping no snapshot while it is there",
                done.display()
            );
        } else if let Err(e) = restore(loader, &done, files) {
            crate::errln!(
                "svcbench: cannot restore the snapshot in {} ({e:#}); loading the data instead, the folder left as it is",
                done.display()
            );
            delete_indices(loader).context("cannot remove what the failed restore left in the store")?;
        } else {
            let (indices, short, took) = (INDICES.join(", "), &key[..12], started.elapsed().as_secs_f64());
            crate::errln!("svcbench: restored {indices} from the snapshot {short} in {took:.1} s");
            return Ok(());
        }
        let took = timed(|| loader.load_fresh(store_dir, files))?;
        crate::errln!("svcbench: loaded {} in {took:.1} s", INDICES.join(", "));
        Ok(())
    }

    /// The first start with this data: bulk-loads it, then keeps it as the key's snapshot. A snapshot that
    /// cannot be kept is said, and the start goes on: the data is in the store.
    fn load_and_keep(
        &self,
        loader: &Loader,
        key: &str,
        version: &str,
        store_dir: &Path,
        files: &[PathBuf],
    ) -> Result<()> {
        let took = timed(|| loader.load_fresh(store_dir, files))?;
        let (indices, short, taking) = (INDICES.join(", "), &key[..12], Instant::now());
        match self.take(loader, key, version) {
            Ok(Kept::Ours) => crate::errln!(
                "svcbench: loaded {indices} in {took:.1} s; kept as snapshot {short} for the next start ({:.1} s)",
                taking.elapsed().as_secs_f64()
            ),
            Ok(Kept::Theirs) => {
                crate::errln!("svcbench: loaded {indices} in {took:.1} s; another svcbench kept snapshot {short} first")
            }
            Err(e) => crate::errln!("svcbench: loaded {indices} in {took:.1} s; no snapshot kept: {e:#}"),
        }
        Ok(())
    }

    /// Snapshots the loaded indices into a partial folder of this svcbench's own, then renames it to the
    /// key's folder. Nothing of it is left when that fails or another svcbench got there first.
    fn take(&self, loader: &Loader, key: &str, version: &str) -> Result<Kept> {
        let partial = partial_folder(&self.folder, key, std::process::id());
        // Only a killed svcbench with this pid can have left one.
        remove_folder(&partial)?;
        fs::DirBuilder::new()
            .mode(0o700)
            .create(&partial)
            .with_context(|| format!("cannot create {}", partial.display()))?;
        let kept = self
            .write_snapshot(loader, &partial, key, version)
            .and_then(|()| publish(&partial, &complete_folder(&self.folder, key)));
        if !matches!(kept, Ok(Kept::Ours)) {
            let _ = remove_folder(&partial);
        }
        kept
    }

    /// The node writes the snapshot into `partial` (handed to its user first); then svcbench takes the
    /// folder back and marks it finished.
    fn write_snapshot(&self, loader: &Loader, partial: &Path, key: &str, version: &str) -> Result<()> {
        if let Some((uid, gid)) = self.node_user {
            hand_over(partial, uid, gid)?;
        }
        register(loader, TAKE_REPOSITORY, partial, false)?;
        let taken = create_snapshot(loader);
        let _ = unregister(loader, TAKE_REPOSITORY);
        taken?;
        seal(partial)?;
        let marker = partial.join(MARKER);
        let text = format!("snapshot `{SNAPSHOT}` of {} from OpenSearch {version}, key {key}\n", INDICES.join(", "));
        fs::write(&marker, text).with_context(|| format!("cannot write {}", marker.display()))
    }
}

/// `<cache>/snapshots`, absolute: OpenSearch takes repository locations only under its `path.repo`.
fn folder(cache_dir: &Path) -> Result<PathBuf> {
    let cache = std::path::absolute(cache_dir).with_context(|| format!("cannot resolve {}", cache_dir.display()))?;
    Ok(cache.join("snapshots"))
}

/// A key's finished snapshot: its own repository, only ever read.
fn complete_folder(folder: &Path, key: &str) -> PathBuf {
    folder.join(key)
}

/// Where one svcbench writes a key's snapshot before it renames it to the key's folder.
fn partial_folder(folder: &Path, key: &str, pid: u32) -> PathBuf {
    folder.join(format!("{key}.partial-{pid}"))
}

/// A real folder (not a link) holding svcbench's marker, a file.
fn is_complete(dir: &Path) -> bool {
    fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir())
        && fs::symlink_metadata(dir.join(MARKER)).is_ok_and(|m| m.is_file())
}

/// The snapshots folder must be a real folder owned by one of `owners`.
fn check_folder(folder: &Path, owners: &[u32]) -> Result<()> {
    let meta = fs::symlink_metadata(folder).with_context(|| format!("cannot read {}", folder.display()))?;
    if meta.file_type().is_symlink() {
        bail!(
            "{} is a symbolic link: svcbench keeps the store's snapshots only in a folder of its own; remove the link (svcbench makes the folder) or set SVCBENCH_CACHE to another cache",
            folder.display()
        );
    }
    if !meta.is_dir() {
        bail!("{} is not a folder; remove it (svcbench makes the folder of the store's snapshots)", folder.display());
    }
    if !owners.contains(&meta.uid()) {
        bail!(
            "{} belongs to uid {}, neither svcbench's user nor the store's: another user could swap the store's data; remove it (svcbench makes it again) or give it to root",
            folder.display(),
            meta.uid()
        );
    }
    Ok(())
}

/// Hex SHA-256 of what a snapshot holds: the OpenSearch version, each index's name and definition (as
/// the loader creates them) and each data file's name and bytes, in load order. Lengths go first, so no
/// two different inputs run together into one.
pub fn key(version: &str, store_dir: &Path, files: &[PathBuf]) -> Result<String> {
    let mut h = Sha256::new();
    field(&mut h, KEY_FORMAT.as_bytes());
    field(&mut h, version.as_bytes());
    for index in INDICES {
        let path = index_definition(store_dir, index);
        field(&mut h, index.as_bytes());
        field(&mut h, &fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?);
    }
    for file in files {
        let name = file.file_name().ok_or_else(|| anyhow!("{} names no file", file.display()))?;
        field(&mut h, name.as_encoded_bytes());
        let mut f = fs::File::open(file).with_context(|| format!("cannot open {}", file.display()))?;
        let len = f.metadata()?.len();
        h.update(len.to_le_bytes());
        let read = std::io::copy(&mut f, &mut h).with_context(|| format!("cannot read {}", file.display()))?;
        if read != len {
            bail!("{} changed while svcbench read it", file.display());
        }
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

fn field(h: &mut Sha256, bytes: &[u8]) {
    h.update((bytes.len() as u64).to_le_bytes());
    h.update(bytes);
}

/// The bulk load, and how long it took in seconds.
fn timed(load: impl FnOnce() -> Result<()>) -> Result<f64> {
    let started = Instant::now();
    load()?;
    Ok(started.elapsed().as_secs_f64())
}

/// Restores the indices from the finished snapshot in `dir` (registered read-only), then checks that each
/// holds exactly the documents of the data files, as after a load.
fn restore(loader: &Loader, dir: &Path, files: &[PathBuf]) -> Result<()> {
    register(loader, RESTORE_REPOSITORY, dir, true)?;
    let restored = restore_indices(loader);
    let _ = unregister(loader, RESTORE_REPOSITORY);
    restored?;
    let mut expected = loader::expected_counts(files)?;
    for index in INDICES {
        expected.entry(index).or_insert(0);
    }
    loader.check_counts(&expected, "restoring")
}

/// A filesystem repository's registration; `readonly` for a finished snapshot, which no node writes again.
/// A snapshot is written at full speed, not OpenSearch's default 40 MB/s (the locations data: 230 MB).
fn repository_body(location: &Path, readonly: bool) -> serde_json::Value {
    let mut settings = serde_json::json!({"location": location.display().to_string()});
    if readonly {
        settings["readonly"] = true.into();
    } else {
        settings["max_snapshot_bytes_per_sec"] = "0b".into();
    }
    serde_json::json!({"type": "fs", "settings": settings})
}

fn register(loader: &Loader, name: &str, location: &Path, readonly: bool) -> Result<()> {
    let body = repository_body(location, readonly).to_string();
    send(loader, "PUT", &format!("_snapshot/{name}"), Some(&body))
        .with_context(|| format!("cannot register {} as a snapshot repository", location.display()))?;
    Ok(())
}

/// Forgets the registration; the folder stays as it is.
fn unregister(loader: &Loader, name: &str) -> Result<()> {
    send(loader, "DELETE", &format!("_snapshot/{name}"), None)?;
    Ok(())
}

fn create_snapshot(loader: &Loader) -> Result<()> {
    let body = serde_json::json!({"indices": INDICES.join(","), "include_global_state": false}).to_string();
    let path = format!("_snapshot/{TAKE_REPOSITORY}/{SNAPSHOT}?wait_for_completion=true");
    let answer = send(loader, "PUT", &path, Some(&body)).context("the snapshot failed")?;
    let state = answer["snapshot"]["state"].as_str().unwrap_or("");
    if state != "SUCCESS" || !all_shards(&answer) {
        bail!("the snapshot ended {state:?}: {}", answer["snapshot"]);
    }
    Ok(())
}

fn restore_indices(loader: &Loader) -> Result<()> {
    let body = serde_json::json!({"indices": INDICES.join(","), "include_global_state": false}).to_string();
    let path = format!("_snapshot/{RESTORE_REPOSITORY}/{SNAPSHOT}/_restore?wait_for_completion=true");
    let answer = send(loader, "POST", &path, Some(&body)).context("the restore failed")?;
    if !all_shards(&answer) {
        bail!("the restore did not bring back every shard: {}", answer["snapshot"]);
    }
    Ok(())
}

/// Whether an answer's `snapshot.shards` says every shard (at least one) succeeded.
fn all_shards(answer: &serde_json::Value) -> bool {
    let shards = &answer["snapshot"]["shards"];
    let (total, ok) = (shards["total"].as_u64(), shards["successful"].as_u64());
    total.is_some_and(|t| t > 0) && total == ok && shards["failed"].as_u64() == Some(0)
}

/// Removes the scenario's indices (whatever a failed restore left), so that they can be loaded.
fn delete_indices(loader: &Loader) -> Result<()> {
    send(loader, "DELETE", &format!("{}?ignore_unavailable=true", INDICES.join(",")), None)?;
    Ok(())
}

fn send(loader: &Loader, method: &str, path: &str, body: Option<&str>) -> Result<serde_json::Value> {
    let agent = crate::http_client::agent(SNAPSHOT_TIMEOUT);
    let mut req = agent.request(method, &format!("{}/{path}", loader.url));
    if body.is_some() {
        req = req.set("Content-Type", "application/json");
    }
    request(req, body, SNAPSHOT_TIMEOUT)
}

/// Gives a written snapshot back to svcbench's own user, folders 0755 and files 0644, so that the node's
/// user (which the services under test run as too) can read it and no longer change it. Each folder is
/// taken before its entries, so nothing is swapped in under the walk; a symlink is no part of a snapshot
/// OpenSearch writes, and refused.
fn seal(dir: &Path) -> Result<()> {
    let (uid, gid) = (nix::unistd::geteuid().as_raw(), nix::unistd::getegid().as_raw());
    let take = |path: &Path, mode: u32| -> Result<()> {
        std::os::unix::fs::lchown(path, Some(uid), Some(gid))
            .and_then(|()| fs::set_permissions(path, fs::Permissions::from_mode(mode)))
            .with_context(|| format!("cannot take back {}", path.display()))
    };
    take(dir, 0o755)?;
    for entry in fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let entry = entry?;
        let (path, kind) = (entry.path(), entry.file_type()?);
        if kind.is_dir() {
            seal(&path)?;
        } else if kind.is_file() {
            take(&path, 0o644)?;
        } else {
            bail!("{} is not a file or folder OpenSearch writes into a snapshot", path.display());
        }
    }
    Ok(())
}

/// Renames a finished partial folder to the key's folder. Losing to another svcbench that renamed its
/// own first is fine; any other failure is an error.
fn publish(partial: &Path, done: &Path) -> Result<Kept> {
    match fs::rename(partial, done) {
        Ok(()) => Ok(Kept::Ours),
        Err(_) if is_complete(done) => Ok(Kept::Theirs),
        Err(e) => Err(e).with_context(|| format!("cannot rename {} to {}", partial.display(), done.display())),
    }
}

fn remove_folder(path: &Path) -> Result<()> {
    match fs::remove_dir_all(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("cannot remove {}", path.display()))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store folder with both index definitions and the four data files of a load, in load order.
    fn inputs(root: &Path) -> (PathBuf, Vec<PathBuf>) {
        let store = root.join("store");
        fs::create_dir_all(&store).unwrap();
        for index in INDICES {
            fs::write(index_definition(&store, index), format!("{{\"mappings\":{{\"{index}\":1}}}}")).unwrap();
        }
        let mut files = Vec::new();
        for dir in ["sample", "dataset"] {
            fs::create_dir_all(root.join(dir)).unwrap();
            for name in ["region.ndjson", "city.ndjson"] {
                let f = root.join(dir).join(name);
                fs::write(&f, format!("{{\"index\":{{}}}}\n{{\"from\":\"{dir}/{name}\"}}\n")).unwrap();
                files.push(f);
            }
        }
        (store, files)
    }

    #[test]
    fn the_key_changes_with_the_data_the_definitions_and_the_version_only() {
        let root = tempfile::tempdir().unwrap();
        let (store, files) = inputs(root.path());
        let base = key("3.6.0", &store, &files).unwrap();
        assert_eq!(base.len(), 64);
        assert!(base.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(key("3.6.0", &store, &files).unwrap(), base, "same inputs, same key");
        // The same files elsewhere (another checkout) are the same data.
        let moved = tempfile::tempdir().unwrap();
        let (moved_store, moved_files) = inputs(moved.path());
        assert_eq!(key("3.6.0", &moved_store, &moved_files).unwrap(), base);

        assert_ne!(key("3.7.0", &store, &files).unwrap(), base, "version");
        let mut swapped = files.clone();
        swapped.swap(0, 1);
        assert_ne!(key("3.6.0", &store, &swapped).unwrap(), base, "load order");
        assert_ne!(key("3.6.0", &store, &files[..2]).unwrap(), base, "a file fewer");

        let data = &files[3];
        let original = fs::read(data).unwrap();
        let mut changed = original.clone();
        *changed.last_mut().unwrap() = b' ';
        fs::write(data, &changed).unwrap();
        assert_ne!(key("3.6.0", &store, &files).unwrap(), base, "one byte of a data file");
        fs::write(data, &original).unwrap();

        let definition = index_definition(&store, "city_v1");
        let original = fs::read(&definition).unwrap();
        fs::write(&definition, b"{\"mappings\":{}}").unwrap();
        assert_ne!(key("3.6.0", &store, &files).unwrap(), base, "an index definition");
        fs::write(&definition, &original).unwrap();
        assert_eq!(key("3.6.0", &store, &files).unwrap(), base, "everything back, the key back");
    }

    #[test]
    fn a_snapshot_is_written_under_a_partial_name_and_read_only_once_complete() {
        let root = tempfile::tempdir().unwrap();
        let folder = root.path().join("snapshots");
        assert_eq!(complete_folder(&folder, "ab12"), folder.join("ab12"));
        assert_eq!(partial_folder(&folder, "ab12", 4321), folder.join("ab12.partial-4321"));
        let read = repository_body(&folder.join("ab12"), true);
        assert_eq!(read["type"], "fs");
        assert_eq!(read["settings"]["readonly"], true);
        assert_eq!(read["settings"]["location"], folder.join("ab12").display().to_string());
        let write = repository_body(&folder.join("ab12.partial-1"), false);
        assert!(write["settings"].get("readonly").is_none());
        assert_eq!(write["settings"]["max_snapshot_bytes_per_sec"], "0b", "unthrottled");

        // Complete means a real folder with svcbench's marker; a link to one is not.
        let (done, link) = (folder.join("ab12"), folder.join("cd34"));
        fs::create_dir_all(&done).unwrap();
        assert!(!is_complete(&done));
        fs::write(done.join(MARKER), "").unwrap();
        assert!(is_complete(&done));
        std::os::unix::fs::symlink(&done, &link).unwrap();
        assert!(!is_complete(&link));
    }

    #[test]
    fn the_first_rename_wins_and_a_later_one_is_told_so() {
        let root = tempfile::tempdir().unwrap();
        let done = root.path().join("key");
        let ours = root.path().join("key.partial-1");
        let theirs = root.path().join("key.partial-2");
        for partial in [&ours, &theirs] {
            fs::create_dir(partial).unwrap();
            fs::write(partial.join(MARKER), "").unwrap();
            fs::write(partial.join("index-0"), partial.display().to_string()).unwrap();
        }
        assert_eq!(publish(&ours, &done).unwrap(), Kept::Ours);
        assert_eq!(publish(&theirs, &done).unwrap(), Kept::Theirs);
        assert_eq!(fs::read_to_string(done.join("index-0")).unwrap(), ours.display().to_string(), "not overwritten");
    }

    #[test]
    fn a_symlinked_or_foreign_snapshots_folder_is_refused() {
        let cache = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), cache.path().join("snapshots")).unwrap();
        let err = Snapshots::prepare(cache.path(), None).err().expect("a symlink is refused").to_string();
        assert!(err.contains("snapshots is a symbolic link") && err.contains("SVCBENCH_CACHE"), "{err}");
        assert!(!err.contains('\n'), "one line: {err}");

        let fresh = tempfile::tempdir().unwrap();
        let made = Snapshots::prepare(fresh.path(), None).unwrap();
        assert_eq!(made.folder(), fresh.path().join("snapshots"));
        assert!(fs::symlink_metadata(made.folder()).unwrap().is_dir());
        Snapshots::prepare(fresh.path(), None).expect("an existing folder of svcbench's own is taken");
        let own = nix::unistd::geteuid().as_raw();
        let err = check_folder(made.folder(), &[own + 1]).unwrap_err().to_string();
        assert!(err.contains(&format!("belongs to uid {own}")), "{err}");
    }

    #[test]
    fn a_sealed_snapshot_is_readable_by_all_and_holds_no_link() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("key.partial-1");
        fs::create_dir_all(dir.join("indices/abc")).unwrap();
        fs::write(dir.join("index-0"), "").unwrap();
        fs::write(dir.join("indices/abc/meta.dat"), "").unwrap();
        fs::set_permissions(dir.join("index-0"), fs::Permissions::from_mode(0o600)).unwrap();
        fs::set_permissions(dir.join("indices"), fs::Permissions::from_mode(0o700)).unwrap();
        seal(&dir).unwrap();
        let mode = |p: &str| fs::symlink_metadata(dir.join(p)).unwrap().mode() & 0o777;
        assert_eq!((mode(""), mode("indices"), mode("indices/abc")), (0o755, 0o755, 0o755));
        assert_eq!((mode("index-0"), mode("indices/abc/meta.dat")), (0o644, 0o644));

        // A link planted by the node's user is refused, and what it points to left as it is.
        let target = root.path().join("private");
        fs::write(&target, "").unwrap();
        fs::set_permissions(&target, fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::symlink(&target, dir.join("indices/abc/planted")).unwrap();
        let err = seal(&dir).unwrap_err().to_string();
        assert!(err.contains("planted"), "{err}");
        assert_eq!(fs::metadata(&target).unwrap().mode() & 0o777, 0o600);
    }
}

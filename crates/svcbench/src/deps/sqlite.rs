//! The `sqlite` dependency: a file, not a server. A fresh database per run from the scenario's own schema
//! file (`schema = "schema.sql"`), optionally pre-filled with `prefill` rows by the scenario's
//! `prefill_row` statement (`?1` is the row's number); its size is recorded after the run. The database
//! lives in a private folder owned by the service's user, who must write it and its journal beside it.
use super::{opt_u64, reject_unknown, DepContext, Dependency};
use crate::manifest::RunAs;
use crate::safe_fs::Folder;
use crate::sandbox::service_user;
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::PathBuf;

pub struct SqliteFile {
    /// The service's folder, handed to its user (who may put anything in it): reached only through `folder`,
    /// opened while it was still root's.
    dir: tempfile::TempDir,
    folder: Folder,
    /// Root's own folder where each database is made (SQLite's journal included) before it is moved in.
    staging: (tempfile::TempDir, Folder),
    /// The user the service runs as, who owns the folder and each database (None: svcbench's own).
    owner: Option<crate::sandbox::service_user::User>,
    schema: String,
    prefill: u64,
    prefill_row: Option<String>,
    name: String,
}

/// A new folder of svcbench's own in the temporary folder (random name, mode 0700), and its handle.
fn new_folder(what: &str) -> Result<(tempfile::TempDir, Folder)> {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix(&format!("svcbench-{what}-"))
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
        .with_context(|| format!("cannot create a {what} folder in {}", std::env::temp_dir().display()))?;
    let folder = Folder::trusted(dir.path())?;
    Ok((dir, folder))
}

/// A database's files: the database, its journals.
const SUFFIXES: [&str; 4] = ["", "-journal", "-wal", "-shm"];

impl SqliteFile {
    pub fn new(options: &toml::Table, ctx: &DepContext) -> Result<SqliteFile> {
        reject_unknown("sqlite", options, &["kind", "schema", "prefill", "prefill_row"])?;
        let text = |k: &str| options.get(k).and_then(|v| v.as_str()).map(String::from);
        let schema_file = text("schema").context(
            "dependency `sqlite`: give its schema file, e.g. schema = \"schema.sql\" in the scenario folder",
        )?;
        let schema_path = ctx.scenario_dir.join(&schema_file);
        let schema = std::fs::read_to_string(&schema_path)
            .with_context(|| format!("dependency `sqlite`: cannot read its schema {}", schema_path.display()))?;
        let prefill = opt_u64(options, "prefill", 0)?;
        let prefill_row = text("prefill_row");
        if prefill > 0 && prefill_row.is_none() {
            bail!(
                "dependency `sqlite`: prefill = {prefill} needs prefill_row, the INSERT of one row (?1 is its number)"
            );
        }
        // A service running as root can write a folder owned by the unprivileged user as well.
        let owner = service_user::for_service(RunAs::Svcbench, ctx.account)?;
        let (dir, folder) = new_folder("sqlite")?;
        if let Some(u) = &owner {
            folder.hand_over(None, u.uid, u.gid)?;
        }
        let staging = new_folder("sqlite-staging")?;
        let mut f =
            SqliteFile { dir, folder, staging, owner, schema, prefill, prefill_row, name: "initial.db".to_string() };
        f.create("initial")?;
        Ok(f)
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join(&self.name)
    }

    /// A fresh database `<label>.db`, made in root's staging folder and moved into the service's: the
    /// service's user could have planted a link under any name there, which root's SQLite would follow.
    fn create(&mut self, label: &str) -> Result<()> {
        self.name = format!("{label}.db");
        let staging = &self.staging.1;
        for suffix in SUFFIXES {
            self.folder.remove(&format!("{}{suffix}", self.name))?;
            staging.remove(&format!("{}{suffix}", self.name))?;
        }
        let made = staging.path().join(&self.name);
        let mut conn =
            rusqlite::Connection::open(&made).with_context(|| format!("cannot create database {}", made.display()))?;
        conn.execute_batch(&self.schema).context("dependency `sqlite`: the scenario's schema failed")?;
        if let Some(row) = &self.prefill_row {
            let tx = conn.transaction()?;
            {
                let mut ins = tx.prepare(row).context("dependency `sqlite`: prefill_row is not a valid statement")?;
                for i in 1..=self.prefill {
                    ins.execute([i as i64])?;
                }
            }
            tx.commit()?;
        }
        drop(conn);
        if let Some(u) = &self.owner {
            staging.hand_over(Some(&self.name), u.uid, u.gid)?;
        }
        staging.move_into(&self.name, &self.folder)
    }

    fn size_bytes(&self) -> u64 {
        ["", "-wal"].iter().filter_map(|s| self.folder.file_size(&format!("{}{s}", self.name))).sum()
    }
}

impl Dependency for SqliteFile {
    fn placeholders(&self) -> BTreeMap<String, String> {
        // The folder too: a container service gets it mounted at the same path (service/container_start.rs).
        BTreeMap::from([
            ("dep.sqlite.path".to_string(), self.path().display().to_string()),
            ("dep.sqlite.folder".to_string(), self.dir.path().display().to_string()),
        ])
    }

    fn before_run(&mut self, run_label: &str) -> Result<()> {
        self.create(run_label)
    }

    fn after_run(&mut self) -> Vec<(String, f64)> {
        vec![("db_bytes".to_string(), self.size_bytes() as f64)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(dir: &std::path::Path, options: &str) -> Result<SqliteFile> {
        let given = crate::deps::GivenDeps::default();
        let ctx = DepContext {
            work_dir: &dir.join("work"),
            scenario_dir: dir,
            cpuset: None,
            cgroup: crate::sandbox::CgroupChoice::None,
            session_tag: "t".into(),
            for_load: true,
            host: crate::network::Host::local(),
            given: &given,
            account: crate::sandbox::service_user::Account::Main,
        };
        SqliteFile::new(&toml::from_str(options).unwrap(), &ctx)
    }

    #[test]
    fn the_scenario_schema_and_prefill_make_each_runs_database() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("s.sql"), "CREATE TABLE items (id INTEGER PRIMARY KEY, label TEXT);").unwrap();
        let mut f =
            open(d.path(), "kind = 'sqlite'\nschema = 's.sql'\nprefill = 3\nprefill_row = \"INSERT INTO items (label) VALUES ('item-' || ?1)\"").unwrap();
        f.before_run("run-1").unwrap();
        let c = rusqlite::Connection::open(f.path()).unwrap();
        let labels: Vec<String> = c
            .prepare("SELECT label FROM items ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(labels, ["item-1", "item-2", "item-3"]);
        for (options, says) in [
            ("kind = 'sqlite'", "give its schema file"),
            ("kind = 'sqlite'\nschema = 'none.sql'", "cannot read its schema"),
            ("kind = 'sqlite'\nschema = 's.sql'\nprefill = 2", "needs prefill_row"),
        ] {
            let e = format!("{:#}", open(d.path(), options).err().unwrap());
            assert!(e.contains(says), "{options}: {e}");
        }
    }

    #[test]
    fn links_planted_in_the_service_s_folder_are_replaced_not_written_through() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("s.sql"), "CREATE TABLE items (id INTEGER PRIMARY KEY);").unwrap();
        let mut f = open(d.path(), "kind = 'sqlite'\nschema = 's.sql'").unwrap();
        let target = d.path().join("root-only");
        std::fs::write(&target, "keep").unwrap();
        // What the service's user may do in its own folder before the next run's database is made.
        for name in ["run-2.db", "run-2.db-journal", "run-2.db-wal"] {
            std::os::unix::fs::symlink(&target, f.dir.path().join(name)).unwrap();
        }
        f.before_run("run-2").unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        let meta = std::fs::symlink_metadata(f.path()).unwrap();
        assert!(meta.file_type().is_file(), "the database is a file of its own");
        if let Some(u) = &f.owner {
            use std::os::unix::fs::MetadataExt;
            assert_eq!(meta.uid(), u.uid, "handed to the service's user");
        }
        let c = rusqlite::Connection::open(f.path()).unwrap();
        assert_eq!(c.query_row("SELECT count(*) FROM items", [], |r| r.get::<_, i64>(0)).unwrap(), 0);
        std::os::unix::fs::symlink(&target, f.dir.path().join("run-2.db-wal")).unwrap();
        assert_eq!(f.size_bytes(), meta.len(), "a planted link is not measured");
    }
}

//! The `sqlite` dependency: a file, not a server. A fresh database per run (schema of the users scenario,
//! WAL journal), optionally pre-filled with users `user-1` … `user-N`; its size is recorded after the run.
use super::{opt_u64, reject_unknown, DepContext, Dependency};
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::path::PathBuf;

pub struct SqliteFile {
    dir: PathBuf,
    prefill: u64,
    path: PathBuf,
}

const SCHEMA: &str = "PRAGMA journal_mode = WAL;
CREATE TABLE IF NOT EXISTS users (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT, UNIQUE(name));";

impl SqliteFile {
    pub fn new(options: &toml::Table, ctx: &DepContext) -> Result<SqliteFile> {
        reject_unknown("sqlite", options, &["kind", "prefill"])?;
        let dir = ctx.work_dir.join("sqlite");
        std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let mut f = SqliteFile { path: dir.join("initial.db"), dir, prefill: opt_u64(options, "prefill", 0)? };
        f.create("initial")?;
        Ok(f)
    }

    fn create(&mut self, label: &str) -> Result<()> {
        self.path = self.dir.join(format!("{label}.db"));
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", self.path.display()));
        }
        let mut conn = rusqlite::Connection::open(&self.path)
            .with_context(|| format!("cannot create database {}", self.path.display()))?;
        conn.execute_batch(SCHEMA)?;
        let tx = conn.transaction()?;
        {
            let mut ins = tx.prepare("INSERT INTO users (name) VALUES (?1)")?;
            for i in 1..=self.prefill {
                ins.execute([format!("user-{i}")])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    fn size_bytes(&self) -> u64 {
        ["", "-wal"]
            .iter()
            .filter_map(|s| std::fs::metadata(format!("{}{s}", self.path.display())).ok())
            .map(|m| m.len())
            .sum()
    }
}

impl Dependency for SqliteFile {
    fn placeholders(&self) -> BTreeMap<String, String> {
        BTreeMap::from([("dep.sqlite.path".to_string(), self.path.display().to_string())])
    }

    fn before_run(&mut self, run_label: &str) -> Result<()> {
        self.create(run_label)
    }

    fn after_run(&mut self) -> Vec<(String, f64)> {
        vec![("db_bytes".to_string(), self.size_bytes() as f64)]
    }
}

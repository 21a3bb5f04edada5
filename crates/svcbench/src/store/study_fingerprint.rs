//! What a study's sessions ran, as the store keeps it for `svcbench study --resume`: the study file, the
//! profile, a hash of the resolved step plan and each service's code (docs/study.md, Resuming).
use super::Reader;
use anyhow::Result;
use rusqlite::OptionalExtension;
use std::collections::BTreeMap;

/// A study as one session ran it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StudyFingerprint {
    /// The study file's path inside its repository, else its canonical path (study::resume::study_file_id).
    pub study_file: String,
    /// The profile's own name (`name` in its file), as session.profile holds it.
    pub profile: String,
    /// Hash of the resolved step plan (study::resume::plan_hash).
    pub plan: String,
    /// Service name → hash of its build inputs (service::code_fingerprint).
    pub services: BTreeMap<String, String>,
}

/// The latest generation of a study in a store: its stored name (`NAME`, or `NAME#N` after `--new-cell`)
/// and, when its sessions recorded one, the fingerprint of the latest of them (`None`: sessions of an
/// svcbench that kept none).
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedStudy {
    pub name: String,
    pub fingerprint: Option<StudyFingerprint>,
}

impl Reader {
    /// The names every study's sessions in this store are stored under (`NAME`, `NAME#N`, `NAME:quick`, …),
    /// the latest first.
    pub fn studies_held(&self) -> Result<Vec<String>> {
        let mut st = self
            .conn
            .prepare("SELECT study FROM session WHERE study IS NOT NULL GROUP BY study ORDER BY max(id) DESC")?;
        let names = st.query_map([], |r| r.get(0))?.collect::<rusqlite::Result<Vec<String>>>()?;
        Ok(names)
    }

    /// The latest generation of study `base` (its sessions are stored as `base` or `base#N`).
    pub fn latest_study(&self, base: &str) -> Result<Option<RecordedStudy>> {
        let name: Option<String> = self
            .conn
            .query_row(
                "SELECT study FROM session WHERE study = ?1 OR substr(study, 1, length(?1) + 1) = ?1 || '#'
                 ORDER BY id DESC LIMIT 1",
                [base],
                |r| r.get(0),
            )
            .optional()?;
        let Some(name) = name else { return Ok(None) };
        let fingerprint = self
            .conn
            .query_row(
                "SELECT study_file, profile, plan_hash, service_code FROM session
                 WHERE study = ?1 AND plan_hash IS NOT NULL ORDER BY id DESC LIMIT 1",
                [&name],
                |r| Ok((r.get::<_, Option<String>>(0)?, r.get(1)?, r.get(2)?, r.get::<_, Option<String>>(3)?)),
            )
            .optional()?;
        let fingerprint = fingerprint.map(|(file, profile, plan, code)| StudyFingerprint {
            study_file: file.unwrap_or_default(),
            profile,
            plan,
            services: code.and_then(|c| serde_json::from_str(&c).ok()).unwrap_or_default(),
        });
        Ok(Some(RecordedStudy { name, fingerprint }))
    }
}

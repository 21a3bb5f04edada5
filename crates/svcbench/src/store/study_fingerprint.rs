//! What a study's sessions ran, as the store keeps it for `svcbench study --resume`: the study file, the
//! profile, a hash of the resolved step plan and each service's code, the scenario's parts, svcbench's build
//! and the container services' images (docs/study.md, Resuming).
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
    /// The scenario's parts (checks, mixes, dependencies, warm-up, data files) → their hashes
    /// (study::what_ran). Empty: recorded by an svcbench that kept none.
    pub scenario: BTreeMap<String, String>,
    /// Hash of svcbench's own program. Empty: not recorded.
    pub svcbench: String,
    /// Container service → its image's ID. A service missing: not recorded (or no container).
    pub images: BTreeMap<String, String>,
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
                "SELECT study_file, profile, plan_hash, service_code, scenario_parts, svcbench_build, image_ids
                 FROM session WHERE study = ?1 AND plan_hash IS NOT NULL ORDER BY id DESC LIMIT 1",
                [&name],
                |r| {
                    let text = |i| r.get::<_, Option<String>>(i);
                    Ok((text(0)?, r.get(1)?, r.get(2)?, [text(3)?, text(4)?, text(6)?], text(5)?))
                },
            )
            .optional()?;
        // A column an older svcbench did not fill reads as empty: nothing to compare with.
        let map = |j: &Option<String>| j.as_deref().and_then(|c| serde_json::from_str(c).ok()).unwrap_or_default();
        let fingerprint = fingerprint.map(|(file, profile, plan, [code, scenario, images], build)| StudyFingerprint {
            study_file: file.unwrap_or_default(),
            profile,
            plan,
            services: map(&code),
            scenario: map(&scenario),
            svcbench: build.unwrap_or_default(),
            images: map(&images),
        });
        Ok(Some(RecordedStudy { name, fingerprint }))
    }
}

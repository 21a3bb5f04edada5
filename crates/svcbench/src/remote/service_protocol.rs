//! What this side asks of the service's machine and what it answers: one JSON object per line each way.
//! Each reply is `{"Ok": value}` or `{"Err": "one line"}`.
use crate::sandbox::{CgroupChoice, Limits};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// Build the service (`services/x@variant`, relative to the checkout there); answers [`Built`].
    Build {
        service: String,
        skip: bool,
    },
    /// Start it in a sandbox with these placeholders (`{port}` and `{host}` are filled there); answers
    /// [`Started`].
    Start {
        service: String,
        sandbox_name: String,
        limits: Limits,
        cgroup: CgroupChoice,
        placeholders: BTreeMap<String, String>,
        env_overrides: BTreeMap<String, String>,
        log_name: String,
    },
    /// Figures of a started sandbox (`id` from [`Started`]), with its open files when asked (one round
    /// trip for both).
    Sample {
        id: u64,
        #[serde(default)]
        open_files: bool,
    },
    RunqueueWait {
        id: u64,
    },
    /// Connection attempts dropped so far at its full accept queues, read there.
    ListenDrops {
        id: u64,
    },
    ResetPeak {
        id: u64,
    },
    KernelPeak {
        id: u64,
    },
    LimitsHeld {
        id: u64,
        asked: Limits,
    },
    TryExit {
        id: u64,
    },
    Stop {
        id: u64,
        grace_ms: u64,
    },
    LogTail {
        id: u64,
        lines: usize,
    },
    /// Kill what is left and remove the sandbox.
    Remove {
        id: u64,
    },
}

#[derive(Debug, Serialize, Deserialize)]
pub struct BuiltThere {
    pub seconds: f64,
    pub artifact_bytes: Option<u64>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct StartedThere {
    pub id: u64,
    pub port: u16,
    pub cgroup_version: String,
    pub warnings: Vec<String>,
    /// On every how many samples its open files may be read there (that machine's kernel may have to
    /// list them); an agent that does not say is read once a second.
    #[serde(default = "once_a_second")]
    pub open_files_every: u64,
}

fn once_a_second() -> u64 {
    crate::sandbox::sampler::SAMPLES_PER_SECOND
}

pub type Reply = Result<serde_json::Value, String>;

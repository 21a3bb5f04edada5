//! How a worker waits for the open model's next due send.

use anyhow::{anyhow, Result};
use serde::{Deserialize, Serialize};

/// How the open model waits for a request's due time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Pacing {
    /// Sleep on a microsecond timer (timerfd), polling only for sends due within 50 µs.
    #[default]
    Timer,
    /// Never sleep between sends: poll the sockets until the next one is due. Costs the worker
    /// a whole CPU, but the CPU never idles, so a virtual machine's CPU is not handed to
    /// other guests between sends and woken late (bench/open-model-lag.sh compares the two).
    Spin,
}

impl Pacing {
    const ALL: [Pacing; 2] = [Pacing::Timer, Pacing::Spin];

    /// The name on the command line and in profiles.
    pub fn name(self) -> &'static str {
        match self {
            Pacing::Timer => "timer",
            Pacing::Spin => "spin",
        }
    }
}

impl std::str::FromStr for Pacing {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> Result<Pacing> {
        Pacing::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| anyhow!("pacing {s:?} is unknown: use timer or spin"))
    }
}

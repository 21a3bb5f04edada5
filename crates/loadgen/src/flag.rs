//! What a validity flag is: its code, its sentence, and the thresholds that raise the generator's
//! own flags. The rules that judge a run against them are in `validity.rs` and, for what depends on
//! the load model, in each model's module; both use these, so this module imports neither.

use serde::{Deserialize, Serialize};

/// A worker busier than this share of its wall time is saturated.
pub const SATURATED_CPU_SHARE: f64 = 0.9;
/// A worker waiting for a CPU more than this share of its wall time is contended.
pub const CONTENDED_WAIT_SHARE: f64 = 0.10;
/// A worker inside connect() more than this share of its wall time was opening connections, not
/// loading the service: the kernel's local-port search, not the service, set its pace. Healthy
/// `Connection: close` load on loopback spends 17–28 % of it there; a generator whose closed ports
/// are not reused, 65–70 % over 6 s from an empty port range and 90 % once most of it is taken
/// (tests/ports.rs, one connection, 3 tries each; docs/network.md).
pub const CONNECT_BOUND_SHARE: f64 = 0.40;
/// The open model holds its rate when it sends at least this share of the intended rate.
pub const RATE_HELD_SHARE: f64 = 0.95;
/// Largest acceptable 99th percentile of the open model's send lag, in ms.
pub const SCHEDULE_LAG_P99_MS: f64 = 1.0;

/// Every validity code svcbench stores, the generator's and svcbench's own, each with the reader's words and
/// what it tells a reader. Stored as its snake_case name; a code this build does not know reads as `Unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlagCode {
    GeneratorSaturated,
    GeneratorContended,
    GeneratorConnectBound,
    ClientResourceErrors,
    RateNotHeld,
    ScheduleLag,
    NotSustained,
    StarvedConnections,
    DependencySaturated,
    MachineSpeed,
    OomKilled,
    Crashed,
    Unlimited,
    Incomplete,
    LegacyClientSaturated,
    OpenFileLimit,
    StoreChanged,
    #[serde(other)]
    Unknown,
}

impl FlagCode {
    pub const ALL: [FlagCode; 17] = [
        FlagCode::GeneratorSaturated,
        FlagCode::GeneratorContended,
        FlagCode::GeneratorConnectBound,
        FlagCode::ClientResourceErrors,
        FlagCode::RateNotHeld,
        FlagCode::ScheduleLag,
        FlagCode::NotSustained,
        FlagCode::StarvedConnections,
        FlagCode::DependencySaturated,
        FlagCode::MachineSpeed,
        FlagCode::OomKilled,
        FlagCode::Crashed,
        FlagCode::Unlimited,
        FlagCode::Incomplete,
        FlagCode::LegacyClientSaturated,
        FlagCode::OpenFileLimit,
        FlagCode::StoreChanged,
    ];

    /// The code as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            FlagCode::GeneratorSaturated => "generator_saturated",
            FlagCode::GeneratorContended => "generator_contended",
            FlagCode::GeneratorConnectBound => "generator_connect_bound",
            FlagCode::ClientResourceErrors => "client_resource_errors",
            FlagCode::RateNotHeld => "rate_not_held",
            FlagCode::ScheduleLag => "schedule_lag",
            FlagCode::NotSustained => "not_sustained",
            FlagCode::StarvedConnections => "starved_connections",
            FlagCode::DependencySaturated => "dependency_saturated",
            FlagCode::MachineSpeed => "machine_speed",
            FlagCode::OomKilled => "oom_killed",
            FlagCode::Crashed => "crashed",
            FlagCode::Unlimited => "unlimited",
            FlagCode::Incomplete => "incomplete",
            FlagCode::LegacyClientSaturated => "legacy_client_saturated",
            FlagCode::OpenFileLimit => "open_file_limit",
            FlagCode::StoreChanged => "store_changed",
            FlagCode::Unknown => "unknown",
        }
    }

    /// The code of a stored name (`Unknown` for a name this build does not know).
    pub fn from_code(name: &str) -> FlagCode {
        FlagCode::ALL.into_iter().find(|c| c.as_str() == name).unwrap_or(FlagCode::Unknown)
    }

    /// The reader's words, as the report prints them.
    pub fn label(self) -> &'static str {
        match self {
            FlagCode::GeneratorSaturated => "load generator saturated",
            FlagCode::GeneratorContended => "load generator lost CPU to other processes",
            FlagCode::GeneratorConnectBound => "load generator slowed inside connect()",
            FlagCode::ClientResourceErrors => "load generator ran out of sockets or files",
            FlagCode::RateNotHeld => "open-model rate not held",
            FlagCode::ScheduleLag => "open-model schedule lag above 1 ms",
            FlagCode::NotSustained => "not sustained (growing backlog)",
            FlagCode::StarvedConnections => "starved connections",
            FlagCode::DependencySaturated => "dependency saturated",
            FlagCode::MachineSpeed => "machine speed drifted",
            FlagCode::OomKilled => "service OOM-killed",
            FlagCode::Crashed => "service crashed",
            FlagCode::Unlimited => "limits not applied as asked",
            FlagCode::Incomplete => "run not completed",
            FlagCode::LegacyClientSaturated => "load generator saturated (older rule)",
            FlagCode::OpenFileLimit => "service at its open-file limit",
            FlagCode::StoreChanged => "store changed during the run",
            FlagCode::Unknown => "flagged by a newer svcbench",
        }
    }

    /// Whether the flag is the service's own failure rather than the measurement's.
    pub fn is_service_failure(self) -> bool {
        matches!(self, FlagCode::NotSustained | FlagCode::StarvedConnections | FlagCode::OomKilled | FlagCode::Crashed)
    }

    /// The open model's own flags that a failing service raises too: when it holds every connection, sends
    /// wait for one (late) or are left unsent. Beside one of the service's failures they are its consequence.
    pub fn is_backpressure(self) -> bool {
        matches!(self, FlagCode::RateNotHeld | FlagCode::ScheduleLag)
    }

    /// Whether the flag is the measurement's own doing (the generator or this machine), which another run
    /// may not repeat; limits not applied, the sandbox's open-file limit and the service's failures are not.
    pub fn is_measurement_failure(self) -> bool {
        matches!(
            self,
            FlagCode::GeneratorSaturated
                | FlagCode::GeneratorContended
                | FlagCode::GeneratorConnectBound
                | FlagCode::ClientResourceErrors
                | FlagCode::RateNotHeld
                | FlagCode::ScheduleLag
                | FlagCode::MachineSpeed
                | FlagCode::LegacyClientSaturated
        )
    }
}

impl std::fmt::Display for FlagCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One reason to doubt a run's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flag {
    pub code: FlagCode,
    /// One sentence with the numbers, for users.
    pub detail: String,
}

impl Flag {
    pub fn new(code: FlagCode, detail: impl Into<String>) -> Flag {
        Flag { code, detail: detail.into() }
    }
}

//! How a blocking hyper worker reaches the async store client: the three strategies seed 001 measured
//! for Rocket 0.4 (STRATEGY=global-rt | per-worker-rt | per-req-rt).

use std::{cell::OnceCell, fmt, str::FromStr};

use opensearch::http::Url;
use tokio::runtime::{Builder, Runtime};

use crate::{
    api::{self, Call},
    error::ApiError,
    store::{self, RegionCache, Store},
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// One multi-threaded runtime beside the workers; a worker waits in `Handle::block_on` while the
    /// runtime's threads drive the store connections.
    Global,
    /// A single-threaded runtime and store client per worker (thread-local): the store call runs on
    /// the worker thread itself. Seed 001's winner, and how Rocket 0.4 was benchmarked.
    PerWorker,
    /// A fresh runtime and store client per request, so a fresh store connection too: the cost of the
    /// naive way, measured.
    PerRequest,
}

impl FromStr for Strategy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "global-rt" => Ok(Strategy::Global),
            "per-worker-rt" => Ok(Strategy::PerWorker),
            "per-req-rt" => Ok(Strategy::PerRequest),
            _ => Err(format!("STRATEGY must be global-rt, per-worker-rt or per-req-rt, not {s:?}")),
        }
    }
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Strategy::Global => "global-rt",
            Strategy::PerWorker => "per-worker-rt",
            Strategy::PerRequest => "per-req-rt",
        })
    }
}

/// A runtime with the store client whose connections live in it. A pooled connection is driven by a
/// task of the runtime that opened it, so a client must never outlive or change its runtime.
struct Local {
    // Dropped first: the client's connections end before their runtime does.
    store: Store,
    runtime: Runtime,
}

impl Local {
    fn new(url: &Url, regions: &RegionCache) -> Result<Self, ApiError> {
        let runtime = Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ApiError::Internal(format!("cannot start a runtime: {e}")))?;
        Ok(Local { store: Store::new(new_client(url)?, regions.clone()), runtime })
    }
}

thread_local! {
    /// The per-worker-rt runtime of this hyper worker, made at its first request.
    static WORKER: OnceCell<Local> = const { OnceCell::new() };
}

/// Runs store calls for the workers, the way the strategy says.
pub struct Executor {
    strategy: Strategy,
    url: Url,
    regions: RegionCache,
    /// global-rt only.
    global: Option<Global>,
}

struct Global {
    store: Store,
    runtime: Runtime,
}

impl Executor {
    pub fn new(strategy: Strategy, url: Url, regions: RegionCache) -> Result<Self, String> {
        let global = match strategy {
            Strategy::Global => {
                // Tokio's default: one thread per CPU the process may use.
                let runtime = Builder::new_multi_thread()
                    .thread_name("global-rt")
                    .enable_all()
                    .build()
                    .map_err(|e| format!("cannot start the global runtime: {e}"))?;
                let client = new_client(&url).map_err(|e| e.to_string())?;
                Some(Global { store: Store::new(client, regions.clone()), runtime })
            }
            Strategy::PerWorker | Strategy::PerRequest => None,
        };
        Ok(Executor { strategy, url, regions, global })
    }

    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// Answers `call` from the calling (blocking) worker thread.
    pub fn run(&self, call: Call) -> Result<String, ApiError> {
        match (&self.global, self.strategy) {
            (Some(global), _) => global.runtime.handle().block_on(api::answer(&global.store, call)),
            (None, Strategy::PerWorker) => WORKER.with(|cell| {
                if cell.get().is_none() {
                    let _ = cell.set(Local::new(&self.url, &self.regions)?);
                }
                let local = cell.get().expect("set just above");
                local.runtime.block_on(api::answer(&local.store, call))
            }),
            (None, _) => {
                let local = Local::new(&self.url, &self.regions)?;
                local.runtime.block_on(api::answer(&local.store, call))
            }
        }
    }
}

fn new_client(url: &Url) -> Result<opensearch::OpenSearch, ApiError> {
    store::client(url).map_err(|e| ApiError::Internal(format!("cannot build a store client: {e}")))
}

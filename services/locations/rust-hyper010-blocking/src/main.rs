//! Locations service on hyper 0.10's blocking server and fixed worker pool (the HTTP layer of Rocket 0.4),
//! calling an async OpenSearch/Elasticsearch client through a Tokio runtime chosen by STRATEGY.

mod api;
mod error;
mod http;
mod model;
mod store;
mod strategy;

use std::{
    env,
    net::{IpAddr, Ipv4Addr},
    process::ExitCode,
    sync::Arc,
    time::Duration,
};

use log::{error, info, warn};
use opensearch::http::Url;
use tokio::{
    runtime::Builder,
    signal::unix::{signal, SignalKind},
    time::timeout,
};

use crate::{http::App, store::RegionCache, strategy::Executor};

/// Rocket 0.4's defaults for keep-alive, read and write timeouts (its `keep_alive`, `read_timeout`,
/// `write_timeout` settings), which it handed to this same hyper server.
const KEEP_ALIVE: Duration = Duration::from_secs(5);
const READ_TIMEOUT: Duration = Duration::from_secs(5);
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// In-flight requests get this long after SIGTERM/SIGINT.
const GRACE: Duration = Duration::from_secs(10);

fn main() -> ExitCode {
    // hyper 0.10 logs connection-level events (a client gone, a malformed request) at info: keep it to
    // warnings so the log holds one line per request; RUST_LOG overrides.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info,hyper=warn")).init();
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            error!("{message}");
            ExitCode::FAILURE
        }
    }
}

fn env_or<T>(name: &str, default: T, parse: impl FnOnce(&str) -> Option<T>) -> Result<T, String> {
    match env::var(name) {
        Ok(value) => parse(&value).ok_or_else(|| format!("{name} is invalid: {value:?}")),
        Err(_) => Ok(default),
    }
}

fn run() -> Result<(), String> {
    let port: u16 = env_or("PORT", 8080, |v| v.parse().ok())?;
    // svcbench's {host}; loopback when unset, never every interface by default.
    let host: IpAddr = env_or("HOST", Ipv4Addr::LOCALHOST.into(), |v| v.parse().ok())?;
    let strategy = match env::var("STRATEGY") {
        Ok(value) => value.parse()?,
        Err(_) => strategy::Strategy::PerWorker,
    };
    // Seed 001: 16 workers were the most efficient on 1.5 CPUs.
    let workers: usize = env_or("WORKERS", 16, |v| v.parse().ok().filter(|&n| n > 0))?;
    let keep_alive = env_or("KEEPALIVE", false, |v| match v {
        "on" => Some(true),
        "off" => Some(false),
        _ => None,
    })?;
    let url = env::var("ELASTIC_URL").map_err(|_| "ELASTIC_URL is not set".to_owned())?;
    let url = Url::parse(&url).map_err(|e| format!("ELASTIC_URL {url:?} is invalid: {e}"))?;

    // The main thread's own runtime: the start-up ping, then waiting for a stop signal.
    let main_rt =
        Builder::new_current_thread().enable_all().build().map_err(|e| format!("cannot start a runtime: {e}"))?;
    let (mut term, mut int) = {
        let _in_runtime = main_rt.enter();
        let listen = |kind| signal(kind).map_err(|e| format!("cannot listen for signals: {e}"));
        (listen(SignalKind::terminate())?, listen(SignalKind::interrupt())?)
    };

    // Never serve without a store: one round trip before binding.
    let client = store::client(&url).map_err(|e| format!("cannot build store client: {e}"))?;
    main_rt
        .block_on(async { timeout(Duration::from_secs(5), store::ping(&client)).await })
        .map_err(|_| format!("store at {url} did not answer within 5 s"))?
        .map_err(|e| format!("store at {url} is unreachable: {e}"))?;
    drop(client);

    let regions: RegionCache = Arc::default();
    let executor = Executor::new(strategy, url, regions)?;
    let strategy = executor.strategy();
    let app = App::new(executor, api::openapi_json());

    let mut server =
        hyper::Server::http((host, port)).map_err(|e| format!("cannot listen on {host}:{port}: {e}"))?;
    // Off: hyper answers `Connection: close` and frees the worker after each request.
    server.keep_alive(keep_alive.then_some(KEEP_ALIVE));
    server.set_read_timeout(Some(READ_TIMEOUT));
    server.set_write_timeout(Some(WRITE_TIMEOUT));
    let listening = server.handle_threads(app, workers).map_err(|e| format!("cannot start the server: {e}"))?;
    let keep_alive = if keep_alive { format!("on ({} s)", KEEP_ALIVE.as_secs()) } else { "off".to_owned() };
    info!(
        "locations-hyper010-blocking listening on {host}:{port}: strategy {strategy}, {workers} workers, keep-alive {keep_alive}"
    );

    main_rt.block_on(async {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    });
    if http::drain(GRACE) {
        info!("locations-hyper010-blocking stopped");
    } else {
        warn!("locations-hyper010-blocking stopped with requests still in flight after {} s", GRACE.as_secs());
    }
    // Dropping `Listening` would join hyper's accept thread, which never ends: leave it to the exit.
    std::mem::forget(listening);
    Ok(())
}

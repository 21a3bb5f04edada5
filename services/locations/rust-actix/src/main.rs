//! Locations service on Actix Web: cities from an OpenSearch/Elasticsearch store.

mod client;
mod api_error;
mod error;
mod handlers;
mod model;
mod store;

use std::{env, process::ExitCode, sync::Arc, time::Duration};

use actix_web::{
    middleware::{ErrorHandlers, Logger},
    rt::time::timeout,
    web, App, HttpServer,
};
use log::{error, info};

use crate::{
    client::Url,
    store::{RegionCache, Store},
};

#[actix_web::main]
async fn main() -> ExitCode {
    // Quiet actix-server's own start/stop chatter; RUST_LOG overrides.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info,actix_server=warn")).init();
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            error!("{message}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), String> {
    let port: u16 = match env::var("PORT") {
        Ok(p) => p.parse().map_err(|_| format!("PORT is not a port number: {p:?}"))?,
        Err(_) => 8080,
    };
    // svcbench's {host}; loopback when unset, never every interface by default.
    let host = env::var("HOST").unwrap_or_else(|_| "127.0.0.1".to_owned());
    let url = env::var("ELASTIC_URL").map_err(|_| "ELASTIC_URL is not set".to_owned())?;
    let url = Url::parse(&url).map_err(|e| format!("ELASTIC_URL {url:?} is invalid: {e}"))?;

    // Never serve without a store: one round trip before binding.
    let client = client::new(&url).map_err(|e| format!("cannot build store client: {e}"))?;
    timeout(Duration::from_secs(5), client::ping(&client))
        .await
        .map_err(|_| format!("store at {url} did not answer within 5 s"))?
        .map_err(|e| format!("store at {url} is unreachable: {e}"))?;
    drop(client);

    let regions: RegionCache = Arc::default();
    let openapi = web::Data::new(handlers::openapi_json());
    let server = HttpServer::new(move || {
        // One client (and connection pool) per worker: each worker runs its own single-threaded
        // runtime, so connections stay on the thread that uses them.
        let client = client::new(&url).expect("store client was built once already");
        App::new()
            .app_data(web::Data::new(Store::new(client, Arc::clone(&regions))))
            .app_data(openapi.clone())
            .app_data(web::QueryConfig::default().error_handler(api_error::query_error))
            .wrap(ErrorHandlers::new().default_handler(error::ensure_json))
            .wrap(Logger::new("%r %s %Dms"))
            .service(handlers::get_city)
            .service(handlers::featured)
            .service(handlers::search)
            .service(handlers::closest)
            .service(handlers::associated_featured)
            .service(handlers::api_docs)
            .service(handlers::index)
            .default_service(web::to(api_error::no_route))
    })
    .bind((host.as_str(), port))
    .map_err(|e| format!("cannot listen on {host}:{port}: {e}"))?
    // SIGTERM/SIGINT: stop accepting, give in-flight requests up to 10 s.
    .shutdown_timeout(10)
    .run();

    info!("locations-actix listening on {host}:{port}");
    server.await.map_err(|e| format!("server failed: {e}"))?;
    info!("locations-actix stopped");
    Ok(())
}

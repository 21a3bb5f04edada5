//! Locations service on Rocket: cities from an OpenSearch/Elasticsearch store.

mod api;
mod error;
mod store;

use std::{env, net::{IpAddr, Ipv4Addr}, process::ExitCode, time::{Duration, Instant}};

use opensearch::http::Url;
use rocket::{
    catchers,
    config::{LogLevel, Shutdown},
    fairing::{AdHoc, Fairing, Info, Kind},
    routes,
    tokio::time::timeout,
    Config, Data, Request, Response,
};

use crate::store::Store;

/// Logs one line per request: method, path (with query), status, time taken.
struct RequestLog;

/// When the request arrived; kept in the request-local cache.
struct Arrival(Instant);

#[rocket::async_trait]
impl Fairing for RequestLog {
    fn info(&self) -> Info {
        Info { name: "request log", kind: Kind::Request | Kind::Response }
    }

    async fn on_request(&self, req: &mut Request<'_>, _: &mut Data<'_>) {
        req.local_cache(|| Arrival(Instant::now()));
    }

    async fn on_response<'r>(&self, req: &'r Request<'_>, res: &mut Response<'r>) {
        let took = req.local_cache(|| Arrival(Instant::now())).0.elapsed();
        println!(
            "{} {} {} {:.3}ms",
            req.method(),
            req.uri(),
            res.status().code,
            took.as_secs_f64() * 1000.0
        );
    }
}

#[rocket::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("locations-rocket: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<(), String> {
    let port: u16 = match env::var("PORT") {
        Ok(p) => p.parse().map_err(|_| format!("PORT is not a port number: {p:?}"))?,
        Err(_) => 8000,
    };
    // svcbench's {host}; loopback when unset, never every interface by default.
    let address: IpAddr = match env::var("HOST") {
        Ok(h) => h.parse().map_err(|_| format!("HOST is not an IP address: {h:?}"))?,
        Err(_) => Ipv4Addr::LOCALHOST.into(),
    };
    let url = env::var("ELASTIC_URL").map_err(|_| "ELASTIC_URL is not set".to_string())?;
    let url = Url::parse(&url).map_err(|e| format!("ELASTIC_URL {url:?} is invalid: {e}"))?;

    // Refuse to serve without a store: one round trip before launching.
    let store = Store::new(url.clone())?;
    timeout(Duration::from_secs(5), store.ping())
        .await
        .map_err(|_| format!("store at {url} did not answer within 5 s"))?
        .map_err(|e| format!("store at {url} is unreachable: {e}"))?;

    let config = Config {
        port,
        address,
        // Rocket's own logging spans several lines per request (even at `critical`, which keeps
        // warnings): RequestLog and the liftoff line below replace it.
        log_level: LogLevel::Off,
        // SIGTERM and SIGINT: stop accepting, give in-flight requests up to 10 s (+3 s to close).
        shutdown: Shutdown { grace: 10, mercy: 3, ..Shutdown::default() },
        ..Config::release_default()
    };

    rocket::custom(config)
        .manage(store)
        .manage(api::OpenApiJson::render())
        .attach(RequestLog)
        .attach(AdHoc::on_liftoff("start line", |rocket| {
            Box::pin(async move {
                let c = rocket.config();
                println!("locations-rocket listening on {}:{}", c.address, c.port);
            })
        }))
        .mount(
            "/",
            routes![
                api::get_city,
                api::featured,
                api::search,
                api::closest,
                api::associated_featured,
                api::api_docs,
                api::index,
            ],
        )
        .register("/", catchers![error::not_found, error::default])
        .launch()
        .await
        .map_err(|e| format!("server failed: {e}"))?;
    println!("locations-rocket stopped");
    Ok(())
}

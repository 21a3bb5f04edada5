//! The hyper 0.10 handler: one call per request on a worker of hyper's fixed pool, which stays busy
//! until the answer is written (and, with keep-alive, until the client's next request or the timeout).

use std::{
    sync::atomic::{AtomicBool, AtomicUsize, Ordering},
    thread,
    time::{Duration, Instant},
};

use hyper::{
    header::{Connection, ContentType},
    method::Method,
    net::Fresh,
    server::{Handler, Request, Response},
    status::StatusCode,
    uri::RequestUri,
};
use log::{debug, error, info};

use crate::{
    api::{self, Route},
    error::ApiError,
    model::ErrorResponse,
    strategy::Executor,
};

/// Requests between arrival and the end of their answer; a stop waits for them.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
/// Set by a stop: answers ask keep-alive clients to close, so workers stop waiting on them.
static DRAINING: AtomicBool = AtomicBool::new(false);

pub struct App {
    executor: Executor,
    openapi: &'static str,
}

impl App {
    pub fn new(executor: Executor, openapi: String) -> Self {
        // Rendered once, lives as long as the process.
        App { executor, openapi: Box::leak(openapi.into_boxed_str()) }
    }

    fn respond(&self, req: &Request) -> Result<String, ApiError> {
        let (path, query) = match &req.uri {
            RequestUri::AbsolutePath(target) => target.split_once('?').unwrap_or((target, "")),
            RequestUri::AbsoluteUri(url) => (url.path(), url.query().unwrap_or("")),
            _ => return Err(ApiError::BadRequest("the request target must be a path".into())),
        };
        if req.method != Method::Get {
            return Err(ApiError::NotFound(format!("no endpoint {} {path}", req.method)));
        }
        let geo_ip = || {
            let header = |name| req.headers.get_raw(name).and_then(|values| values.first()).map(Vec::as_slice);
            api::geo_ip_point(header("Fastly-Geo-Lat"), header("Fastly-Geo-Lon"))
        };
        match api::route(path, query, self.openapi, geo_ip)? {
            Route::Static(body) => Ok(body.to_owned()),
            Route::Store(call) => self.executor.run(call),
        }
    }
}

impl Handler for App {
    fn handle<'a, 'k>(&'a self, req: Request<'a, 'k>, mut res: Response<'a, Fresh>) {
        IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
        let started = Instant::now();
        let (status, body) = match self.respond(&req) {
            Ok(body) => (StatusCode::Ok, body),
            Err(err) => {
                if let ApiError::Internal(message) = &err {
                    error!("{message}");
                }
                let body = serde_json::to_string(&ErrorResponse { message: err.to_string() })
                    .unwrap_or_else(|_| r#"{"message":"error"}"#.to_owned());
                (err.status(), body)
            }
        };
        *res.status_mut() = status;
        res.headers_mut().set(ContentType::json());
        if DRAINING.load(Ordering::SeqCst) {
            res.headers_mut().set(Connection::close());
        }
        if let Err(e) = res.send(body.as_bytes()) {
            debug!("answer not delivered: {e}");
        }
        info!("{} {} {} {:.3}ms", req.method, req.uri, status.to_u16(), started.elapsed().as_secs_f64() * 1e3);
        IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    }
}

/// After a stop signal: answers from now on close their connection; waits up to `grace` for the
/// requests in flight. hyper 0.10 cannot stop accepting (its `Listening::close` does nothing), so the
/// process ends right after.
pub fn drain(grace: Duration) -> bool {
    DRAINING.store(true, Ordering::SeqCst);
    let deadline = Instant::now() + grace;
    while IN_FLIGHT.load(Ordering::SeqCst) > 0 {
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(5));
    }
    true
}

//! Errors as JSON answers on Actix Web 3's error types (the base's `src/error.rs` is Actix 4's: its bodies
//! and error handlers changed between the two; the API's own errors are the base's `src/api_error.rs`).

use actix_web::{
    body::{Body, ResponseBody},
    dev::ServiceResponse,
    http::{header, HeaderValue, StatusCode},
    middleware::errhandlers::{ErrorHandlerResponse, ErrorHandlers},
};

use crate::model::ErrorResponse;

/// Actix 3's `ErrorHandlers` has no default handler (Actix 4's `default_handler`): `ensure_json` is
/// registered for every client and server error status instead, one map look-up per answer either way.
pub fn json_errors<B: 'static>() -> ErrorHandlers<B> {
    (400..600)
        .filter_map(|code| StatusCode::from_u16(code).ok())
        .fold(ErrorHandlers::new(), |handlers, status| handlers.handler(status, ensure_json))
}

/// Last line of defence: an error answer that some framework layer produced without a JSON body
/// gets one, with the status' reason as message.
fn ensure_json<B>(res: ServiceResponse<B>) -> actix_web::Result<ErrorHandlerResponse<B>> {
    let is_json =
        res.headers().get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if is_json {
        return Ok(ErrorHandlerResponse::Response(res));
    }
    let status = res.status();
    let message = match res.response().error() {
        Some(err) => err.to_string(),
        None => status.canonical_reason().unwrap_or("error").to_owned(),
    };
    let body = serde_json::to_vec(&ErrorResponse { message })?;
    // Actix 3 keeps the body type and lets a handler swap in a body of its own (`ResponseBody::Other`).
    let mut res = res.map_body(|_, _| ResponseBody::Other(Body::from(body)));
    res.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(ErrorHandlerResponse::Response(res))
}

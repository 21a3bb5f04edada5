//! Errors as JSON answers on Actix Web 4: the last-line handler that gives a body to an error answer some
//! framework layer made without one (the API's own errors: `api_error.rs`).

use actix_web::{
    body::BoxBody,
    dev::ServiceResponse,
    http::header,
    middleware::ErrorHandlerResponse,
    HttpResponse,
};

use crate::model::ErrorResponse;

/// Last line of defence: an error answer that some framework layer produced without a JSON body
/// gets one, with the status' reason as message.
pub fn ensure_json<B>(res: ServiceResponse<B>) -> actix_web::Result<ErrorHandlerResponse<B>> {
    let is_json = res
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if is_json {
        return Ok(ErrorHandlerResponse::Response(res.map_into_left_body()));
    }
    let status = res.status();
    let message = match res.response().error() {
        Some(err) => err.to_string(),
        None => status.canonical_reason().unwrap_or("error").to_owned(),
    };
    let (req, _) = res.into_parts();
    let response: HttpResponse<BoxBody> = HttpResponse::build(status).json(ErrorResponse { message });
    Ok(ErrorHandlerResponse::Response(ServiceResponse::new(req, response).map_into_right_body()))
}

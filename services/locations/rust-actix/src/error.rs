//! Errors as JSON answers `{"message": …}`.

use std::fmt;

use actix_web::{
    body::BoxBody,
    dev::ServiceResponse,
    http::{header, StatusCode},
    middleware::ErrorHandlerResponse,
    HttpRequest, HttpResponse, ResponseError,
};
use log::error;

use crate::model::ErrorResponse;

#[derive(Debug)]
pub enum ApiError {
    BadRequest(String),
    NotFound(String),
    /// The store failed or holds inconsistent data.
    Internal(String),
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiError::BadRequest(m) | ApiError::NotFound(m) | ApiError::Internal(m) => f.write_str(m),
        }
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        if let ApiError::Internal(message) = self {
            error!("{message}");
        }
        HttpResponse::build(self.status_code()).json(ErrorResponse { message: self.to_string() })
    }
}

/// Query string that does not deserialize (missing or malformed parameter): 400 with serde's reason.
pub fn query_error(err: actix_web::error::QueryPayloadError, _req: &HttpRequest) -> actix_web::Error {
    ApiError::BadRequest(err.to_string()).into()
}

/// Default service: no route matches the method and path.
pub async fn no_route(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    Err(ApiError::NotFound(format!("no endpoint {} {}", req.method(), req.path())))
}

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

//! The service's API errors and their JSON answers `{"message": …}`, written against what Actix Web 3 and 4
//! name alike (`ResponseError`, `HttpResponse`, `StatusCode`), so both builds compile this one file; each
//! build's `error.rs` adds the error handler its Actix version needs.

use std::fmt;

use actix_web::{http::StatusCode, HttpRequest, HttpResponse, ResponseError};
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

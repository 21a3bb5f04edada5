//! Every failure answers JSON `{"message": …}`: handler errors and Rocket's catchers alike.

use rocket::{
    catch,
    form,
    http::Status,
    response::{self, Responder},
    serde::json::Json,
    Request,
};

use crate::api::ErrorResponse;

#[derive(Debug)]
pub struct ApiError {
    status: Status,
    message: String,
}

impl ApiError {
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError { status: Status::BadRequest, message: message.into() }
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        ApiError { status: Status::NotFound, message: message.into() }
    }

    pub fn internal(message: impl Into<String>) -> Self {
        ApiError { status: Status::InternalServerError, message: message.into() }
    }

    pub fn store(error: opensearch::Error) -> Self {
        Self::internal(format!("store request failed: {error}"))
    }

    /// Query parameters that are missing or do not parse, e.g. "id: value is missing".
    pub fn bad_query(errors: form::Errors<'_>) -> Self {
        let reasons: Vec<String> = errors
            .iter()
            .map(|e| match &e.name {
                Some(name) => format!("{name}: {e}"),
                None => e.to_string(),
            })
            .collect();
        Self::bad_request(reasons.join("; "))
    }
}

impl<'r> Responder<'r, 'static> for ApiError {
    fn respond_to(self, req: &'r Request<'_>) -> response::Result<'static> {
        if self.status == Status::InternalServerError {
            eprintln!("error: {} {}: {}", req.method(), req.uri(), self.message);
        }
        (self.status, Json(ErrorResponse { message: self.message })).respond_to(req)
    }
}

#[catch(404)]
pub fn not_found(req: &Request<'_>) -> Json<ErrorResponse> {
    Json(ErrorResponse { message: format!("no endpoint {} {}", req.method(), req.uri().path()) })
}

/// Anything else Rocket itself refuses (malformed requests, panics, ...).
#[catch(default)]
pub fn default(status: Status, _req: &Request<'_>) -> Json<ErrorResponse> {
    Json(ErrorResponse { message: status.reason_lossy().to_string() })
}

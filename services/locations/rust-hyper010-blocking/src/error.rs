//! Errors as JSON answers `{"message": …}`.

use std::fmt;

use hyper::status::StatusCode;

#[derive(Debug)]
pub enum ApiError {
    BadRequest(String),
    NotFound(String),
    /// The store failed or holds inconsistent data.
    Internal(String),
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BadRequest,
            ApiError::NotFound(_) => StatusCode::NotFound,
            ApiError::Internal(_) => StatusCode::InternalServerError,
        }
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiError::BadRequest(m) | ApiError::NotFound(m) | ApiError::Internal(m) => f.write_str(m),
        }
    }
}

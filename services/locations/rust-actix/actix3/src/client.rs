//! The calls to the store through the `elasticsearch` crate 7.9.0-alpha.1 (reqwest 0.10, Tokio 0.2), the
//! client seed 001's Actix 3 code used. The same calls as the base's `src/client.rs` on `opensearch`,
//! whose Tokio 1 cannot run inside Actix 3's Tokio 0.2 workers.

use std::time::Duration;

pub use elasticsearch::http::Url;
use elasticsearch::{
    http::{
        headers::{HeaderValue, ACCEPT_ENCODING},
        response::Response,
        transport::{SingleNodeConnectionPool, TransportBuilder},
        StatusCode,
    },
    Elasticsearch, GetSourceParts, SearchParts,
};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::api_error::ApiError;

pub type Client = Elasticsearch;

/// Builds a client for the store at `url`.
pub fn new(url: &Url) -> Result<Client, String> {
    let transport = TransportBuilder::new(SingleNodeConnectionPool::new(url.clone()))
        .disable_proxy()
        // As the base: small answers from a close store are cheaper uncompressed. The crate turns on
        // reqwest's gzip, which asks for gzip only when a request names no encoding itself.
        .header(ACCEPT_ENCODING, HeaderValue::from_static("identity"))
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| e.to_string())?;
    Ok(Elasticsearch::new(transport))
}

/// One round trip to the store; fails unless it answers with success.
pub async fn ping(client: &Client) -> Result<(), String> {
    let response = client.ping().send().await.map_err(|e| e.to_string())?;
    let status = response.status_code();
    if status.is_success() {
        Ok(())
    } else {
        Err(format!("store answered ping with {status}"))
    }
}

/// The `_source` of document `id` in `index` without the `excludes` fields, `None` if there is none.
pub async fn get_source<T: DeserializeOwned>(
    client: &Client,
    index: &str,
    id: &str,
    excludes: &[&str],
) -> Result<Option<T>, ApiError> {
    let response = client
        .get_source(GetSourceParts::IndexId(index, id))
        ._source_excludes(excludes)
        .send()
        .await
        .map_err(store_error)?;
    if response.status_code() == StatusCode::NOT_FOUND {
        return Ok(None);
    }
    let response = ensure_success(response).await?;
    response.json().await.map(Some).map_err(store_error)
}

/// A search of `index` with `body`; the store sends only what `filter_path` keeps.
pub async fn search<T: DeserializeOwned>(
    client: &Client,
    index: &str,
    excludes: &[&str],
    filter_path: &[&str],
    body: Value,
) -> Result<T, ApiError> {
    let response = client
        .search(SearchParts::Index(&[index]))
        ._source_excludes(excludes)
        .filter_path(filter_path)
        .body(body)
        .send()
        .await
        .map_err(store_error)?;
    let response = ensure_success(response).await?;
    response.json().await.map_err(store_error)
}

fn store_error(error: elasticsearch::Error) -> ApiError {
    ApiError::Internal(format!("store request failed: {error}"))
}

async fn ensure_success(response: Response) -> Result<Response, ApiError> {
    let status = response.status_code();
    if status.is_success() {
        return Ok(response);
    }
    let body = response.text().await.unwrap_or_default();
    Err(ApiError::Internal(format!("store answered {status}: {body}")))
}

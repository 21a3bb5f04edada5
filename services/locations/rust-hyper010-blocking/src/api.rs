//! The API: routing and query parsing (plain functions, run on the hyper worker), and the endpoints
//! that need the store (async, run inside whichever Tokio runtime the strategy provides).

use futures_util::future::try_join_all;
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use utoipa::{IntoParams, OpenApi};

use crate::{
    error::ApiError,
    model::{CityResponse, ErrorResponse, Language, MultiCityResponse},
    store::{City, GeoPoint, Store},
};

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct GetQuery {
    /// City id.
    id: u64,
    language: Language,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LanguageQuery {
    language: Language,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct SearchQuery {
    /// Beginnings of the words of a city name, in any order.
    query: String,
    language: Language,
    /// Restricts the search to one country (ISO 3166-1 alpha-2).
    country_iso: Option<String>,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ClosestQuery {
    /// Latitude in decimal degrees, -90 to 90; give both or neither of lat and lon.
    lat: Option<f64>,
    /// Longitude in decimal degrees, -180 to 180.
    lon: Option<f64>,
    language: Language,
}

/// Where the client is, as far as the request tells.
pub enum Whereabouts {
    /// Coordinates in the query.
    Point(GeoPoint),
    /// The CDN's geo-IP headers.
    GeoIp(GeoPoint),
    Unknown,
}

/// A request that needs the store, parsed and validated.
pub enum Call {
    Get(GetQuery),
    Featured(LanguageQuery),
    Search(SearchQuery),
    Closest(Whereabouts, Language),
    AssociatedFeatured(GetQuery),
}

/// What a request asks for.
pub enum Route {
    /// An answer that needs no store: `/` and `/api-docs`.
    Static(&'static str),
    Store(Call),
}

/// Routes a GET request; `geo_ip` reads the geo-IP headers, only when `/closest` needs them.
pub fn route(
    path: &str,
    query: &str,
    openapi: &'static str,
    geo_ip: impl FnOnce() -> Option<GeoPoint>,
) -> Result<Route, ApiError> {
    let call = match path {
        "/" => return Ok(Route::Static(r#"{"service":"locations"}"#)),
        "/api-docs" => return Ok(Route::Static(openapi)),
        "/city/v1/get" => Call::Get(parse(query)?),
        "/city/v1/featured" => Call::Featured(parse(query)?),
        "/city/v1/search" => {
            let q: SearchQuery = parse(query)?;
            if q.query.trim().is_empty() {
                return Err(ApiError::BadRequest("query must not be empty".into()));
            }
            Call::Search(q)
        }
        "/city/v1/closest" => {
            let q: ClosestQuery = parse(query)?;
            let whereabouts = match (q.lat, q.lon) {
                (Some(lat), Some(lon)) => {
                    let point = GeoPoint { lat, lon };
                    if !point.is_valid() {
                        return Err(ApiError::BadRequest(
                            "lat must be within [-90, 90] and lon within [-180, 180]".into(),
                        ));
                    }
                    Whereabouts::Point(point)
                }
                (None, None) => geo_ip().map_or(Whereabouts::Unknown, Whereabouts::GeoIp),
                _ => return Err(ApiError::BadRequest("give both lat and lon, or neither".into())),
            };
            Call::Closest(whereabouts, q.language)
        }
        "/city/v1/associatedFeatured" => Call::AssociatedFeatured(parse(query)?),
        _ => return Err(ApiError::NotFound(format!("no endpoint GET {path}"))),
    };
    Ok(Route::Store(call))
}

/// Query string into the endpoint's parameters; unknown parameters are ignored, and a missing or
/// malformed one is a 400 with serde's reason.
fn parse<T: DeserializeOwned>(query: &str) -> Result<T, ApiError> {
    serde_urlencoded::from_str(query).map_err(|e| ApiError::BadRequest(format!("invalid query: {e}")))
}

/// Answers a call with its JSON body.
pub async fn answer(store: &Store, call: Call) -> Result<String, ApiError> {
    match call {
        Call::Get(q) => json(get_city(store, q).await?),
        Call::Featured(q) => json(featured(store, q).await?),
        Call::Search(q) => json(search(store, q).await?),
        Call::Closest(whereabouts, language) => json(closest(store, whereabouts, language).await?),
        Call::AssociatedFeatured(q) => json(associated_featured(store, q).await?),
    }
}

fn json<T: Serialize>(value: T) -> Result<String, ApiError> {
    serde_json::to_string(&value).map_err(|e| ApiError::Internal(format!("cannot serialize the answer: {e}")))
}

/// The city with its region's name.
#[utoipa::path(
    get, path = "/city/v1/get", params(GetQuery),
    responses(
        (status = 200, description = "The city", body = CityResponse),
        (status = 400, description = "Missing or invalid parameter", body = ErrorResponse),
        (status = 404, description = "No such city", body = ErrorResponse),
    )
)]
async fn get_city(store: &Store, q: GetQuery) -> Result<CityResponse, ApiError> {
    let city = store.city(q.id).await?.ok_or_else(|| city_not_found(q.id))?;
    to_response(store, city, q.language).await
}

/// All featured cities: the language's home country first, then by country and population.
#[utoipa::path(
    get, path = "/city/v1/featured", params(LanguageQuery),
    responses((status = 200, description = "The cities", body = MultiCityResponse), (status = 400, description = "Missing or invalid parameter", body = ErrorResponse))
)]
async fn featured(store: &Store, q: LanguageQuery) -> Result<MultiCityResponse, ApiError> {
    let mut cities = store.featured_cities().await?;
    // Stable sort: the store's order (country, population) is kept within both groups.
    let home = q.language.home_country();
    cities.sort_by_key(|city| city.country_iso != home);
    to_multi_response(store, cities, q.language).await
}

/// Up to 10 cities whose names start with the query's words, best match first.
#[utoipa::path(
    get, path = "/city/v1/search", params(SearchQuery),
    responses((status = 200, description = "The cities", body = MultiCityResponse), (status = 400, description = "Missing or invalid parameter", body = ErrorResponse))
)]
async fn search(store: &Store, q: SearchQuery) -> Result<MultiCityResponse, ApiError> {
    let country_iso = q.country_iso.as_deref().filter(|iso| !iso.is_empty());
    let cities = store.search(q.query.trim(), q.language, country_iso).await?;
    to_multi_response(store, cities, q.language).await
}

/// The city at the given point (or nearest to it); without a point, the featured city nearest to
/// the client's geo-IP location (Fastly-Geo-Lat/Lon headers), else a default city per language.
#[utoipa::path(
    get, path = "/city/v1/closest", params(ClosestQuery),
    responses(
        (status = 200, description = "The city", body = CityResponse),
        (status = 400, description = "Missing or invalid parameter", body = ErrorResponse),
        (status = 404, description = "No such city", body = ErrorResponse),
    )
)]
async fn closest(store: &Store, whereabouts: Whereabouts, language: Language) -> Result<CityResponse, ApiError> {
    let city = match whereabouts {
        Whereabouts::Point(point) => store.city_at(point, false).await?,
        Whereabouts::GeoIp(point) => store.city_at(point, true).await?,
        Whereabouts::Unknown => store.city(language.default_city_id()).await?,
    };
    let city = city.ok_or_else(|| ApiError::NotFound("no city found".into()))?;
    to_response(store, city, language).await
}

/// The featured city for a city: itself if featured, else the featured city nearest to it.
#[utoipa::path(
    get, path = "/city/v1/associatedFeatured", params(GetQuery),
    responses(
        (status = 200, description = "The city", body = CityResponse),
        (status = 400, description = "Missing or invalid parameter", body = ErrorResponse),
        (status = 404, description = "No such city", body = ErrorResponse),
    )
)]
async fn associated_featured(store: &Store, q: GetQuery) -> Result<CityResponse, ApiError> {
    let city = store.city(q.id).await?.ok_or_else(|| city_not_found(q.id))?;
    let city = if city.is_featured {
        city
    } else {
        store
            .nearest_city(city.centroid, true)
            .await?
            .ok_or_else(|| ApiError::NotFound("there is no featured city".into()))?
    };
    to_response(store, city, q.language).await
}

#[derive(OpenApi)]
#[openapi(
    info(title = "Locations", description = "Cities from a document store, localized."),
    paths(get_city, featured, search, closest, associated_featured),
    components(schemas(CityResponse, MultiCityResponse, ErrorResponse, Language))
)]
struct ApiDoc;

/// The OpenAPI document, rendered once at start.
pub fn openapi_json() -> String {
    ApiDoc::openapi().to_json().expect("OpenAPI document serializes")
}

fn city_not_found(id: u64) -> ApiError {
    ApiError::NotFound(format!("city {id} not found"))
}

/// Point from the CDN's geo-IP header values; absent, malformed, out of range or `0,0` means unknown.
pub fn geo_ip_point(lat: Option<&[u8]>, lon: Option<&[u8]>) -> Option<GeoPoint> {
    let degrees = |raw: Option<&[u8]>| std::str::from_utf8(raw?).ok()?.trim().parse::<f64>().ok();
    let point = GeoPoint { lat: degrees(lat)?, lon: degrees(lon)? };
    (point.is_valid() && !(point.lat == 0.0 && point.lon == 0.0)).then_some(point)
}

async fn to_response(store: &Store, city: City, language: Language) -> Result<CityResponse, ApiError> {
    let region = store.region(city.region_id).await?;
    let missing = |what: &str| ApiError::Internal(format!("{what} has no name in language {}", language.code()));
    Ok(CityResponse {
        id: city.id,
        is_featured: city.is_featured,
        name: city.names.get(language).ok_or_else(|| missing(&format!("city {}", city.id)))?.to_owned(),
        region_name: region
            .names
            .get(language)
            .ok_or_else(|| missing(&format!("region {}", city.region_id)))?
            .to_owned(),
        country_iso: city.country_iso,
    })
}

/// Responses for many cities; regions not yet cached are fetched concurrently.
async fn to_multi_response(
    store: &Store,
    cities: Vec<City>,
    language: Language,
) -> Result<MultiCityResponse, ApiError> {
    let cities = try_join_all(cities.into_iter().map(|city| to_response(store, city, language))).await?;
    Ok(MultiCityResponse { cities })
}

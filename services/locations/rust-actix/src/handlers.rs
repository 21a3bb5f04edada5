//! Endpoint handlers for `/city/v1/*` and the OpenAPI document.

use actix_web::{get, http::header::HeaderMap, web, HttpRequest, HttpResponse};
use futures_util::future::try_join_all;
use serde::Deserialize;
use utoipa::{IntoParams, OpenApi};

use crate::{
    api_error::ApiError,
    model::{CityResponse, ErrorResponse, Language, MultiCityResponse},
    store::{City, GeoPoint, Store},
};

type Json<T> = Result<web::Json<T>, ApiError>;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct GetQuery {
    /// City id.
    id: u64,
    language: Language,
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
#[get("/city/v1/get")]
pub async fn get_city(store: web::Data<Store>, q: web::Query<GetQuery>) -> Json<CityResponse> {
    let city = store.city(q.id).await?.ok_or_else(|| city_not_found(q.id))?;
    Ok(web::Json(to_response(&store, city, q.language).await?))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LanguageQuery {
    language: Language,
}

/// All featured cities: the language's home country first, then by country and population.
#[utoipa::path(
    get, path = "/city/v1/featured", params(LanguageQuery),
    responses((status = 200, description = "The cities", body = MultiCityResponse), (status = 400, description = "Missing or invalid parameter", body = ErrorResponse))
)]
#[get("/city/v1/featured")]
pub async fn featured(store: web::Data<Store>, q: web::Query<LanguageQuery>) -> Json<MultiCityResponse> {
    let mut cities = store.featured_cities().await?;
    // Stable sort: the store's order (country, population) is kept within both groups.
    let home = q.language.home_country();
    cities.sort_by_key(|city| city.country_iso != home);
    Ok(web::Json(to_multi_response(&store, cities, q.language).await?))
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

/// Up to 10 cities whose names start with the query's words, best match first.
#[utoipa::path(
    get, path = "/city/v1/search", params(SearchQuery),
    responses((status = 200, description = "The cities", body = MultiCityResponse), (status = 400, description = "Missing or invalid parameter", body = ErrorResponse))
)]
#[get("/city/v1/search")]
pub async fn search(store: web::Data<Store>, q: web::Query<SearchQuery>) -> Json<MultiCityResponse> {
    let query = q.query.trim();
    if query.is_empty() {
        return Err(ApiError::BadRequest("query must not be empty".into()));
    }
    let country_iso = q.country_iso.as_deref().filter(|iso| !iso.is_empty());
    let cities = store.search(query, q.language, country_iso).await?;
    Ok(web::Json(to_multi_response(&store, cities, q.language).await?))
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
#[get("/city/v1/closest")]
pub async fn closest(req: HttpRequest, store: web::Data<Store>, q: web::Query<ClosestQuery>) -> Json<CityResponse> {
    let city = match (q.lat, q.lon) {
        (Some(lat), Some(lon)) => {
            let point = GeoPoint { lat, lon };
            if !point.is_valid() {
                return Err(ApiError::BadRequest(
                    "lat must be within [-90, 90] and lon within [-180, 180]".into(),
                ));
            }
            store.city_at(point, false).await?
        }
        (None, None) => match geo_ip_point(req.headers()) {
            Some(point) => store.city_at(point, true).await?,
            None => store.city(q.language.default_city_id()).await?,
        },
        _ => return Err(ApiError::BadRequest("give both lat and lon, or neither".into())),
    };
    let city = city.ok_or_else(|| ApiError::NotFound("no city found".into()))?;
    Ok(web::Json(to_response(&store, city, q.language).await?))
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
#[get("/city/v1/associatedFeatured")]
pub async fn associated_featured(store: web::Data<Store>, q: web::Query<GetQuery>) -> Json<CityResponse> {
    let city = store.city(q.id).await?.ok_or_else(|| city_not_found(q.id))?;
    let city = if city.is_featured {
        city
    } else {
        store
            .nearest_city(city.centroid, true)
            .await?
            .ok_or_else(|| ApiError::NotFound("there is no featured city".into()))?
    };
    Ok(web::Json(to_response(&store, city, q.language).await?))
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

#[get("/api-docs")]
pub async fn api_docs(doc: web::Data<String>) -> HttpResponse {
    HttpResponse::Ok().content_type("application/json").body(doc.get_ref().clone())
}

#[get("/")]
pub async fn index() -> HttpResponse {
    HttpResponse::Ok().content_type("application/json").body(r#"{"service":"locations"}"#)
}

fn city_not_found(id: u64) -> ApiError {
    ApiError::NotFound(format!("city {id} not found"))
}

/// Point from the CDN's geo-IP headers; absent, malformed, out of range or `0,0` means unknown.
fn geo_ip_point(headers: &HeaderMap) -> Option<GeoPoint> {
    let header = |name: &str| headers.get(name)?.to_str().ok()?.trim().parse::<f64>().ok();
    let point = GeoPoint { lat: header("Fastly-Geo-Lat")?, lon: header("Fastly-Geo-Lon")? };
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
async fn to_multi_response(store: &Store, cities: Vec<City>, language: Language) -> Result<MultiCityResponse, ApiError> {
    let cities = try_join_all(cities.into_iter().map(|city| to_response(store, city, language))).await?;
    Ok(MultiCityResponse { cities })
}

//! The `/city/v1/*` endpoints, their parameters and answers, and the OpenAPI document.

use std::convert::Infallible;

use futures_util::future::try_join_all;
use rocket::{
    form::{self, FromForm, FromFormField, ValueField},
    get,
    http::HeaderMap,
    request::{FromRequest, Outcome},
    response::content::RawJson,
    serde::json::Json,
    Request, State,
};
use serde::Serialize;
use utoipa::{IntoParams, OpenApi, ToSchema};

use crate::{
    error::ApiError,
    store::{CityDoc, GeoPoint, Store},
};

type ApiResult<T> = Result<Json<T>, ApiError>;

/// Language of the names in answers (ISO 639-1).
#[derive(Clone, Copy, Debug, ToSchema)]
#[schema(rename_all = "lowercase")]
pub enum Language {
    Cs,
    De,
    En,
    Pl,
    Sk,
}

impl Language {
    pub fn code(self) -> &'static str {
        match self {
            Language::Cs => "cs",
            Language::De => "de",
            Language::En => "en",
            Language::Pl => "pl",
            Language::Sk => "sk",
        }
    }

    fn home_country(self) -> &'static str {
        match self {
            Language::Cs | Language::En => "CZ",
            Language::De => "DE",
            Language::Pl => "PL",
            Language::Sk => "SK",
        }
    }

    /// Answer of `/closest` when nothing tells where the client is.
    fn default_city(self) -> u64 {
        match self {
            Language::Cs | Language::En => 101_748_113, // Prague
            Language::De => 101_909_779,                // Berlin
            Language::Pl => 101_752_777,                // Warsaw
            Language::Sk => 1_108_800_123,              // Bratislava
        }
    }
}

// Written by hand: the derive would match the codes case-insensitively, the API wants them exact.
impl<'v> FromFormField<'v> for Language {
    fn from_value(field: ValueField<'v>) -> form::Result<'v, Self> {
        match field.value {
            "cs" => Ok(Language::Cs),
            "de" => Ok(Language::De),
            "en" => Ok(Language::En),
            "pl" => Ok(Language::Pl),
            "sk" => Ok(Language::Sk),
            _ => Err(form::Error::validation("expected one of cs, de, en, pl, sk").into()),
        }
    }
}

/// A city, named in the requested language.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CityResponse {
    #[schema(example = 101748111)]
    id: u64,
    is_featured: bool,
    /// ISO 3166-1 alpha-2 country code.
    #[schema(example = "CZ")]
    country_iso: String,
    #[schema(example = "Plzeň")]
    name: String,
    #[schema(example = "Plzeňský kraj")]
    region_name: String,
}

/// Several cities.
#[derive(Debug, Serialize, ToSchema)]
pub struct MultiCityResponse {
    cities: Vec<CityResponse>,
}

/// Body of every answer other than 200.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorResponse {
    pub message: String,
}

#[derive(FromForm, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct IdQuery {
    /// City id.
    id: u64,
    language: Language,
}

#[derive(FromForm, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LanguageQuery {
    language: Language,
}

#[derive(FromForm, IntoParams)]
#[into_params(parameter_in = Query, rename_all = "camelCase")]
pub struct SearchQuery {
    /// Beginnings of the words of a city name, in any order.
    query: String,
    language: Language,
    /// Limits the search to one country (ISO 3166-1 alpha-2).
    #[field(name = "countryIso")]
    country_iso: Option<String>,
}

#[derive(FromForm, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ClosestQuery {
    // Taken as text and parsed here: an `Option<f64>` form field would turn a malformed number
    // into `None` instead of an error.
    /// Latitude in decimal degrees, -90 to 90; give both lat and lon, or neither.
    #[param(value_type = Option<f64>)]
    lat: Option<String>,
    /// Longitude in decimal degrees, -180 to 180.
    #[param(value_type = Option<f64>)]
    lon: Option<String>,
    language: Language,
}

fn degrees(name: &str, value: Option<&str>) -> Result<Option<f64>, ApiError> {
    value
        .map(|v| v.trim().parse().map_err(|e| ApiError::bad_request(format!("{name}: {e}"))))
        .transpose()
}

/// Client location from the CDN's geo-IP headers, if they hold a usable point (`0,0` = unknown).
pub struct GeoIp(Option<GeoPoint>);

#[rocket::async_trait]
impl<'r> FromRequest<'r> for GeoIp {
    type Error = Infallible;

    async fn from_request(req: &'r Request<'_>) -> Outcome<Self, Infallible> {
        Outcome::Success(GeoIp(geo_ip_point(req.headers())))
    }
}

fn geo_ip_point(headers: &HeaderMap<'_>) -> Option<GeoPoint> {
    let coordinate = |name: &str| headers.get_one(name)?.trim().parse::<f64>().ok();
    let point = GeoPoint { lat: coordinate("Fastly-Geo-Lat")?, lon: coordinate("Fastly-Geo-Lon")? };
    let unknown = point.lat == 0.0 && point.lon == 0.0;
    (point.in_range() && !unknown).then_some(point)
}

/// The city with its region's name.
#[utoipa::path(
    get, path = "/city/v1/get", params(IdQuery),
    responses(
        (status = 200, description = "The city", body = CityResponse),
        (status = 400, description = "Missing or invalid parameter", body = ErrorResponse),
        (status = 404, description = "No such city", body = ErrorResponse),
    )
)]
#[get("/city/v1/get?<q..>")]
pub async fn get_city(store: &State<Store>, q: form::Result<'_, IdQuery>) -> ApiResult<CityResponse> {
    let q = q.map_err(ApiError::bad_query)?;
    let city = store.city(q.id).await?.ok_or_else(|| unknown_city(q.id))?;
    Ok(Json(respond(store, city, q.language).await?))
}

/// All featured cities: the language's home country first, then by country and population.
#[utoipa::path(
    get, path = "/city/v1/featured", params(LanguageQuery),
    responses((status = 200, description = "The cities", body = MultiCityResponse), (status = 400, description = "Missing or invalid parameter", body = ErrorResponse))
)]
#[get("/city/v1/featured?<q..>")]
pub async fn featured(store: &State<Store>, q: form::Result<'_, LanguageQuery>) -> ApiResult<MultiCityResponse> {
    let q = q.map_err(ApiError::bad_query)?;
    let mut cities = store.featured().await?;
    // The sort is stable, so both parts keep the store's country/population order.
    let home = q.language.home_country();
    cities.sort_by_key(|c| c.country_iso != home);
    Ok(Json(respond_many(store, cities, q.language).await?))
}

/// Up to 10 cities whose names start with the query's words, best match first.
#[utoipa::path(
    get, path = "/city/v1/search", params(SearchQuery),
    responses((status = 200, description = "The cities", body = MultiCityResponse), (status = 400, description = "Missing or invalid parameter", body = ErrorResponse))
)]
#[get("/city/v1/search?<q..>")]
pub async fn search(store: &State<Store>, q: form::Result<'_, SearchQuery>) -> ApiResult<MultiCityResponse> {
    let q = q.map_err(ApiError::bad_query)?;
    let text = q.query.trim();
    if text.is_empty() {
        return Err(ApiError::bad_request("query: must not be empty"));
    }
    let country = q.country_iso.as_deref().filter(|c| !c.is_empty());
    let cities = store.search_by_name(text, q.language, country).await?;
    Ok(Json(respond_many(store, cities, q.language).await?))
}

/// The city at a point (or nearest to it); without one, the featured city nearest to the
/// client's geo-IP location (Fastly-Geo-Lat/Lon headers), else a fixed city per language.
#[utoipa::path(
    get, path = "/city/v1/closest", params(ClosestQuery),
    responses(
        (status = 200, description = "The city", body = CityResponse),
        (status = 400, description = "Missing or invalid parameter", body = ErrorResponse),
        (status = 404, description = "No such city", body = ErrorResponse),
    )
)]
#[get("/city/v1/closest?<q..>")]
pub async fn closest(store: &State<Store>, geo_ip: GeoIp, q: form::Result<'_, ClosestQuery>) -> ApiResult<CityResponse> {
    let q = q.map_err(ApiError::bad_query)?;
    let lat = degrees("lat", q.lat.as_deref())?;
    let lon = degrees("lon", q.lon.as_deref())?;
    let city = match (lat, lon) {
        (Some(lat), Some(lon)) => {
            let point = GeoPoint { lat, lon };
            if !point.in_range() {
                return Err(ApiError::bad_request("lat must be in [-90, 90] and lon in [-180, 180]"));
            }
            store.city_at(point, false).await?
        }
        (None, None) => match geo_ip.0 {
            Some(point) => store.city_at(point, true).await?,
            None => store.city(q.language.default_city()).await?,
        },
        _ => return Err(ApiError::bad_request("lat and lon go together: give both or neither")),
    };
    let city = city.ok_or_else(|| ApiError::not_found("no city found"))?;
    Ok(Json(respond(store, city, q.language).await?))
}

/// The city itself if it is featured, else the featured city nearest to it.
#[utoipa::path(
    get, path = "/city/v1/associatedFeatured", params(IdQuery),
    responses(
        (status = 200, description = "The city", body = CityResponse),
        (status = 400, description = "Missing or invalid parameter", body = ErrorResponse),
        (status = 404, description = "No such city", body = ErrorResponse),
    )
)]
#[get("/city/v1/associatedFeatured?<q..>")]
pub async fn associated_featured(store: &State<Store>, q: form::Result<'_, IdQuery>) -> ApiResult<CityResponse> {
    let q = q.map_err(ApiError::bad_query)?;
    let city = store.city(q.id).await?.ok_or_else(|| unknown_city(q.id))?;
    let city = match city.is_featured {
        true => city,
        false => store
            .nearest(city.centroid, true)
            .await?
            .ok_or_else(|| ApiError::not_found("there are no featured cities"))?,
    };
    Ok(Json(respond(store, city, q.language).await?))
}

#[derive(OpenApi)]
#[openapi(
    info(title = "Locations", description = "Localized cities from a document store."),
    paths(get_city, featured, search, closest, associated_featured),
    components(schemas(CityResponse, MultiCityResponse, ErrorResponse, Language))
)]
struct ApiDoc;

/// The OpenAPI document, rendered once at start and kept in Rocket's managed state.
pub struct OpenApiJson(String);

impl OpenApiJson {
    pub fn render() -> Self {
        OpenApiJson(ApiDoc::openapi().to_json().expect("the OpenAPI document serializes"))
    }
}

#[get("/api-docs")]
pub fn api_docs(doc: &State<OpenApiJson>) -> RawJson<&str> {
    RawJson(&doc.0)
}

#[get("/")]
pub fn index() -> RawJson<&'static str> {
    RawJson(r#"{"service":"locations"}"#)
}

fn unknown_city(id: u64) -> ApiError {
    ApiError::not_found(format!("city {id} not found"))
}

async fn respond(store: &Store, city: CityDoc, language: Language) -> Result<CityResponse, ApiError> {
    let region = store.region(city.region_id).await?;
    let untranslated =
        |what: String| ApiError::internal(format!("{what} has no name in language {}", language.code()));
    let name = city.names.in_language(language).ok_or_else(|| untranslated(format!("city {}", city.id)))?;
    let region_name = region
        .names
        .in_language(language)
        .ok_or_else(|| untranslated(format!("region {}", city.region_id)))?;
    Ok(CityResponse {
        id: city.id,
        is_featured: city.is_featured,
        name: name.to_owned(),
        region_name: region_name.to_owned(),
        country_iso: city.country_iso,
    })
}

/// Answers for several cities; regions not cached yet are fetched concurrently.
async fn respond_many(store: &Store, cities: Vec<CityDoc>, language: Language) -> Result<MultiCityResponse, ApiError> {
    let cities = try_join_all(cities.into_iter().map(|c| respond(store, c, language))).await?;
    Ok(MultiCityResponse { cities })
}

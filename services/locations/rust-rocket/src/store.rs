//! The document store (OpenSearch / Elasticsearch): city and region look-ups and queries.

use std::{
    collections::HashMap,
    sync::{Arc, RwLock},
    time::Duration,
};

use opensearch::{
    http::{
        headers::{HeaderValue, ACCEPT_ENCODING},
        response::Response,
        transport::{SingleNodeConnectionPool, TransportBuilder},
        StatusCode, Url,
    },
    GetSourceParts, OpenSearch, SearchParts,
};
use serde::{de::DeserializeOwned, Deserialize, Serialize};
use serde_json::{json, Value};

use crate::{api::Language, error::ApiError};

const CITY: &str = "city";
const REGION: &str = "region";
/// `geometry` (up to ~1 MB) is only for shape queries inside the store; never fetch it.
const CITY_EXCLUDES: &[&str] = &["geometry", "population"];
const REGION_EXCLUDES: &[&str] = &["geometry"];

/// A point in decimal degrees.
#[derive(Clone, Copy, Debug, Deserialize, Serialize)]
pub struct GeoPoint {
    pub lat: f64,
    pub lon: f64,
}

impl GeoPoint {
    pub fn in_range(self) -> bool {
        (-90.0..=90.0).contains(&self.lat) && (-180.0..=180.0).contains(&self.lon)
    }
}

/// The `name.<language>` keys of a document (flat dotted keys in the source).
#[derive(Debug, Deserialize)]
pub struct LocalizedNames {
    #[serde(rename = "name.cs")]
    cs: Option<String>,
    #[serde(rename = "name.de")]
    de: Option<String>,
    #[serde(rename = "name.en")]
    en: Option<String>,
    #[serde(rename = "name.pl")]
    pl: Option<String>,
    #[serde(rename = "name.sk")]
    sk: Option<String>,
}

impl LocalizedNames {
    pub fn in_language(&self, language: Language) -> Option<&str> {
        let name = match language {
            Language::Cs => &self.cs,
            Language::De => &self.de,
            Language::En => &self.en,
            Language::Pl => &self.pl,
            Language::Sk => &self.sk,
        };
        name.as_deref()
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CityDoc {
    pub id: u64,
    pub region_id: u64,
    pub country_iso: String,
    #[serde(default)]
    pub is_featured: bool,
    pub centroid: GeoPoint,
    #[serde(flatten)]
    pub names: LocalizedNames,
}

#[derive(Debug, Deserialize)]
pub struct RegionDoc {
    #[serde(flatten)]
    pub names: LocalizedNames,
}

/// The part of a search answer that `filter_path=hits.hits._source` keeps.
#[derive(Deserialize)]
struct SearchHits<T> {
    /// Missing when nothing matched (serde reads a missing `Option` field as `None`).
    hits: Option<Hits<T>>,
}

#[derive(Deserialize)]
struct Hits<T> {
    hits: Vec<Source<T>>,
}

#[derive(Deserialize)]
struct Source<T> {
    _source: T,
}

/// Store client shared by all requests (reqwest pools connections), plus the region cache.
pub struct Store {
    client: OpenSearch,
    /// Tens of regions: kept forever once fetched.
    regions: RwLock<HashMap<u64, Arc<RegionDoc>>>,
}

impl Store {
    pub fn new(url: Url) -> Result<Self, String> {
        let transport = TransportBuilder::new(SingleNodeConnectionPool::new(url))
            .disable_proxy()
            // Small answers over a short distance: compression would only cost CPU on both ends.
            .header(ACCEPT_ENCODING, HeaderValue::from_static("identity"))
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Store { client: OpenSearch::new(transport), regions: RwLock::default() })
    }

    /// One round trip, used at start to refuse running without a store.
    pub async fn ping(&self) -> Result<(), String> {
        let response = self.client.ping().send().await.map_err(|e| e.to_string())?;
        match response.status_code() {
            status if status.is_success() => Ok(()),
            status => Err(format!("ping answered {status}")),
        }
    }

    pub async fn city(&self, id: u64) -> Result<Option<CityDoc>, ApiError> {
        self.source(CITY, id, CITY_EXCLUDES).await
    }

    pub async fn region(&self, id: u64) -> Result<Arc<RegionDoc>, ApiError> {
        if let Some(region) = self.regions.read().unwrap().get(&id).cloned() {
            return Ok(region);
        }
        let region = self
            .source::<RegionDoc>(REGION, id, REGION_EXCLUDES)
            .await?
            .map(Arc::new)
            .ok_or_else(|| ApiError::internal(format!("region {id} is not in the store")))?;
        self.regions.write().unwrap().insert(id, region.clone());
        Ok(region)
    }

    /// Featured cities by country, then by population, largest first.
    pub async fn featured(&self) -> Result<Vec<CityDoc>, ApiError> {
        self.search(json!({
            "size": 1000,
            "query": { "term": { "isFeatured": true } },
            "sort": [ "countryIso", { "population": { "order": "desc" } } ],
        }))
        .await
    }

    /// Prefix search over the names; see the boosts below.
    pub async fn search_by_name(
        &self,
        text: &str,
        language: Language,
        country_iso: Option<&str>,
    ) -> Result<Vec<CityDoc>, ApiError> {
        // Each search_as_you_type field is queried with its 2- and 3-word shingles. Boosts halve
        // from the requested language, to it accent-folded, to any language, to any folded.
        let fields: Vec<String> = [
            (format!("name.{}.autocomplete", language.code()), 8),
            (format!("name.{}.autocomplete_ascii", language.code()), 4),
            ("name.all.autocomplete".to_string(), 2),
            ("name.all.autocomplete_ascii".to_string(), 1),
        ]
        .iter()
        .flat_map(|(field, boost)| {
            ["", "._2gram", "._3gram"].map(|suffix| format!("{field}{suffix}^{boost}"))
        })
        .collect();
        let mut filters = Vec::new();
        if let Some(iso) = country_iso {
            filters.push(json!({ "term": { "countryIso": iso } }));
        }

        self.search(json!({
            "size": 10,
            "query": {
                "function_score": {
                    "query": {
                        "bool": {
                            "must": [{ "multi_match": { "query": text, "type": "bool_prefix", "fields": fields } }],
                            "filter": filters,
                        }
                    },
                    // Multiply by ln(2 + population): larger towns first, never a zero factor.
                    "functions": [{
                        "field_value_factor": { "field": "population", "modifier": "ln2p", "missing": 500 }
                    }],
                }
            },
        }))
        .await
    }

    /// The city whose shape contains `point`, or failing that the one with the nearest centroid.
    pub async fn city_at(&self, point: GeoPoint, featured_only: bool) -> Result<Option<CityDoc>, ApiError> {
        let mut filters = vec![json!({
            "geo_shape": {
                // GeoJSON coordinates are [lon, lat].
                "geometry": { "shape": { "type": "point", "coordinates": [point.lon, point.lat] } }
            }
        })];
        if featured_only {
            filters.push(json!({ "term": { "isFeatured": true } }));
        }
        let hit = self.search(json!({ "size": 1, "query": { "bool": { "filter": filters } } })).await?;
        if let Some(city) = hit.into_iter().next() {
            return Ok(Some(city));
        }
        self.nearest(point, featured_only).await
    }

    /// The city whose centroid is nearest to `point`.
    pub async fn nearest(&self, point: GeoPoint, featured_only: bool) -> Result<Option<CityDoc>, ApiError> {
        let query = match featured_only {
            true => json!({ "term": { "isFeatured": true } }),
            false => json!({ "match_all": {} }),
        };
        let hit = self
            .search(json!({
                "size": 1,
                "query": query,
                "sort": [{ "_geo_distance": { "centroid": point } }],
            }))
            .await?;
        Ok(hit.into_iter().next())
    }

    async fn source<T: DeserializeOwned>(
        &self,
        index: &str,
        id: u64,
        excludes: &[&str],
    ) -> Result<Option<T>, ApiError> {
        let id = id.to_string();
        let response = self
            .client
            .get_source(GetSourceParts::IndexId(index, &id))
            ._source_excludes(excludes)
            .send()
            .await
            .map_err(ApiError::store)?;
        if response.status_code() == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let doc = success(response).await?.json().await.map_err(ApiError::store)?;
        Ok(Some(doc))
    }

    async fn search(&self, body: Value) -> Result<Vec<CityDoc>, ApiError> {
        let response = self
            .client
            .search(SearchParts::Index(&[CITY]))
            ._source_excludes(CITY_EXCLUDES)
            .filter_path(&["hits.hits._source"])
            .body(body)
            .send()
            .await
            .map_err(ApiError::store)?;
        let found: SearchHits<CityDoc> = success(response).await?.json().await.map_err(ApiError::store)?;
        Ok(found.hits.map(|h| h.hits.into_iter().map(|s| s._source).collect()).unwrap_or_default())
    }
}

/// Turns a non-2xx store answer into an error that carries the store's explanation.
async fn success(response: Response) -> Result<Response, ApiError> {
    let status = response.status_code();
    if status.is_success() {
        Ok(response)
    } else {
        let body = response.text().await.unwrap_or_default();
        Err(ApiError::internal(format!("store answered {status}: {body}")))
    }
}

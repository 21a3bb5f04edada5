//! Access to the document store (OpenSearch / Elasticsearch) holding cities and regions: the documents,
//! the queries and the region cache; the calls themselves are `client`'s.

use std::{
    collections::HashMap,
    sync::{Arc, RwLock},
};

use serde::{de::DeserializeOwned, Deserialize, Serialize};
use serde_json::{json, Value};

use crate::{
    client::{self, Client},
    api_error::ApiError,
    model::Language,
};

const CITY_INDEX: &str = "city";
const REGION_INDEX: &str = "region";
/// `geometry` is only used by shape queries inside the store; never transfer it.
const CITY_EXCLUDES: &[&str] = &["geometry", "population"];
const REGION_EXCLUDES: &[&str] = &["geometry"];
/// Enough for all featured cities (there are tens of them).
const FEATURED_LIMIT: u32 = 1000;
const SEARCH_LIMIT: u32 = 10;

/// A point in decimal degrees.
#[derive(Clone, Copy, Debug, Deserialize, Serialize)]
pub struct GeoPoint {
    pub lat: f64,
    pub lon: f64,
}

impl GeoPoint {
    pub fn is_valid(&self) -> bool {
        (-90.0..=90.0).contains(&self.lat) && (-180.0..=180.0).contains(&self.lon)
    }
}

/// Names of a city or region in each supported language, stored as flat dotted keys.
#[derive(Debug, Deserialize)]
pub struct Names {
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

impl Names {
    pub fn get(&self, language: Language) -> Option<&str> {
        match language {
            Language::Cs => self.cs.as_deref(),
            Language::De => self.de.as_deref(),
            Language::En => self.en.as_deref(),
            Language::Pl => self.pl.as_deref(),
            Language::Sk => self.sk.as_deref(),
        }
    }
}

/// City document as stored (without `geometry` and `population`).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct City {
    pub id: u64,
    pub region_id: u64,
    pub country_iso: String,
    #[serde(default)]
    pub is_featured: bool,
    pub centroid: GeoPoint,
    #[serde(flatten)]
    pub names: Names,
}

/// Region document as stored (without `geometry`); only its names are needed.
#[derive(Debug, Deserialize)]
pub struct Region {
    #[serde(flatten)]
    pub names: Names,
}

#[derive(Deserialize)]
struct SearchResponse<T> {
    // With `filter_path`, an empty result has no `hits` at all.
    #[serde(default = "Hits::empty")]
    hits: Hits<T>,
}

#[derive(Deserialize)]
struct Hits<T> {
    hits: Vec<Hit<T>>,
}

impl<T> Hits<T> {
    fn empty() -> Self {
        Hits { hits: Vec::new() }
    }
}

#[derive(Deserialize)]
struct Hit<T> {
    _source: T,
}

/// Regions by id; shared by all workers. There are only tens of regions, so no eviction.
pub type RegionCache = Arc<RwLock<HashMap<u64, Arc<Region>>>>;

/// Store client of one worker, plus the region cache shared by all workers.
pub struct Store {
    client: Client,
    regions: RegionCache,
}

impl Store {
    pub fn new(client: Client, regions: RegionCache) -> Self {
        Store { client, regions }
    }

    /// The city with `id`, or `None` if there is none.
    pub async fn city(&self, id: u64) -> Result<Option<City>, ApiError> {
        self.get_source(CITY_INDEX, id, CITY_EXCLUDES).await
    }

    /// The region with `id`, from the cache after its first use.
    pub async fn region(&self, id: u64) -> Result<Arc<Region>, ApiError> {
        if let Some(region) = self.regions.read().unwrap().get(&id) {
            return Ok(Arc::clone(region));
        }
        let region: Region = self
            .get_source(REGION_INDEX, id, REGION_EXCLUDES)
            .await?
            .ok_or_else(|| ApiError::Internal(format!("region {id} is missing in the store")))?;
        let region = Arc::new(region);
        self.regions.write().unwrap().insert(id, Arc::clone(&region));
        Ok(region)
    }

    /// All featured cities, by country, then population descending.
    pub async fn featured_cities(&self) -> Result<Vec<City>, ApiError> {
        self.search_cities(json!({
            "size": FEATURED_LIMIT,
            "query": { "term": { "isFeatured": true } },
            "sort": [ { "countryIso": "asc" }, { "population": "desc" } ],
        }))
        .await
    }

    /// Cities whose names start with the words of `query`, best first.
    pub async fn search(
        &self,
        query: &str,
        language: Language,
        country_iso: Option<&str>,
    ) -> Result<Vec<City>, ApiError> {
        let lang = language.code();
        // search_as_you_type sub-fields and their shingles; the boost halves from the requested
        // language to its accent-folded variant, to any language, to any accent-folded language.
        let mut fields = Vec::with_capacity(12);
        for (base, boost) in [
            (format!("name.{lang}.autocomplete"), 8),
            (format!("name.{lang}.autocomplete_ascii"), 4),
            ("name.all.autocomplete".to_owned(), 2),
            ("name.all.autocomplete_ascii".to_owned(), 1),
        ] {
            fields.push(format!("{base}^{boost}"));
            fields.push(format!("{base}._2gram^{boost}"));
            fields.push(format!("{base}._3gram^{boost}"));
        }
        let filter: Vec<Value> = country_iso
            .map(|iso| json!({ "term": { "countryIso": iso } }))
            .into_iter()
            .collect();

        self.search_cities(json!({
            "size": SEARCH_LIMIT,
            "query": {
                "function_score": {
                    "query": {
                        "bool": {
                            "must": {
                                "multi_match": { "query": query, "type": "bool_prefix", "fields": fields }
                            },
                            "filter": filter,
                        }
                    },
                    // Bigger cities first among similar matches; ln(population + 2) keeps it positive.
                    "functions": [{
                        "field_value_factor": { "field": "population", "modifier": "ln2p", "missing": 500 }
                    }],
                }
            },
        }))
        .await
    }

    /// The city whose shape contains `point`, else the one with the nearest centroid.
    pub async fn city_at(&self, point: GeoPoint, featured_only: bool) -> Result<Option<City>, ApiError> {
        let mut filter = vec![json!({
            "geo_shape": {
                "geometry": {
                    // GeoJSON order: [lon, lat].
                    "shape": { "type": "point", "coordinates": [point.lon, point.lat] },
                    "relation": "intersects",
                }
            }
        })];
        if featured_only {
            filter.push(json!({ "term": { "isFeatured": true } }));
        }
        let containing = self
            .search_cities(json!({ "size": 1, "query": { "bool": { "filter": filter } } }))
            .await?;
        match containing.into_iter().next() {
            Some(city) => Ok(Some(city)),
            None => self.nearest_city(point, featured_only).await,
        }
    }

    /// The city with the centroid nearest to `point`.
    pub async fn nearest_city(&self, point: GeoPoint, featured_only: bool) -> Result<Option<City>, ApiError> {
        let query = if featured_only {
            json!({ "term": { "isFeatured": true } })
        } else {
            json!({ "match_all": {} })
        };
        let cities = self
            .search_cities(json!({
                "size": 1,
                "query": query,
                "sort": [{ "_geo_distance": { "centroid": point, "order": "asc" } }],
            }))
            .await?;
        Ok(cities.into_iter().next())
    }

    async fn get_source<T: DeserializeOwned>(
        &self,
        index: &str,
        id: u64,
        excludes: &[&str],
    ) -> Result<Option<T>, ApiError> {
        client::get_source(&self.client, index, &id.to_string(), excludes).await
    }

    async fn search_cities(&self, body: Value) -> Result<Vec<City>, ApiError> {
        let parsed: SearchResponse<City> =
            client::search(&self.client, CITY_INDEX, CITY_EXCLUDES, &["hits.hits._source"], body).await?;
        Ok(parsed.hits.hits.into_iter().map(|hit| hit._source).collect())
    }
}

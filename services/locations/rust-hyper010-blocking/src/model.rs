//! API types: query language and response bodies.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Language of the names in responses (ISO 639-1).
#[derive(Clone, Copy, Debug, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
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

    /// Country whose cities come first in the featured list.
    pub fn home_country(self) -> &'static str {
        match self {
            Language::Cs | Language::En => "CZ",
            Language::De => "DE",
            Language::Pl => "PL",
            Language::Sk => "SK",
        }
    }

    /// City answered by `/closest` when nothing tells where the client is.
    pub fn default_city_id(self) -> u64 {
        match self {
            Language::Cs | Language::En => 101_748_113, // Prague
            Language::De => 101_909_779,                // Berlin
            Language::Pl => 101_752_777,                // Warsaw
            Language::Sk => 1_108_800_123,              // Bratislava
        }
    }
}

/// A city, named in the requested language.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CityResponse {
    #[schema(example = 101748111)]
    pub id: u64,
    pub is_featured: bool,
    /// ISO 3166-1 alpha-2 country code.
    #[schema(example = "CZ")]
    pub country_iso: String,
    #[schema(example = "Plzeň")]
    pub name: String,
    #[schema(example = "Plzeňský kraj")]
    pub region_name: String,
}

/// A list of cities.
#[derive(Debug, Serialize, ToSchema)]
pub struct MultiCityResponse {
    pub cities: Vec<CityResponse>,
}

/// Body of every non-200 answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorResponse {
    pub message: String,
}

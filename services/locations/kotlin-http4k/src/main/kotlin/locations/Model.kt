package locations

import com.fasterxml.jackson.annotation.JsonIgnoreProperties
import com.fasterxml.jackson.annotation.JsonProperty
import org.http4k.core.Status

/** Response language, sent as a two-letter ISO 639-1 code. */
enum class Language(
    val code: String,
    /** Country whose featured cities come first in `/city/v1/featured`. */
    val homeCountryIso: String,
    /** City served by `/city/v1/closest` when the caller's location is unknown. */
    val defaultCityId: ULong,
) {
    CS("cs", "CZ", 101_748_113u), // Prague
    DE("de", "DE", 101_909_779u), // Berlin
    EN("en", "CZ", 101_748_113u), // also Prague
    PL("pl", "PL", 101_752_777u), // Warsaw
    SK("sk", "SK", 1_108_800_123u); // Bratislava

    companion object {
        fun fromCode(code: String): Language =
            entries.firstOrNull { it.code == code } ?: throw IllegalArgumentException("unknown language $code")
    }
}

/** A point in decimal degrees. */
data class Coordinates(val lat: Double, val lon: Double)

/** Both stored entities carry the same flat `name.<language>` keys. */
interface Named {
    val nameCs: String?
    val nameDe: String?
    val nameEn: String?
    val namePl: String?
    val nameSk: String?

    fun name(language: Language): String? = when (language) {
        Language.CS -> nameCs
        Language.DE -> nameDe
        Language.EN -> nameEn
        Language.PL -> namePl
        Language.SK -> nameSk
    }
}

/** City document as stored (without `geometry` and `population`, which are never fetched). */
@JsonIgnoreProperties(ignoreUnknown = true)
data class ElasticCity(
    val id: Long,
    val regionId: Long,
    val isFeatured: Boolean = false,
    val countryIso: String,
    val centroid: Coordinates,
    @JsonProperty("name.cs") override val nameCs: String? = null,
    @JsonProperty("name.de") override val nameDe: String? = null,
    @JsonProperty("name.en") override val nameEn: String? = null,
    @JsonProperty("name.pl") override val namePl: String? = null,
    @JsonProperty("name.sk") override val nameSk: String? = null,
) : Named

/** Region document as stored; only the names are used. */
@JsonIgnoreProperties(ignoreUnknown = true)
data class ElasticRegion(
    val id: Long,
    @JsonProperty("name.cs") override val nameCs: String? = null,
    @JsonProperty("name.de") override val nameDe: String? = null,
    @JsonProperty("name.en") override val nameEn: String? = null,
    @JsonProperty("name.pl") override val namePl: String? = null,
    @JsonProperty("name.sk") override val nameSk: String? = null,
) : Named

@JsonIgnoreProperties(ignoreUnknown = true)
data class CitySearchResponse(val hits: Hits) {
    @JsonIgnoreProperties(ignoreUnknown = true)
    data class Hits(val hits: List<Hit>)

    @JsonIgnoreProperties(ignoreUnknown = true)
    data class Hit(@JsonProperty("_source") val source: ElasticCity)
}

/** The API's city entity; every city endpoint answers with it or a list of it. */
data class CityResponse(
    val id: Long,
    val isFeatured: Boolean,
    val countryIso: String,
    val name: String,
    val regionName: String,
)

data class MultiCityResponse(val cities: List<CityResponse>)

data class ErrorResponse(val message: String)

/** A failure with an HTTP status and a message meant for the API caller. */
class ApiException(val status: Status, override val message: String) : RuntimeException(message)

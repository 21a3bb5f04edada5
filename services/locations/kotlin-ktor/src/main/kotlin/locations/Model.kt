package locations

import kotlinx.serialization.SerialName
import kotlinx.serialization.Serializable

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
        fun fromCode(code: String): Language? = entries.firstOrNull { it.code == code }
    }
}

/** A point in decimal degrees; serialized the way the store's geo_point expects it. */
@Serializable
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
@Serializable
data class ElasticCity(
    val id: Long,
    val regionId: Long,
    val isFeatured: Boolean = false,
    val countryIso: String,
    val centroid: Coordinates,
    @SerialName("name.cs") override val nameCs: String? = null,
    @SerialName("name.de") override val nameDe: String? = null,
    @SerialName("name.en") override val nameEn: String? = null,
    @SerialName("name.pl") override val namePl: String? = null,
    @SerialName("name.sk") override val nameSk: String? = null,
) : Named

/** Region document as stored; only the names are used. */
@Serializable
data class ElasticRegion(
    val id: Long,
    @SerialName("name.cs") override val nameCs: String? = null,
    @SerialName("name.de") override val nameDe: String? = null,
    @SerialName("name.en") override val nameEn: String? = null,
    @SerialName("name.pl") override val namePl: String? = null,
    @SerialName("name.sk") override val nameSk: String? = null,
) : Named

@Serializable
data class SearchResponse<T>(val hits: Hits<T>) {
    @Serializable
    data class Hits<T>(val hits: List<Hit<T>>)

    @Serializable
    data class Hit<T>(@SerialName("_source") val source: T)
}

/** The API's city entity; every city endpoint answers with it or a list of it. */
@Serializable
data class CityResponse(
    val id: Long,
    val isFeatured: Boolean,
    val countryIso: String,
    val name: String,
    val regionName: String,
)

@Serializable
data class MultiCityResponse(val cities: List<CityResponse>)

@Serializable
data class ErrorResponse(val message: String)

/** A failure with an HTTP status and a message meant for the API caller. */
class ApiException(val status: Int, override val message: String) : RuntimeException(message)

package locations

import io.ktor.client.HttpClient
import io.ktor.client.call.body
import io.ktor.client.request.get
import io.ktor.client.request.parameter
import io.ktor.client.request.post
import io.ktor.client.request.setBody
import io.ktor.client.statement.HttpResponse
import io.ktor.client.statement.bodyAsText
import io.ktor.http.ContentType
import io.ktor.http.HttpStatusCode
import io.ktor.http.contentType
import io.ktor.http.isSuccess
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.add
import kotlinx.serialization.json.addJsonObject
import kotlinx.serialization.json.buildJsonArray
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.put
import kotlinx.serialization.json.putJsonArray
import kotlinx.serialization.json.putJsonObject
import org.slf4j.LoggerFactory
import java.util.concurrent.ConcurrentHashMap

private const val CITY_INDEX = "city"
private const val REGION_INDEX = "region"

// The geometry is big and used only inside the store; population only for store-side sorting/scoring.
private const val EXCLUDED_FIELDS = "geometry,population"

/** Cities and regions in the document store, reached over its REST API. */
class LocationsRepository(private val client: HttpClient) {
    private val log = LoggerFactory.getLogger(LocationsRepository::class.java)

    // There are only tens of regions, so they are kept forever once fetched.
    private val regionCache = ConcurrentHashMap<Long, ElasticRegion>()

    /** One round trip to check that the store answers (used at start-up). */
    suspend fun ping() {
        val response = client.get("")
        check(response.status.isSuccess()) { "store answered ${response.status}" }
    }

    suspend fun getCity(id: ULong): ElasticCity = getSource(CITY_INDEX, id.toString(), "City")

    suspend fun getRegion(id: Long): ElasticRegion =
        regionCache[id] ?: getSource<ElasticRegion>(REGION_INDEX, id.toString(), "Region")
            .also { regionCache[id] = it }

    /** All featured cities, by country and then by population, biggest first. */
    suspend fun getFeaturedCities(): List<ElasticCity> = searchCities(
        buildJsonObject {
            putJsonObject("query") { putJsonObject("term") { put("isFeatured", true) } }
            putJsonArray("sort") {
                add("countryIso")
                addJsonObject { put("population", "desc") }
            }
        },
        size = 1000,
    )

    /** Up to 10 cities whose names start with the words of [query], best first. */
    suspend fun search(query: String, language: Language, countryIso: String?): List<ElasticCity> {
        val nameKey = "name.${language.code}"
        // Boosts: the requested language with accents counts most, then accent-folded, then any
        // language, then any language accent-folded. Each field has 2- and 3-word shingles.
        val fields = buildJsonArray {
            for ((field, boost) in listOf(
                "$nameKey.autocomplete" to 8,
                "$nameKey.autocomplete_ascii" to 4,
                "name.all.autocomplete" to 2,
                "name.all.autocomplete_ascii" to 1,
            )) {
                for (suffix in listOf("", "._2gram", "._3gram")) add("$field$suffix^$boost")
            }
        }
        val body = buildJsonObject {
            putJsonObject("query") {
                putJsonObject("function_score") {
                    putJsonObject("query") {
                        putJsonObject("bool") {
                            putJsonArray("must") {
                                addJsonObject {
                                    putJsonObject("multi_match") {
                                        put("query", query)
                                        put("type", "bool_prefix")
                                        put("fields", fields)
                                    }
                                }
                            }
                            putJsonArray("filter") {
                                if (countryIso != null) {
                                    addJsonObject { putJsonObject("term") { put("countryIso", countryIso) } }
                                }
                            }
                        }
                    }
                    // People perceive size logarithmically; ln(2 + x) keeps the factor positive.
                    putJsonArray("functions") {
                        addJsonObject {
                            putJsonObject("field_value_factor") {
                                put("field", "population")
                                put("modifier", "ln2p")
                                put("missing", 500)
                            }
                        }
                    }
                }
            }
        }
        return searchCities(body, size = 10)
    }

    /** The city whose shape contains [point], else the one with the nearest centroid. */
    suspend fun getCityByCoordinates(point: Coordinates, featuredOnly: Boolean): ElasticCity =
        getIntersectingCity(point, featuredOnly) ?: getClosestCity(point, featuredOnly)

    /** The city whose centroid is nearest to [point]. */
    suspend fun getClosestCity(point: Coordinates, featuredOnly: Boolean): ElasticCity {
        val body = buildJsonObject {
            put("query", featuredFilter(featuredOnly))
            putJsonObject("sort") {
                putJsonObject("_geo_distance") {
                    putJsonObject("centroid") {
                        put("lat", point.lat)
                        put("lon", point.lon)
                    }
                }
            }
        }
        return searchCities(body, size = 1).firstOrNull()
            ?: throw IllegalStateException("no city found near $point")
    }

    private suspend fun getIntersectingCity(point: Coordinates, featuredOnly: Boolean): ElasticCity? {
        val body = buildJsonObject {
            putJsonObject("query") {
                putJsonObject("bool") {
                    putJsonArray("filter") {
                        addJsonObject {
                            putJsonObject("geo_shape") {
                                putJsonObject("geometry") {
                                    putJsonObject("shape") {
                                        put("type", "Point")
                                        // GeoJSON order is [lon, lat].
                                        putJsonArray("coordinates") {
                                            add(point.lon)
                                            add(point.lat)
                                        }
                                    }
                                }
                            }
                        }
                        if (featuredOnly) add(featuredFilter(true))
                    }
                }
            }
        }
        return searchCities(body, size = 1).firstOrNull()
    }

    private fun featuredFilter(featuredOnly: Boolean): JsonObject = buildJsonObject {
        if (featuredOnly) {
            putJsonObject("term") { put("isFeatured", true) }
        } else {
            putJsonObject("match_all") {}
        }
    }

    private suspend inline fun <reified T> getSource(index: String, id: String, entity: String): T {
        val response = client.get("$index/_source/$id") { parameter("_source_excludes", EXCLUDED_FIELDS) }
        if (response.status == HttpStatusCode.NotFound) throw ApiException(404, "$entity#$id not found.")
        ensureSuccess(response, "GET $index/$id")
        return response.body()
    }

    private suspend fun searchCities(body: JsonObject, size: Int): List<ElasticCity> {
        val response = client.post("$CITY_INDEX/_search") {
            parameter("_source_excludes", EXCLUDED_FIELDS)
            parameter("size", size)
            contentType(ContentType.Application.Json)
            setBody(body)
        }
        ensureSuccess(response, "search $body")
        return response.body<SearchResponse<ElasticCity>>().hits.hits.map { it.source }
    }

    private suspend fun ensureSuccess(response: HttpResponse, what: String) {
        if (!response.status.isSuccess()) {
            log.error("Store failed on {}: {} {}", what, response.status, response.bodyAsText())
            throw IllegalStateException("store answered ${response.status}")
        }
    }
}

package locations

import com.fasterxml.jackson.databind.JsonNode
import org.http4k.core.ContentType
import org.http4k.core.HttpHandler
import org.http4k.core.Method.GET
import org.http4k.core.Method.POST
import org.http4k.core.Request
import org.http4k.core.Response
import org.http4k.core.Status
import org.http4k.core.with
import org.http4k.format.Jackson
import org.http4k.lens.Header
import org.slf4j.LoggerFactory
import java.util.concurrent.ConcurrentHashMap

private const val CITY_INDEX = "city"
private const val REGION_INDEX = "region"

// The geometry is big and used only inside the store; population only for store-side sorting/scoring.
private const val EXCLUDED_FIELDS = "geometry,population"

/** Cities and regions in the document store, reached over its REST API with a blocking client. */
class LocationsRepository(private val store: HttpHandler) {
    private val log = LoggerFactory.getLogger(LocationsRepository::class.java)

    // There are only tens of regions, so they are kept forever once fetched.
    private val regionCache = ConcurrentHashMap<Long, ElasticRegion>()

    /** One round trip to check that the store answers (used at start-up). */
    fun ping() {
        val response = store(Request(GET, "/"))
        check(response.status.successful) { "store answered ${response.status}: ${response.bodyString().take(200)}" }
    }

    fun getCity(id: ULong): ElasticCity = getSource(CITY_INDEX, id.toString(), "City")

    fun getRegion(id: Long): ElasticRegion =
        regionCache[id] ?: getSource<ElasticRegion>(REGION_INDEX, id.toString(), "Region")
            .also { regionCache[id] = it }

    /** All featured cities, by country and then by population, biggest first. */
    fun getFeaturedCities(): List<ElasticCity> = with(Jackson) {
        searchCities(
            obj(
                "query" to obj("term" to obj("isFeatured" to boolean(true))),
                "sort" to array(listOf(string("countryIso"), obj("population" to string("desc")))),
            ),
            size = 1000,
        )
    }

    /** Up to 10 cities whose names start with the words of [query], best first. */
    fun search(query: String, language: Language, countryIso: String?): List<ElasticCity> = with(Jackson) {
        val nameKey = "name.${language.code}"
        // Boosts: the requested language with accents counts most, then accent-folded, then any
        // language, then any language accent-folded. Each field has 2- and 3-word shingles.
        val fields = listOf(
            "$nameKey.autocomplete" to 8,
            "$nameKey.autocomplete_ascii" to 4,
            "name.all.autocomplete" to 2,
            "name.all.autocomplete_ascii" to 1,
        ).flatMap { (field, boost) -> listOf("", "._2gram", "._3gram").map { string("$field$it^$boost") } }
        val filter = listOfNotNull(countryIso?.let { obj("term" to obj("countryIso" to string(it))) })

        searchCities(
            obj(
                "query" to obj(
                    "function_score" to obj(
                        "query" to obj(
                            "bool" to obj(
                                "must" to obj(
                                    "multi_match" to obj(
                                        "query" to string(query),
                                        "type" to string("bool_prefix"),
                                        "fields" to array(fields),
                                    ),
                                ),
                                "filter" to array(filter),
                            ),
                        ),
                        // People perceive size logarithmically; ln(2 + x) keeps the factor positive.
                        "functions" to array(
                            listOf(
                                obj(
                                    "field_value_factor" to obj(
                                        "field" to string("population"),
                                        "modifier" to string("ln2p"),
                                        "missing" to number(500),
                                    ),
                                ),
                            ),
                        ),
                    ),
                ),
            ),
            size = 10,
        )
    }

    /** The city whose shape contains [point], else the one with the nearest centroid. */
    fun getCityByCoordinates(point: Coordinates, featuredOnly: Boolean): ElasticCity =
        getIntersectingCity(point, featuredOnly) ?: getClosestCity(point, featuredOnly)

    /** The city whose centroid is nearest to [point]. */
    fun getClosestCity(point: Coordinates, featuredOnly: Boolean): ElasticCity = with(Jackson) {
        val body = obj(
            "query" to featuredFilter(featuredOnly),
            "sort" to obj("_geo_distance" to obj("centroid" to obj("lat" to number(point.lat), "lon" to number(point.lon)))),
        )
        searchCities(body, size = 1).firstOrNull() ?: throw IllegalStateException("no city found near $point")
    }

    private fun getIntersectingCity(point: Coordinates, featuredOnly: Boolean): ElasticCity? = with(Jackson) {
        // GeoJSON order is [lon, lat].
        val shape = obj("type" to string("Point"), "coordinates" to array(listOf(number(point.lon), number(point.lat))))
        val filters = listOfNotNull(
            obj("geo_shape" to obj("geometry" to obj("shape" to shape))),
            if (featuredOnly) featuredFilter(true) else null,
        )
        searchCities(obj("query" to obj("bool" to obj("filter" to array(filters)))), size = 1).firstOrNull()
    }

    private fun featuredFilter(featuredOnly: Boolean): JsonNode = with(Jackson) {
        if (featuredOnly) obj("term" to obj("isFeatured" to boolean(true))) else obj("match_all" to obj())
    }

    private inline fun <reified T : Any> getSource(index: String, id: String, entity: String): T {
        val response = store(Request(GET, "/$index/_source/$id").query("_source_excludes", EXCLUDED_FIELDS))
        if (response.status == Status.NOT_FOUND) throw ApiException(Status.NOT_FOUND, "$entity#$id not found.")
        ensureSuccess(response, "GET $index/$id")
        return Jackson.asA(response.bodyString(), T::class)
    }

    private fun searchCities(body: JsonNode, size: Int): List<ElasticCity> {
        val request = Request(POST, "/$CITY_INDEX/_search")
            .query("_source_excludes", EXCLUDED_FIELDS)
            .query("size", size.toString())
            .with(Header.CONTENT_TYPE of ContentType.APPLICATION_JSON)
            .body(Jackson.asFormatString(body))
        val response = store(request)
        ensureSuccess(response, "search $body")
        return Jackson.asA(response.bodyString(), CitySearchResponse::class).hits.hits.map { it.source }
    }

    private fun ensureSuccess(response: Response, what: String) {
        if (!response.status.successful) {
            log.error("Store failed on {}: {} {}", what, response.status, response.bodyString())
            throw IllegalStateException("store answered ${response.status}")
        }
    }
}

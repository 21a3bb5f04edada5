package locations

import org.http4k.contract.ErrorResponseRenderer
import org.http4k.contract.RouteMetaDsl
import org.http4k.contract.Tag
import org.http4k.contract.contract
import org.http4k.contract.meta
import org.http4k.contract.openapi.ApiInfo
import org.http4k.contract.openapi.ApiRenderer
import org.http4k.contract.openapi.OpenAPIJackson
import org.http4k.contract.openapi.v3.AutoJsonToJsonSchema
import org.http4k.contract.openapi.v3.OpenApi3
import org.http4k.core.Body
import org.http4k.core.Filter
import org.http4k.core.HttpHandler
import org.http4k.core.Method.GET
import org.http4k.core.Method.OPTIONS
import org.http4k.core.Request
import org.http4k.core.Response
import org.http4k.core.Status
import org.http4k.core.Status.Companion.BAD_REQUEST
import org.http4k.core.Status.Companion.INTERNAL_SERVER_ERROR
import org.http4k.core.Status.Companion.NOT_FOUND
import org.http4k.core.Status.Companion.OK
import org.http4k.core.then
import org.http4k.core.with
import org.http4k.filter.ResponseFilters
import org.http4k.filter.ServerFilters
import org.http4k.format.Jackson
import org.http4k.format.Jackson.auto
import org.http4k.lens.Failure
import org.http4k.lens.Header
import org.http4k.lens.Lens
import org.http4k.lens.LensExtractor
import org.http4k.lens.LensFailure
import org.http4k.lens.Query
import org.http4k.lens.double
import org.http4k.lens.ParamMeta
import org.http4k.lens.Validator
import org.http4k.routing.RouterMatch
import org.http4k.routing.RoutingHttpHandler
import org.http4k.routing.bind
import org.http4k.routing.routes
import org.slf4j.LoggerFactory

private val log = LoggerFactory.getLogger("locations")

private val cityBody = Body.auto<CityResponse>().toLens()
private val multiCityBody = Body.auto<MultiCityResponse>().toLens()
private val errorBody = Body.auto<ErrorResponse>().toLens()

private val languageQuery = Query.map(Language::fromCode, Language::code)
    .required("language", "Response language: one of cs, de, en, pl, sk.")
// Ids are unsigned 64-bit, beyond Query.long(); documented as an integer all the same.
private val idQuery = Query.mapWithNewMeta(String::toULong, ULong::toString, ParamMeta.IntegerParam)
    .required("id", "Id of the city, an unsigned integer.")
private val searchQuery = Query.map({ it.also { require(it.isNotBlank()) { "blank query" } } }, { it })
    .required("query", "The search query, prefixes of the city's name words; must not be empty.")
private val countryIsoQuery = Query.optional("countryIso", "ISO 3166-1 alpha-2 country code to limit the search to.")
private val latQuery = Query.double().optional("lat", "Latitude in decimal degrees, within [-90, 90].")
private val lonQuery = Query.double().optional("lon", "Longitude in decimal degrees, within [-180, 180].")
// Plain strings: a malformed geo-IP header means "location unknown", not a bad request.
private val geoLatHeader = Header.optional("Fastly-Geo-Lat", "Geo-IP latitude, used when lat/lon are absent.")
private val geoLonHeader = Header.optional("Fastly-Geo-Lon", "Geo-IP longitude, used when lat/lon are absent.")

private val cityTag = Tag("city", "Cities, localized to the requested language.")

private val exampleCity = CityResponse(101748111, true, "CZ", "Plzeň", "Plzeňský kraj")

/** Names this process's server backend and contract mode on every answer (`X-Server-Backend`, `X-Server-Contract`). */
private fun serverIdentity(backend: String, contract: Boolean): Filter {
    val contractMode = if (contract) "on" else "off"
    return Filter { next -> { request -> next(request).header("X-Server-Backend", backend).header("X-Server-Contract", contractMode) } }
}

/**
 * The whole HTTP application: identity headers, request log, JSON errors, and the five endpoints, routed
 * either through the documented http4k contract ([contract] true) or through plain http4k `routes(...)`.
 */
fun locationsApp(repository: LocationsRepository, backend: String, contract: Boolean): HttpHandler {
    val endpoints = cityEndpoints(repository)
    return serverIdentity(backend, contract)
        .then(
            ResponseFilters.ReportHttpTransaction { tx ->
                log.info("{} {} {} {}ms", tx.request.method, tx.request.uri, tx.response.status.code, tx.duration.toMillis())
            },
        )
        .then(ServerFilters.CatchAll(::errorFor))
        .then(jsonErrorsForBareStatuses)
        .then(if (contract) cityContract(endpoints) else plainRoutes(endpoints))
}

/**
 * One endpoint, written once for both routings: its path, the parameters checked before [handler] runs
 * (all of them, so that every problem is reported at once), and its OpenAPI description.
 */
private class Endpoint(
    val path: String,
    val queries: List<Lens<Request, *>>,
    val headers: List<Lens<Request, *>> = emptyList(),
    val describe: RouteMetaDsl.() -> Unit,
    val handler: HttpHandler,
)

private fun cityContract(endpoints: List<Endpoint>): RoutingHttpHandler = contract {
    // OpenAPIJackson leaves out null fields, which the plain Jackson would render into the schemas.
    renderer = OpenApi3(
        ApiInfo("Locations", "1.0.0", "Cities and their regions, localized."),
        OpenAPIJackson,
        apiRenderer = ApiRenderer.Auto(OpenAPIJackson, AutoJsonToJsonSchema(OpenAPIJackson)),
        errorResponseRenderer = JsonMessageErrorRenderer,
    )
    descriptionPath = API_DOCS_PATH
    routes += endpoints.map { endpoint ->
        endpoint.path meta {
            endpoint.describe(this)
            queries += endpoint.queries
            headers += endpoint.headers
        } bindContract GET to endpoint.handler
    }
}

/**
 * Contract-less: the same endpoints on plain http4k `routes(...)`, no contract layer on the request path.
 * What the contract did for these routes is kept, so that every answer stays the same: the declared
 * parameters are all checked before the handler runs (one 400 naming every failure, same message), any
 * request no route takes (unknown path or another method) gets the contract's 404, `OPTIONS` on a route
 * answers 200 with no body, and `/api-docs` serves the OpenAPI document that the contract rendered once
 * at start-up (byte for byte the contract's own answer).
 */
private fun plainRoutes(endpoints: List<Endpoint>): HttpHandler {
    val apiDocs = cityContract(endpoints)(Request(GET, API_DOCS_PATH))
    check(apiDocs.status == OK) { "rendering the OpenAPI document failed: ${apiDocs.status}" }
    val apiDocsBody = apiDocs.bodyString()
    val apiDocsHeaders = apiDocs.headers
    val preFlight: HttpHandler = { Response(OK) }

    val router = routes(
        *endpoints.flatMap {
            listOf(it.path bind GET to checkedParameters(it).then(it.handler), it.path bind OPTIONS to preFlight)
        }.toTypedArray(),
        API_DOCS_PATH bind GET to { Response(OK).headers(apiDocsHeaders).body(apiDocsBody) },
        API_DOCS_PATH bind OPTIONS to preFlight,
    )
    return ServerFilters.CatchLensFailure(JsonMessageErrorRenderer::badRequest).then { request ->
        when (val match = router.match(request)) {
            is RouterMatch.MatchingHandler -> match(request)
            else -> JsonMessageErrorRenderer.notFound()
        }
    }
}

/** Extracts every declared lens before the handler runs, as the contract's pre-flight check does. */
private fun checkedParameters(endpoint: Endpoint): Filter {
    val lenses: List<LensExtractor<Request, *>> = endpoint.queries + endpoint.headers
    return Filter { next ->
        { request ->
            // Throws one LensFailure naming every failing parameter.
            Validator.Strict(request, lenses)
            next(request)
        }
    }
}

private const val API_DOCS_PATH = "/api-docs"

private fun cityEndpoints(repository: LocationsRepository): List<Endpoint> = listOf(
    Endpoint(
        "/city/v1/get",
        queries = listOf(idQuery, languageQuery),
        describe = {
            summary = "Get city of given id localized to given language."
            tags += cityTag
            returning(OK, cityBody to exampleCity)
            returning(NOT_FOUND to "City of given id does not exist.")
        },
    ) { request ->
        val city = repository.getCity(idQuery(request))
        Response(OK).with(cityBody of repository.toResponse(city, languageQuery(request)))
    },
    Endpoint(
        "/city/v1/featured",
        queries = listOf(languageQuery),
        describe = {
            summary = "All featured cities; those of the language's home country first."
            tags += cityTag
            returning(OK, multiCityBody to MultiCityResponse(listOf(exampleCity)))
        },
    ) { request ->
        val language = languageQuery(request)
        // The store sorts by country and population; the home country then moves to the front.
        val cities = repository.getFeaturedCities().sortedByDescending { it.countryIso == language.homeCountryIso }
        Response(OK).with(multiCityBody of repository.toResponse(cities, language))
    },
    Endpoint(
        "/city/v1/search",
        queries = listOf(searchQuery, languageQuery, countryIsoQuery),
        describe = {
            summary = "Up to 10 cities whose names start with the query's words."
            tags += cityTag
            returning(OK, multiCityBody to MultiCityResponse(listOf(exampleCity)))
        },
    ) { request ->
        val language = languageQuery(request)
        val countryIso = countryIsoQuery(request)?.takeIf { it.isNotEmpty() }
        val cities = repository.search(searchQuery(request), language, countryIso)
        Response(OK).with(multiCityBody of repository.toResponse(cities, language))
    },
    Endpoint(
        "/city/v1/closest",
        queries = listOf(latQuery, lonQuery, languageQuery),
        headers = listOf(geoLatHeader, geoLonHeader),
        describe = {
            summary = "The city at or closest to the coordinates; without them, the featured city closest to the " +
                "caller's geo-IP location, else a default city of the language."
            tags += cityTag
            returning(OK, cityBody to exampleCity)
            returning(BAD_REQUEST to "Only one of lat and lon given, or one is out of bounds.")
        },
    ) { request ->
        val language = languageQuery(request)
        val point = requestedCoordinates(latQuery(request), lonQuery(request))
        val geoIp = geoIpCoordinates(geoLatHeader(request), geoLonHeader(request))
        val city = when {
            point != null -> repository.getCityByCoordinates(point, featuredOnly = false)
            geoIp != null -> repository.getCityByCoordinates(geoIp, featuredOnly = true)
            else -> repository.getCity(language.defaultCityId)
        }
        Response(OK).with(cityBody of repository.toResponse(city, language))
    },
    Endpoint(
        "/city/v1/associatedFeatured",
        queries = listOf(idQuery, languageQuery),
        describe = {
            summary = "The city itself if featured, else the featured city closest to it."
            tags += cityTag
            returning(OK, cityBody to exampleCity)
            returning(NOT_FOUND to "City of given id does not exist.")
        },
    ) { request ->
        val city = repository.getCity(idQuery(request)).let {
            if (it.isFeatured) it else repository.getClosestCity(it.centroid, featuredOnly = true)
        }
        Response(OK).with(cityBody of repository.toResponse(city, languageQuery(request)))
    },
)

private fun requestedCoordinates(lat: Double?, lon: Double?): Coordinates? = when {
    lat == null && lon == null -> null
    lat == null || lon == null -> throw ApiException(BAD_REQUEST, "Either both or none of 'lat' and 'lon' expected.")
    lat !in -90.0..90.0 -> throw ApiException(BAD_REQUEST, "Query parameter 'lat' must be within [-90, 90]; got $lat.")
    lon !in -180.0..180.0 -> throw ApiException(BAD_REQUEST, "Query parameter 'lon' must be within [-180, 180]; got $lon.")
    else -> Coordinates(lat, lon)
}

/** Geo-IP location set by the CDN; it sends 0,0 when it cannot tell. */
private fun geoIpCoordinates(latHeader: String?, lonHeader: String?): Coordinates? {
    val lat = latHeader?.toDoubleOrNull() ?: return null
    val lon = lonHeader?.toDoubleOrNull() ?: return null
    if (lat == 0.0 && lon == 0.0) return null
    if (lat !in -90.0..90.0 || lon !in -180.0..180.0) return null
    return Coordinates(lat, lon)
}

private fun LocationsRepository.toResponse(city: ElasticCity, language: Language): CityResponse {
    val region = getRegion(city.regionId)
    return CityResponse(
        id = city.id,
        isFeatured = city.isFeatured,
        countryIso = city.countryIso,
        name = city.name(language) ?: error("City#${city.id} has no name in ${language.code}"),
        regionName = region.name(language) ?: error("Region#${region.id} has no name in ${language.code}"),
    )
}

private fun LocationsRepository.toResponse(cities: List<ElasticCity>, language: Language) =
    MultiCityResponse(cities.map { toResponse(it, language) })

private fun errorResponse(status: Status, message: String) = Response(status).with(errorBody of ErrorResponse(message))

private fun errorFor(e: Throwable): Response = when (e) {
    is ApiException -> errorResponse(e.status, e.message)
    else -> {
        log.error("Request failed", e)
        errorResponse(INTERNAL_SERVER_ERROR, "Internal error: ${e.message}")
    }
}

/** Errors raised by the contract itself (bad parameters, unknown paths), in the API's format. */
private object JsonMessageErrorRenderer : ErrorResponseRenderer {
    override fun badRequest(lensFailure: LensFailure): Response =
        errorResponse(BAD_REQUEST, lensFailure.failures.joinToString(" ", transform = ::describe))

    override fun notFound(): Response = errorResponse(NOT_FOUND, "No such endpoint.")

    private fun describe(failure: Failure): String {
        val meta = failure.meta
        val problem = when (failure.type) {
            Failure.Type.Missing -> "is required"
            Failure.Type.Invalid -> "is invalid"
            Failure.Type.Unsupported -> "is unsupported"
        }
        // Descriptions are full sentences, e.g. "Id of the city, an unsigned integer."
        return "${meta.location.replaceFirstChar(Char::uppercase)} parameter '${meta.name}' $problem" +
            (meta.description?.let { ": $it" } ?: ".")
    }
}

/** Safety net: any error status without a body (e.g. a wrong method) still gets a JSON message. */
private val jsonErrorsForBareStatuses = Filter { next ->
    { request ->
        val response = next(request)
        if (response.status.code >= 400 && response.body.length == 0L) {
            errorResponse(response.status, "${response.status.description}: ${request.method} ${request.uri.path}")
        } else {
            response
        }
    }
}

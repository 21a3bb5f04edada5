package locations

import org.http4k.contract.ContractRoute
import org.http4k.contract.Tag
import org.http4k.contract.ErrorResponseRenderer
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
import org.http4k.lens.LensFailure
import org.http4k.lens.Query
import org.http4k.lens.double
import org.http4k.lens.ParamMeta
import org.http4k.routing.RoutingHttpHandler
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

/** The whole HTTP application: request log, JSON errors, and the documented contract. */
fun locationsApp(repository: LocationsRepository): HttpHandler =
    ResponseFilters.ReportHttpTransaction { tx ->
        log.info("{} {} {} {}ms", tx.request.method, tx.request.uri, tx.response.status.code, tx.duration.toMillis())
    }
        .then(ServerFilters.CatchAll(::errorFor))
        .then(jsonErrorsForBareStatuses)
        .then(cityContract(repository))

private fun cityContract(repository: LocationsRepository): RoutingHttpHandler = contract {
    // OpenAPIJackson leaves out null fields, which the plain Jackson would render into the schemas.
    renderer = OpenApi3(
        ApiInfo("Locations", "1.0.0", "Cities and their regions, localized."),
        OpenAPIJackson,
        apiRenderer = ApiRenderer.Auto(OpenAPIJackson, AutoJsonToJsonSchema(OpenAPIJackson)),
        errorResponseRenderer = JsonMessageErrorRenderer,
    )
    descriptionPath = "/api-docs"
    routes += listOf(
        getRoute(repository),
        featuredRoute(repository),
        searchRoute(repository),
        closestRoute(repository),
        associatedFeaturedRoute(repository),
    )
}

private fun getRoute(repository: LocationsRepository): ContractRoute = "/city/v1/get" meta {
    summary = "Get city of given id localized to given language."
    tags += cityTag
    queries += listOf(idQuery, languageQuery)
    returning(OK, cityBody to exampleCity)
    returning(NOT_FOUND to "City of given id does not exist.")
} bindContract GET to { request: Request ->
    val city = repository.getCity(idQuery(request))
    Response(OK).with(cityBody of repository.toResponse(city, languageQuery(request)))
}

private fun featuredRoute(repository: LocationsRepository): ContractRoute = "/city/v1/featured" meta {
    summary = "All featured cities; those of the language's home country first."
    tags += cityTag
    queries += languageQuery
    returning(OK, multiCityBody to MultiCityResponse(listOf(exampleCity)))
} bindContract GET to { request: Request ->
    val language = languageQuery(request)
    // The store sorts by country and population; the home country then moves to the front.
    val cities = repository.getFeaturedCities().sortedByDescending { it.countryIso == language.homeCountryIso }
    Response(OK).with(multiCityBody of repository.toResponse(cities, language))
}

private fun searchRoute(repository: LocationsRepository): ContractRoute = "/city/v1/search" meta {
    summary = "Up to 10 cities whose names start with the query's words."
    tags += cityTag
    queries += listOf(searchQuery, languageQuery, countryIsoQuery)
    returning(OK, multiCityBody to MultiCityResponse(listOf(exampleCity)))
} bindContract GET to { request: Request ->
    val language = languageQuery(request)
    val countryIso = countryIsoQuery(request)?.takeIf { it.isNotEmpty() }
    val cities = repository.search(searchQuery(request), language, countryIso)
    Response(OK).with(multiCityBody of repository.toResponse(cities, language))
}

private fun closestRoute(repository: LocationsRepository): ContractRoute = "/city/v1/closest" meta {
    summary = "The city at or closest to the coordinates; without them, the featured city closest to the " +
        "caller's geo-IP location, else a default city of the language."
    tags += cityTag
    queries += listOf(latQuery, lonQuery, languageQuery)
    headers += listOf(geoLatHeader, geoLonHeader)
    returning(OK, cityBody to exampleCity)
    returning(BAD_REQUEST to "Only one of lat and lon given, or one is out of bounds.")
} bindContract GET to { request: Request ->
    val language = languageQuery(request)
    val point = requestedCoordinates(latQuery(request), lonQuery(request))
    val geoIp = geoIpCoordinates(geoLatHeader(request), geoLonHeader(request))
    val city = when {
        point != null -> repository.getCityByCoordinates(point, featuredOnly = false)
        geoIp != null -> repository.getCityByCoordinates(geoIp, featuredOnly = true)
        else -> repository.getCity(language.defaultCityId)
    }
    Response(OK).with(cityBody of repository.toResponse(city, language))
}

private fun associatedFeaturedRoute(repository: LocationsRepository): ContractRoute =
    "/city/v1/associatedFeatured" meta {
        summary = "The city itself if featured, else the featured city closest to it."
        tags += cityTag
        queries += listOf(idQuery, languageQuery)
        returning(OK, cityBody to exampleCity)
        returning(NOT_FOUND to "City of given id does not exist.")
    } bindContract GET to { request: Request ->
        val city = repository.getCity(idQuery(request)).let {
            if (it.isFeatured) it else repository.getClosestCity(it.centroid, featuredOnly = true)
        }
        Response(OK).with(cityBody of repository.toResponse(city, languageQuery(request)))
    }

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

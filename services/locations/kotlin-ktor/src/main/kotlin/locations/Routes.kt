package locations

import io.ktor.http.ContentType
import io.ktor.http.Parameters
import io.ktor.server.application.ApplicationCall
import io.ktor.server.request.httpMethod
import io.ktor.server.request.path
import io.ktor.server.response.respond
import io.ktor.server.response.respondText
import io.ktor.server.routing.Route
import io.ktor.server.routing.get
import io.ktor.server.routing.route
import kotlinx.coroutines.async
import kotlinx.coroutines.awaitAll
import kotlinx.coroutines.coroutineScope

fun Route.cityRoutes(repository: LocationsRepository) {
    route("/city/v1") {
        get("/get") {
            val params = call.queryParameters
            val language = params.language()
            val city = repository.getCity(params.id())
            call.respond(repository.toResponse(city, language))
        }

        get("/featured") {
            val language = call.queryParameters.language()
            // The store sorts by country and population; the home country then moves to the front.
            val cities = repository.getFeaturedCities()
                .sortedByDescending { it.countryIso == language.homeCountryIso }
            call.respond(repository.toResponse(cities, language))
        }

        get("/search") {
            val params = call.queryParameters
            val language = params.language()
            val query = params["query"]
            if (query.isNullOrBlank()) throw ApiException(400, "Query parameter 'query' is required and must not be empty.")
            val countryIso = params["countryIso"]?.takeIf { it.isNotEmpty() }
            val cities = repository.search(query, language, countryIso)
            call.respond(repository.toResponse(cities, language))
        }

        get("/closest") {
            val params = call.queryParameters
            val language = params.language()
            val point = params.coordinates()
            val city = when {
                point != null -> repository.getCityByCoordinates(point, featuredOnly = false)
                else -> {
                    val geoIp = call.fastlyGeoCoordinates()
                    if (geoIp != null) {
                        repository.getCityByCoordinates(geoIp, featuredOnly = true)
                    } else {
                        repository.getCity(language.defaultCityId)
                    }
                }
            }
            call.respond(repository.toResponse(city, language))
        }

        get("/associatedFeatured") {
            val params = call.queryParameters
            val language = params.language()
            val city = repository.getCity(params.id()).let {
                if (it.isFeatured) it else repository.getClosestCity(it.centroid, featuredOnly = true)
            }
            call.respond(repository.toResponse(city, language))
        }
    }
}

fun Route.apiDocsRoute() {
    val document = object {}.javaClass.getResource("/openapi.json")!!.readText()
    get("/api-docs") { call.respondText(document, ContentType.Application.Json) }
}

/** Anything no other route took: answer 404 in the API's error format. */
fun Route.fallbackRoute() {
    route("{...}") {
        handle {
            throw ApiException(404, "No such endpoint: ${call.request.httpMethod.value} ${call.request.path()}")
        }
    }
}

private suspend fun LocationsRepository.toResponse(city: ElasticCity, language: Language): CityResponse {
    val region = getRegion(city.regionId)
    return CityResponse(
        id = city.id,
        isFeatured = city.isFeatured,
        countryIso = city.countryIso,
        name = city.name(language) ?: error("City#${city.id} has no name in ${language.code}"),
        regionName = region.name(language) ?: error("Region#${region.id} has no name in ${language.code}"),
    )
}

private suspend fun LocationsRepository.toResponse(cities: List<ElasticCity>, language: Language) =
    coroutineScope {
        // Regions are usually cached; the few that are not are fetched in parallel.
        MultiCityResponse(cities.map { async { toResponse(it, language) } }.awaitAll())
    }

private fun Parameters.language(): Language {
    val code = this["language"] ?: throw ApiException(400, "Query parameter 'language' is required.")
    return Language.fromCode(code)
        ?: throw ApiException(400, "Query parameter 'language' must be one of cs, de, en, pl, sk; got '$code'.")
}

private fun Parameters.id(): ULong {
    val raw = this["id"] ?: throw ApiException(400, "Query parameter 'id' is required.")
    return raw.toULongOrNull()
        ?: throw ApiException(400, "Query parameter 'id' must be an unsigned integer; got '$raw'.")
}

private fun Parameters.coordinates(): Coordinates? {
    val lat = optionalDouble("lat")
    val lon = optionalDouble("lon")
    return when {
        lat == null && lon == null -> null
        lat == null || lon == null -> throw ApiException(400, "Either both or none of 'lat' and 'lon' expected.")
        lat !in -90.0..90.0 -> throw ApiException(400, "Query parameter 'lat' must be within [-90, 90]; got $lat.")
        lon !in -180.0..180.0 -> throw ApiException(400, "Query parameter 'lon' must be within [-180, 180]; got $lon.")
        else -> Coordinates(lat, lon)
    }
}

private fun Parameters.optionalDouble(name: String): Double? {
    val raw = this[name] ?: return null
    return raw.toDoubleOrNull()
        ?: throw ApiException(400, "Query parameter '$name' must be a decimal number; got '$raw'.")
}

/** Geo-IP location set by the CDN; it sends 0,0 when it cannot tell. */
private fun ApplicationCall.fastlyGeoCoordinates(): Coordinates? {
    val lat = request.headers["Fastly-Geo-Lat"]?.toDoubleOrNull() ?: return null
    val lon = request.headers["Fastly-Geo-Lon"]?.toDoubleOrNull() ?: return null
    if (lat == 0.0 && lon == 0.0) return null
    if (lat !in -90.0..90.0 || lon !in -180.0..180.0) return null
    return Coordinates(lat, lon)
}

package locations

import io.ktor.client.HttpClient
import io.ktor.client.engine.cio.CIO
import io.ktor.client.engine.cio.endpoint
import io.ktor.client.plugins.HttpTimeout
import io.ktor.client.plugins.defaultRequest
import io.ktor.http.HttpStatusCode
import io.ktor.http.URLDecodeException
import io.ktor.serialization.kotlinx.json.json
import io.ktor.server.application.Application
import io.ktor.server.application.install
import io.ktor.server.plugins.BadRequestException
import io.ktor.server.plugins.calllogging.CallLogging
import io.ktor.server.plugins.calllogging.processingTimeMillis
import io.ktor.server.plugins.contentnegotiation.ContentNegotiation
import io.ktor.server.plugins.statuspages.StatusPages
import io.ktor.server.request.httpMethod
import io.ktor.server.request.uri
import io.ktor.server.response.respond
import io.ktor.server.routing.routing
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.json.Json
import org.slf4j.LoggerFactory
import org.slf4j.event.Level
import sun.misc.Signal
import java.util.concurrent.CountDownLatch
import kotlin.system.exitProcess
import io.ktor.client.plugins.contentnegotiation.ContentNegotiation as ClientContentNegotiation

private val log = LoggerFactory.getLogger("locations")

fun main() {
    // First, so that a wrong engine name is refused before anything else is tried.
    val engine = ServerEngine.parse(System.getenv(ServerEngine.VARIABLE)).getOrElse { fail(it.message!!) }
    val elasticUrl = System.getenv("ELASTIC_URL")?.takeIf { it.isNotBlank() }
        ?: fail("ELASTIC_URL is not set")
    val port = System.getenv("PORT")?.toIntOrNull() ?: 8080
    // svcbench's {host}; loopback when unset, never every interface by default.
    val host = System.getenv("HOST")?.takeIf { it.isNotBlank() } ?: "127.0.0.1"

    val client = storeClient(elasticUrl)
    val repository = LocationsRepository(client)
    // Never serve without a store: one round trip before listening.
    try {
        runBlocking { withTimeout(10_000) { repository.ping() } }
    } catch (e: Exception) {
        client.close()
        fail("store at $elasticUrl is not reachable: $e")
    }

    // Handle SIGTERM ourselves: the JVM's default handler would exit with 143 instead of 0.
    // Installed before listening, so that no signal can slip past it.
    val stopRequested = CountDownLatch(1)
    for (signal in listOf("TERM", "INT")) Signal.handle(Signal(signal)) { stopRequested.countDown() }

    val inFlightCalls = InFlightCalls()
    val server = engine.server(host, port) { module(repository, inFlightCalls, engine) }
    server.start(wait = false)
    log.info(
        "locations-ktor listening on {}:{} (engine={}, Ktor {}), store {}",
        host, port, engine.id, KTOR_RELEASE, elasticUrl,
    )

    stopRequested.await()

    log.info("Stopping: finishing in-flight requests")
    inFlightCalls.drain(timeoutMillis = 8_000)
    server.stop(gracePeriodMillis = 200, timeoutMillis = 3_000)
    client.close()
    log.info("Stopped")
    exitProcess(0)
}

fun Application.module(repository: LocationsRepository, inFlightCalls: InFlightCalls, engine: ServerEngine) {
    // First, so that every answer names the engine, the error answers and the 503 while draining included.
    install(serverEngineHeader(engine))
    install(ContentNegotiation) { json() }
    install(CallLogging) {
        level = Level.INFO
        format { call ->
            "${call.request.httpMethod.value} ${call.request.uri} ${call.response.status()?.value} " +
                "${call.processingTimeMillis()}ms"
        }
    }
    install(StatusPages) {
        exception<ApiException> { call, e -> call.respond(HttpStatusCode.fromValue(e.status), ErrorResponse(e.message)) }
        exception<BadRequestException> { call, e ->
            call.respond(HttpStatusCode.BadRequest, ErrorResponse(e.message ?: "Bad request."))
        }
        // A malformed %-escape in the query: Netty's engine reports it as a BadRequestException, CIO's
        // lets the decoder's own exception through; both are the client's error.
        exception<URLDecodeException> { call, e ->
            call.respond(HttpStatusCode.BadRequest, ErrorResponse("Malformed URL: ${e.message}"))
        }
        exception<Throwable> { call, e ->
            log.error("Request {} failed", call.request.uri, e)
            call.respond(HttpStatusCode.InternalServerError, ErrorResponse("Internal error: ${e.message}"))
        }
    }
    // After StatusPages, so that its 503 while draining is answered in the API's error format.
    install(inFlightCalls.plugin)
    routing {
        cityRoutes(repository)
        apiDocsRoute()
        fallbackRoute()
    }
}

private fun storeClient(elasticUrl: String) = HttpClient(CIO) {
    expectSuccess = false
    engine {
        // Every request in flight holds one store connection; allow plenty of them.
        maxConnectionsCount = 1024
        endpoint {
            maxConnectionsPerRoute = 1024
            connectTimeout = 2_000
        }
    }
    install(HttpTimeout) { requestTimeoutMillis = 10_000 }
    install(ClientContentNegotiation) { json(Json { ignoreUnknownKeys = true }) }
    // Trailing slash so that relative request paths keep any path prefix of ELASTIC_URL.
    defaultRequest { url(elasticUrl.trimEnd('/') + "/") }
}

private fun fail(message: String): Nothing {
    log.error("Cannot start: {}", message)
    exitProcess(1)
}

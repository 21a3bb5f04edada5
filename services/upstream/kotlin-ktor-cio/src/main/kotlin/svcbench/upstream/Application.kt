package svcbench.upstream

import io.ktor.client.HttpClient
import io.ktor.client.plugins.HttpTimeout
import io.ktor.client.plugins.ResponseException
import io.ktor.client.request.get
import io.ktor.client.statement.bodyAsText
import io.ktor.http.HttpStatusCode
import io.ktor.serialization.kotlinx.json.json
import io.ktor.server.application.Application
import io.ktor.server.application.ApplicationStopped
import io.ktor.server.application.install
import io.ktor.server.engine.connector
import io.ktor.server.engine.embeddedServer
import io.ktor.server.metrics.micrometer.MicrometerMetrics
import io.ktor.server.plugins.contentnegotiation.ContentNegotiation
import io.ktor.server.plugins.statuspages.StatusPages
import io.ktor.server.response.respond
import io.ktor.server.response.respondText
import io.ktor.server.routing.get
import io.ktor.server.routing.routing
import io.micrometer.prometheusmetrics.PrometheusConfig
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry
import kotlinx.serialization.Serializable
import io.ktor.client.engine.cio.CIO as ClientCIO
import io.ktor.client.engine.cio.endpoint
import io.ktor.server.cio.CIO as ServerCIO

@Serializable
data class ValueResponse(val value: Long)

@Serializable
data class ErrorResponse(val message: String)

class UpstreamException(message: String) : RuntimeException(message)

fun main() {
    val port = System.getenv("PORT")?.toInt() ?: 8080
    // svcbench's {host}; loopback when unset, never every interface by default.
    val host = System.getenv("HOST") ?: "127.0.0.1"
    embeddedServer(ServerCIO, configure = {
        connector {
            this.port = port
            this.host = host
        }
        // Ktor's defaults (1 s grace, 5 s timeout) drop requests still waiting on the upstream
        // at SIGTERM; give them the slowest upstream delay (8 s) to finish.
        shutdownGracePeriod = 9_000
        shutdownTimeout = 12_000
    }, module = Application::module).start(wait = true)
}

fun Application.module() {
    val upstreamUrl = System.getenv("UPSTREAM_URL") ?: "http://127.0.0.1:9100"
    val registry = PrometheusMeterRegistry(PrometheusConfig.DEFAULT)

    // One client for the whole application; expectSuccess turns upstream 4xx/5xx into exceptions.
    // Ktor's defaults unless UPSTREAM_MAX_CONNECTIONS is set: the CIO client engine holds at most 100
    // connections per route, so with a 1 s upstream it cannot call it more than 100 times a second.
    // The pool1000 variant sets 1,000, the adjustment seed 004 made for Vert.x's client.
    val maxConnections = System.getenv("UPSTREAM_MAX_CONNECTIONS")?.toIntOrNull()
    val client = HttpClient(ClientCIO) {
        expectSuccess = true
        if (maxConnections != null) {
            engine {
                maxConnectionsCount = maxOf(maxConnections, maxConnectionsCount)
                endpoint { maxConnectionsPerRoute = maxConnections }
            }
        }
        install(HttpTimeout) {
            // The upstream may take up to 8 s.
            requestTimeoutMillis = 30_000
        }
    }
    monitor.subscribe(ApplicationStopped) { client.close() }

    // Calls the upstream once; any failure becomes an UpstreamException (answered with 502).
    suspend fun fetchValue(): Long {
        val body = try {
            client.get(upstreamUrl).bodyAsText()
        } catch (e: ResponseException) {
            throw UpstreamException("upstream answered ${e.response.status.value}")
        } catch (e: java.io.IOException) {
            throw UpstreamException("upstream unreachable: ${e.message ?: e::class.simpleName}")
        }
        return body.trim().toLongOrNull()
            ?: throw UpstreamException("upstream answered with a non-integer body")
    }

    install(ContentNegotiation) { json() }
    install(MicrometerMetrics) { this.registry = registry }
    install(StatusPages) {
        exception<UpstreamException> { call, cause ->
            call.respond(HttpStatusCode.BadGateway, ErrorResponse(cause.message ?: "upstream failed"))
        }
    }

    routing {
        get("/") {
            call.respond(ValueResponse(fetchValue()))
        }
        get("/metrics") {
            call.respondText(registry.scrape())
        }
    }
}

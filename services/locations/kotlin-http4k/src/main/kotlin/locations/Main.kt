package locations

import org.apache.hc.client5.http.config.ConnectionConfig
import org.apache.hc.client5.http.impl.classic.HttpClients
import org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManagerBuilder
import org.apache.hc.core5.util.Timeout
import org.http4k.client.ApacheClient
import org.http4k.core.Uri
import org.http4k.core.then
import org.http4k.filter.ClientFilters
import org.http4k.server.asServer
import org.slf4j.LoggerFactory
import sun.misc.Signal
import java.util.concurrent.CountDownLatch
import kotlin.system.exitProcess

private val log = LoggerFactory.getLogger("locations")

fun main() {
    // The switches first: a wrong value is refused before anything else happens.
    val backendName = System.getenv("HTTP4K_BACKEND")?.trim()?.takeIf { it.isNotEmpty() } ?: Backend.DEFAULT.id
    val backend = Backend.byId(backendName)
        ?: fail("HTTP4K_BACKEND=$backendName is not a backend; valid values: ${Backend.validIds()}")
    val contract = when (val mode = System.getenv("HTTP4K_CONTRACT")?.trim()?.takeIf { it.isNotEmpty() } ?: "on") {
        "on" -> true
        "off" -> false
        else -> fail("HTTP4K_CONTRACT=$mode is not a contract mode; valid values: on, off")
    }
    val elasticUrl = System.getenv("ELASTIC_URL")?.takeIf { it.isNotBlank() }
        ?: fail("ELASTIC_URL is not set")
    val port = System.getenv("PORT")?.toIntOrNull() ?: 8080
    // svcbench always passes the address to listen on; run by hand without it, listen everywhere as before.
    val host = System.getenv("HOST")?.trim()?.takeIf { it.isNotEmpty() }
        ?: "0.0.0.0".also { log.warn("HOST is not set: listening on every interface (0.0.0.0)") }

    val repository = LocationsRepository(storeClient(elasticUrl))
    // Never serve without a store: one round trip before listening.
    try {
        repository.ping()
    } catch (e: Exception) {
        fail("store at $elasticUrl is not reachable: $e")
    }

    // Handle SIGTERM ourselves: the JVM's default handler would exit with 143 instead of 0.
    // Installed before listening, so that no signal can slip past it.
    val stopRequested = CountDownLatch(1)
    for (signal in listOf("TERM", "INT")) Signal.handle(Signal(signal)) { stopRequested.countDown() }

    val server = locationsApp(repository, backend.id, contract)
        .asServer(backend.config(host, port))
        .start()
    log.info(
        "locations-http4k listening on {}:{} (backend={}, contract={}), store {}",
        host, server.port(), backend.id, if (contract) "on" else "off", elasticUrl,
    )

    stopRequested.await()

    log.info("Stopping: finishing in-flight requests")
    server.stop()
    log.info("Stopped")
    exitProcess(0)
}

private fun storeClient(elasticUrl: String) = ClientFilters.SetBaseUriFrom(Uri.of(elasticUrl.trimEnd('/')))
    .then(
        ApacheClient(
            HttpClients.custom()
                .setConnectionManager(
                    PoolingHttpClientConnectionManagerBuilder.create()
                        // Every request in flight holds one store connection; allow plenty of them.
                        .setMaxConnTotal(512)
                        .setMaxConnPerRoute(512)
                        .setDefaultConnectionConfig(
                            ConnectionConfig.custom()
                                .setConnectTimeout(Timeout.ofSeconds(2))
                                .setSocketTimeout(Timeout.ofSeconds(10))
                                .build(),
                        )
                        .build(),
                )
                .disableRedirectHandling()
                .disableCookieManagement()
                .build(),
        ),
    )

private fun fail(message: String): Nothing {
    log.error("Cannot start: {}", message)
    exitProcess(1)
}

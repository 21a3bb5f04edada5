package locations

import org.eclipse.jetty.server.Server
import org.eclipse.jetty.server.ServerConnector
import org.http4k.server.Jetty
import org.http4k.server.ServerConfig
import org.http4k.server.ServerConfig.StopMode
import java.time.Duration

/** On SIGTERM, in-flight requests get up to this long to finish (every backend here stops gracefully). */
private val GRACEFUL_STOP = StopMode.Graceful(Duration.ofSeconds(10))

/**
 * The http4k server backends this one jar can run (seed 000's qualification round), chosen at start by
 * `HTTP4K_BACKEND` ([id]); [UNDERTOW] is the default. Each builds an http4k [ServerConfig] listening on a
 * host address and port (http4k 4.x's own Undertow, Netty and SunHttp configs listen on every interface,
 * hence ours in BoundServers.kt).
 */
enum class Backend(val id: String, val config: (host: String, port: Int) -> ServerConfig) {
    /** http4k-server-undertow: XNIO I/O threads hand each request to a worker pool (blocking handlers). */
    UNDERTOW("undertow", { host, port -> BoundUndertow(host, port, enableHttp2 = false, stopMode = GRACEFUL_STOP) }),

    /** Apache HttpCore 4.4, classic blocking I/O, a thread per connection (our adapter: Apache.kt). */
    APACHE4("apache4", { host, port -> Apache4Server(host, port, backlog = 1000, stopMode = GRACEFUL_STOP) }),

    /** Apache HttpCore 5, classic blocking I/O, a thread per connection (our adapter: Apache.kt). */
    APACHE("apache", { host, port -> Apache5Server(host, port, backlog = 1000, stopMode = GRACEFUL_STOP) }),

    /** As [APACHE], with seed 000's lowered socket backlog of 100 instead of http4k's 1000. */
    APACHE_BACKLOG100(
        "apache-backlog100",
        { host, port -> Apache5Server(host, port, backlog = 100, stopMode = GRACEFUL_STOP) },
    ),

    /** http4k-server-jetty (Jetty 11): a thread pool running blocking handlers; http4k's connector, plus the host. */
    JETTY("jetty", { host, port ->
        Jetty(port, GRACEFUL_STOP, { server: Server -> ServerConnector(server).apply { this.port = port; this.host = host } })
    }),

    /** http4k-server-netty: the handler runs on Netty's event-loop threads (2 × CPUs), store calls block them. */
    NETTY("netty", { host, port -> BoundNetty(host, port, GRACEFUL_STOP) }),

    /** http4k-core's SunHttp: the JDK's com.sun.net.httpserver on a work-stealing pool (one thread per CPU). */
    SUNHTTP("sunhttp", { host, port -> BoundSunHttp(host, port, GRACEFUL_STOP) }),
    ;

    companion object {
        val DEFAULT = UNDERTOW

        fun validIds(): String = entries.joinToString(", ") { it.id }

        fun byId(id: String): Backend? = entries.firstOrNull { it.id == id }
    }
}

/** How long a stop waits for in-flight requests. */
internal fun StopMode.timeoutMillis(): Long = when (this) {
    is StopMode.Graceful -> timeout.toMillis()
    is StopMode.Immediate -> 0
}

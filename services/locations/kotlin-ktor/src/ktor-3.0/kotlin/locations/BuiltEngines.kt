package locations

import io.ktor.server.engine.embeddedServer
import io.ktor.server.jetty.jakarta.Jetty
import io.ktor.server.netty.Netty
import io.ktor.server.cio.CIO as CioServer

// The `ktor-3.0` profile's build (its ktor.version in pom.xml; keep the two in step).
const val KTOR_RELEASE = "3.0.3"

/**
 * Netty, CIO and Jetty, all of Ktor 3.0.3: the newest release whose Jetty engine (`ktor-server-jetty-jakarta-jvm`,
 * on Jetty 11) and Netty engine both resolve from the registry (README.md), for seed 000's Netty-vs-Jetty round.
 */
val builtEngines: Map<ServerEngine, EngineFactory> = mapOf(
    ServerEngine.NETTY to { host, port, setup -> embeddedServer(Netty, port = port, host = host) { setup() } },
    ServerEngine.CIO to { host, port, setup -> embeddedServer(CioServer, port = port, host = host) { setup() } },
    ServerEngine.JETTY to { host, port, setup -> embeddedServer(Jetty, port = port, host = host) { setup() } },
)

package locations

import io.ktor.server.engine.embeddedServer
import io.ktor.server.netty.Netty
import io.ktor.server.cio.CIO as CioServer

// The default build (pom.xml's ktor.version; keep the two in step).
const val KTOR_RELEASE = "3.5.2"

/**
 * Netty and CIO. No Jetty: neither of Ktor 3.5.2's Jetty engine artifacts (`ktor-server-jetty-jakarta-jvm`,
 * `ktor-server-jetty-jvm`) resolves from the registry (README.md); the `ktor-3.0` build has one.
 */
val builtEngines: Map<ServerEngine, EngineFactory> = mapOf(
    ServerEngine.NETTY to { host, port, setup -> embeddedServer(Netty, port = port, host = host) { setup() } },
    ServerEngine.CIO to { host, port, setup -> embeddedServer(CioServer, port = port, host = host) { setup() } },
)

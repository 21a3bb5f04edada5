package locations

import io.ktor.server.application.Application
import io.ktor.server.application.createApplicationPlugin
import io.ktor.server.application.hooks.CallSetup
import io.ktor.server.engine.EmbeddedServer
import io.ktor.server.engine.embeddedServer
import io.ktor.server.netty.Netty
import io.ktor.server.cio.CIO as CioServer

/**
 * The Ktor server engines this one jar can run on, chosen at start by `KTOR_ENGINE` (unset: Netty).
 *
 * Jetty is not among them: neither of Ktor's Jetty engine artifacts (`ktor-server-jetty-jakarta-jvm`,
 * `ktor-server-jetty-jvm`) can be had in version 3.5.2 from the Maven repository this project builds
 * from (see README.md), so `KTOR_ENGINE=jetty` is refused with that reason.
 */
enum class ServerEngine(val id: String) {
    NETTY("netty"),
    CIO("cio");

    /** Builds (does not start) this engine's embedded server on [host]:[port], running [setup]. */
    fun server(host: String, port: Int, setup: Application.() -> Unit): EmbeddedServer<*, *> = when (this) {
        NETTY -> embeddedServer(Netty, port = port, host = host) { setup() }
        CIO -> embeddedServer(CioServer, port = port, host = host) { setup() }
    }

    companion object {
        const val VARIABLE = "KTOR_ENGINE"
        val DEFAULT = NETTY

        /** The engine [value] names (unset or blank: the default), or a one-line reason why none. */
        fun parse(value: String?): Result<ServerEngine> {
            val wanted = value?.trim()?.lowercase()
            if (wanted.isNullOrEmpty()) return Result.success(DEFAULT)
            entries.firstOrNull { it.id == wanted }?.let { return Result.success(it) }
            val valid = entries.joinToString(", ") { it.id }
            val reason = if (wanted == "jetty") {
                "$VARIABLE=jetty: the Jetty engine is not in this build (no Ktor 3.5.2 Jetty engine artifact " +
                    "could be resolved); valid values: $valid"
            } else {
                "$VARIABLE='$value' is not a known engine; valid values: $valid"
            }
            return Result.failure(IllegalArgumentException(reason))
        }
    }
}

/** Names the engine on every response (`X-Server-Engine`), errors and the 503 while draining included. */
fun serverEngineHeader(engine: ServerEngine) = createApplicationPlugin("ServerEngineHeader") {
    on(CallSetup) { call -> call.response.headers.append("X-Server-Engine", engine.id) }
}

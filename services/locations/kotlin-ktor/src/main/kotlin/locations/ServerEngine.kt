package locations

import io.ktor.server.application.Application
import io.ktor.server.application.createApplicationPlugin
import io.ktor.server.application.hooks.CallSetup
import io.ktor.server.engine.EmbeddedServer

/** Builds (does not start) one engine's embedded server on host:port, running the application setup. */
typealias EngineFactory = (host: String, port: Int, setup: Application.() -> Unit) -> EmbeddedServer<*, *>

/**
 * The Ktor server engines the service knows, chosen at start by `KTOR_ENGINE` (unset: Netty).
 *
 * Which of them a jar carries is up to its build: each Ktor release the pom builds has its own source
 * folder with [builtEngines] and [KTOR_RELEASE] (`src/ktor-3.5`: Netty and CIO, the default build;
 * `src/ktor-3.0`: Netty, CIO and Jetty, the `ktor-3.0` profile), because no Ktor 3.5.2 Jetty engine
 * resolves from the registry (README.md). An engine the jar lacks is refused at start with that reason.
 */
enum class ServerEngine(val id: String, val title: String) {
    NETTY("netty", "Netty"),
    CIO("cio", "CIO"),
    JETTY("jetty", "Jetty");

    /** Builds (does not start) this engine's embedded server on [host]:[port], running [setup]. */
    fun server(host: String, port: Int, setup: Application.() -> Unit): EmbeddedServer<*, *> =
        builtEngines.getValue(this)(host, port, setup)

    companion object {
        const val VARIABLE = "KTOR_ENGINE"
        val DEFAULT = NETTY

        /** The engine [value] names (unset or blank: the default), or a one-line reason why none. */
        fun parse(value: String?): Result<ServerEngine> {
            val wanted = value?.trim()?.lowercase()
            if (wanted.isNullOrEmpty()) return Result.success(DEFAULT)
            val valid = entries.filter { it in builtEngines }.joinToString(", ") { it.id }
            val known = entries.firstOrNull { it.id == wanted }
                ?: return Result.failure(
                    IllegalArgumentException("$VARIABLE='$value' is not a known engine; valid values: $valid"),
                )
            if (known in builtEngines) return Result.success(known)
            val reason = "$VARIABLE=$wanted: this jar (Ktor $KTOR_RELEASE) has no ${known.title} engine " +
                "(README.md, \"Server engines\"); valid values: $valid"
            return Result.failure(IllegalArgumentException(reason))
        }
    }
}

/** Names the engine on every response (`X-Server-Engine`), errors and the 503 while draining included. */
fun serverEngineHeader(engine: ServerEngine) = createApplicationPlugin("ServerEngineHeader") {
    on(CallSetup) { call -> call.response.headers.append("X-Server-Engine", engine.id) }
}

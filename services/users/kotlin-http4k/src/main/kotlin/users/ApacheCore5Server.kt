package users

import org.apache.hc.core5.http.ClassicHttpRequest
import org.apache.hc.core5.http.ClassicHttpResponse
import org.apache.hc.core5.http.HttpStatus
import org.apache.hc.core5.http.impl.bootstrap.ServerBootstrap
import org.apache.hc.core5.http.impl.routing.RequestRouter
import org.apache.hc.core5.http.io.HttpRequestHandler
import org.apache.hc.core5.http.io.SocketConfig
import org.apache.hc.core5.http.io.entity.InputStreamEntity
import org.apache.hc.core5.http.protocol.HttpContext
import org.apache.hc.core5.io.CloseMode
import org.apache.hc.core5.util.TimeValue
import org.http4k.core.HttpHandler
import org.http4k.core.Method
import org.http4k.core.Request
import org.http4k.core.Response
import org.http4k.server.Http4kServer
import org.http4k.server.ServerConfig
import org.http4k.server.ServerConfig.StopMode
import java.io.InputStream
import java.net.InetAddress
import java.time.Duration

/**
 * http4k on the Apache httpcore5 classic (blocking, thread-per-connection) server.
 *
 * This plays the part of http4k's own `http4k-server-apache` module (`ApacheServer`), which is not
 * available from the package registry this project builds against; see the README.
 */
class ApacheCore5Server(
    private val host: String,
    private val port: Int,
    override val stopMode: StopMode = StopMode.Graceful(Duration.ofSeconds(5)),
) : ServerConfig {

    override fun toServer(http: HttpHandler): Http4kServer = object : Http4kServer {
        private val server = ServerBootstrap.bootstrap()
            .setLocalAddress(InetAddress.getByName(host))
            .setListenerPort(port)
            .setSocketConfig(
                SocketConfig.custom()
                    .setTcpNoDelay(true)
                    .setSoKeepAlive(true)
                    .setSoReuseAddress(true)
                    .setBacklogSize(1000)
                    .build(),
            )
            // Route every path to http4k whatever the Host header says (the default router only
            // answers for the machine's canonical host name, 421 otherwise).
            .setRequestRouter(
                RequestRouter.builder<HttpRequestHandler>()
                    .addRoute(RequestRouter.LOCAL_AUTHORITY, "*", Http4kRequestHandler(http))
                    .resolveAuthority(RequestRouter.LOCAL_AUTHORITY_RESOLVER)
                    .build(),
            )
            .create()

        override fun start() = apply { server.start() }

        override fun stop() = apply {
            val mode = stopMode
            if (mode is StopMode.Graceful) {
                // Stop accepting, then give in-flight exchanges up to the timeout to finish.
                server.initiateShutdown()
                try {
                    server.awaitTermination(TimeValue.ofMilliseconds(mode.timeout.toMillis()))
                } catch (e: InterruptedException) {
                    Thread.currentThread().interrupt()
                }
            }
            server.close(CloseMode.IMMEDIATE)
        }

        override fun port() = if (port != 0) port else server.localPort
    }
}

/** Adapts one httpcore5 exchange to an http4k [HttpHandler] call. */
private class Http4kRequestHandler(private val http: HttpHandler) : HttpRequestHandler {

    override fun handle(request: ClassicHttpRequest, response: ClassicHttpResponse, context: HttpContext) {
        val method = Method.entries.firstOrNull { it.name == request.method }
        if (method == null) {
            response.code = HttpStatus.SC_NOT_IMPLEMENTED
            return
        }
        http(request.toHttp4k(method)).writeTo(response)
    }

    private fun ClassicHttpRequest.toHttp4k(method: Method): Request {
        val entity = entity
        return Request(method, requestUri)
            .headers(headers.map { it.name to it.value })
            .body(entity?.content ?: InputStream.nullInputStream(), entity?.contentLength?.takeIf { it >= 0 })
    }

    private fun Response.writeTo(response: ClassicHttpResponse) {
        response.code = status.code
        // httpcore5 frames the message itself and rejects responses that already carry framing headers.
        headers
            .filterNot { (name, _) -> name.equals("Content-Length", true) || name.equals("Transfer-Encoding", true) }
            .forEach { (name, value) -> response.addHeader(name, value) }
        response.entity = InputStreamEntity(body.stream, body.length ?: -1, null)
    }
}

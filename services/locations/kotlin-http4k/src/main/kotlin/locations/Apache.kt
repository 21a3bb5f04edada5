package locations

import org.http4k.core.HttpHandler
import org.http4k.core.Method
import org.http4k.core.Request
import org.http4k.core.RequestSource
import org.http4k.core.Response
import org.http4k.core.Status.Companion.NOT_IMPLEMENTED
import org.http4k.core.then
import org.http4k.filter.ServerFilters
import org.http4k.server.Http4kServer
import org.http4k.server.ServerConfig
import org.http4k.server.ServerConfig.StopMode
import java.net.InetAddress
import java.net.InetSocketAddress
import java.util.concurrent.TimeUnit
import org.apache.hc.core5.http.ClassicHttpRequest as Core5Request
import org.apache.hc.core5.http.ClassicHttpResponse as Core5Response
import org.apache.hc.core5.http.EndpointDetails as Core5EndpointDetails
import org.apache.hc.core5.http.impl.bootstrap.HttpServer as Core5HttpServer
import org.apache.hc.core5.http.impl.bootstrap.ServerBootstrap as Core5ServerBootstrap
import org.apache.hc.core5.http.io.HttpRequestHandler as Core5RequestHandler
import org.apache.hc.core5.http.io.SocketConfig as Core5SocketConfig
import org.apache.hc.core5.http.io.entity.InputStreamEntity as Core5InputStreamEntity
import org.apache.hc.core5.http.protocol.HttpContext as Core5HttpContext
import org.apache.hc.core5.http.protocol.HttpCoreContext as Core5CoreContext
import org.apache.hc.core5.io.CloseMode as Core5CloseMode
import org.apache.hc.core5.util.TimeValue as Core5TimeValue
import org.apache.http.HttpEntityEnclosingRequest as Core4EntityRequest
import org.apache.http.HttpInetConnection as Core4InetConnection
import org.apache.http.HttpRequest as Core4Request
import org.apache.http.HttpResponse as Core4Response
import org.apache.http.config.SocketConfig as Core4SocketConfig
import org.apache.http.entity.InputStreamEntity as Core4InputStreamEntity
import org.apache.http.impl.bootstrap.HttpServer as Core4HttpServer
import org.apache.http.impl.bootstrap.ServerBootstrap as Core4ServerBootstrap
import org.apache.http.protocol.HttpContext as Core4HttpContext
import org.apache.http.protocol.HttpCoreContext as Core4CoreContext
import org.apache.http.protocol.HttpRequestHandler as Core4RequestHandler

/*
 * The Apache backends. http4k ships them as http4k-server-apache4 (HttpCore 4) and http4k-server-apache
 * (HttpCore 5), but the package registry this lab builds from has neither at any 4.x release (only
 * http4k-server-apache 3.226.0, built for http4k 3). So these two ServerConfigs are written here against
 * the HttpCore APIs, the way http4k's modules are: HttpCore's classic server (a listener thread accepting,
 * a thread per connection, blocking I/O), socket options TCP_NODELAY, SO_KEEPALIVE, SO_REUSEADDR and a
 * backlog (http4k's: 1000), one handler for every path turning the Apache request into an http4k Request
 * (raw request target, headers, body, source) and the http4k Response back (status, headers less the
 * framing ones HttpCore sets itself, body as a stream of known length).
 */

/** Apache HttpCore 4.4's classic server running an http4k handler, listening on [host]. */
class Apache4Server(
    private val host: String,
    private val port: Int,
    private val backlog: Int,
    override val stopMode: StopMode,
) : ServerConfig {
    override fun toServer(http: HttpHandler): Http4kServer = object : Http4kServer {
        private val server: Core4HttpServer = Core4ServerBootstrap.bootstrap()
            .setLocalAddress(InetAddress.getByName(host))
            .setListenerPort(port)
            .setSocketConfig(
                Core4SocketConfig.custom()
                    .setTcpNoDelay(true)
                    .setSoKeepAlive(true)
                    .setSoReuseAddress(true)
                    .setBacklogSize(backlog)
                    .build(),
            )
            .registerHandler("*", Core4Handler(http))
            .create()

        override fun start() = apply { server.start() }

        // stop() closes the listener and lets the workers finish; the rest are closed after the grace period.
        override fun stop() = apply { server.shutdown(stopMode.timeoutMillis(), TimeUnit.MILLISECONDS) }

        override fun port(): Int = if (port != 0) port else server.localPort
    }
}

private class Core4Handler(handler: HttpHandler) : Core4RequestHandler {
    private val safeHandler = ServerFilters.CatchAll().then(handler)

    override fun handle(request: Core4Request, response: Core4Response, context: Core4HttpContext) {
        val http4kResponse = request.toHttp4k(context)?.let(safeHandler) ?: Response(NOT_IMPLEMENTED)
        response.setStatusCode(http4kResponse.status.code)
        response.setReasonPhrase(http4kResponse.status.description)
        http4kResponse.headers.filterNot { it.first.isFramingHeader() }.forEach { (name, value) -> response.addHeader(name, value) }
        response.entity = Core4InputStreamEntity(http4kResponse.body.stream, http4kResponse.body.length ?: -1L)
    }

    private fun Core4Request.toHttp4k(context: Core4HttpContext): Request? {
        val method = runCatching { Method.valueOf(requestLine.method) }.getOrNull() ?: return null
        val connection = context.getAttribute(Core4CoreContext.HTTP_CONNECTION) as Core4InetConnection
        val base = Request(method, requestLine.uri, protocolVersion.toString())
            .headers(allHeaders.map { it.name to it.value })
            .source(RequestSource(connection.remoteAddress.hostAddress, connection.remotePort))
        return if (this is Core4EntityRequest && entity != null) {
            base.body(entity.content, getFirstHeader("Content-Length")?.value?.toLongOrNull())
        } else {
            base
        }
    }
}

/** Apache HttpCore 5's classic server running an http4k handler, listening on [host]. */
class Apache5Server(
    private val host: String,
    private val port: Int,
    private val backlog: Int,
    override val stopMode: StopMode,
) : ServerConfig {
    override fun toServer(http: HttpHandler): Http4kServer = object : Http4kServer {
        private val server: Core5HttpServer = Core5ServerBootstrap.bootstrap()
            .setLocalAddress(InetAddress.getByName(host))
            .setListenerPort(port)
            .setSocketConfig(
                Core5SocketConfig.custom()
                    .setTcpNoDelay(true)
                    .setSoKeepAlive(true)
                    .setSoReuseAddress(true)
                    .setBacklogSize(backlog)
                    .build(),
            )
            .register("*", Core5Handler(http))
            .create()

        override fun start() = apply { server.start() }

        override fun stop() = apply {
            when (stopMode) {
                is StopMode.Immediate -> server.close(Core5CloseMode.IMMEDIATE)
                is StopMode.Graceful -> {
                    // Stop accepting, let the in-flight requests finish, then close what is left.
                    server.initiateShutdown()
                    try {
                        server.awaitTermination(Core5TimeValue.ofMilliseconds(stopMode.timeoutMillis()))
                    } catch (e: InterruptedException) {
                        Thread.currentThread().interrupt()
                    }
                    server.close(Core5CloseMode.IMMEDIATE)
                }
            }
        }

        override fun port(): Int = if (port != 0) port else server.localPort
    }
}

private class Core5Handler(handler: HttpHandler) : Core5RequestHandler {
    private val safeHandler = ServerFilters.CatchAll().then(handler)

    override fun handle(request: Core5Request, response: Core5Response, context: Core5HttpContext) {
        val http4kResponse = request.toHttp4k(context)?.let(safeHandler) ?: Response(NOT_IMPLEMENTED)
        response.code = http4kResponse.status.code
        response.reasonPhrase = http4kResponse.status.description
        http4kResponse.headers.filterNot { it.first.isFramingHeader() }.forEach { (name, value) -> response.addHeader(name, value) }
        // No content type on the entity: the Content-Type header is already among the headers.
        response.entity = Core5InputStreamEntity(http4kResponse.body.stream, http4kResponse.body.length ?: -1L, null)
    }

    private fun Core5Request.toHttp4k(context: Core5HttpContext): Request? {
        val method = runCatching { Method.valueOf(this.method) }.getOrNull() ?: return null
        val remote = (context.getAttribute(Core5CoreContext.CONNECTION_ENDPOINT) as? Core5EndpointDetails)
            ?.remoteAddress as? InetSocketAddress
        // requestUri is the raw request target (path and query as sent, still percent-encoded).
        val base = Request(method, requestUri, version?.toString() ?: "HTTP/1.1")
            .headers(headers.map { it.name to it.value })
            .let { if (remote != null) it.source(RequestSource(remote.hostString, remote.port)) else it }
        val entity = entity
        return if (entity != null) base.body(entity.content, getFirstHeader("Content-Length")?.value?.toLongOrNull()) else base
    }
}

/** Headers HttpCore's response interceptor writes itself (it refuses a response that already has them). */
private fun String.isFramingHeader() = equals("Content-Length", ignoreCase = true) || equals("Transfer-Encoding", ignoreCase = true)

package locations

import io.netty.bootstrap.ServerBootstrap
import io.netty.channel.ChannelFuture
import io.netty.channel.ChannelInitializer
import io.netty.channel.ChannelOption
import io.netty.channel.nio.NioEventLoopGroup
import io.netty.channel.socket.SocketChannel
import io.netty.channel.socket.nio.NioServerSocketChannel
import io.netty.handler.codec.http.HttpObjectAggregator
import io.netty.handler.codec.http.HttpServerCodec
import io.netty.handler.codec.http.HttpServerKeepAliveHandler
import io.netty.handler.stream.ChunkedWriteHandler
import io.undertow.Handlers
import io.undertow.UndertowOptions
import io.undertow.predicate.Predicate
import io.undertow.server.handlers.BlockingHandler
import io.undertow.server.handlers.GracefulShutdownHandler
import org.http4k.core.HttpHandler
import org.http4k.server.Http4kChannelHandler
import org.http4k.server.Http4kServer
import org.http4k.server.Http4kUndertowHttpHandler
import org.http4k.server.HttpExchangeHandler
import org.http4k.server.ServerConfig
import org.http4k.server.ServerConfig.StopMode
import org.http4k.server.requiresWebSocketUpgrade
import java.net.InetSocketAddress
import java.util.concurrent.Executors
import java.util.concurrent.TimeUnit
import com.sun.net.httpserver.HttpServer as SunHttpServer
import io.undertow.Undertow as UndertowServer

/*
 * http4k 4.x's Undertow, Netty and SunHttp configs take only a port and listen on every interface. These
 * three take the address too and otherwise build the server as http4k's own `toServer` does (same http4k
 * handler classes, handler chain, thread pools, socket options and stop sequence), so that a measured
 * backend differs from http4k's only in the address it listens on.
 */

/** http4k-server-undertow's server on [host]: Http4kUndertowHttpHandler in a BlockingHandler, graceful stop. */
class BoundUndertow(
    private val host: String,
    private val port: Int,
    private val enableHttp2: Boolean,
    override val stopMode: StopMode,
) : ServerConfig {
    override fun toServer(http: HttpHandler): Http4kServer = object : Http4kServer {
        private val httpHandler = BlockingHandler(Http4kUndertowHttpHandler(http))
            .let { if (stopMode is StopMode.Graceful) GracefulShutdownHandler(it) else it }

        private val isUpgrade = requiresWebSocketUpgrade()

        // http4k routes WebSocket upgrades first; with no WebSocket handler that branch is empty, as there.
        private val server = UndertowServer.builder()
            .addHttpListener(port, host)
            .setServerOption(UndertowOptions.ENABLE_HTTP2, enableHttp2)
            .setHandler(Handlers.predicate(Predicate { isUpgrade(it) }, null, httpHandler))
            .build()

        override fun start() = apply { server.start() }

        override fun stop() = apply {
            (httpHandler as? GracefulShutdownHandler)?.apply {
                shutdown()
                awaitShutdown(stopMode.timeoutMillis())
            }
            server.stop()
        }

        override fun port(): Int =
            if (port > 0) port else (server.listenerInfo[0].address as InetSocketAddress).port
    }
}

/** http4k-server-netty's server on [host]: default event-loop groups, Http4kChannelHandler, backlog 1000. */
class BoundNetty(
    private val host: String,
    private val port: Int,
    override val stopMode: StopMode,
) : ServerConfig {
    override fun toServer(http: HttpHandler): Http4kServer = object : Http4kServer {
        private val masterGroup = NioEventLoopGroup()
        private val workerGroup = NioEventLoopGroup()
        private var closeFuture: ChannelFuture? = null
        private lateinit var address: InetSocketAddress

        override fun start() = apply {
            val channel = ServerBootstrap()
                .group(masterGroup, workerGroup)
                .channelFactory { NioServerSocketChannel() }
                .childHandler(
                    object : ChannelInitializer<SocketChannel>() {
                        override fun initChannel(ch: SocketChannel) {
                            ch.pipeline().addLast("codec", HttpServerCodec())
                            ch.pipeline().addLast("keepAlive", HttpServerKeepAliveHandler())
                            ch.pipeline().addLast("aggregator", HttpObjectAggregator(Int.MAX_VALUE))
                            ch.pipeline().addLast("streamer", ChunkedWriteHandler())
                            ch.pipeline().addLast("httpHandler", Http4kChannelHandler(http))
                        }
                    },
                )
                .option(ChannelOption.SO_BACKLOG, 1000)
                .childOption(ChannelOption.SO_KEEPALIVE, true)
                .bind(host, port)
                .sync()
                .channel()
            address = channel.localAddress() as InetSocketAddress
            closeFuture = channel.closeFuture()
        }

        override fun stop() = apply {
            closeFuture?.cancel(false)
            // http4k's sequence: each group waits a quiet period of at most 2 s, within the stop timeout.
            val timeout = stopMode.timeoutMillis()
            val quietPeriod = minOf(2000L, timeout)
            workerGroup.shutdownGracefully(quietPeriod, timeout, TimeUnit.MILLISECONDS).sync()
            masterGroup.shutdownGracefully(quietPeriod, timeout, TimeUnit.MILLISECONDS).sync()
        }

        override fun port(): Int = if (port > 0) port else address.port
    }
}

/** http4k-core's SunHttp server on [host]: HttpExchangeHandler on a work-stealing pool, backlog 1000. */
class BoundSunHttp(
    private val host: String,
    private val port: Int,
    override val stopMode: StopMode,
) : ServerConfig {
    override fun toServer(http: HttpHandler): Http4kServer = object : Http4kServer {
        private val executor = Executors.newWorkStealingPool()
        private val server = SunHttpServer.create(InetSocketAddress(host, port), 1000)

        override fun start() = apply {
            server.createContext("/", HttpExchangeHandler(http))
            server.executor = executor
            server.start()
        }

        override fun stop() = apply {
            if (stopMode is StopMode.Graceful) {
                executor.shutdown()
                executor.awaitTermination(stopMode.timeoutMillis(), TimeUnit.MILLISECONDS)
            }
            server.stop(0)
        }

        override fun port(): Int = if (port > 0) port else server.address.port
    }
}

package svcbench.upstream;

import java.util.concurrent.TimeUnit;

import io.vertx.core.Future;
import io.vertx.core.VerticleBase;
import io.vertx.core.http.HttpServer;
import io.vertx.core.http.PoolOptions;
import io.vertx.core.json.JsonObject;
import io.vertx.ext.web.Router;
import io.vertx.ext.web.RoutingContext;
import io.vertx.ext.web.client.HttpResponse;
import io.vertx.ext.web.client.WebClient;
import io.vertx.ext.web.client.WebClientOptions;
import io.vertx.ext.web.codec.BodyCodec;
import io.vertx.micrometer.PrometheusScrapingHandler;

public class MainVerticle extends VerticleBase {

    // Tuning as in the seed benchmark: the web client's default pool holds only 5 HTTP/1
    // connections per server, which would cap throughput at 5 concurrent upstream calls.
    private static final int UPSTREAM_POOL_SIZE = 1000;
    // The upstream may take up to 8 s.
    private static final long UPSTREAM_TIMEOUT_MS = 30_000;

    private final String upstreamUrl =
            System.getenv().getOrDefault("UPSTREAM_URL", "http://127.0.0.1:9100");
    private WebClient client;
    private HttpServer server;

    static int port() {
        return Integer.parseInt(System.getenv().getOrDefault("PORT", "8080"));
    }

    /** svcbench's {host}; loopback when unset, never every interface by default. */
    static String host() {
        return System.getenv().getOrDefault("HOST", "127.0.0.1");
    }

    @Override
    public Future<?> start() {
        client = WebClient.create(vertx, new WebClientOptions(),
                new PoolOptions().setHttp1MaxSize(UPSTREAM_POOL_SIZE));

        Router router = Router.router(vertx);
        router.get("/").handler(this::value);
        router.get("/metrics").handler(PrometheusScrapingHandler.create());

        // All instances listen on the same port; Vert.x spreads connections across them.
        return vertx.createHttpServer()
                .requestHandler(router)
                .listen(port(), host())
                .onSuccess(s -> server = s);
    }

    @Override
    public Future<?> stop() {
        // Stop accepting, let in-flight requests finish (bounded).
        return server.shutdown(10, TimeUnit.SECONDS);
    }

    private void value(RoutingContext ctx) {
        client.getAbs(upstreamUrl)
                .timeout(UPSTREAM_TIMEOUT_MS)
                .as(BodyCodec.string())
                .send()
                .onSuccess(resp -> answer(ctx, resp))
                .onFailure(err -> badGateway(ctx, "upstream unreachable: " + err.getMessage()));
    }

    private static void answer(RoutingContext ctx, HttpResponse<String> resp) {
        if (resp.statusCode() != 200) {
            badGateway(ctx, "upstream answered " + resp.statusCode());
            return;
        }
        String body = resp.body() == null ? "" : resp.body().trim();
        long value;
        try {
            value = Long.parseLong(body);
        } catch (NumberFormatException e) {
            badGateway(ctx, "upstream answered with a non-integer body");
            return;
        }
        ctx.json(new JsonObject().put("value", value));
    }

    private static void badGateway(RoutingContext ctx, String message) {
        ctx.response().setStatusCode(502);
        ctx.json(new JsonObject().put("message", message));
    }
}

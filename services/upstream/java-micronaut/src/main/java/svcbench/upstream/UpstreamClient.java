package svcbench.upstream;

import java.util.concurrent.CompletableFuture;

import io.micronaut.http.MediaType;
import io.micronaut.http.annotation.Get;
import io.micronaut.http.client.annotation.Client;

// Declarative client; the base URL comes from UPSTREAM_URL (property upstream.url).
@Client("${upstream.url}")
public interface UpstreamClient {

    // Non-blocking: the future completes on the client's event loop.
    @Get(value = "/", consumes = MediaType.TEXT_PLAIN)
    CompletableFuture<String> fetch();
}

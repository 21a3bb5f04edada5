package svcbench.upstream;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

import io.micronaut.http.HttpResponse;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Get;
import io.micronaut.http.client.exceptions.HttpClientResponseException;
import io.micronaut.serde.annotation.Serdeable;

@Controller
public class ValueController {

    @Serdeable
    public record ValueResponse(long value) {}

    @Serdeable
    public record ErrorResponse(String message) {}

    private final UpstreamClient upstream;

    public ValueController(UpstreamClient upstream) {
        this.upstream = upstream;
    }

    // Returns a future so the event loop is not blocked while the upstream answers.
    @Get("/")
    public CompletableFuture<HttpResponse<?>> value() {
        return upstream.fetch().handle((body, error) ->
                error == null ? parse(body) : badGateway(describe(error)));
    }

    private static HttpResponse<?> parse(String body) {
        try {
            return HttpResponse.ok(new ValueResponse(Long.parseLong(body == null ? "" : body.trim())));
        } catch (NumberFormatException e) {
            return badGateway("upstream answered with a non-integer body");
        }
    }

    private static String describe(Throwable error) {
        Throwable cause = error instanceof CompletionException && error.getCause() != null
                ? error.getCause() : error;
        if (cause instanceof HttpClientResponseException e) {
            return "upstream answered " + e.getStatus().getCode();
        }
        return "upstream unreachable: " + cause.getMessage();
    }

    private static HttpResponse<ErrorResponse> badGateway(String message) {
        return HttpResponse.<ErrorResponse>status(io.micronaut.http.HttpStatus.BAD_GATEWAY)
                .body(new ErrorResponse(message));
    }
}

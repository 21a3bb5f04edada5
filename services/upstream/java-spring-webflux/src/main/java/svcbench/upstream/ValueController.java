package svcbench.upstream;

import java.util.Map;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.http.HttpStatus;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.reactive.function.client.WebClient;
import org.springframework.web.reactive.function.client.WebClientException;
import org.springframework.web.reactive.function.client.WebClientRequestException;
import org.springframework.web.reactive.function.client.WebClientResponseException;

import reactor.core.publisher.Mono;

@RestController
public class ValueController {

    public record ValueResponse(long value) {}

    private final WebClient upstream;

    // The auto-configured builder carries the spring.http.reactiveclient.* settings (read timeout).
    public ValueController(WebClient.Builder builder, @Value("${upstream.url}") String upstreamUrl) {
        this.upstream = builder.baseUrl(upstreamUrl).build();
    }

    // Non-blocking: the event loop is free while the upstream call is pending.
    @GetMapping("/")
    public Mono<ValueResponse> value() {
        return upstream.get().uri("/")
                .retrieve()
                .bodyToMono(String.class)
                .switchIfEmpty(Mono.error(() -> new UpstreamException("upstream answered with an empty body")))
                .map(ValueController::parse);
    }

    private static ValueResponse parse(String body) {
        try {
            return new ValueResponse(Long.parseLong(body.trim()));
        } catch (NumberFormatException e) {
            throw new UpstreamException("upstream answered with a non-integer body");
        }
    }

    @ExceptionHandler(WebClientRequestException.class)
    @ResponseStatus(HttpStatus.BAD_GATEWAY)
    public Map<String, String> upstreamUnreachable(WebClientRequestException e) {
        return Map.of("message", "upstream unreachable");
    }

    @ExceptionHandler(WebClientResponseException.class)
    @ResponseStatus(HttpStatus.BAD_GATEWAY)
    public Map<String, String> upstreamError(WebClientResponseException e) {
        return Map.of("message", "upstream answered " + e.getStatusCode().value());
    }

    @ExceptionHandler({WebClientException.class, UpstreamException.class})
    @ResponseStatus(HttpStatus.BAD_GATEWAY)
    public Map<String, String> upstreamFailed(RuntimeException e) {
        return Map.of("message", String.valueOf(e.getMessage()));
    }

    static class UpstreamException extends RuntimeException {
        UpstreamException(String message) {
            super(message);
        }
    }
}

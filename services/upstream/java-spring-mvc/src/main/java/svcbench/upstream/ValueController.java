package svcbench.upstream;

import java.util.Map;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.http.HttpStatus;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.client.RestClient;
import org.springframework.web.client.ResourceAccessException;
import org.springframework.web.client.RestClientException;
import org.springframework.web.client.RestClientResponseException;

@RestController
public class ValueController {

    public record ValueResponse(long value) {}

    private final RestClient upstream;

    // The auto-configured builder carries the spring.http.client.* settings (read timeout).
    public ValueController(RestClient.Builder builder, @Value("${upstream.url}") String upstreamUrl) {
        this.upstream = builder.baseUrl(upstreamUrl).build();
    }

    // Blocking call: the Tomcat worker thread waits for the upstream, one call per request.
    @GetMapping("/")
    public ValueResponse value() {
        String body = upstream.get().uri("/").retrieve().body(String.class);
        if (body == null) {
            throw new UpstreamException("upstream answered with an empty body");
        }
        try {
            return new ValueResponse(Long.parseLong(body.trim()));
        } catch (NumberFormatException e) {
            throw new UpstreamException("upstream answered with a non-integer body");
        }
    }

    @ExceptionHandler(ResourceAccessException.class)
    @ResponseStatus(HttpStatus.BAD_GATEWAY)
    public Map<String, String> upstreamUnreachable(ResourceAccessException e) {
        return Map.of("message", "upstream unreachable");
    }

    @ExceptionHandler(RestClientResponseException.class)
    @ResponseStatus(HttpStatus.BAD_GATEWAY)
    public Map<String, String> upstreamError(RestClientResponseException e) {
        return Map.of("message", "upstream answered " + e.getStatusCode().value());
    }

    @ExceptionHandler({RestClientException.class, UpstreamException.class})
    @ResponseStatus(HttpStatus.BAD_GATEWAY)
    public Map<String, String> upstreamFailed(RuntimeException e) {
        return Map.of("message", e.getMessage());
    }

    static class UpstreamException extends RuntimeException {
        UpstreamException(String message) {
            super(message);
        }
    }
}

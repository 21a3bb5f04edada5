package svcbench.upstream;

import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.micronaut.http.annotation.Controller;
import io.micronaut.http.annotation.Get;

// Prometheus text at /metrics (Micronaut's own management endpoint would serve it at /prometheus).
@Controller("/metrics")
public class MetricsController {

    private final PrometheusMeterRegistry registry;

    public MetricsController(PrometheusMeterRegistry registry) {
        this.registry = registry;
    }

    @Get(produces = "text/plain; version=0.0.4; charset=utf-8")
    public String scrape() {
        return registry.scrape();
    }
}

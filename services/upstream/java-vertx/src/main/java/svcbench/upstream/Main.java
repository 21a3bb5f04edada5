package svcbench.upstream;

import io.vertx.core.DeploymentOptions;
import io.vertx.core.Vertx;
import io.vertx.core.VertxOptions;
import io.vertx.micrometer.MicrometerMetricsOptions;
import io.vertx.micrometer.VertxPrometheusOptions;

public class Main {

    public static void main(String[] args) {
        // Micrometer metrics with the Prometheus backend (scraped through PrometheusScrapingHandler).
        Vertx vertx = Vertx.vertx(new VertxOptions().setMetricsOptions(
                new MicrometerMetricsOptions()
                        .setPrometheusOptions(new VertxPrometheusOptions().setEnabled(true))
                        .setEnabled(true)));

        // Tuning as in the seed benchmark: one verticle instance per core (Vert.x deploys one by
        // default, which would use a single event loop whatever the number of cores).
        int instances = Runtime.getRuntime().availableProcessors();
        vertx.deployVerticle(MainVerticle::new, new DeploymentOptions().setInstances(instances))
                .onSuccess(id -> System.out.println("upstream-vertx listening on port "
                        + MainVerticle.port() + " with " + instances + " verticle instances"))
                .onFailure(err -> {
                    err.printStackTrace();
                    vertx.close();
                    System.exit(1);
                });

        // SIGTERM: undeploy the verticles (each stops its server gracefully), then close Vert.x.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> vertx.close().await()));
    }
}

package svcbench.upstream;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

@SpringBootApplication
public class UpstreamApplication {

    public static void main(String[] args) {
        SpringApplication.run(UpstreamApplication.class, args);
    }
}

//! `hello` scenario: the smallest actix-web service (plaintext and JSON).

use actix_web::{get, http::header::ContentType, web, App, HttpResponse, HttpServer};
use serde::Serialize;

#[derive(Serialize)]
struct Message {
    message: &'static str,
}

#[get("/")]
async fn plaintext() -> HttpResponse {
    HttpResponse::Ok()
        .content_type(ContentType::plaintext())
        .body("Hello, World!")
}

#[get("/json")]
async fn json() -> web::Json<Message> {
    // Serialized by serde_json on every request, as the spec requires.
    web::Json(Message {
        message: "Hello, World!",
    })
}

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::var("PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(8080);
    // svcbench's {host}; loopback when unset, never every interface by default.
    let host = std::env::var("HOST").unwrap_or_else(|_| "127.0.0.1".into());

    // Unknown paths fall through to actix's default service, which answers 404.
    let server = HttpServer::new(|| App::new().service(plaintext).service(json))
        .bind((host.as_str(), port))?
        // actix-web handles SIGTERM/SIGINT itself: stop accepting, let in-flight requests finish.
        .shutdown_timeout(10)
        .run();

    println!("hello-actix listening on {host}:{port}");
    server.await
}

//! HTTP/1.1 wire format (responses; requests are rendered by `template`).

pub mod parser;

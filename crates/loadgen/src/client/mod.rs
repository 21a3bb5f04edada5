//! The HTTP/1.1 client side: connections and the per-thread event loop.

pub(crate) mod connection;
pub(crate) mod worker;

//! The HTTP/1.1 client side: connections and the per-thread event loop.

pub(crate) mod connection;
pub(crate) mod driver;
pub mod pacing;
pub(crate) mod recorder;
pub(crate) mod worker;

//! What a node is started with: its version, heap, address and where its distribution is kept.
use std::path::PathBuf;

pub struct OpenSearchOptions {
    /// OpenSearch version, e.g. "3.6.0".
    pub version: String,
    pub heap_mb: u32,
    pub port: u16,
    /// The address it listens on: loopback, or the store's address under `--net`.
    pub bind: std::net::Ipv4Addr,
    /// Where the distribution is downloaded and unpacked once. When svcbench runs as root it must be
    /// readable by the unprivileged user, e.g. /var/cache/svcbench/opensearch (not under /root).
    pub cache_dir: PathBuf,
}

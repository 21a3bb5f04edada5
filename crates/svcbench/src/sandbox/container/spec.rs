//! What a container run is asked to be, every placeholder filled: the spec `<engine> run` and the Pod spec
//! are both written from, and the labels and names every container svcbench starts carries.
use crate::sandbox::Limits;

/// What a container run needs, with every placeholder already filled.
#[derive(Debug, Clone)]
pub struct ContainerSpec {
    /// The run's sandbox name (it starts with svcbench's pid): the cgroup parent's and the container's name.
    pub name: String,
    pub image: String,
    /// Words after the image (the image's command or its arguments).
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub limits: Limits,
    pub pids_limit: u32,
    /// The only capabilities it keeps (the manifest's `capabilities`; none by default).
    pub capabilities: Vec<String>,
    /// The run's network namespace (`--net`), by its name under /run/netns; None: the host's network.
    pub netns: Option<String>,
    /// uid:gid inside the container.
    pub user: String,
    pub labels: Vec<(String, String)>,
    /// Folders of this machine mounted at the same path inside (a dependency's files: SQLite's database).
    pub mounts: Vec<String>,
}

/// Label keys on every container svcbench starts.
pub const LABEL_OWNER: &str = "svcbench.owner";
pub const LABEL_OWNER_START: &str = "svcbench.owner_start";
pub const LABEL_GROUP: &str = "svcbench.group";
pub const LABEL_SESSION: &str = "svcbench.session";
pub const LABEL_RUN: &str = "svcbench.run";

/// The container's name for a run's sandbox name.
pub fn container_name(sandbox: &str) -> String {
    format!("svcbench-{sandbox}")
}

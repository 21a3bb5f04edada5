//! The Kubernetes Pod a container service becomes (docs/kubernetes.md): built from the same
//! [`ContainerSpec`] a container run starts from, so that `svcbench pod` writes and `run --runtime kube`
//! plays one and the same spec. Pure: no engine, no file, no clock.
//!
//! Requests equal limits (CPU in millicores, memory in Mi where it divides, else bytes): the Guaranteed QoS
//! class a dense cluster gives a service it sizes, and the only one whose limits are the cgroup's cap, as
//! svcbench's are. What a Pod cannot say is kept as an annotation: the CPU set (Kubernetes' CPU manager
//! picks CPUs itself) and the pids limit (a kubelet setting, `podPidsLimit`, not a Pod's; `run --runtime
//! kube` writes it into the played container's cgroup, kube.rs).
//!
//! The container is confined as `<engine> run` confines it (confinement.rs): a non-root user, no
//! capability but the manifest's, no privilege escalation, the runtime's default seccomp profile, a
//! read-only root with an emptyDir at /tmp.
use super::spec::ContainerSpec;
use anyhow::{bail, Result};
use serde::Serialize;
use std::collections::BTreeMap;

/// The one container's name in the pod; Podman names it `<pod>-service`.
pub const CONTAINER: &str = "service";
/// Annotation keys for what a Pod spec has no field for.
pub const ANNOTATION_CPUSET: &str = "svcbench.cpuset";
pub const ANNOTATION_PIDS: &str = "svcbench.pids_limit";
/// Kubernetes' longest label value and object name segment.
const MAX_LABEL: usize = 63;

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Pod {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub metadata: Metadata,
    pub spec: PodSpec,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Metadata {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodSpec {
    pub host_network: bool,
    /// A service that ends is a failed run, not one to start again (as `<engine> run` does not).
    pub restart_policy: &'static str,
    pub containers: Vec<Container>,
    pub volumes: Vec<Volume>,
}

/// The pod's scratch space: an emptyDir, mounted at /tmp (the root filesystem is read-only).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Volume {
    pub name: String,
    pub empty_dir: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct VolumeMount {
    pub name: String,
    pub mount_path: &'static str,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Container {
    pub name: &'static str,
    pub image: String,
    /// The manifest's `args`: words after the image, which replace the image's CMD and keep its ENTRYPOINT,
    /// as in `<engine> run IMAGE ARGS…` (Kubernetes' `command` would replace the ENTRYPOINT).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    /// The service's port on the pod's network; none on the host's, where it is the host's port (Podman
    /// refuses port mappings there, and Kubernetes needs none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<Port>,
    pub resources: Resources,
    pub readiness_probe: Probe,
    pub security_context: SecurityContext,
    pub volume_mounts: Vec<VolumeMount>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct EnvVar {
    pub name: String,
    pub value: String,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Port {
    pub container_port: u16,
    pub name: &'static str,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Resources {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub requests: BTreeMap<&'static str, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub limits: BTreeMap<&'static str, String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Probe {
    pub http_get: HttpGet,
    pub period_seconds: u32,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HttpGet {
    /// The kubelet probes the pod's IP unless told a host: on the host's network a service listening on
    /// loopback only answers there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    pub path: String,
    pub port: u16,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SecurityContext {
    pub run_as_user: u32,
    pub run_as_group: u32,
    pub run_as_non_root: bool,
    pub read_only_root_filesystem: bool,
    pub allow_privilege_escalation: bool,
    pub capabilities: Capabilities,
    pub seccomp_profile: SeccompProfile,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Capabilities {
    pub drop: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub add: Vec<String>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SeccompProfile {
    #[serde(rename = "type")]
    pub kind: &'static str,
}

impl SecurityContext {
    /// The confinement of a container run as `uid:gid` keeping only `capabilities`.
    pub fn confined(uid: u32, gid: u32, capabilities: &[String]) -> SecurityContext {
        SecurityContext {
            run_as_user: uid,
            run_as_group: gid,
            run_as_non_root: true,
            read_only_root_filesystem: true,
            allow_privilege_escalation: false,
            capabilities: Capabilities { drop: vec!["ALL".into()], add: capabilities.to_vec() },
            seccomp_profile: SeccompProfile { kind: "RuntimeDefault" },
        }
    }
}

/// CPUs as Kubernetes quantities: millicores, its smallest unit.
pub fn millicores(cpus: f64) -> Result<String> {
    let m = (cpus * 1000.0).round();
    if !(cpus.is_finite() && m >= 1.0) {
        bail!("--cpus {cpus}: below one millicore (0.001), the smallest CPU quantity a Pod can ask for");
    }
    Ok(format!("{}m", m as u64))
}

/// Bytes as a Kubernetes quantity: whole mebibytes as `Mi`, else plain bytes.
pub fn memory_quantity(bytes: u64) -> String {
    if bytes.is_multiple_of(1 << 20) {
        format!("{}Mi", bytes >> 20)
    } else {
        bytes.to_string()
    }
}

/// A label value Kubernetes accepts: letters, digits, '-', '_' and '.', at most 63, starting and ending
/// alphanumeric (a service name's '@' becomes '-').
pub fn label_value(text: &str) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '-' })
        .take(MAX_LABEL)
        .collect();
    cleaned.trim_matches(|c: char| !c.is_ascii_alphanumeric()).to_string()
}

/// A Pod name: lowercase letters, digits and '-' (a DNS label, so that it is also the pod's hostname).
pub fn pod_name(text: &str) -> String {
    let cleaned: String =
        text.to_lowercase().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).take(MAX_LABEL).collect();
    cleaned.trim_matches('-').to_string()
}

/// `uid:gid` as two numbers.
fn user_ids(user: &str) -> Result<(u32, u32)> {
    let parsed = user.split_once(':').and_then(|(u, g)| Some((u.parse().ok()?, g.parse().ok()?)));
    parsed.ok_or_else(|| anyhow::anyhow!("container user {user:?} is not uid:gid"))
}

/// The Pod for a container spec: `name` as the pod's name, the readiness path probed on `port`. The host
/// network is the pod's exactly where the container would run on it (no `--net` namespace).
pub fn build(spec: &ContainerSpec, name: &str, readiness: &str, port: u16, listen: &str) -> Result<Pod> {
    if let Some(folder) = spec.mounts.first() {
        bail!(
            "a Pod with a dependency's folder ({folder}) is not written: svcbench mounts it only into a container \
             run by the engine; run without --runtime kube"
        );
    }
    let mut limits = BTreeMap::new();
    if let Some(c) = spec.limits.cpus {
        limits.insert("cpu", millicores(c)?);
    }
    if let Some(b) = spec.limits.memory_bytes {
        limits.insert("memory", memory_quantity(b));
    }
    let mut annotations = BTreeMap::new();
    if let Some(set) = &spec.limits.cpuset {
        annotations.insert(ANNOTATION_CPUSET.to_string(), set.clone());
    }
    annotations.insert(ANNOTATION_PIDS.to_string(), spec.pids_limit.to_string());
    let labels = spec.labels.iter().map(|(k, v)| (k.clone(), label_value(v))).collect();
    let (uid, gid) = user_ids(&spec.user)?;
    if uid == 0 {
        bail!("container user {}: a Pod runs as non-root only (runAsNonRoot)", spec.user);
    }
    // Podman names an emptyDir's volume after it: a name of this pod's own, never one shared with another.
    let tmp = pod_name(&format!("tmp-{}", pod_name(name)));
    let host_network = spec.netns.is_none();
    // On the host's network a loopback listener answers the kubelet only on loopback.
    let probe_host = (host_network && listen.starts_with("127.")).then(|| listen.to_string());
    Ok(Pod {
        api_version: "v1",
        kind: "Pod",
        metadata: Metadata { name: pod_name(name), labels, annotations },
        spec: PodSpec {
            host_network,
            restart_policy: "Never",
            volumes: vec![Volume { name: tmp.clone(), empty_dir: BTreeMap::new() }],
            containers: vec![Container {
                name: CONTAINER,
                image: spec.image.clone(),
                args: spec.args.clone(),
                env: spec.env.iter().map(|(k, v)| EnvVar { name: k.clone(), value: v.clone() }).collect(),
                ports: if host_network { Vec::new() } else { vec![Port { container_port: port, name: "http" }] },
                resources: Resources { requests: limits.clone(), limits },
                readiness_probe: Probe {
                    http_get: HttpGet { host: probe_host, path: readiness.to_string(), port },
                    period_seconds: 1,
                },
                security_context: SecurityContext::confined(uid, gid, &spec.capabilities),
                volume_mounts: vec![VolumeMount { name: tmp, mount_path: super::confinement::TMP_MOUNT }],
            }],
        },
    })
}

/// The Pod as YAML, with a first comment line saying where it comes from.
pub fn to_yaml(pod: &Pod, origin: &str) -> Result<String> {
    Ok(format!("# {origin}\n{}", serde_norway::to_string(pod)?))
}

//! The Kubernetes Pod a container service becomes (docs/kubernetes.md): built from the same
//! [`ContainerSpec`] a container run starts from, so that `svcbench pod` writes and `run --runtime kube`
//! plays one and the same spec. Pure: no engine, no file, no clock.
//!
//! Requests equal limits (CPU in millicores, memory in Mi where it divides, else bytes): the Guaranteed QoS
//! class a dense cluster gives a service it sizes, and the only one whose limits are the cgroup's cap, as
//! svcbench's are. What a Pod cannot say is kept as an annotation: the CPU set (Kubernetes' CPU manager
//! picks CPUs itself) and the pids limit (a kubelet setting, `podPidsLimit`, not a Pod's).
use super::run::ContainerSpec;
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
    pub allow_privilege_escalation: bool,
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
                security_context: SecurityContext {
                    run_as_user: uid,
                    run_as_group: gid,
                    allow_privilege_escalation: false,
                },
            }],
        },
    })
}

/// The Pod as YAML, with a first comment line saying where it comes from.
pub fn to_yaml(pod: &Pod, origin: &str) -> Result<String> {
    Ok(format!("# {origin}\n{}", serde_norway::to_string(pod)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::Service;
    use crate::sandbox::Limits;

    /// The hello service's container variant as its manifest writes it, loaded as svcbench loads it.
    fn hello() -> (tempfile::TempDir, Service) {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("svcbench.toml"),
            "name = \"hello\"\nscenario = \"hello\"\nlanguage = \"go\"\nframework = \"x\"\nframework_version = \"1\"\n\
             model = \"blocking\"\nrun = \"./hello\"\nreadiness = \"/ready\"\n[env]\nPORT = \"{port}\"\nHOST = \
             \"{host}\"\n[variant.container]\ncontainer = { image = \"localhost/hello:1\", args = [\"--listen\", \
             \"{host}:{port}\"] }\n",
        )
        .unwrap();
        let svc = Service::load_spec(&format!("{}@container", d.path().display())).unwrap().remove(0);
        (d, svc)
    }

    fn limits() -> Limits {
        Limits { cpus: Some(0.5), memory_bytes: Some(64 << 20), cpuset: Some("1".into()) }
    }

    fn pod_of(svc: &Service, limits: &Limits, netns: Option<&str>) -> Pod {
        let spec = crate::service::container_start::container_spec(
            svc,
            &crate::service::container_start::Resolved {
                name: "4242-1-hello-container".into(),
                image: "localhost/hello:1".into(),
                port: 8080,
                host: "127.0.0.1".into(),
                netns: netns.map(String::from),
                dep_placeholders: Default::default(),
                env_overrides: Default::default(),
                labels: vec![("svcbench.run".into(), "7".into())],
            },
            limits,
        )
        .unwrap();
        build(&spec, "svcbench-4242-1-hello@container", &svc.manifest.readiness, 8080, "127.0.0.1").unwrap()
    }

    #[test]
    fn requests_equal_limits_in_kubernetes_units() {
        let (_d, svc) = hello();
        let pod = pod_of(&svc, &limits(), None);
        let r = &pod.spec.containers[0].resources;
        assert_eq!(r.requests, r.limits, "Guaranteed QoS: requests equal limits");
        assert_eq!(r.limits["cpu"], "500m");
        assert_eq!(r.limits["memory"], "64Mi");
        assert_eq!(pod.metadata.annotations[ANNOTATION_CPUSET], "1");
        assert_eq!(memory_quantity((64 << 20) + 1), "67108865");
        assert_eq!(millicores(1.5).unwrap(), "1500m");
        assert!(millicores(0.0004).is_err(), "below a millicore");
        // No quota asked: no CPU in the pod at all (its QoS is then Burstable).
        let pod = pod_of(&svc, &Limits { cpus: None, ..limits() }, None);
        assert!(!pod.spec.containers[0].resources.limits.contains_key("cpu"));
    }

    #[test]
    fn the_manifest_s_readiness_env_and_args_are_resolved_as_for_a_container_run() {
        let (_d, svc) = hello();
        let pod = pod_of(&svc, &limits(), None);
        let c = &pod.spec.containers[0];
        assert_eq!(c.readiness_probe.http_get.path, "/ready");
        assert_eq!(c.readiness_probe.http_get.port, 8080);
        assert_eq!(c.readiness_probe.http_get.host.as_deref(), Some("127.0.0.1"));
        let env: Vec<(&str, &str)> = c.env.iter().map(|e| (e.name.as_str(), e.value.as_str())).collect();
        assert_eq!(env, [("HOST", "127.0.0.1"), ("PORT", "8080")]);
        assert_eq!(c.args, ["--listen", "127.0.0.1:8080"]);
        assert_eq!(c.image, "localhost/hello:1");
        assert_eq!(
            c.security_context,
            SecurityContext { run_as_user: 65534, run_as_group: 65534, allow_privilege_escalation: false }
        );
        assert!(pod.spec.host_network, "no --net: the host's network, as the container backend uses");
        assert_eq!(pod.spec.restart_policy, "Never");
        assert_eq!(pod.metadata.name, "svcbench-4242-1-hello-container");
        assert_eq!(pod.metadata.labels["svcbench.run"], "7");
        assert_eq!(pod.metadata.labels["svcbench.service"], "hello-container");
        // Under --net the pod has a network of its own and the kubelet probes its address.
        let pod = pod_of(&svc, &limits(), Some("svcb-1"));
        assert!(!pod.spec.host_network);
        assert_eq!(pod.spec.containers[0].readiness_probe.http_get.host, None);
        assert_eq!(pod.spec.containers[0].ports, [Port { container_port: 8080, name: "http" }]);
    }

    #[test]
    fn the_yaml_is_what_kubernetes_reads() {
        let (_d, svc) = hello();
        let text = to_yaml(&pod_of(&svc, &limits(), None), "test").unwrap();
        let back: serde_norway::Value = serde_norway::from_str(&text).unwrap();
        assert_eq!(back["apiVersion"], "v1");
        assert_eq!(back["kind"], "Pod");
        let c = &back["spec"]["containers"][0];
        assert_eq!(c["resources"]["requests"]["cpu"], "500m");
        assert_eq!(c["resources"]["limits"]["memory"], "64Mi");
        assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/ready");
        assert_eq!(c["securityContext"]["runAsUser"], 65534);
        assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
        assert_eq!(back["spec"]["hostNetwork"], true);
        // Env values stay strings, even those that read as numbers.
        assert!(text.contains("value: '8080'") || text.contains("value: \"8080\""), "{text}");
    }

    #[test]
    fn names_and_label_values_are_kubernetes_ones() {
        assert_eq!(label_value("hello-go-nethttp@container"), "hello-go-nethttp-container");
        assert_eq!(label_value(&"x".repeat(80)).len(), 63);
        assert_eq!(label_value("-a-"), "a");
        assert_eq!(pod_name("svcbench-4242-1-Hello_Go@container"), "svcbench-4242-1-hello-go-container");
    }
}

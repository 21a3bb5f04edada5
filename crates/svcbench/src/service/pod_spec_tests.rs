//! The Pod spec of a container service (sandbox/container/pod_spec.rs) from its manifest, filled as a
//! container run fills it: tested here, where the manifest and the container's start meet.
use crate::manifest::Service;
use crate::sandbox::container::pod_spec::*;
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
    Limits { cpus: Some(0.5), memory_bytes: Some(64 << 20), cpuset: Some("1".into()), pids: None }
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
    assert_eq!(c.security_context, SecurityContext::confined(65534, 65534, &[]));
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

/// The image is untrusted: the Pod holds it as `<engine> run` does (non-root, no capability but the
/// manifest's, no escalation, the runtime's seccomp profile, a read-only root with an emptyDir at /tmp).
#[test]
fn the_pod_confines_its_container_and_adds_only_the_manifest_s_capabilities() {
    let (d, _) = hello();
    let text = std::fs::read_to_string(d.path().join("svcbench.toml")).unwrap();
    let text = text.replace("args = [", "capabilities = [\"NET_BIND_SERVICE\"], args = [");
    std::fs::write(d.path().join("svcbench.toml"), text).unwrap();
    let svc = Service::load_spec(&format!("{}@container", d.path().display())).unwrap().remove(0);
    let yaml = to_yaml(&pod_of(&svc, &limits(), None), "test").unwrap();
    let back: serde_norway::Value = serde_norway::from_str(&yaml).unwrap();
    let c = &back["spec"]["containers"][0];
    let sc = &c["securityContext"];
    assert_eq!(sc["runAsNonRoot"], true, "{yaml}");
    assert_eq!(sc["runAsUser"], 65534, "{yaml}");
    assert_eq!(sc["readOnlyRootFilesystem"], true, "{yaml}");
    assert_eq!(sc["allowPrivilegeEscalation"], false, "{yaml}");
    assert_eq!(sc["capabilities"]["drop"][0], "ALL", "{yaml}");
    assert_eq!(sc["capabilities"]["add"][0], "NET_BIND_SERVICE", "{yaml}");
    assert_eq!(sc["seccompProfile"]["type"], "RuntimeDefault", "{yaml}");
    assert_eq!(c["volumeMounts"][0]["mountPath"], "/tmp", "{yaml}");
    let tmp = c["volumeMounts"][0]["name"].as_str().unwrap();
    assert_eq!(back["spec"]["volumes"][0]["name"].as_str(), Some(tmp), "{yaml}");
    assert!(back["spec"]["volumes"][0]["emptyDir"].is_mapping(), "{yaml}");
    // Named after its pod: Podman makes a volume of that name, which no other pod may share.
    assert!(tmp.starts_with("tmp-svcbench-4242-1-hello") && tmp.len() <= 63, "{tmp}");
    // Without capabilities asked, none is added.
    let (_d, plain) = hello();
    let yaml = to_yaml(&pod_of(&plain, &limits(), None), "test").unwrap();
    assert!(!yaml.contains("add:"), "{yaml}");
    // A capability Linux does not know: one line, when the manifest is read.
    let text = std::fs::read_to_string(d.path().join("svcbench.toml")).unwrap().replace("NET_BIND_SERVICE", "BIND_ALL");
    std::fs::write(d.path().join("svcbench.toml"), text).unwrap();
    let e = format!("{:#}", Service::load_spec(&format!("{}@container", d.path().display())).unwrap_err());
    assert!(e.contains("\"BIND_ALL\" is not a Linux capability") && !e.contains('\n'), "{e}");
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

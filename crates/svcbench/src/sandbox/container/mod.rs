//! The container sandbox: a service run from an OCI image by Docker or Podman under the same limits as a
//! process (docs/containers.md). engine.rs finds and calls the engine, image.rs builds or finds the image,
//! spec.rs is what a container is asked to be, run.rs runs one and reads its cgroup, cleanup.rs removes what a killed svcbench left;
//! pod_spec.rs writes the same container as a Kubernetes Pod and kube.rs plays it with Podman
//! (docs/kubernetes.md).
pub mod cleanup;
pub mod confinement;
pub mod engine;
pub mod image;
pub mod kube;
pub mod pod_spec;
pub mod run;
pub mod spec;

/// How a container service is started (the manifest's container section carries it).
pub use crate::manifest::Runtime;

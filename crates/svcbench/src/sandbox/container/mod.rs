//! The container sandbox: a service run from an OCI image by Docker or Podman under the same limits as a
//! process (docs/containers.md). engine.rs finds and calls the engine, image.rs builds or finds the image,
//! run.rs runs one container and reads its cgroup, cleanup.rs removes what a killed svcbench left.
pub mod cleanup;
pub mod engine;
pub mod image;
pub mod run;

//! Where a service starts: on another machine (a hosts file's `[service] at`), as a container (the
//! manifest's `[container]`), or as a process here. Each start returns the same [`Instance`].
use super::instance::{Instance, StartSpec};
use crate::manifest::Service;
use anyhow::Result;

impl Instance {
    pub fn spawn(svc: &Service, spec: &StartSpec) -> Result<Instance> {
        if let Some(remote) = spec.remote {
            return remote.clone().start(svc, spec);
        }
        if svc.manifest.container.is_some() {
            return super::container_start::spawn(svc, spec);
        }
        super::process_start::spawn(svc, spec)
    }
}

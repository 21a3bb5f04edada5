//! Containers and pods svcbench leaves behind: its own, when it must end everything at once (a second
//! Ctrl-C), and those of an svcbench that was killed (SIGKILL, OOM), as its lock file records them
//! (guard/). Only what svcbench itself asked the engine for is removed: a container or pod is named by the
//! lock file, and is the one recorded (its id; before the engine gave one, its name with the owner labels
//! of the lock file's svcbench). A label alone proves nothing: anyone can set `svcbench.owner`.
use super::engine::{Engine, COMMAND_TIMEOUT};
use super::run::remove_parent_groups;
use super::spec::{LABEL_OWNER, LABEL_OWNER_START};
use crate::guard::identity::Identity;
use crate::guard::{EngineKind, EngineObject, Part};

/// An engine CLI on PATH, without asking a daemon anything (every `run` looks, so it must be cheap).
fn engine_installed() -> Option<Engine> {
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        if dir.join("podman").is_file() {
            return Some(Engine { kind: super::engine::Kind::Podman, program: "podman".into() });
        }
    }
    for dir in std::env::split_paths(&path) {
        if dir.join("docker").is_file() {
            return Engine::detect(Some("docker")).ok();
        }
    }
    None
}

/// The engine's id of the container or pod `name_or_id` resolves to, with its owner labels.
fn look_up(engine: &Engine, o: &EngineObject, name_or_id: &str) -> Option<(String, String, String)> {
    let labels = match o.kind {
        EngineKind::Container => ".Config.Labels",
        EngineKind::Pod => ".Labels",
    };
    let format =
        format!("{{{{.Id}}}}|{{{{index {labels} \"{LABEL_OWNER}\"}}}}|{{{{index {labels} \"{LABEL_OWNER_START}\"}}}}");
    let mut args = match o.kind {
        EngineKind::Container => vec!["container", "inspect"],
        EngineKind::Pod => vec!["pod", "inspect"],
    };
    args.extend(["--format", &format, name_or_id]);
    let text = engine.run(&args, COMMAND_TIMEOUT).ok()?;
    let f: Vec<&str> = text.trim().splitn(3, '|').collect();
    (f.len() == 3).then(|| (f[0].to_string(), f[1].to_string(), f[2].to_string()))
}

/// The id of the recorded object if it is still there and still the one `owner` started: the id recorded,
/// or (killed before the engine gave one) the name recorded carrying `owner`'s labels.
fn still_owned(engine: &Engine, o: &EngineObject, owner: &Identity) -> Option<String> {
    match &o.id {
        Some(id) => look_up(engine, o, id).filter(|(found, _, _)| found == id).map(|(found, _, _)| found),
        None => look_up(engine, o, &o.name)
            .filter(|(_, pid, start)| *pid == owner.pid.to_string() && *start == owner.start_ticks.to_string())
            .map(|(found, _, _)| found),
    }
}

fn remove(engine: &Engine, o: &EngineObject, id: &str) {
    match o.kind {
        EngineKind::Container => drop(engine.run(&["rm", "-f", id], COMMAND_TIMEOUT)),
        EngineKind::Pod => super::kube::remove(engine, id),
    }
}

/// What was removed: pods and containers, by name, for one line each.
#[derive(Debug, Default)]
pub struct Removed {
    pub pods: Vec<String>,
    pub containers: Vec<String>,
}

/// Removes the containers and pods a dead svcbench's lock file records for its parts (pods first: whole,
/// with their infra containers), then their cgroup parents, which only a part named after its owner has.
pub fn remove_recorded(owner: &Identity, parts: &[Part], removed: &mut Removed) {
    let objects: Vec<(&Part, &EngineObject)> =
        parts.iter().flat_map(|p| p.engine.iter().map(move |o| (p, o))).collect();
    if objects.is_empty() {
        return;
    }
    let Some(engine) = engine_installed() else { return };
    let mut sorted = objects;
    sorted.sort_by_key(|(_, o)| o.kind != EngineKind::Pod);
    for (part, o) in sorted {
        if let Some(id) = still_owned(&engine, o, owner) {
            remove(&engine, o, &id);
            match o.kind {
                EngineKind::Pod => removed.pods.push(o.name.clone()),
                EngineKind::Container => removed.containers.push(o.name.clone()),
            }
        }
        let own =
            part.name.starts_with(&format!("{}-", owner.pid)) && !part.name.contains('/') && !part.name.contains("..");
        if own && o.kind == EngineKind::Container {
            remove_parent_groups(&part.name);
        }
    }
}

/// Removes this svcbench's own containers and pods (everything ends at once), from its own registry.
pub fn remove_own() {
    let parts: Vec<Part> = crate::guard::registered().into_iter().map(|p| p.part).collect();
    let Some(engine) = engine_installed().filter(|_| parts.iter().any(|p| !p.engine.is_empty())) else { return };
    for p in &parts {
        for o in &p.engine {
            remove(&engine, o, o.id.as_deref().unwrap_or(&o.name));
        }
        if p.engine.iter().any(|o| o.kind == EngineKind::Container) {
            remove_parent_groups(&p.name);
        }
    }
}

/// The owner labels of a container this svcbench starts: what ties a container whose id was not yet
/// recorded to the lock file naming it.
pub fn owner_labels() -> Vec<(String, String)> {
    let me = std::process::id() as i32;
    vec![
        (LABEL_OWNER.into(), me.to_string()),
        (LABEL_OWNER_START.into(), crate::guard::identity::start_ticks(me).unwrap_or(0).to_string()),
    ]
}

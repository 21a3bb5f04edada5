//! Containers svcbench leaves behind: its own, when it must end everything at once (a second Ctrl-C), and
//! those of an svcbench that was killed (SIGKILL, OOM), found by their labels at the next `run` or `up`.
//! A container is removed only when its label names svcbench's owner process and that process (pid and
//! start time) no longer runs, or is this svcbench itself when it ends its own. A pod svcbench played
//! (`--runtime kube`) is found by the same labels on the pod and removed whole.
use super::engine::{Engine, COMMAND_TIMEOUT};
use super::run::{remove_parent_groups, LABEL_GROUP, LABEL_OWNER, LABEL_OWNER_START};

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

/// One labelled container: its name, its owner (pid, start ticks) and its cgroup parent's name.
struct Labelled {
    name: String,
    owner: i32,
    owner_start: u64,
    group: String,
}

fn labelled(engine: &Engine) -> Vec<Labelled> {
    let Ok(ids) = engine.run(&["ps", "-a", "-q", "--filter", &format!("label={LABEL_OWNER}")], COMMAND_TIMEOUT) else {
        return Vec::new();
    };
    let ids: Vec<&str> = ids.split_whitespace().collect();
    if ids.is_empty() {
        return Vec::new();
    }
    let format = format!(
        "{{{{.Name}}}}|{{{{index .Config.Labels \"{LABEL_OWNER}\"}}}}|{{{{index .Config.Labels \
         \"{LABEL_OWNER_START}\"}}}}|{{{{index .Config.Labels \"{LABEL_GROUP}\"}}}}"
    );
    let mut args = vec!["inspect", "--format", &format];
    args.extend(ids);
    let Ok(text) = engine.run(&args, COMMAND_TIMEOUT) else { return Vec::new() };
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.trim().split('|').collect();
            (f.len() == 4).then(|| Labelled {
                name: f[0].trim_start_matches('/').to_string(),
                owner: f[1].parse().unwrap_or(0),
                owner_start: f[2].parse().unwrap_or(0),
                group: f[3].to_string(),
            })
        })
        .collect()
}

fn remove(engine: &Engine, c: &Labelled) {
    let _ = engine.run(&["rm", "-f", &c.name], COMMAND_TIMEOUT);
    // Only a group named after its owner, as every svcbench sandbox is: never a path from elsewhere.
    if c.group.starts_with(&format!("{}-", c.owner)) && !c.group.contains('/') && !c.group.contains("..") {
        remove_parent_groups(&c.group);
    }
}

/// Pods svcbench played (`run --runtime kube`), by name, with their owner (pid, start ticks). Their
/// containers carry the pod's labels too, but removing one would leave its pod and infra container: a pod
/// goes whole, first.
fn labelled_pods(engine: &Engine) -> Vec<(String, i32, u64)> {
    if engine.kind != super::engine::Kind::Podman {
        return Vec::new();
    }
    let format =
        format!("{{{{.Name}}}}|{{{{index .Labels \"{LABEL_OWNER}\"}}}}|{{{{index .Labels \"{LABEL_OWNER_START}\"}}}}");
    let args = ["pod", "ps", "--filter", &format!("label={LABEL_OWNER}"), "--format", &format];
    let Ok(text) = engine.run(&args, COMMAND_TIMEOUT) else { return Vec::new() };
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.trim().split('|').collect();
            (f.len() == 3).then(|| (f[0].to_string(), f[1].parse().unwrap_or(0), f[2].parse().unwrap_or(0)))
        })
        .collect()
}

/// Whether the svcbench that labelled something still runs (pid and start time both).
fn owner_alive(pid: i32, start: u64) -> bool {
    pid > 1 && crate::guard::identity::start_ticks(pid) == Some(start)
}

/// Removes the pods played by svcbench processes that no longer run; their names, for one line.
pub fn remove_orphan_pods() -> Vec<String> {
    let Some(engine) = engine_installed() else { return Vec::new() };
    let mut removed = Vec::new();
    for (pod, owner, start) in labelled_pods(&engine) {
        if !owner_alive(owner, start) {
            super::kube::remove(&engine, &pod);
            removed.push(pod);
        }
    }
    removed
}

/// Removes the containers of svcbench processes that no longer run; their names, for one line.
pub fn remove_orphans() -> Vec<String> {
    let Some(engine) = engine_installed() else { return Vec::new() };
    let mut removed = Vec::new();
    for c in labelled(&engine) {
        if !owner_alive(c.owner, c.owner_start) {
            remove(&engine, &c);
            removed.push(c.name);
        }
    }
    removed
}

/// Removes this svcbench's own containers (everything ends at once).
pub fn remove_own() {
    let Some(engine) = engine_installed() else { return };
    let me = std::process::id() as i32;
    for (pod, _, _) in labelled_pods(&engine).iter().filter(|(_, owner, _)| *owner == me) {
        super::kube::remove(&engine, pod);
    }
    for c in labelled(&engine).iter().filter(|c| c.owner == me) {
        remove(&engine, c);
    }
}

/// The owner labels of a container this svcbench starts.
pub fn owner_labels() -> Vec<(String, String)> {
    let me = std::process::id() as i32;
    vec![
        (LABEL_OWNER.into(), me.to_string()),
        (LABEL_OWNER_START.into(), crate::guard::identity::start_ticks(me).unwrap_or(0).to_string()),
    ]
}

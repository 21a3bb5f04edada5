//! A service started as a process on this machine: its `run` filled and started without a shell where it
//! has no shell syntax, as its own user with an allow-listed environment and a private HOME, in a sandbox
//! (cgroup) under its limits.
use super::instance::{Instance, StartSpec};
use crate::manifest::{fill_placeholders, Service};
use crate::sandbox::process::StartCommand;
use crate::sandbox::service_user;
use crate::sandbox::Sandbox;
use anyhow::{Context, Result};
use std::time::Instant;

/// `java` for the `{java}` placeholder: JAVA_HOME's, else the one on PATH.
fn java() -> String {
    std::env::var("JAVA_HOME").map(|h| format!("{h}/bin/java")).unwrap_or_else(|_| "java".into())
}

/// The PATH a service's program is looked up on (its environment's, from the allow-list).
fn service_path(env: &[(String, String)]) -> String {
    env.iter().rev().find(|(k, _)| k == "PATH").map_or("/usr/local/bin:/usr/bin:/bin".into(), |(_, v)| v.clone())
}

pub fn spawn(svc: &Service, spec: &StartSpec) -> Result<Instance> {
    let port = crate::readiness::free_port()?;
    let mut values = spec.dep_placeholders.clone();
    values.insert("port".into(), port.to_string());
    // The address to listen on: loopback, or the service's own address under --net.
    values.insert("host".into(), spec.host.addr.to_string());
    values.insert("dir".into(), svc.dir.display().to_string());
    values.insert("java".into(), java());
    let manifest_file = svc.dir.join("svcbench.toml");
    let fill = |what: &str, text: &str| {
        fill_placeholders(text, &values).with_context(|| format!("{}: {what}", manifest_file.display()))
    };
    // Only the allow-list, a private HOME, JAVA_HOME where `{java}` is used, then the manifest's env.
    let user = service_user::for_service(svc.manifest.run_as, spec.account)?;
    let home = service_user::private_folder("home", user.as_ref())?;
    let java_home = std::env::var("JAVA_HOME").ok().filter(|_| svc.manifest.run.contains("{java}"));
    let mut env = service_user::base_env(home.path(), java_home.as_deref());
    let mut merged = svc.manifest.env.clone();
    merged.extend(spec.env_overrides.clone());
    for (k, v) in &merged {
        env.push((k.clone(), fill(&format!("env.{k}"), v)?));
    }
    let command = super::start_command::from_run(&svc.manifest.run, &values)
        .with_context(|| format!("{}: run", manifest_file.display()))?;
    // The program the service starts with (through a shell: its first word, unless the shell makes it).
    let program = match &command {
        StartCommand::Direct(words) => words.first().cloned(),
        StartCommand::Shell(line) => {
            shlex::split(line).and_then(|w| w.into_iter().next()).filter(|w| !w.contains('$') && !w.contains('='))
        }
    };
    service_user::check_reachable(user.as_ref(), &svc.dir, program.as_deref(), &service_path(&env))?;
    let log_path = spec.log_dir.join(&spec.log_name);
    let log = crate::safe_fs::create_file(&log_path)?;
    let mut sandbox = Sandbox::new(&spec.sandbox_name, spec.limits, spec.cgroup);
    sandbox.place_on(spec.host);
    if let Some(u) = &user {
        sandbox.run_as((u.uid, u.gid));
    }
    let spawned_at = Instant::now();
    sandbox.start(command, &svc.dir, &env, log)?;
    Ok(Instance {
        sandbox: Box::new(sandbox),
        host: spec.host.clone(),
        port,
        log_path,
        spawned_at,
        user: Some(service_user::name_of(user.as_ref())),
        _home: Some(home),
        first_answer: None,
    }
    .watched(&svc.manifest.readiness))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::{CgroupChoice, Limits};
    use std::collections::BTreeMap;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;
    use std::time::Duration;

    /// Starts a service whose `run` is `run` with a `--dep` URL carrying a command substitution, waits for
    /// it to end, and returns its log.
    fn run_with_hostile_url(dir: &Path, run: &str, url: &str) -> String {
        let svc_dir = dir.join(format!("svc-{}", run.len()));
        std::fs::create_dir_all(&svc_dir).unwrap();
        std::fs::write(
            svc_dir.join("svcbench.toml"),
            crate::manifest::test_manifest(
                "x",
                "hello",
                &format!("readiness = \"/\"\nrun = \"{}\"\n", run.replace('\\', "\\\\").replace('"', "\\\"")),
            ),
        )
        .unwrap();
        let svc = Service::load(&svc_dir).unwrap();
        let deps = BTreeMap::from([("dep.opensearch.url".to_string(), url.to_string())]);
        let (limits, host, empty) = (Limits::default(), crate::network::Host::local(), BTreeMap::new());
        let spec = StartSpec {
            sandbox_name: format!("test-quoting-{}-{}", std::process::id(), run.len()),
            limits: &limits,
            cgroup: CgroupChoice::None,
            dep_placeholders: &deps,
            log_dir: &dir.join("logs"),
            log_name: format!("{}.log", run.len()),
            env_overrides: &empty,
            host: &host,
            remote: None,
            labels: Vec::new(),
            account: crate::sandbox::service_user::Account::Main,
        };
        let mut inst = Instance::spawn(&svc, &spec).unwrap();
        let ended = crate::poll::until(Duration::from_secs(10), Duration::from_millis(10), || inst.sandbox.try_exit());
        assert!(ended.is_some(), "{run} did not end");
        std::fs::read_to_string(&inst.log_path).unwrap()
    }

    #[test]
    fn a_dep_url_with_a_command_substitution_runs_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        // The service's user enters the folder; an injected `touch` would succeed in `open` whoever it runs as.
        // (Its logs stay out of `open`: svcbench makes no file in a folder other users can write.)
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let open = tmp.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let planted = open.join("planted");
        let url = format!("http://$(touch {})@127.0.0.1:9200", planted.display());
        // Without shell syntax (no shell at all), and with it (the value quoted for the shell).
        for run in ["echo {dep.opensearch.url}", "echo {dep.opensearch.url} && echo \"$HOME\" >/dev/null"] {
            let log = run_with_hostile_url(tmp.path(), run, &url);
            assert_eq!(log.trim(), url, "{run}: the URL reaches the service as it was given");
            assert!(!planted.exists(), "{run}: the URL's command ran");
        }
    }
}

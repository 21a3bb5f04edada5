//! What svcbench asks of another machine over ssh before it relies on it: its facts (`svcbench
//! host-facts`, also the first proof that ssh and svcbench work there), and whether the hosts file's
//! placement can work at all for the scenario.
use super::hosts_file::Place;
use crate::sandbox::process::shell_quote;
use anyhow::{bail, Context, Result};
use std::time::Duration;

/// How long `svcbench host-facts` there may take in all, the connection included.
pub const HOST_FACTS_TIMEOUT: Duration = Duration::from_secs(30);
/// The most a short command over ssh (`host-facts`) may print on each of stdout and stderr.
const MAX_OUTPUT_BYTES: u64 = 1 << 20;

/// Runs `cmd` to its end, its output collected, or kills it after `limit` (None).
fn output_within(cmd: &mut std::process::Command, limit: Duration) -> std::io::Result<Option<std::process::Output>> {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    let read_all = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = (&mut r).take(MAX_OUTPUT_BYTES).read_to_end(&mut v);
            // What passes the bound is read and dropped, so that the far side is never blocked writing.
            let _ = std::io::copy(&mut r, &mut std::io::sink());
            v
        })
    };
    let out = read_all(Box::new(child.stdout.take().expect("piped")));
    let err = read_all(Box::new(child.stderr.take().expect("piped")));
    let status = crate::poll::until(limit, Duration::from_millis(50), || child.try_wait().ok().flatten());
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        return Ok(None);
    };
    let (stdout, stderr) = (out.join().unwrap_or_default(), err.join().unwrap_or_default());
    Ok(Some(std::process::Output { status, stdout, stderr }))
}

/// The facts of the machine at `place`, as svcbench there reads them (`svcbench host-facts`). Asked before
/// anything is built, it is also the first proof that ssh and svcbench work there.
pub fn remote_facts(place: &Place, role: &str) -> Result<crate::host::HostFacts> {
    let Place::Ssh { svcbench, .. } = place else { return Ok(crate::host::facts()) };
    let mut ssh = crate::child::helper("ssh", crate::child::Needs::Ssh);
    ssh.args(place.ssh_args(&format!("{} host-facts", shell_quote(svcbench)))).stdin(std::process::Stdio::null());
    let out = output_within(&mut ssh, HOST_FACTS_TIMEOUT)
        .with_context(|| format!("cannot run ssh (install OpenSSH's client) for the {role} on another host"))?;
    let Some(out) = out else {
        bail!(
            "{role} host {}: `{svcbench} host-facts` did not answer within {} s over ssh; check that svcbench \
             there runs (try the same ssh command by hand)",
            place.describe(),
            HOST_FACTS_TIMEOUT.as_secs()
        );
    };
    let err = String::from_utf8_lossy(&out.stderr).trim().replace('\n', " ");
    if !out.status.success() {
        bail!(
            "{role} host {}: cannot run `{svcbench} host-facts` there over ssh ({err}); {}",
            place.describe(),
            hint(place, &err)
        );
    }
    serde_json::from_slice(&out.stdout).with_context(|| {
        format!(
            "{role} host {}: `{svcbench} host-facts` answered no facts; is it the same svcbench version?",
            place.describe()
        )
    })
}

/// What to do about a failed ssh, from ssh's own words `err`: a host key this machine does not know (ssh
/// runs with BatchMode, so it cannot ask) or one that changed, else the hosts file's usual suspects.
fn hint(place: &Place, err: &str) -> String {
    let Place::Ssh { destination, port, .. } = place else { return String::new() };
    let host = destination.rsplit_once('@').map_or(destination.as_str(), |(_, h)| h);
    let keyscan = match port {
        Some(p) => format!("ssh-keyscan -p {p} {host}"),
        None => format!("ssh-keyscan {host}"),
    };
    let known = match port {
        Some(p) => format!("[{host}]:{p}"),
        None => host.to_string(),
    };
    if err.contains("IDENTIFICATION HAS CHANGED") {
        format!(
            "its host key is not the one known_hosts holds: if the machine was reinstalled, remove the old key \
             (`ssh-keygen -R '{known}'`) and add the new one after checking its fingerprint (`{keyscan} >> \
             ~/.ssh/known_hosts`)"
        )
    } else if err.contains("Host key verification failed") {
        format!(
            "its host key is not in known_hosts here (ssh runs with BatchMode=yes, so it cannot ask): add it, after \
             checking its fingerprint (`{keyscan} >> ~/.ssh/known_hosts` as the user svcbench runs as), or give \
             ssh_options = [\"-o\", \"StrictHostKeyChecking=accept-new\"] (or UserKnownHostsFile=…) in the hosts file"
        )
    } else {
        "check the hosts file's address, key and svcbench path (the same svcbench version must be installed there)"
            .into()
    }
}

/// Every other machine of the hosts file, checked and described: the store's (which must be able to move
/// there), then each generator's.
pub fn other_hosts(
    plan: &super::hosts_file::HostsPlan,
    scenario: &crate::scenario::Scenario,
    given: &crate::deps::GivenDeps,
) -> Result<Vec<crate::host::OtherHost>> {
    let mut other = Vec::new();
    if let Some(at) = &plan.store {
        if let Some(why) = super::serve_deps::not_placeable(scenario) {
            bail!("the hosts file's [store]: {why}");
        }
        if !given.urls.is_empty() {
            bail!("--dep and the hosts file's [store] both say where the store is: give one or the other");
        }
        let facts = remote_facts(&at.place, "store")?;
        other.push(crate::host::OtherHost { role: "store".into(), place: at.place.describe(), facts });
    }
    if let Some(at) = &plan.service_at {
        if let Some(why) = unreachable_dependencies(plan, scenario, given) {
            bail!("the hosts file's [service] is on another host, {why}");
        }
        let facts = remote_facts(&at.place, "service")?;
        other.push(crate::host::OtherHost { role: "service".into(), place: at.place.describe(), facts });
    }
    for (i, place) in plan.generators.iter().enumerate() {
        if let Place::Ssh { .. } = place {
            let facts = remote_facts(place, "generator")?;
            other.push(crate::host::OtherHost { role: format!("generator {}", i + 1), place: place.describe(), facts });
        }
    }
    Ok(other)
}

/// Why a service on another machine could not reach its scenario's dependencies; None when it can: they run
/// on a machine of the hosts file (`[store]`), or are given by URLs that are not this machine's loopback.
fn unreachable_dependencies(
    plan: &super::hosts_file::HostsPlan,
    scenario: &crate::scenario::Scenario,
    given: &crate::deps::GivenDeps,
) -> Option<String> {
    let deps = &scenario.file.dependency;
    if deps.is_empty() || plan.store.is_some() {
        return None;
    }
    let missing: Vec<&str> = deps.iter().map(|d| d.kind.as_str()).filter(|k| !given.urls.contains_key(*k)).collect();
    if !missing.is_empty() {
        return Some(format!(
            "where scenario `{}`'s {} would run here, out of its reach: place them with [store], or give --dep \
             KIND=URL at an address that host reaches",
            scenario.name(),
            missing.join(", ")
        ));
    }
    let local = given.urls.iter().find(|(_, u)| u.contains("://127.") || u.contains("://localhost"));
    local.map(|(k, u)| format!("where --dep {k}={u} is this machine's loopback: give an address that host reaches"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn an_unknown_host_key_is_named_with_how_to_add_it() {
        let place = |port| Place::Ssh {
            destination: "bench@10.0.0.7".into(),
            port,
            options: vec![],
            svcbench: "svcbench".into(),
        };
        let h = hint(&place(Some(2222)), "Host key verification failed.");
        assert!(h.contains("known_hosts") && h.contains("ssh-keyscan -p 2222 10.0.0.7"), "{h}");
        assert!(h.contains("StrictHostKeyChecking=accept-new") && !h.contains('\n'), "{h}");
        let changed = "@@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@ … Host key verification failed.";
        assert!(hint(&place(None), changed).contains("ssh-keygen -R '10.0.0.7'"));
        let denied = hint(&place(None), "bench@10.0.0.7: Permission denied (publickey).");
        assert!(denied.contains("address, key and svcbench path") && !denied.contains("known_hosts"), "{denied}");
    }

    #[test]
    fn a_one_shot_command_that_hangs_is_killed_at_its_limit() {
        let t0 = Instant::now();
        let out = output_within(std::process::Command::new("sleep").arg("30"), Duration::from_millis(300)).unwrap();
        assert!(out.is_none() && t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
        let out = output_within(std::process::Command::new("echo").arg("facts"), Duration::from_secs(10)).unwrap();
        assert_eq!(out.unwrap().stdout, b"facts\n");
    }
}

//! What svcbench asks of another machine over ssh before it relies on it.
use super::hosts_file::Place;
use crate::sandbox::process::shell_quote;
use anyhow::{bail, Context, Result};

/// The facts of the machine at `place`, as svcbench there reads them (`svcbench host-facts`). Asked before
/// anything is built, it is also the first proof that ssh and svcbench work there.
pub fn remote_facts(place: &Place, role: &str) -> Result<crate::host::HostFacts> {
    let Place::Ssh { svcbench, .. } = place else { return Ok(crate::host::facts()) };
    let out = std::process::Command::new("ssh")
        .args(place.ssh_args(&format!("{} host-facts", shell_quote(svcbench))))
        .stdin(std::process::Stdio::null())
        .output()
        .with_context(|| format!("cannot run ssh (install OpenSSH's client) for the {role} on another host"))?;
    let err = String::from_utf8_lossy(&out.stderr).trim().replace('\n', " ");
    if !out.status.success() {
        bail!(
            "{role} host {}: cannot run `{svcbench} host-facts` there over ssh ({err}); check the hosts file's \
             address, key and svcbench path (the same svcbench version must be installed there)",
            place.describe()
        );
    }
    serde_json::from_slice(&out.stdout).with_context(|| {
        format!(
            "{role} host {}: `{svcbench} host-facts` answered no facts; is it the same svcbench version?",
            place.describe()
        )
    })
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
        if let Some(why) = crate::deps::serve::not_placeable(scenario) {
            bail!("the hosts file's [store]: {why}");
        }
        if !given.urls.is_empty() {
            bail!("--dep and the hosts file's [store] both say where the store is: give one or the other");
        }
        let facts = remote_facts(&at.place, "store")?;
        other.push(crate::host::OtherHost { role: "store".into(), place: at.place.describe(), facts });
    }
    for (i, place) in plan.generators.iter().enumerate() {
        if let Place::Ssh { .. } = place {
            let facts = remote_facts(place, "generator")?;
            other.push(crate::host::OtherHost { role: format!("generator {}", i + 1), place: place.describe(), facts });
        }
    }
    Ok(other)
}

//! Where the project's folders are: `profiles/`, `scenarios/`, found upwards from the current folder, so
//! svcbench works from any sub-folder of a checkout; SVCBENCH_HOME overrides.
use anyhow::{bail, Result};
use std::path::PathBuf;

pub fn project_dir(name: &str) -> Result<PathBuf> {
    if let Ok(home) = std::env::var("SVCBENCH_HOME") {
        return Ok(PathBuf::from(home).join(name));
    }
    let cwd = std::env::current_dir()?;
    for anc in cwd.ancestors() {
        let c = anc.join(name);
        if c.is_dir() {
            return Ok(c);
        }
    }
    // The binary may live in target/<profile>/ of the checkout.
    if let Ok(exe) = std::env::current_exe() {
        for anc in exe.ancestors() {
            let c = anc.join(name);
            if c.is_dir() {
                return Ok(c);
            }
        }
    }
    bail!(
        "no `{name}/` folder found above {}; run svcbench from the project checkout or set SVCBENCH_HOME",
        cwd.display()
    )
}

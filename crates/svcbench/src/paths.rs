//! Where the project's folders are: `profiles/`, `scenarios/`, found upwards from the current folder, so
//! svcbench works from any sub-folder of a checkout; SVCBENCH_HOME overrides. And the names of what they
//! hold, and of the folders a store's logs go to.
use anyhow::{bail, Result};
use std::path::{Path, PathBuf};

/// The names `pick` finds among a folder's entries, sorted (none when it cannot be read): named when one
/// asked for is not there.
pub fn names_in(dir: &Path, pick: impl Fn(&Path) -> Option<String>) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).into_iter().flatten().flatten().filter_map(|e| pick(&e.path())).collect();
    names.sort();
    names
}

/// A store's name in its log folders (`<name>-session-3`, `<name>-duet-1`): numbers restart in every store,
/// so its logs must not mix with another's.
pub fn store_name(db: &Path) -> &str {
    db.file_stem().and_then(|s| s.to_str()).unwrap_or("svcbench")
}

/// The bundled `name/` folder: SVCBENCH_HOME's, or that of the checkout the binary was built in. Unlike
/// [`project_dir`], a folder of that name above the current one is not it.
pub fn bundled_dir(name: &str) -> Option<PathBuf> {
    if let Ok(home) = std::env::var("SVCBENCH_HOME") {
        return Some(PathBuf::from(home).join(name));
    }
    std::env::current_exe().ok()?.ancestors().map(|a| a.join(name)).find(|c| c.is_dir())
}

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
    if let Some(c) = bundled_dir(name) {
        return Ok(c);
    }
    bail!(
        "no `{name}/` folder found above {}; run svcbench from the project checkout or set SVCBENCH_HOME",
        cwd.display()
    )
}

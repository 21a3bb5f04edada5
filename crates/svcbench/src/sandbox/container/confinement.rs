//! What a container service may not do, whatever its image holds (the image is the code under test, and
//! untrusted): no capability beyond those its manifest asks for, no new privileges (a setuid-root file in
//! the image stays the user it was run as), a read-only root with a private /tmp, a non-root user and a
//! pids limit. The same words for `<engine> run` and for the Pod spec, and the check that the kernel holds
//! them, read from the container's process (/proc/<pid>/status, its mounts, its pids cgroup): a container
//! that does not is refused, never measured.
pub use crate::capabilities::capability_names;
use crate::capabilities::CAPABILITIES;

/// The pids limit of a container whose manifest gives none (`[container] pids_limit`): every cgroup's.
pub const DEFAULT_PIDS_LIMIT: u32 = crate::sandbox::cgroup::DEFAULT_PIDS as u32;

/// The container's own /tmp: a tmpfs (charged to its memory cgroup) that its user can write.
pub const TMP_MOUNT: &str = "/tmp";
pub const TMP_OPTIONS: &str = "rw,nosuid,nodev,mode=1777";

/// The capability set of the names (as /proc/<pid>/status shows it: a bit per capability).
fn mask_of(names: &[String]) -> u64 {
    names.iter().filter_map(|n| CAPABILITIES.iter().position(|c| c == n)).fold(0, |m, bit| m | 1 << bit)
}

/// The names of a capability set's bits (for a refusal).
fn names_of(mask: u64) -> Vec<String> {
    (0..64)
        .filter(|bit| mask & (1 << bit) != 0)
        .map(|bit| CAPABILITIES.get(bit).map_or(format!("capability {bit}"), |c| c.to_string()))
        .collect()
}

/// What a container's process is held to, as the kernel says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// Real, effective, saved and filesystem uids, as seen from this machine.
    pub uids: Vec<u32>,
    pub cap_effective: u64,
    pub cap_bounding: u64,
    pub no_new_privs: bool,
    pub root_read_only: bool,
    /// The pids limit of its cgroup (None: `max` or unreadable).
    pub pids_max: Option<u64>,
}

fn status_field<'a>(status: &'a str, key: &str) -> Option<&'a str> {
    status.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(':')).map(str::trim)
}

/// Whether the mount at `/` in a mountinfo is read-only (its per-mount options, the sixth field).
fn root_read_only(mountinfo: &str) -> bool {
    let root = mountinfo.lines().rev().map(|l| l.split(' ').collect::<Vec<_>>()).find(|f| f.len() > 5 && f[4] == "/");
    root.is_some_and(|f| f[5].split(',').any(|o| o == "ro"))
}

/// Where `pid`'s pids limit is written: its group in the pids hierarchy (v1) or the unified one.
pub fn pids_max_file(pid: i32) -> Option<std::path::PathBuf> {
    let groups = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let (mount, path) = match groups.lines().find_map(|l| l.split_once(":pids:")) {
        Some((_, path)) => (crate::sandbox::cgroup::v1_mount("pids")?, path.to_string()),
        None => (crate::sandbox::cgroup::v2_mount()?, groups.lines().find_map(|l| l.strip_prefix("0::"))?.to_string()),
    };
    Some(mount.join(path.trim_start_matches('/')).join("pids.max"))
}

/// What the kernel holds `pid` to now; None once it has gone.
pub fn held(pid: i32) -> Option<Held> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let mountinfo = std::fs::read_to_string(format!("/proc/{pid}/mountinfo")).ok()?;
    let hex = |k: &str| status_field(&status, k).and_then(|v| u64::from_str_radix(v, 16).ok());
    Some(Held {
        uids: status_field(&status, "Uid")?.split_whitespace().filter_map(|u| u.parse().ok()).collect(),
        cap_effective: hex("CapEff")?,
        cap_bounding: hex("CapBnd")?,
        no_new_privs: status_field(&status, "NoNewPrivs") == Some("1"),
        root_read_only: root_read_only(&mountinfo),
        pids_max: pids_max_file(pid).and_then(|f| std::fs::read_to_string(f).ok()).and_then(|t| t.trim().parse().ok()),
    })
}

/// How what is held falls short of the confinement asked (the manifest's capabilities, its pids limit),
/// one phrase each; empty when it holds.
pub fn shortfalls(held: &Held, capabilities: &[String], pids_limit: u32) -> Vec<String> {
    let mut out = Vec::new();
    if held.uids.is_empty() || held.uids.contains(&0) {
        out.push(format!("it runs as uid {:?}", held.uids));
    }
    let allowed = mask_of(capabilities);
    for (set, mask) in [("effective", held.cap_effective), ("bounding", held.cap_bounding)] {
        if mask & !allowed != 0 {
            out.push(format!("its {set} capabilities hold {} beyond those asked", names_of(mask & !allowed).join(",")));
        }
    }
    if !held.no_new_privs {
        out.push("no_new_privs is not set".into());
    }
    if !held.root_read_only {
        out.push("its root filesystem is writable".into());
    }
    match held.pids_max {
        Some(p) if p == u64::from(pids_limit) => {}
        Some(p) => out.push(format!("pids limit {pids_limit} asked, {p} held")),
        None => out.push(format!("pids limit {pids_limit} asked, none held")),
    }
    out
}

/// The one line refusing a container whose confinement does not hold.
pub fn refusal(container: &str, shortfalls: &[String]) -> String {
    format!(
        "container {container} is not confined as asked ({}), so it was stopped before any measurement: check the \
         engine's settings (docs/containers.md, \"Confinement\")",
        shortfalls.join("; ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_are_linux_s_names_and_anything_else_is_one_line() {
        let asked = ["NET_BIND_SERVICE".to_string(), "CAP_NET_BIND_SERVICE".into(), "SYS_PTRACE".into()];
        assert_eq!(capability_names(&asked).unwrap(), ["NET_BIND_SERVICE", "SYS_PTRACE"]);
        for bad in ["net_bind_service", "BOGUS", ""] {
            let e = capability_names(&[bad.to_string()]).unwrap_err().to_string();
            assert!(e.contains(&format!("{bad:?} is not a Linux capability")) && !e.contains('\n'), "{e}");
        }
        // The bits /proc shows: NET_BIND_SERVICE is 10 (0x400), CHECKPOINT_RESTORE the last, 40.
        assert_eq!(mask_of(&["NET_BIND_SERVICE".into()]), 0x400);
        assert_eq!(names_of(1 << 40 | 1), ["CHOWN", "CHECKPOINT_RESTORE"]);
    }

    /// This test's own process (root, every capability, a writable root, no pids limit of its own) is
    /// everything a confined container is not: each shortfall is named.
    #[test]
    fn an_unconfined_process_is_refused_for_each_thing_it_holds() {
        let me = held(std::process::id() as i32).unwrap();
        let says = shortfalls(&me, &[], DEFAULT_PIDS_LIMIT).join("; ");
        if me.uids.contains(&0) {
            assert!(says.contains("it runs as uid"), "{says}");
        }
        if me.cap_bounding != 0 {
            assert!(says.contains("bounding capabilities hold"), "{says}");
        }
        assert!(says.contains("no_new_privs is not set"), "{says}");
        assert!(says.contains("its root filesystem is writable"), "{says}");
        assert!(says.contains("pids limit 4096 asked"), "{says}");
        let line = refusal("svcbench-1-x", &shortfalls(&me, &[], 4096));
        assert!(line.contains("svcbench-1-x is not confined") && !line.contains('\n'), "{line}");
    }

    #[test]
    fn a_confined_process_passes_and_asked_capabilities_are_allowed() {
        let ok = Held {
            uids: vec![65534; 4],
            cap_effective: 0x400,
            cap_bounding: 0x400,
            no_new_privs: true,
            root_read_only: true,
            pids_max: Some(64),
        };
        assert!(shortfalls(&ok, &["NET_BIND_SERVICE".into()], 64).is_empty());
        let says = shortfalls(&ok, &[], 64).join("; ");
        assert!(says.contains("effective capabilities hold NET_BIND_SERVICE beyond those asked"), "{says}");
        let says = shortfalls(&Held { pids_max: None, ..ok.clone() }, &["NET_BIND_SERVICE".into()], 64).join("; ");
        assert_eq!(says, "pids limit 64 asked, none held");
        let says = shortfalls(&Held { uids: vec![65534, 0, 0, 0], ..ok }, &["NET_BIND_SERVICE".into()], 64);
        assert_eq!(says, ["it runs as uid [65534, 0, 0, 0]"]);
    }

    #[test]
    fn the_root_mount_s_own_options_say_read_only() {
        let ro = "22 1 0:63 / / ro,relatime - overlay overlay rw,lowerdir=/a\n23 22 0:5 / /tmp rw - tmpfs tmpfs rw\n";
        let rw = "22 1 0:63 / / rw,relatime - overlay overlay rw,lowerdir=/a\n";
        assert!(root_read_only(ro));
        assert!(!root_read_only(rw), "the super block's rw is not the mount's");
        assert!(!root_read_only(""));
    }
}

//! Linux's capability names, as a manifest asks for them (`[container] capabilities`) and a container's
//! confinement reads them back (sandbox/container/confinement.rs).
use anyhow::{bail, Result};

/// Linux's capabilities by bit number (capability.h), without their `CAP_` prefix.
pub const CAPABILITIES: [&str; 41] = [
    "CHOWN",
    "DAC_OVERRIDE",
    "DAC_READ_SEARCH",
    "FOWNER",
    "FSETID",
    "KILL",
    "SETGID",
    "SETUID",
    "SETPCAP",
    "LINUX_IMMUTABLE",
    "NET_BIND_SERVICE",
    "NET_BROADCAST",
    "NET_ADMIN",
    "NET_RAW",
    "IPC_LOCK",
    "IPC_OWNER",
    "SYS_MODULE",
    "SYS_RAWIO",
    "SYS_CHROOT",
    "SYS_PTRACE",
    "SYS_PACCT",
    "SYS_ADMIN",
    "SYS_BOOT",
    "SYS_NICE",
    "SYS_RESOURCE",
    "SYS_TIME",
    "SYS_TTY_CONFIG",
    "MKNOD",
    "LEASE",
    "AUDIT_WRITE",
    "AUDIT_CONTROL",
    "SETFCAP",
    "MAC_OVERRIDE",
    "MAC_ADMIN",
    "SYSLOG",
    "WAKE_ALARM",
    "BLOCK_SUSPEND",
    "AUDIT_READ",
    "PERFMON",
    "BPF",
    "CHECKPOINT_RESTORE",
];

/// A manifest's `[container] capabilities` as Kubernetes writes them (`NET_BIND_SERVICE`; a `CAP_`
/// prefix is taken too), each one Linux knows, or one line naming the first that is not.
pub fn capability_names(asked: &[String]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for a in asked {
        let name = a.strip_prefix("CAP_").unwrap_or(a);
        if !CAPABILITIES.contains(&name) {
            bail!(
                "[container] capabilities: {a:?} is not a Linux capability; write names such as \"NET_BIND_SERVICE\" \
                 (capabilities(7), upper case)"
            );
        }
        if !out.iter().any(|o| o == name) {
            out.push(name.to_string());
        }
    }
    Ok(out)
}

//! What every process svcbench starts gets, whoever it is: no controlling terminal, so that nothing it
//! runs can type into the terminal svcbench was started from (TIOCSTI on /dev/tty) or read from it, and an
//! environment made from allow-lists, never svcbench's whole one (docs/security.md, "What runs as whom").
//!
//! Two ways to leave the terminal:
//! - [`part`]: a session of its own (`setsid`), which is also a process group of its own (pgid = pid).
//!   For what svcbench signals as a group and ends itself: services, dependencies, builds, generator
//!   agents, ssh connections, the container engine's long-lived commands.
//! - [`helper`]: `TIOCNOTTY` in svcbench's own process group. For the short commands svcbench waits on
//!   in the foreground (Maven's download, unzip, pip, an engine's `inspect`, `useradd`): a Ctrl-C at the
//!   terminal goes to the foreground process group, so it still ends them with svcbench at once; a
//!   session of their own would let a long download run on until it finished.
use std::ffi::{OsStr, OsString};
use std::os::unix::process::CommandExt;
use std::process::Command;

/// Every child gets these of svcbench's variables, when set (a service too: service_user.rs).
pub const BASE: &[&str] = &["PATH", "LANG", "LC_ALL", "TZ"];
/// Who svcbench's user is: for the tools that act for it (a build, ssh, the engine) and find their own
/// settings and caches under its HOME.
const IDENTITY: &[&str] = &["HOME", "USER", "LOGNAME", "TMPDIR"];
/// How a tool that fetches reaches and trusts its registry: proxies and certificate bundles.
const NETWORK: &[&str] = &[
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "CURL_CA_BUNDLE",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "GIT_SSL_CAINFO",
];
/// The toolchains' own settings a build uses (Cargo, rustup, Go, Java, Maven, Gradle, Node, pip); the
/// manifest's `build_env` adds or overrides.
const TOOLCHAINS: &[&str] = &[
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "GOPATH",
    "GOROOT",
    "GOCACHE",
    "GOMODCACHE",
    "GOPROXY",
    "GOSUMDB",
    "GOPRIVATE",
    "GONOSUMDB",
    "GOFLAGS",
    "GOTOOLCHAIN",
    "JAVA_HOME",
    "MAVEN_OPTS",
    "MAVEN_ARGS",
    "M2_HOME",
    "MAVEN_HOME",
    "GRADLE_USER_HOME",
    "GRADLE_OPTS",
];
const TOOLCHAIN_PREFIXES: &[&str] = &["npm_config_", "NPM_CONFIG_", "PIP_"];
/// ssh's agent, for the keys of the hosts file's machines.
const SSH: &[&str] = &["SSH_AUTH_SOCK"];
/// Which engine and how it is configured (Docker's client, Podman's remote and storage settings).
const ENGINE: &[&str] = &[
    "CONTAINER_HOST",
    "CONTAINER_CONNECTION",
    "REGISTRY_AUTH_FILE",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
];
const ENGINE_PREFIXES: &[&str] = &["DOCKER_", "CONTAINERS_"];

/// What a child needs of svcbench's environment beyond [`BASE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// Nothing more: svcbench's own parts (generator agents, the mock upstream), system tools.
    Nothing,
    /// A build, Maven, pip: svcbench's user, its network settings and the toolchains' own variables.
    Toolchains,
    /// ssh: svcbench's user and its agent.
    Ssh,
    /// The container engine: svcbench's user, its network settings and the engine's variables.
    Engine,
}

impl Needs {
    fn names(self) -> (Vec<&'static str>, &'static [&'static str]) {
        let (lists, prefixes): (&[&[&str]], &[&str]) = match self {
            Needs::Nothing => (&[], &[]),
            Needs::Toolchains => (&[IDENTITY, NETWORK, TOOLCHAINS], TOOLCHAIN_PREFIXES),
            Needs::Ssh => (&[IDENTITY, SSH], &[]),
            Needs::Engine => (&[IDENTITY, NETWORK, ENGINE], ENGINE_PREFIXES),
        };
        (BASE.iter().chain(lists.iter().flat_map(|l| l.iter())).copied().collect(), prefixes)
    }
}

/// The variables of `vars` a child with these needs gets, in their order.
pub fn allowed(vars: impl IntoIterator<Item = (OsString, OsString)>, needs: Needs) -> Vec<(OsString, OsString)> {
    let (names, prefixes) = needs.names();
    vars.into_iter()
        .filter(|(k, _)| {
            let k = k.to_string_lossy();
            names.contains(&k.as_ref()) || prefixes.iter().any(|p| k.starts_with(p))
        })
        .collect()
}

/// [`allowed`] of svcbench's own environment, as strings (a variable that is not UTF-8 is left out).
pub fn env(needs: Needs) -> Vec<(String, String)> {
    allowed(std::env::vars_os(), needs)
        .into_iter()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}

/// A command for a part svcbench runs and ends itself: a session (and process group) of its own, no
/// controlling terminal, only the environment `needs` gives (callers add their own variables on top).
pub fn part(program: impl AsRef<OsStr>, needs: Needs) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear().envs(env(needs));
    unsafe {
        cmd.pre_exec(new_session);
    }
    cmd
}

/// A command for a short helper svcbench waits on: in svcbench's process group (a Ctrl-C at the terminal
/// ends it too), its controlling terminal given up, only the environment `needs` gives.
pub fn helper(program: impl AsRef<OsStr>, needs: Needs) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear().envs(env(needs));
    unsafe {
        cmd.pre_exec(give_up_terminal);
    }
    cmd
}

/// Between fork and exec (async-signal-safe): a session of its own, which has no controlling terminal
/// and no way to get the old one back (only a session leader opening a terminal without one gets it).
pub fn new_session() -> std::io::Result<()> {
    if unsafe { libc::setsid() } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Between fork and exec (async-signal-safe): drops the controlling terminal, if there is one, while
/// staying in the caller's process group. Afterwards /dev/tty cannot be opened and TIOCSTI on the
/// terminal is refused (it is not this process's controlling terminal any more).
pub fn give_up_terminal() -> std::io::Result<()> {
    let fd = unsafe { libc::open(c"/dev/tty".as_ptr(), libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC) };
    if fd < 0 {
        // ENXIO: no controlling terminal to give up.
        return Ok(());
    }
    let r = unsafe { libc::ioctl(fd, libc::TIOCNOTTY) };
    let err = std::io::Error::last_os_error();
    unsafe { libc::close(fd) };
    if r != 0 {
        return Err(err);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(names: &[&str]) -> Vec<(OsString, OsString)> {
        names.iter().map(|k| (OsString::from(k), OsString::from("v"))).collect()
    }

    fn keys(v: Vec<(OsString, OsString)>) -> Vec<String> {
        v.into_iter().map(|(k, _)| k.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn a_secret_reaches_no_child_and_each_gets_only_its_lists() {
        let all = vars(&[
            "PATH",
            "LANG",
            "HOME",
            "AWS_SECRET_ACCESS_KEY",
            "SSH_AUTH_SOCK",
            "CARGO_HOME",
            "CARGO_REGISTRY_TOKEN",
            "GOFLAGS",
            "npm_config_cache",
            "PIP_INDEX_URL",
            "DOCKER_HOST",
            "CONTAINERS_CONF",
            "SVCBENCH_CACHE",
            "https_proxy",
            "TERM",
        ]);
        assert_eq!(keys(allowed(all.clone(), Needs::Nothing)), ["PATH", "LANG"]);
        assert_eq!(
            keys(allowed(all.clone(), Needs::Toolchains)),
            ["PATH", "LANG", "HOME", "CARGO_HOME", "GOFLAGS", "npm_config_cache", "PIP_INDEX_URL", "https_proxy"]
        );
        assert_eq!(keys(allowed(all.clone(), Needs::Ssh)), ["PATH", "LANG", "HOME", "SSH_AUTH_SOCK"]);
        assert_eq!(
            keys(allowed(all, Needs::Engine)),
            ["PATH", "LANG", "HOME", "DOCKER_HOST", "CONTAINERS_CONF", "https_proxy"]
        );
    }

    #[test]
    fn a_part_is_a_session_and_a_group_of_its_own_and_a_helper_stays_in_svcbenchs_group() {
        // Without a controlling terminal in the test itself, the terminal is tested end to end
        // (tests/children.rs, in a pseudo-terminal).
        let out = part("/bin/sh", Needs::Nothing).args(["-c", "ps -o pid=,pgid=,sid= -p $$"]).output().unwrap();
        let ids: Vec<String> = String::from_utf8_lossy(&out.stdout).split_whitespace().map(String::from).collect();
        assert!(ids.len() == 3 && ids[0] == ids[1] && ids[1] == ids[2], "a session and group of its own: {ids:?}");
        let out = helper("/bin/sh", Needs::Nothing).args(["-c", "ps -o pgid= -p $$"]).output().unwrap();
        let own = unsafe { libc::getpgrp() }.to_string();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), own, "a helper stays in svcbench's group");
    }
}

//! Shared helpers of the integration tests: the binary, the fixtures, the store, and the leftover checks.
#![allow(dead_code)]
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
#[allow(unused_imports)]
pub use svcbench::figures::validity::FlagCode;
// The store's reader types, for the tests that read what a run or a duet stored; not every test file uses each.
#[allow(unused_imports)]
pub use svcbench::store::read::{Run, Session, StoredCheck, StoredService};
#[allow(unused_imports)]
pub use svcbench::store::{Reader, StepRow, StoredDuet, StoredDuetLine, StoredDuetSlice};

/// git ARGS in `repo` with a test identity; its output, trimmed. Fails the test when git fails.
pub fn git(repo: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_svcbench"))
}

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/services").join(name)
}

/// A copy of the tests' fixtures (services, scenarios) at `dest`: for a test that changes them, or that
/// needs them where an unprivileged user can reach them.
pub fn copy_fixtures(dest: &std::path::Path) {
    let copy =
        std::process::Command::new("cp").arg("-r").arg(fixture("steady").join("../..")).arg(dest).status().unwrap();
    assert!(copy.success());
}

pub fn svcbench(args: &[&str], cwd: &Path) -> Output {
    let out = Command::new(bin()).args(args).current_dir(cwd).env("SVCBENCH_HOME", repo()).output().unwrap();
    eprintln!(
        "--- svcbench {args:?}\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// svcbench ARGS in `cwd` with a machine lock of the test's own (`<cwd>/measure.lock`), so that two
/// measurements of one test can meet without meeting another svcbench on this machine, and a sessions
/// folder of its own (`<cwd>/sessions`), so that the lock files a test leaves are found by its own next run.
pub fn locked(args: &[&str], cwd: &Path) -> Command {
    let mut c = Command::new(bin());
    c.args(args)
        .env("SVCBENCH_HOME", repo())
        .env("SVCBENCH_LOCK_FILE", cwd.join("measure.lock"))
        .env("SVCBENCH_SESSIONS_DIR", sessions_dir(cwd))
        .current_dir(cwd);
    c
}

/// The sessions folder (lock files of running sessions) of svcbench started by [`locked`] in `cwd`.
pub fn sessions_dir(cwd: &Path) -> PathBuf {
    cwd.join("sessions")
}

/// The lock files in a sessions folder.
pub fn lock_files(cwd: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(sessions_dir(cwd))
        .map(|rd| rd.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "lock")).collect())
        .unwrap_or_default()
}

/// [`locked`], run to its end; its stderr is printed for the test's log.
pub fn svcbench_locked(args: &[&str], cwd: &Path) -> Output {
    let out = locked(args, cwd).output().unwrap();
    eprintln!("--- svcbench {args:?}\n{}", String::from_utf8_lossy(&out.stderr));
    out
}

/// [`locked`] in the background, its stderr in `<cwd>/<name>.err` (read with [`stderr_of`]).
pub fn spawn_svcbench(cwd: &Path, name: &str, args: &[&str]) -> Background {
    let err = std::fs::File::create(cwd.join(format!("{name}.err"))).unwrap();
    Background(locked(args, cwd).stdout(std::process::Stdio::null()).stderr(err).spawn().unwrap())
}

pub fn stderr_of(cwd: &Path, name: &str) -> String {
    std::fs::read_to_string(cwd.join(format!("{name}.err"))).unwrap_or_default()
}

/// Waits until a run's conformance checks are stored: its first step is under way.
pub fn wait_for_load(dbp: &Path) {
    wait_for_load_within(dbp, std::time::Duration::from_secs(60))
}

/// [`wait_for_load`] for runs whose start takes longer (a store to start first).
pub fn wait_for_load_within(dbp: &Path, within: std::time::Duration) {
    let t0 = std::time::Instant::now();
    loop {
        assert!(t0.elapsed() < within, "the run never reached its first step");
        if try_stored(dbp).is_ok_and(|s| s.runs().any(|r| r.checks_passed.is_some())) {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// `svcbench run` of fixture services, one run each, into `dbp`.
pub fn run_fixtures(tmp: &Path, services: &[&str], prof: &Path, dbp: &Path, extra: &[&str]) -> Output {
    let paths: Vec<String> = services.iter().map(|s| fixture(s).display().to_string()).collect();
    let mut args = vec!["run"];
    args.extend(paths.iter().map(String::as_str));
    args.extend(["--profile", prof.to_str().unwrap(), "--runs", "1", "--db", dbp.to_str().unwrap()]);
    args.extend(extra);
    svcbench(&args, tmp)
}

/// Everything a store holds, read once through the library's reader (the store's one owner of its schema):
/// each session with its services and its runs, every run filled with its steps, checks and extra figures.
pub struct Stored {
    pub sessions: Vec<StoredSession>,
}

pub struct StoredSession {
    pub session: Session,
    pub services: Vec<StoredService>,
    pub runs: Vec<Run>,
    /// Sampler readings stored with each run's steps, by run id.
    pub samples: Vec<(i64, i64)>,
}

/// The store at `db`, read whole.
pub fn stored(db: &Path) -> Stored {
    try_stored(db).unwrap_or_else(|e| panic!("cannot read store {}: {e:#}", db.display()))
}

/// [`stored`], or why the store cannot be read yet (e.g. while svcbench is still making it).
pub fn try_stored(db: &Path) -> anyhow::Result<Stored> {
    let reader = Reader::open(db)?;
    let mut sessions = Vec::new();
    for session in reader.sessions()? {
        let services = reader.services(session.id)?;
        let mut runs = reader.runs(session.id)?;
        let mut samples = Vec::new();
        for r in &mut runs {
            reader.fill(r)?;
            samples.push((r.id, reader.sample_count(r.id)?));
        }
        sessions.push(StoredSession { session, services, runs, samples });
    }
    Ok(Stored { sessions })
}

impl Stored {
    pub fn sessions(&self) -> impl Iterator<Item = &Session> {
        self.sessions.iter().map(|s| &s.session)
    }

    /// The first session stored (the only one of a single `svcbench run`).
    pub fn session(&self) -> &Session {
        self.sessions().next().expect("the store has no session")
    }

    pub fn services(&self) -> impl Iterator<Item = &StoredService> {
        self.sessions.iter().flat_map(|s| &s.services)
    }

    /// The stored service called `name` (the first one, over all sessions).
    pub fn service(&self, name: &str) -> &StoredService {
        self.services().find(|s| s.name == name).unwrap_or_else(|| panic!("no service {name} in the store"))
    }

    /// Every run, session by session, in the reader's order.
    pub fn runs(&self) -> impl Iterator<Item = &Run> {
        self.sessions.iter().flat_map(|s| &s.runs)
    }

    /// The first run stored (the only one of a one-run test).
    pub fn run(&self) -> &Run {
        self.runs().next().expect("the store has no run")
    }

    /// The runs of the service called `name`.
    pub fn runs_of(&self, name: &str) -> impl Iterator<Item = &Run> {
        let name = name.to_string();
        self.runs().filter(move |r| r.service == name)
    }

    /// The first run of the service called `name`.
    pub fn run_of(&self, name: &str) -> &Run {
        self.runs_of(name).next().unwrap_or_else(|| panic!("no run of {name} in the store"))
    }

    /// Every step of every run.
    pub fn steps(&self) -> impl Iterator<Item = &StepRow> {
        self.runs().flat_map(|r| &r.steps)
    }

    /// The first step stored (the only one of a one-step test).
    pub fn step(&self) -> &StepRow {
        self.steps().next().expect("the store has no step")
    }

    /// Sampler readings stored in all.
    pub fn sample_count(&self) -> i64 {
        self.sessions.iter().flat_map(|s| &s.samples).map(|(_, n)| n).sum()
    }

    pub fn checks(&self) -> impl Iterator<Item = &StoredCheck> {
        self.runs().flat_map(|r| &r.checks)
    }
}

/// The duets a store holds, each with its slices and verdict lines, read through the library's reader.
pub fn stored_duets(db: &Path) -> Vec<StoredDuet> {
    try_stored_duets(db).unwrap_or_else(|e| panic!("cannot read the duets of store {}: {e:#}", db.display()))
}

/// [`stored_duets`], or why the store cannot be read yet (e.g. while svcbench duet is still making it).
pub fn try_stored_duets(db: &Path) -> anyhow::Result<Vec<StoredDuet>> {
    Reader::open(db)?.duets()
}

/// The first duet stored (the only one of a one-duet test).
pub fn stored_duet(db: &Path) -> StoredDuet {
    stored_duets(db).into_iter().next().unwrap_or_else(|| panic!("store {} has no duet", db.display()))
}

/// The smallest of the figures present (NaN when none is), as SQL's MIN reads a column with NULLs.
pub fn min_present(figures: impl IntoIterator<Item = Option<f64>>) -> f64 {
    figures.into_iter().flatten().reduce(f64::min).unwrap_or(f64::NAN)
}

/// The largest of the figures present (None when none is), as SQL's MAX reads a column with NULLs.
pub fn max_present(figures: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    figures.into_iter().flatten().reduce(f64::max)
}

/// svcbench's cgroups still present (in any hierarchy), but those of another svcbench that still runs.
pub fn leftover_cgroups() -> Vec<PathBuf> {
    let mut groups = svcbench_cgroups();
    let unseen = makers_running_unseen(&groups);
    groups.retain(|g| {
        let name = g.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
        !owned_by_a_running_svcbench(&name) && !maker_pid(&name).is_some_and(|p| unseen.contains(&p))
    });
    groups
}

/// Makers whose groups hold processes this pid namespace cannot see: a study measuring in another
/// container that shares the machine's cgroups (its pids mean nothing here). None of a group's processes
/// show, yet v2 says it is populated or v1's memory controller holds their resident pages.
fn makers_running_unseen(groups: &[PathBuf]) -> Vec<i32> {
    let read = |p: PathBuf| std::fs::read_to_string(p).unwrap_or_default();
    let keyed =
        |text: &str, key: &str| text.lines().find_map(|l| l.strip_prefix(key)?.trim().parse::<u64>().ok()).unwrap_or(0);
    groups
        .iter()
        .filter(|g| {
            read(g.join("cgroup.procs")).trim().is_empty()
                && (keyed(&read(g.join("cgroup.events")), "populated ") > 0
                    || keyed(&read(g.join("memory.stat")), "rss ") > 0)
        })
        .filter_map(|g| maker_pid(&g.file_name()?.to_string_lossy()))
        .collect()
}

/// svcbench's cgroups present (in any hierarchy), whoever made them.
pub fn svcbench_cgroups() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for base in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
        let Ok(rd) = std::fs::read_dir(base) else { continue };
        for h in rd.flatten() {
            for parent in [h.path().join("svcbench"), PathBuf::from(base).join("svcbench")] {
                if let Ok(groups) = std::fs::read_dir(&parent) {
                    out.extend(groups.flatten().map(|g| g.path()).filter(|p| p.is_dir()));
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Processes whose command line mentions `needle` (a service's folder or binary).
pub fn processes_matching(needle: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        if pid == std::process::id() {
            continue;
        }
        let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(needle) && !cmd.contains("cargo test") {
            out.push(format!("{pid}: {cmd}"));
        }
    }
    out
}

/// iproute2's `ip`, from the system folders whatever the PATH.
pub fn ip_program() -> &'static str {
    ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip"].into_iter().find(|p| Path::new(p).exists()).unwrap_or("ip")
}

/// svcbench's `--net` namespaces and interfaces still present, but those of another svcbench that still runs.
pub fn leftover_network() -> Vec<String> {
    let mut net = svcbench_network();
    let unseen = makers_running_unseen(&svcbench_cgroups());
    net.retain(|n| !owned_by_a_running_svcbench(n) && !maker_pid(n).is_some_and(|p| unseen.contains(&p)));
    net
}

/// svcbench's `--net` namespaces and interfaces present, whoever made them.
pub fn svcbench_network() -> Vec<String> {
    let ip = ip_program();
    let out = |args: &[&str]| {
        Command::new(ip).args(args).output().map(|o| String::from_utf8_lossy(&o.stdout).to_string()).unwrap_or_default()
    };
    let mut left: Vec<String> =
        out(&["netns", "list"]).lines().filter(|l| l.starts_with("svcbench-")).map(String::from).collect();
    // `svbt…` are the test suite's own far hosts (tests/hosts.rs), not svcbench's.
    left.extend(
        out(&["-o", "link", "show"]).lines().filter(|l| l.contains(": svb") && !l.contains(": svbt")).map(String::from),
    );
    left
}

/// Removes the far hosts (`svbt-ssh-PID` namespaces and their `svbtPIDa` veth) of a test process that is
/// gone: a hosts test killed before its fixture's drop left them, and a host's name would collide.
pub fn remove_stale_test_hosts() {
    let ip = ip_program();
    let list = Command::new(ip).args(["netns", "list"]).output().map(|o| o.stdout).unwrap_or_default();
    for line in String::from_utf8_lossy(&list).lines() {
        let Some(id) = line.split_whitespace().next().and_then(|n| n.strip_prefix("svbt-ssh-")) else { continue };
        if id.parse::<u32>().is_ok_and(|pid| !Path::new(&format!("/proc/{pid}")).exists()) {
            let _ = Command::new(ip).args(["netns", "delete", &format!("svbt-ssh-{id}")]).status();
            let _ = Command::new(ip).args(["link", "delete", &format!("svbt{id}a")]).output();
        }
    }
}

/// The svcbench process that made a cgroup, namespace or interface: its names start with the maker's
/// pid (`4242-1-hello`, `unit-4242-a`, `svcbench-4242-…`, `svb4242br`).
fn maker_pid(name: &str) -> Option<i32> {
    // `ip -o link` lines start with the interface's index: `12: svb4242br: <…`.
    let name = name.split_once(": ").map_or(name, |(_, rest)| rest);
    let rest = ["svcbench-", "unit-", "svb"].iter().find_map(|p| name.strip_prefix(p)).unwrap_or(name);
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

/// Whether another svcbench still runs and owns `name` (a study measuring beside the test suite on a
/// shared machine): its cgroups and network are its own, not this test's leftovers.
fn owned_by_a_running_svcbench(name: &str) -> bool {
    maker_pid(name).is_some_and(|pid| {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        comm.trim() == "svcbench"
    })
}

pub fn assert_no_leftovers(needle: &str) {
    let groups = leftover_cgroups();
    assert!(groups.is_empty(), "cgroups left behind: {groups:?}");
    let net = leftover_network();
    assert!(net.is_empty(), "network namespaces or interfaces left behind: {net:?}");
    let procs = processes_matching(needle);
    assert!(procs.is_empty(), "processes left behind: {procs:?}");
}

/// A background svcbench that is stopped when the test ends, also when it panics: Ctrl-C first (so it tears
/// down what it started), a kill after 30 s. A failed test must not leave a store or a service running
/// into the next tests, whose leftover checks would all fail with it.
pub struct Background(pub std::process::Child);

impl Background {
    /// Ctrl-C, then its exit status once it has ended (None: still running after `within`).
    pub fn interrupt(&mut self, within: std::time::Duration) -> Option<std::process::ExitStatus> {
        unsafe { libc::kill(self.0.id() as i32, libc::SIGINT) };
        exit_within(&mut self.0, within)
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) && self.interrupt(std::time::Duration::from_secs(30)).is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// The child's exit status once it has ended; None when it still runs after `within`.
pub fn exit_within(child: &mut std::process::Child, within: std::time::Duration) -> Option<std::process::ExitStatus> {
    let t0 = std::time::Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return Some(s);
        }
        if t0.elapsed() >= within {
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

impl std::ops::Deref for Background {
    type Target = std::process::Child;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for Background {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

/// An OpenSearch kept up by `svcbench up` of the Ktor Locations service, as a user's own node would be:
/// its URL, for `--dep opensearch=URL`. The store stops when the returned Background is dropped.
pub fn opensearch_up(tmp: &Path) -> (Background, String) {
    let (up, lines) = spawn_up(tmp, &repo().join("services/locations/kotlin-ktor"), &[], 2);
    let url = lines
        .iter()
        .find_map(|l| l.strip_prefix("dep.opensearch.url "))
        .unwrap_or_else(|| panic!("no store URL from svcbench up: {lines:?}"))
        .to_string();
    assert_store_filled(&std::fs::read_to_string(tmp.join("up.err")).unwrap_or_default(), &url);
    (up, url)
}

/// The store svcbench started got the locations data from a bulk load (kept as a snapshot) or from the
/// snapshot of an earlier start, and holds every document of the data files either way.
fn assert_store_filled(said: &str, url: &str) {
    let restored = |l: &str| l.starts_with("svcbench: restored region_v1, city_v1 from the snapshot ");
    let loaded = |l: &str| {
        l.starts_with("svcbench: loaded region_v1, city_v1 in ")
            && (l.contains("; kept as snapshot ") || l.contains("; another svcbench kept snapshot "))
    };
    assert!(said.lines().any(|l| restored(l) || loaded(l)), "neither loaded and kept nor restored: {said}");
    for (index, file) in [("region_v1", "region.ndjson"), ("city_v1", "city.ndjson")] {
        let answer: serde_json::Value =
            serde_json::from_reader(ureq::get(&format!("{url}/{index}/_count")).call().unwrap().into_reader()).unwrap();
        assert_eq!(answer["count"].as_u64(), Some(locations_documents(file)), "{index}");
    }
}

/// Documents in the locations bulk files named `file` that svcbench loads: the conformance sample's and
/// the load dataset's.
fn locations_documents(file: &str) -> u64 {
    let sample = std::env::var_os("SVCBENCH_SAMPLE_DIR").map(PathBuf::from).unwrap_or_else(|| {
        let found = repo().ancestors().map(|d| d.join("shared/data/locations-sample")).find(|d| d.is_dir());
        found.expect("the locations conformance sample beside the checkout")
    });
    [sample, repo().join("scenarios/locations/dataset/out")]
        .iter()
        .map(|dir| {
            let text = std::fs::read_to_string(dir.join(file)).unwrap();
            text.lines().filter(|l| !l.trim().is_empty()).count() as u64 / 2
        })
        .sum()
}

/// `svcbench up SERVICE EXTRA…` from `tmp` (its work folder under `tmp/results/work/up`, its stderr in
/// `tmp/up.err`), and the `name url` lines it prints once everything answers (the service first, then each
/// dependency). Panics with up's own words when it ends before printing them.
pub fn spawn_up(tmp: &Path, service: &Path, extra: &[&str], lines: usize) -> (Background, Vec<String>) {
    use std::io::{BufRead, BufReader};
    let err = tmp.join("up.err");
    let mut child = Background(
        Command::new(bin())
            .arg("up")
            .arg(service)
            .args(extra)
            .args(["--work-dir", tmp.join("results/work/up").to_str().unwrap()])
            .env("SVCBENCH_HOME", repo())
            .current_dir(tmp)
            .stdout(std::process::Stdio::piped())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap(),
    );
    let mut reader = BufReader::new(child.stdout.take().unwrap()).lines();
    let out: Vec<String> = reader.by_ref().take(lines).map_while(Result::ok).collect();
    // Whatever it prints later is read too: a closed pipe would end it at its next line.
    std::thread::spawn(move || reader.for_each(drop));
    assert_eq!(
        out.len(),
        lines,
        "svcbench up printed {out:?}, then: {}",
        std::fs::read_to_string(&err).unwrap_or_default()
    );
    (child, out)
}

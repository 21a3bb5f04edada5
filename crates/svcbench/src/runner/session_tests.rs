//! The session's rules, checked without cgroups or real services: a fake sandbox (scripted samples and a
//! scripted death) behind the "started elsewhere" seam, and a purpose-built HTTP server on loopback that
//! the real load generator drives. Interleaving, what a run's end is stored as, and the flags attached.
use super::*;
use crate::sandbox::cgroup::Applied;
use crate::sandbox::process::Exit;
use crate::sandbox::sampler::Sample;
use crate::sandbox::{Probe, StopOutcome};
use crate::service::instance::{Instance, StartSpec};
use crate::service::{instance::StartsElsewhere, service_sandbox::ServiceSandbox};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// A loopback server that answers every request `200 ok`, keeping connections alive, until dropped.
struct OkServer {
    port: u16,
    stop: Arc<AtomicBool>,
}

impl OkServer {
    fn start() -> OkServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        std::thread::spawn(move || {
            // Bounded: it ends with the test, or after a minute whatever happens.
            let until = Instant::now() + Duration::from_secs(60);
            while !s.load(Ordering::Relaxed) && Instant::now() < until {
                match listener.accept() {
                    Ok((mut conn, _)) => {
                        let s = s.clone();
                        std::thread::spawn(move || {
                            conn.set_nonblocking(false).unwrap();
                            conn.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
                            let mut buf = [0u8; 4096];
                            let mut pending = Vec::new();
                            while !s.load(Ordering::Relaxed) {
                                match conn.read(&mut buf) {
                                    Ok(0) => break,
                                    Ok(n) => pending.extend_from_slice(&buf[..n]),
                                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                                    Err(e) if e.kind() == std::io::ErrorKind::TimedOut => continue,
                                    Err(_) => break,
                                }
                                while let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                                    pending.drain(..end + 4);
                                    let reply =
                                        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok";
                                    if conn.write_all(reply).is_err() {
                                        return;
                                    }
                                }
                            }
                        });
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        OkServer { port, stop }
    }
}

impl Drop for OkServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// What the fake sandbox of one instance has done so far.
#[derive(Default)]
struct Script {
    /// The step (1-based) in which the service is "OOM-killed"; None: it never dies.
    dies_in_step: Option<u32>,
    steps_started: AtomicU32,
    /// Samples read since the current step started: the death comes a few samples into its step, so the
    /// step's first reading still sees the service alive (as a real OOM kill mid-step).
    samples_in_step: AtomicU32,
    started_at: Mutex<Option<Instant>>,
    /// Whether the kill shows in the samples only once the end has been asked for, as a container's does
    /// (its group may be gone before a sample read its counter; the engine's verdict comes at its exit).
    oom_told_at_exit: bool,
    exit_seen: AtomicBool,
}

impl Script {
    fn dead(&self) -> bool {
        self.dies_in_step.is_some_and(|n| {
            let step = self.steps_started.load(Ordering::Relaxed);
            step > n || (step == n && self.samples_in_step.load(Ordering::Relaxed) > 3)
        })
    }
    fn sample(&self) -> Sample {
        self.samples_in_step.fetch_add(1, Ordering::Relaxed);
        let t = self.started_at.lock().unwrap().map_or(0.0, |t| t.elapsed().as_secs_f64());
        let dead = self.dead();
        Sample {
            t_s: t,
            cpu_s: t * 0.25,
            mem_mib: 20.0,
            rss_mib: 18.0,
            threads: 4,
            throttled_s: 0.0,
            oom_kills: (dead && (!self.oom_told_at_exit || self.exit_seen.load(Ordering::Relaxed))) as u64,
            alive: !dead,
            open_files: None,
        }
    }
}

struct FakeProbe(Arc<Script>);

impl Probe for FakeProbe {
    fn sample(&self) -> Sample {
        self.0.sample()
    }
}

struct FakeSandbox(Arc<Script>);

impl ServiceSandbox for FakeSandbox {
    fn limits_held(&self, asked: &Limits) -> (Applied, Vec<String>) {
        (
            Applied {
                cpus: asked.cpus,
                memory_bytes: asked.memory_bytes,
                cpuset: asked.cpuset.clone(),
                pids: Some(asked.pids_max()),
            },
            Vec::new(),
        )
    }
    fn cgroup_version(&self) -> &str {
        "fake"
    }
    fn warnings(&self) -> &[String] {
        &[]
    }
    fn probe(&self) -> Arc<dyn Probe> {
        Arc::new(FakeProbe(self.0.clone()))
    }
    fn sample(&self) -> Sample {
        self.0.sample()
    }
    fn reset_peak(&self) -> bool {
        // Called once as each step starts: the script's clock of steps.
        self.0.samples_in_step.store(0, Ordering::Relaxed);
        self.0.steps_started.fetch_add(1, Ordering::Relaxed);
        false
    }
    fn kernel_peak_mib(&self) -> Option<f64> {
        None
    }
    fn try_exit(&mut self) -> Option<Exit> {
        let dead = self.0.dead();
        self.0.exit_seen.fetch_or(dead, Ordering::Relaxed);
        dead.then_some(Exit { code: None, signal: Some(9) })
    }
    fn wait_exit(&mut self, _timeout: Duration) -> Option<Exit> {
        self.try_exit()
    }
    fn stop(&mut self, _grace: Duration) -> StopOutcome {
        StopOutcome {
            exit: Some(Exit { code: Some(0), signal: None }),
            elapsed: Duration::from_millis(1),
            graceful: true,
        }
    }
}

/// Starts every instance against the one loopback server, with a fresh script: the services named in
/// `dying` are OOM-killed in that step of every run.
struct FakeStarter {
    port: u16,
    dying: Vec<(String, u32)>,
    oom_told_at_exit: bool,
    starts: Mutex<Vec<String>>,
}

impl FakeStarter {
    fn new(port: u16, dying: Vec<(String, u32)>, oom_told_at_exit: bool) -> Arc<FakeStarter> {
        Arc::new(FakeStarter { port, dying, oom_told_at_exit, starts: Mutex::new(Vec::new()) })
    }
}

impl StartsElsewhere for FakeStarter {
    fn start(self: Arc<Self>, svc: &crate::manifest::Service, spec: &StartSpec) -> Result<Instance> {
        self.starts.lock().unwrap().push(spec.sandbox_name.clone());
        let dies_in_step = self.dying.iter().find(|(n, _)| n == svc.name()).map(|(_, s)| *s);
        let script = Arc::new(Script { dies_in_step, oom_told_at_exit: self.oom_told_at_exit, ..Script::default() });
        *script.started_at.lock().unwrap() = Some(Instant::now());
        Ok(Instance {
            sandbox: Box::new(FakeSandbox(script)),
            host: crate::network::Host { addr: "127.0.0.1".parse().unwrap(), netns: None },
            port: self.port,
            log_path: spec.log_dir.join(&spec.log_name),
            spawned_at: Instant::now(),
            user: None,
            _home: None,
            first_answer: None,
        })
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A session context over a temporary store, scenario and profile (two closed steps of 0.3 s).
/// The fixture's files: a scenario answering `GET /`, a two-step profile and two services `a` and `b`.
fn write_fixture(dir: &Path) -> Vec<crate::manifest::Service> {
    write(
        &dir.join("scenario/scenario.toml"),
        "name = \"fake\"\ndescription = \"a loopback server\"\n[[check]]\nname = \"GET / answers\"\nmethod = \"GET\"\n\
         path = \"/\"\n[check.expect]\nstatus = 200\n[mix.default]\n[[mix.default.request]]\nweight = 1\n\
         method = \"GET\"\npath = \"/\"\n",
    );
    write(
        &dir.join("profile.toml"),
        "name = \"two\"\ndescription = \"two short steps\"\n[[step]]\nconnections = [1, 2]\nduration = \"300ms\"\n",
    );
    let mut services = Vec::new();
    for name in ["a", "b"] {
        write(
            &dir.join(format!("svc-{name}/svcbench.toml")),
            &crate::manifest::test_manifest(
                name,
                "../scenario",
                "build = \"true\"\nrun = \"./none\"\nreadiness = \"/\"\n",
            ),
        );
        services
            .extend(crate::manifest::Service::load_spec(dir.join(format!("svc-{name}")).to_str().unwrap()).unwrap());
    }
    services
}

/// A session's options as `run` would give them for the fixture: no limits, no cgroup, nothing to build.
fn options(db: PathBuf, runs: u32) -> RunOptions {
    RunOptions {
        plan: SessionPlan {
            services: Vec::new(),
            scenario: None,
            profile: "two".into(),
            runs,
            limits: Limits::default(),
            loadgen_cpuset: None,
            db,
            label: None,
            step_duration: None,
            mix: None,
            startup_timeout: Duration::from_secs(5),
            seed: SEED,
            metrics_listen: None,
            cells: Vec::new(),
            study: None,
            completed: BTreeMap::new(),
            net: None,
            runtime: Default::default(),
        },
        cgroup: CgroupChoice::None,
        skip_build: true,
        stop_grace: Duration::from_secs(1),
        command_line: "test".into(),
        probe_tolerance: 0.1,
        allow_unlimited: true,
        wait_lock: false,
        generators: 1,
        given_deps: Default::default(),
        hosts_plan: None,
    }
}

/// The fixture's session row, with both services added to it.
fn stored_session(store: &Store, runs: u32, services: &[crate::manifest::Service]) -> i64 {
    let record = crate::store::SessionRecord {
        label: None,
        command: "test".into(),
        scenario: "fake".into(),
        profile: "two".into(),
        runs_per_service: runs,
        host: crate::host::facts(),
        cgroup_version: "none".into(),
        limit_cpus: None,
        limit_memory_mib: None,
        study: None,
        service_cpuset: None,
        loadgen_cpuset: None,
        probe_tolerance: 0.1,
    };
    let session_id = store.create_session(&record).unwrap();
    for s in services {
        store.add_service(session_id, s, true, Some(0.0), None, Some(0)).unwrap();
    }
    session_id
}

/// A session of the two fixture services whose instances the fake starter gives.
fn session(dir: &Path, runs: u32, starter: Arc<FakeStarter>) -> (SessionCtx, Vec<crate::manifest::Service>) {
    let services = write_fixture(dir);
    let scenario = crate::scenario::Scenario::load(&dir.join("scenario")).unwrap();
    let profile = Profile::load(&dir.join("profile.toml")).unwrap();
    let db = dir.join("store.db");
    let store = Store::open(&db).unwrap();
    let session_id = stored_session(&store, runs, &services);
    let work_dir = dir.join("work");
    std::fs::create_dir_all(&work_dir).unwrap();
    let deps = Dependencies::start(
        &[],
        &crate::deps::DepContext {
            work_dir: &work_dir,
            scenario_dir: &scenario.dir,
            cpuset: None,
            cgroup: CgroupChoice::None,
            session_tag: "test".into(),
            for_load: true,
            host: crate::network::Hosts::local().store,
            given: &Default::default(),
            account: crate::sandbox::service_user::Account::Main,
        },
    )
    .unwrap();
    let cpus = crate::sandbox::procfs::allowed_cpus();
    let ctx = SessionCtx {
        opts: options(db, runs),
        scenario,
        profile,
        store,
        session_id,
        deps,
        loadgen_cpus: vec![cpus[0]],
        service_cpus: vec![*cpus.last().unwrap()],
        session_runs: 0,
        later_runs: Duration::ZERO,
        stop: Arc::new(AtomicBool::new(false)),
        work_dir,
        tag: "test".into(),
        metrics: None,
        hosts: crate::network::Hosts::local(),
        remote_service: Some(starter as Arc<dyn StartsElsewhere>),
    };
    (ctx, services)
}

#[test]
fn runs_interleave_and_a_death_under_the_limits_is_the_runs_outcome_with_its_steps_before_it() {
    interleaved_runs_with_a_death_in_step_2(false);
}

/// A container's kill is known only at its end (its group gone with it): the step it died in is still
/// stored as OOM-killed, not crashed.
#[test]
fn a_kill_known_only_at_the_services_end_is_stored_as_an_oom_kill() {
    interleaved_runs_with_a_death_in_step_2(true);
}

fn interleaved_runs_with_a_death_in_step_2(oom_told_at_exit: bool) {
    let dir = tempfile::tempdir().unwrap();
    let server = OkServer::start();
    let starter = FakeStarter::new(server.port, vec![("b".into(), 2)], oom_told_at_exit);
    let (mut ctx, services) = session(dir.path(), 2, starter.clone());
    let cells = ctx.opts.cell_specs();
    let summary = run_loop::run_all(&mut ctx, &services, &cells, None).unwrap();
    // A1 B1 A2 B2: whole runs interleaved, each a fresh instance.
    let starts = starter.starts.lock().unwrap().clone();
    assert_eq!(starts, ["test-a-run1", "test-b-run1", "test-a-run2", "test-b-run2"]);
    assert_eq!((summary.runs_ok, summary.runs_failed, summary.runs_interrupted), (2, 2, 0));

    let reader = crate::store::Reader::open(&ctx.opts.plan.db).unwrap();
    let runs = reader.runs(ctx.session_id).unwrap();
    let of = |svc: &str| runs.iter().filter(|r| r.service == svc).collect::<Vec<_>>();
    for a in of("a") {
        assert_eq!(a.status, "completed");
        assert!(a.validity().valid(), "{:?}", a.validity());
        assert_eq!(reader.steps(a.id).unwrap().len(), 2, "both steps stored");
        assert_eq!(a.checks_passed, Some(1));
    }
    for b in of("b") {
        // OOM-killed in step 2: the run failed, its death is stored as such, and it still counts with the
        // valid step before its end.
        assert_eq!(b.status, "failed", "{:?}", b.error);
        assert!(b.oom_killed && b.ended_by_the_service(), "{b:?}");
        assert_eq!(b.failed_stage.as_deref(), Some("step 2"));
        assert!(b.enters_figures());
        let steps = reader.steps(b.id).unwrap();
        assert_eq!(steps.len(), 2);
        // The step before the death carries none of the service's failures (its measurement flags depend on
        // how busy this machine is); the step it died in says how.
        assert!(!steps[0].validity().flags.iter().any(|f| f.code.is_service_failure()), "{:?}", steps[0].validity());
        assert!(steps[1].validity().has(crate::figures::validity::FlagCode::OomKilled), "{:?}", steps[1].validity());
    }
}

/// A dependency svcbench started whose accept queue overflows: its drops so far grow by 7 at each reading.
struct OverflowingDependency(Arc<AtomicU32>);

impl crate::deps::Dependency for OverflowingDependency {
    fn placeholders(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    fn probe(&self) -> Option<Arc<dyn Probe>> {
        Some(Arc::new(OverflowingQueue(self.0.clone())))
    }
}

struct OverflowingQueue(Arc<AtomicU32>);

impl Probe for OverflowingQueue {
    fn sample(&self) -> Sample {
        Sample { alive: true, ..Sample::default() }
    }
    fn listen_drops(&self) -> Option<u64> {
        Some(7 * u64::from(self.0.fetch_add(1, Ordering::Relaxed)))
    }
}

/// Connections a dependency dropped during a step are counted in it, and the step is stored as the
/// dependency's saturation, not quotable: those calls waited a second or more to connect.
#[test]
fn a_dependencys_full_accept_queue_is_stored_with_the_step_it_overflowed_in() {
    let dir = tempfile::tempdir().unwrap();
    let server = OkServer::start();
    let starter = FakeStarter::new(server.port, Vec::new(), false);
    let (mut ctx, services) = session(dir.path(), 1, starter);
    let readings = Arc::new(AtomicU32::new(0));
    ctx.deps.items.push(Box::new(OverflowingDependency(readings.clone())));
    let cells = ctx.opts.cell_specs();
    run_loop::run_all(&mut ctx, &services, &cells, None).unwrap();
    assert!(readings.load(Ordering::Relaxed) >= 8, "two readings around each of 4 steps");

    let reader = crate::store::Reader::open(&ctx.opts.plan.db).unwrap();
    let runs = reader.runs(ctx.session_id).unwrap();
    assert_eq!(runs.len(), 2);
    for run in &runs {
        let steps = reader.steps(run.id).unwrap();
        assert_eq!(steps.len(), 2, "{run:?}");
        for step in &steps {
            assert_eq!(step.dep_listen_drops, Some(7), "the drops between the step's two readings");
            assert!(step.dep_saturated);
            let validity = step.validity();
            assert!(validity.has(crate::figures::validity::FlagCode::DependencySaturated), "{validity:?}");
            assert!(!validity.valid());
        }
    }
}

#[test]
fn a_resumed_session_runs_only_what_its_store_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let server = OkServer::start();
    let starter = FakeStarter::new(server.port, Vec::new(), false);
    let (mut ctx, services) = session(dir.path(), 2, starter.clone());
    let key = ctx.opts.cell_specs()[0].key();
    ctx.opts.plan.completed = BTreeMap::from([(("a".to_string(), key.clone()), 2), (("b".to_string(), key), 1)]);
    let cells = ctx.opts.cell_specs();
    let summary = run_loop::run_all(&mut ctx, &services, &cells, None).unwrap();
    assert_eq!(starter.starts.lock().unwrap().clone(), ["test-b-run2"]);
    assert_eq!(summary.runs_ok, 1);
    let runs = crate::store::Reader::open(&ctx.opts.plan.db).unwrap().runs(ctx.session_id).unwrap();
    assert_eq!(runs.iter().map(|r| (r.service.as_str(), r.run_index)).collect::<Vec<_>>(), [("b", 2)]);
}

#[test]
fn a_stop_ends_the_session_between_runs_and_the_run_under_way_is_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let server = OkServer::start();
    let starter = FakeStarter::new(server.port, Vec::new(), false);
    let (mut ctx, services) = session(dir.path(), 2, starter.clone());
    let stop = ctx.stop.clone();
    // Ctrl-C a moment into the first run: it ends interrupted, and no later run starts.
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1300));
        stop.store(true, Ordering::Relaxed);
    });
    let cells = ctx.opts.cell_specs();
    let summary = run_loop::run_all(&mut ctx, &services, &cells, None).unwrap();
    t.join().unwrap();
    assert!(summary.interrupted);
    assert_eq!(starter.starts.lock().unwrap().len(), 1);
    let runs = crate::store::Reader::open(&ctx.opts.plan.db).unwrap().runs(ctx.session_id).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, "interrupted");
    assert!(!runs[0].enters_figures());
}

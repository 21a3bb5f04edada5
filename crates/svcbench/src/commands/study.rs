//! `svcbench study`: a study file's services and variants under every cell of its limits axis, runs
//! interleaved, resumable, ending in the study's report (docs/study.md).
use crate::cli::StudyArgs;
use crate::runner::{self, progress};
use crate::sandbox::Limits;
use crate::study::file::Study;
use crate::study::resume;
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

pub fn run(a: StudyArgs, stop: Arc<AtomicBool>) -> Result<i32> {
    a.session.check()?;
    let mut study = Study::load(&a.file, a.quick)?;
    let net = network(&a, &study)?;
    let (db, html) = paths(&a, &study);
    if a.report_only {
        // The latest generation's report (the earlier ones: `svcbench report --filter label=NAME`).
        if db.exists() {
            if let Some(rec) = crate::store::Reader::open(&db)?.latest_study(&study.name)? {
                study.name = rec.name;
            }
        }
        return crate::report::study::write(&db, &study, &html).map(|_| 0);
    }
    // Everything the study names is checked before anything is built or started, and before it is planned:
    // a plan says only what a run would do.
    study.check_folders()?;
    study.check_cpus(&crate::cpus::allowed())?;
    let mut profile = crate::profile::Profile::find(&study.profile)?;
    if let Some(d) = study.step_duration {
        profile =
            profile.with_step_duration(d).with_context(|| format!("{}: quick.step_duration", a.file.display()))?;
    }
    // The run's own checks (the scenario, store links, the generators' split, the CPU split), as a run
    // would make them.
    let mut opts = crate::options::run_options(&a.session, session_plan(&study, &db, Completed::new(), net.clone()))?;
    let checked = runner::preflight::check_inputs(&mut opts)?;
    let (services, scenario) = (checked.services, checked.scenario);
    if let Some(slo) = &study.file.slo {
        crate::study::slo_rate::check_reachable(&a.file.display().to_string(), slo, &profile)?;
    }
    let loaded = Loaded { services, profile, scenario };
    let (completed, unverified) = resumed(&a, &mut study, &loaded, &db)?;
    let names: Vec<String> = loaded.services.iter().map(|s| s.name().to_string()).collect();
    let keys: Vec<String> = study.cells.iter().map(crate::cell::AxisCell::key).collect();
    let todo = runner::plan(&names, &keys, study.runs, &completed).len();
    print_plan(&a, &study, &loaded.profile, &db, &Planned { names, keys, completed: &completed, todo });
    if a.plan {
        return Ok(0);
    }
    let mut code = 0;
    if todo == 0 {
        crate::errln!("svcbench: every run of the study is done; rendering its report");
    } else {
        let ran = run_cells(&a, &study, &loaded, &db, (completed, unverified), net, stop.clone())?;
        if ran.nothing {
            // Stopped before its first run: the report would be what it was (or there is none yet).
            return Ok(ran.code);
        }
        code = ran.code;
    }
    if code == 0 {
        code = duet(&a, &study, &db, stop)?;
    }
    crate::report::study::write(&db, &study, &html)?;
    Ok(code)
}

/// The study's network: a link axis runs on svcbench's own emulated network (its links come from the study
/// alone); otherwise the session's `--link`s, if any.
fn network(a: &StudyArgs, study: &Study) -> Result<Option<Vec<crate::network::Link>>> {
    if study.has_link_axis() {
        if !a.session.network.links.is_empty() {
            bail!(
                "{}: the study's [network] links are its link axis; leave out --link, or put those links in every \
                 entry of the axis",
                a.file.display()
            );
        }
        if a.session.generators.hosts.is_some() {
            bail!("{}: a study's link axis runs on svcbench's own namespaces; leave out --hosts", a.file.display());
        }
        if !a.plan && !a.report_only {
            crate::network::check_available(true)?;
        }
        Ok(Some(Vec::new()))
    } else if a.plan || a.report_only {
        a.session.network.links_asked()
    } else {
        a.session.network.links()
    }
}

/// The study's store and its report's path: `results/studies/<file stem>.db` by default, and the report
/// beside the store, named after it (`<store stem>.html`, `-quick.html` for the quick form), so that two
/// stores of one study never write over each other's reports.
fn paths(a: &StudyArgs, study: &Study) -> (PathBuf, PathBuf) {
    let stem = a.file.file_stem().and_then(|s| s.to_str()).unwrap_or("study");
    let db = a.db.clone().unwrap_or_else(|| PathBuf::from("results/studies").join(format!("{stem}.db")));
    let html = a.output.clone().unwrap_or_else(|| report_beside(&db, study.quick));
    (db, html)
}

/// The report's default path: beside the store, named after it.
fn report_beside(db: &Path, quick: bool) -> PathBuf {
    let stem = db.file_stem().and_then(|s| s.to_str()).unwrap_or("study");
    let name = if quick { format!("{stem}-quick.html") } else { format!("{stem}.html") };
    db.parent().unwrap_or(Path::new(".")).join(name)
}

/// The command that continues an interrupted session: its own arguments (the store, the quick form, the
/// report, the session's options), with `--resume` and without `--new-cell` (a resume continues the latest
/// generation; another `--new-cell` would start one more).
fn resume_command(args: &[String]) -> String {
    let mut words = vec!["svcbench".to_string()];
    words.extend(args.iter().filter(|a| !matches!(a.as_str(), "--resume" | "--new-cell")).map(|a| shell_word(a)));
    words.push("--resume".into());
    words.join(" ")
}

/// A word as a shell reads it back (an argument cannot hold the NUL byte quoting refuses).
fn shell_word(w: &str) -> String {
    shlex::try_quote(w).map_or_else(|_| w.to_string(), |q| q.into_owned())
}

/// What the study names, loaded and checked before anything is built or started.
struct Loaded {
    services: Vec<crate::manifest::Service>,
    profile: crate::profile::Profile,
    scenario: crate::scenario::Scenario,
}

/// The runs the store holds per (service, cell).
type Completed = BTreeMap<(String, String), u32>;

/// The study's cells and how many of their runs are left to do.
struct Planned<'a> {
    names: Vec<String>,
    keys: Vec<String>,
    completed: &'a Completed,
    todo: usize,
}

/// The runs the store already holds for this study, per (service, cell), and the warning when a service's
/// recorded code cannot be compared. Sets the study's generation (a resume after a change is refused unless
/// --new-cell) and refuses a store holding the study without --resume, a store holding another study, and
/// --resume where there is nothing to resume.
fn resumed(a: &StudyArgs, study: &mut Study, loaded: &Loaded, db: &Path) -> Result<(Completed, Option<String>)> {
    let profile = &loaded.profile;
    if !db.exists() {
        if a.resume {
            bail!("{}: no such store, so nothing to resume; run the study without --resume to start it", db.display());
        }
        return Ok(Default::default());
    }
    let r = crate::store::Reader::open(db)?;
    let base = study.name.clone();
    resume::check_one_study(db, &base, &r.studies_held()?, |other| {
        let rec = r.latest_study(other).ok().flatten()?;
        rec.fingerprint.map(|f| f.study_file).filter(|f| !f.is_empty())
    })?;
    let recorded = r.latest_study(&base)?;
    if a.resume && recorded.is_none() {
        bail!(
            "{} holds no session of study `{base}`, so nothing to resume; run it without --resume to start it",
            db.display()
        );
    }
    let mut unverified = None;
    if recorded.is_some() {
        let now = resume::fingerprint(study, profile, &loaded.scenario, &loaded.services)?;
        study.name = resume::generation(db, &base, recorded.as_ref(), &now, a.resume, a.new_cell)?;
        unverified = resume::unverifiable_warning(recorded.as_ref(), &now).filter(|_| !a.new_cell);
        if let Some(w) = &unverified {
            crate::errln!("svcbench: warning: {w}");
        }
    }
    let restarts = profile.steps.iter().skip(1).any(|s| s.fresh_start);
    let all_steps = restarts.then_some(profile.steps.len());
    let completed = r.completed_cells(&study.name, all_steps, a.make_up)?;
    if a.make_up {
        let ended: u32 = r.completed_cells(&study.name, all_steps, false)?.values().sum();
        let spoiled = ended - completed.values().sum::<u32>();
        crate::errln!(
            "svcbench: {spoiled} ended run(s) measured nothing of their service (the generator or the machine \
             from their first step on): run again in their place"
        );
    }
    let earlier = r.study_sessions(&study.name)?;
    if earlier > 0 && !a.resume && !a.plan {
        bail!(
            "{} already holds {earlier} session(s) of study `{}`: pass --resume to continue it (completed runs are not \
             run again), or --db for a new store",
            db.display(),
            study.name
        );
    }
    Ok((completed, unverified))
}

/// What the study will do: its question, its cells (with `--plan`, each cell's runs done), the runs left and
/// their time, its duet.
fn print_plan(a: &StudyArgs, study: &Study, profile: &crate::profile::Profile, db: &Path, cells: &Planned) {
    let Planned { names, keys, completed, todo } = cells;
    crate::errln!("svcbench: study `{}`: {}", study.name, study.file.title);
    crate::errln!("svcbench:   question: {}", study.file.question);
    crate::errln!(
        "svcbench:   {} service(s) × {} cell(s) × {} run(s), profile `{}` ({} per run); store {}",
        names.len(),
        keys.len(),
        study.runs,
        profile.name,
        progress::fmt_duration(profile.total_duration()),
        db.display()
    );
    if a.plan {
        for k in keys {
            for n in names {
                let done = completed.get(&(n.clone(), k.clone())).copied().unwrap_or(0).min(study.runs);
                crate::errln!("svcbench:   cell {n:<48} {k:<28} {done}/{} runs done", study.runs);
            }
        }
    }
    crate::errln!(
        "svcbench:   {} of {} runs to do, {} {} (the profile plus ~{} s per run; builds not counted)",
        todo,
        names.len() * keys.len() * study.runs as usize,
        // A stop rule may end runs early: the whole profile is the most a run takes.
        if profile.stop_below_success.is_some() { "at most" } else { "about" },
        progress::fmt_duration(progress::estimate(*todo, profile.total_duration())),
        progress::RUN_OVERHEAD_GUESS.as_secs()
    );
    if let Some(d) = &study.file.duet {
        crate::errln!(
            "svcbench:   then a duet of the two services, {} pairs, profile `{}`{}",
            d.pairs_for(study.quick),
            d.profile,
            if d.alternate { ", in turns" } else { "" }
        );
    }
    if a.plan {
        crate::errln!(
            "svcbench:   builds come first; `svcbench build --study {}{}` does them ahead, two at a time",
            study.path.display(),
            if study.quick { " --quick" } else { "" }
        );
    }
}

/// How a session of the study ended: its exit code (130 interrupted, 1 a service not measured as asked), and whether it was
/// stopped before its first run (nothing measured).
struct Ran {
    code: i32,
    nothing: bool,
}

/// One session of the runs the study still lacks, every cell interleaved.
fn run_cells(
    a: &StudyArgs,
    study: &Study,
    loaded: &Loaded,
    db: &Path,
    (completed, unverified): (Completed, Option<String>),
    net: Option<Vec<crate::network::Link>>,
    stop: Arc<AtomicBool>,
) -> Result<Ran> {
    let opts = crate::options::run_options(&a.session, session_plan(study, db, completed, net))?;
    let s = runner::run_session(opts, stop)?;
    // Recorded once the builds are done: a build may add files to the tree (node_modules, …) that the
    // next resume sees before building.
    let now = resume::fingerprint(study, &loaded.profile, &loaded.scenario, &loaded.services)?;
    let store = crate::store::Store::open(db)?;
    store.record_study_fingerprint(s.session_id, &now)?;
    if let Some(w) = unverified {
        store.add_session_warning(s.session_id, &w)?;
    }
    let nothing = s.interrupted && s.runs_ok + s.runs_interrupted + s.runs_failed == 0;
    if nothing {
        crate::errln!(
            "svcbench: study `{}` session {} interrupted before its first run: nothing measured",
            study.name,
            s.session_id
        );
    } else {
        crate::errln!("svcbench: study `{}` session {} {}", study.name, s.session_id, s.describe());
    }
    if s.interrupted {
        let args: Vec<String> = std::env::args().skip(1).collect();
        crate::errln!("svcbench: continue it with: {}", resume_command(&args));
        return Ok(Ran { code: crate::exit::INTERRUPTED, nothing });
    }
    Ok(Ran { code: s.exit_code(), nothing: false })
}

/// The session a study's runs make: every cell interleaved, labelled with the study's name, `completed` runs
/// left out.
fn session_plan(
    study: &Study,
    db: &Path,
    completed: Completed,
    net: Option<Vec<crate::network::Link>>,
) -> crate::options::SessionPlan {
    let first = &study.cells[0];
    crate::options::SessionPlan {
        services: study.services.clone(),
        scenario: study.file.scenario.clone(),
        profile: study.profile.clone(),
        runs: study.runs,
        limits: Limits {
            cpus: None,
            memory_bytes: first.limits.memory_bytes,
            cpuset: study.file.limits.cpuset.clone(),
            pids: None,
        },
        loadgen_cpuset: study.file.limits.loadgen_cpuset.clone(),
        db: db.to_path_buf(),
        label: Some(study.name.clone()),
        step_duration: study.step_duration,
        mix: study.file.mix.clone(),
        startup_timeout: runner::STARTUP_TIMEOUT,
        seed: runner::SEED,
        metrics_listen: None,
        cells: study.cells.clone(),
        study: Some(study.name.clone()),
        completed,
        net,
        // A study runs containers as `<engine> run`: `--runtime kube` is `svcbench run`'s.
        runtime: Default::default(),
    }
}

/// The study's `[duet]`, once its runs are done: its two services as one duet labelled with the study's
/// name, unless the store already holds that duet done (a resumed study does not run it again).
fn duet(a: &StudyArgs, study: &Study, db: &Path, stop: Arc<AtomicBool>) -> Result<i32> {
    let Some(plan) = &study.file.duet else { return Ok(0) };
    if crate::store::Reader::open(db)?
        .duets()?
        .iter()
        .any(|d| d.label.as_deref() == Some(&study.name) && d.status == "done")
    {
        crate::errln!("svcbench: the study's duet is done; rendering its report");
        return Ok(0);
    }
    let pairs = plan.pairs_for(study.quick);
    crate::errln!("svcbench: study `{}`: its duet, {pairs} pairs of fresh instances (docs/duet.md)", study.name);
    let args = crate::duet::command::DuetArgs {
        a: study.services[0].clone(),
        b: study.services[1].clone(),
        scenario: study.file.scenario.clone(),
        profile: plan.profile.clone(),
        step_duration: study.step_duration,
        pairs,
        precision: plan.precision_share().map_err(anyhow::Error::msg)?,
        alternate: plan.alternate,
        limits: crate::options::LimitsArgs {
            cpus: plan.cpus,
            memory: (study.file.limits.memory.first().map(String::as_str))
                .unwrap_or(crate::options::DEFAULT_MEMORY)
                .to_string(),
            cpuset: plan.cpuset.clone(),
            pids: None,
        },
        loadgen_cpuset: None,
        cgroup: a.session.cgroup,
        db: db.to_path_buf(),
        label: Some(study.name.clone()),
        mix: study.file.mix.clone(),
        seed: runner::SEED,
        // The runs above built both (a resumed study whose runs were done builds them here).
        no_build: a.session.no_build,
        wait_lock: a.session.wait_lock,
        work_dir: PathBuf::from(crate::duet::command::WORK_DIR),
    };
    crate::duet::command::run(args, stop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(w: &[&str]) -> Vec<String> {
        w.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_way_to_continue_repeats_the_sessions_own_options() {
        let args =
            words(&["study", "studies/mine.toml", "--db", "results/studies/mine-b.db", "--quick", "--wait-lock"]);
        assert_eq!(
            resume_command(&args),
            "svcbench study studies/mine.toml --db results/studies/mine-b.db --quick --wait-lock --resume"
        );
        // A resume continues the latest generation: another --new-cell would start one more.
        let args = words(&["study", "s.toml", "--resume", "--new-cell", "--make-up", "-o", "my report.html"]);
        assert_eq!(resume_command(&args), "svcbench study s.toml --make-up -o 'my report.html' --resume");
        assert_eq!(shlex::split(&shell_word("it's $HOME")).unwrap(), ["it's $HOME"]);
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn the_report_is_named_after_its_store() {
        let at = |db: &str, quick| report_beside(Path::new(db), quick);
        // The default store's, as it always was.
        assert_eq!(at("results/studies/mine.db", false), Path::new("results/studies/mine.html"));
        assert_eq!(at("results/studies/mine.db", true), Path::new("results/studies/mine-quick.html"));
        // A second store of the study writes its own.
        assert_eq!(at("results/studies/mine-b.db", false), Path::new("results/studies/mine-b.html"));
        assert_eq!(at("mine-b.db", true), Path::new("mine-b-quick.html"));
    }
}

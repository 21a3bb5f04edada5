//! What each command does, once cli has parsed it: the top layer, above every module it calls.
pub mod build;
pub mod history;
pub mod pod;
pub mod study;

use crate::cli::{Cli, Command};
use crate::options::{self, SessionPlan};
use crate::{alone, guard, host, mock_upstream, remote, report, runner, store};
use anyhow::Result;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// The command's stop flag: Ctrl-C asks it to stop; a second one ends every part at once (teardown/).
fn stop_flag() -> Result<Arc<AtomicBool>> {
    guard::signals::stop_flag(crate::teardown::teardown_all)
}

/// Runs the command asked; returns the exit code (crate::exit, docs/exit-codes.md: 0 done, 1 something not
/// measured or checked as asked, 2 refused, 3 `compare --fail-on` not judging stores measured differently,
/// 130 interrupted: also before it started anything, which is said in one line, not as an error). An error
/// it returns exits 2, or 1 once something was started (crate::exit::Failed).
pub fn dispatch(cli: Cli) -> Result<i32> {
    match command(cli) {
        Err(e)
            if e.downcast_ref::<guard::signals::StoppedBeforeStart>().is_some()
                || e.downcast_ref::<crate::exit::Interrupted>().is_some() =>
        {
            crate::errln!("svcbench: {}", format!("{e:#}").replace('\n', " "));
            Ok(crate::exit::INTERRUPTED)
        }
        done => done,
    }
}

fn command(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Run(a) => {
            let stop = stop_flag()?;
            let mut services = a.services;
            if let Some(tag) = &a.image {
                let scenario = a.scenario.as_deref().unwrap_or("hello");
                let folder = a.db.parent().unwrap_or(std::path::Path::new(".")).join("images");
                services.push(crate::service::container_start::manifest_for_image(tag, a.port, scenario, &folder)?);
            }
            let plan = SessionPlan {
                services,
                scenario: a.scenario,
                profile: a.profile,
                runs: a.runs,
                limits: a.limits.limits()?,
                loadgen_cpuset: a.loadgen_cpuset,
                db: a.db,
                label: a.label,
                step_duration: a.step_duration,
                mix: a.mix,
                startup_timeout: a.startup.startup_timeout,
                seed: a.seed,
                metrics_listen: a.metrics_listen,
                cells: Vec::new(),
                study: None,
                completed: Default::default(),
                net: a.session.network.links()?,
                runtime: a.runtime,
            };
            let opts = options::run_options(&a.session, plan)?;
            let db = opts.plan.db.clone();
            let s = runner::run_session(opts, stop)?;
            crate::errln!("svcbench: session {} {}; figures in {}", s.session_id, s.describe(), db.display());
            Ok(s.exit_code())
        }
        Command::Check(a) => {
            // A bad --dep is refused before anything is built.
            let given = a.given.given()?;
            let stop = stop_flag()?;
            let results = alone::check::check_service(&a, &given, stop)?;
            let failed = results.iter().filter(|r| !r.passed).count();
            for r in &results {
                if r.passed {
                    crate::outln!("PASS  {}", r.name);
                } else {
                    crate::outln!("FAIL  {}: {}", r.name, r.reason);
                }
            }
            crate::outln!("{} of {} checks passed", results.len() - failed, results.len());
            Ok(if failed > 0 { crate::exit::FAILED } else { crate::exit::DONE })
        }
        Command::Build(a) => {
            let stop = stop_flag()?;
            build::run(&a, stop)
        }
        Command::Pod(a) => pod::run(&a),
        Command::Load(a) => loadgen::cli::run_cli(&a),
        Command::HostFacts => {
            crate::outln!("{}", serde_json::to_string(&host::facts())?);
            Ok(0)
        }
        Command::Export(a) => {
            let st = store::Reader::open(&a.db)?;
            crate::outln!("{}", serde_json::to_string_pretty(&store::export::export(&st, a.session, a.samples)?)?);
            Ok(0)
        }
        Command::Upstream(a) => mock_upstream::run_cli(&a),
        Command::Report(a) => report::run_report(&a),
        Command::Compare(a) => report::run_compare(&a),
        Command::History(a) => history::run(&a),
        Command::ServeDeps(a) => {
            let stop = stop_flag()?;
            remote::serve_deps::run(a, stop)
        }
        Command::ServeService(a) => {
            let stop = stop_flag()?;
            remote::serve_service::run(a, stop)
        }
        Command::Up(a) => {
            let stop = stop_flag()?;
            alone::up::run_up(a, stop)
        }
        Command::Duet(a) => {
            let stop = stop_flag()?;
            crate::duet::command::run(a, stop)
        }
        Command::Gate(a) => {
            let stop = stop_flag()?;
            crate::gate::command::run(a, stop)
        }
        Command::Study(a) => {
            let stop = stop_flag()?;
            study::run(a, stop)
        }
    }
}

//! svcbench: benchmark lab for HTTP microservices. Data flows one way:
//! cli → runner → (sandbox, loadgen, deps) → store → report.
mod cli;
mod cpus;
mod deps;
mod figures;
mod guard;
mod host;
mod http_client;
mod manifest;
mod metrics;
mod net;
mod network;
mod paths;
mod poll;
mod profile;
mod remote_service;
mod report;
mod runner;
mod sandbox;
mod scenario;
mod speed_probe;
mod store;
mod study;
mod toml_file;
mod up;
mod upstream;

use anyhow::Result;
use clap::Parser;
use cli::{Cli, Command};

fn main() {
    let cli = Cli::parse();
    match dispatch(cli) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            // One line: what is wrong and, where we know it, how to fix it.
            eprintln!("svcbench: error: {}", format!("{e:#}").replace('\n', " "));
            std::process::exit(2);
        }
    }
}

fn dispatch(cli: Cli) -> Result<i32> {
    match cli.command {
        Command::Run(a) => {
            let stop = guard::signals::stop_flag()?;
            let limits = a.limits.limits()?;
            let hosts_plan = a.generators.plan(&a.network)?;
            let opts = runner::RunOptions {
                services: a.services,
                scenario: a.scenario,
                profile: a.profile,
                runs: a.runs,
                limits,
                loadgen_cpuset: a.loadgen_cpuset,
                db: a.db,
                label: a.label,
                cgroup: a.cgroup.into(),
                step_duration: a.step_duration,
                mix: a.mix,
                skip_build: a.no_build,
                startup_timeout: a.startup_timeout,
                stop_grace: runner::STOP_GRACE,
                seed: a.seed,
                command_line: std::env::args().collect::<Vec<_>>().join(" "),
                metrics_listen: a.metrics_listen,
                probe_tolerance: a.probe_tolerance / 100.0,
                allow_unlimited: a.allow_unlimited,
                wait_lock: a.wait_lock,
                cells: Vec::new(),
                study: None,
                completed: Default::default(),
                net: a.network.links()?,
                generators: a.generators.count(hosts_plan.as_ref()),
                hosts_plan,
                given_deps: a.given.given()?,
            };
            let db = opts.db.clone();
            let s = runner::run_session(opts, stop)?;
            eprintln!(
                "svcbench: session {} {}: {} run(s) completed, {} interrupted, {} failed; figures in {}",
                s.session_id,
                if s.interrupted { "interrupted" } else { "done" },
                s.runs_ok,
                s.runs_interrupted,
                s.runs_failed,
                db.display()
            );
            Ok(if s.interrupted {
                130
            } else if s.runs_failed > 0 {
                1
            } else {
                0
            })
        }
        Command::Check(a) => {
            let stop = guard::signals::stop_flag()?;
            let results = runner::check_service(
                &a.service,
                a.scenario.as_deref(),
                a.no_build,
                a.cgroup.into(),
                &a.work_dir,
                stop,
            )?;
            let failed = results.iter().filter(|r| !r.passed).count();
            for r in &results {
                if r.passed {
                    println!("PASS  {}", r.name);
                } else {
                    println!("FAIL  {}: {}", r.name, r.reason);
                }
            }
            println!("{} of {} checks passed", results.len() - failed, results.len());
            Ok(if failed > 0 { 1 } else { 0 })
        }
        Command::Build(a) => {
            let stop = guard::signals::stop_flag()?;
            runner::build_many::run_cli(&a, stop)
        }
        Command::Load(a) => loadgen::cli::run_cli(&a),
        Command::HostFacts => {
            println!("{}", serde_json::to_string(&crate::host::facts())?);
            Ok(0)
        }
        Command::Export(a) => {
            let st = store::Reader::open(&a.db)?;
            println!("{}", serde_json::to_string_pretty(&store::export::export(&st, a.session, a.samples)?)?);
            Ok(0)
        }
        Command::Upstream(a) => upstream::run_cli(&a),
        Command::Report(a) => report::run_report(&a),
        Command::Compare(a) => report::run_compare(&a),
        Command::ServeDeps(a) => {
            let stop = guard::signals::stop_flag()?;
            deps::serve::run(a, stop)
        }
        Command::ServeService(a) => {
            let stop = guard::signals::stop_flag()?;
            remote_service::serve::run(a, stop)
        }
        Command::Up(a) => {
            let stop = guard::signals::stop_flag()?;
            up::run_up(a, stop)
        }
        Command::Study(a) => {
            let stop = guard::signals::stop_flag()?;
            study::run_study(a, stop)
        }
    }
}

//! `svcbench build`: services and the services of study files built ahead of their runs.
use crate::cli::BuildArgs;
use crate::manifest::Service;
use crate::service::build_many::{build_all, lanes};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// `svcbench build`: loads every service named (all before any build, so a typo fails at once), builds
/// them and says what failed. Exit code 1 when a build failed, 130 when interrupted.
pub fn run(a: &BuildArgs, stop: Arc<AtomicBool>) -> anyhow::Result<i32> {
    let mut specs: Vec<String> = a.services.clone();
    for file in &a.study {
        let study = crate::study::file::Study::load(file, a.quick)?;
        study.check_folders()?;
        specs.extend(study.services.iter().map(|p| p.display().to_string()));
    }
    if specs.is_empty() {
        anyhow::bail!("name services to build (folders, folder@variant, folder@*) or --study FILE");
    }
    if a.jobs == 0 {
        anyhow::bail!("--jobs 0 builds nothing; give 1 or more");
    }
    let mut services = Vec::new();
    for spec in &specs {
        services.extend(Service::load_spec(spec)?);
    }
    // Ordered once: ordering reads every build's stamp and walks its files.
    let lanes = lanes(&services);
    let to_build: usize = lanes.iter().map(|l| l.len()).sum();
    crate::errln!("svcbench: {to_build} build(s), {} at a time", a.jobs.min(to_build.max(1)));
    let t0 = std::time::Instant::now();
    let out = build_all(lanes, a.jobs, &a.work_dir, stop.clone());
    let mut failed = 0;
    for (name, result) in &out {
        if let Err(e) = result {
            crate::errln!("svcbench: {name}: {e}");
            failed += 1;
        }
    }
    crate::errln!(
        "svcbench: {} of {to_build} build(s) done, {failed} failed, in {:.0} s",
        out.len() - failed,
        t0.elapsed().as_secs_f64()
    );
    Ok(if stop.load(Ordering::Relaxed) {
        130
    } else if failed == 0 {
        0
    } else {
        1
    })
}

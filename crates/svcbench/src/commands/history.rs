//! `svcbench history`: reads the stores, orders their sessions by the repository's history, finds the
//! change points of every series, writes what was asked and judges `--fail-on`.
use crate::cli::{FailOnHistory, HistoryArgs};
use crate::history::{analyse, output, series, Analysed, Settings};
use anyhow::{anyhow, bail, Context, Result};

enum Page {
    Markdown,
    Html,
}

pub fn run(a: &HistoryArgs) -> Result<i32> {
    // Every refusal before a store is read.
    if !(a.max_pvalue > 0.0 && a.max_pvalue < 1.0) {
        bail!("--max-pvalue {}: must be between 0 and 1 (exclusive), e.g. 0.001", a.max_pvalue);
    }
    let min_window = 2 * crate::history::change_points::MIN_SIDE;
    if a.window < min_window {
        bail!("--window {}: must be at least {min_window} (a change needs that many sessions around it)", a.window);
    }
    let figures = series::parse_metrics(&a.metric)?;
    let page = match &a.output {
        None => None,
        Some(p) => match p.extension().and_then(|e| e.to_str()).map(|e| e.to_ascii_lowercase()).as_deref() {
            Some("md" | "markdown") => Some(Page::Markdown),
            Some("html" | "htm") => Some(Page::Html),
            _ => bail!("-o {}: the page is written as .md or .html; name the file so", p.display()),
        },
    };
    let sources = series::open_stores(&a.db)?;
    let history = crate::git::history(&a.repo).ok_or_else(|| {
        anyhow!(
            "--repo {}: not a git repository with a commit (git rev-list HEAD failed); pass --repo with the services' repository",
            a.repo.display()
        )
    })?;
    let assembled = series::assemble(&sources, &history, &a.service, &figures)?;
    if assembled.series.is_empty() {
        let why =
            if assembled.warnings.is_empty() { String::new() } else { format!(" ({})", assembled.warnings.join("; ")) };
        let services =
            if a.service.is_empty() { String::new() } else { format!(" of --service {}", a.service.join(", ")) };
        bail!("the stores hold no figures{services} at a commit of {}{why}", a.repo.display());
    }
    let settings = Settings { max_pvalue: a.max_pvalue, window: a.window, ..Settings::default() };
    let analysed: Vec<Analysed> = assembled.series.into_iter().map(|s| analyse(s, &settings)).collect();
    let mut measured: Vec<&str> =
        analysed.iter().flat_map(|x| x.series.points.iter().map(|p| p.commit.as_str())).collect();
    measured.sort_unstable();
    measured.dedup();
    let header = output::Header {
        repo: a.repo.display().to_string(),
        stores: sources.len(),
        commits: measured.len(),
        max_pvalue: a.max_pvalue,
        warnings: assembled.warnings,
    };
    if a.json {
        crate::outln!("{}", serde_json::to_string_pretty(&output::json(&header, &analysed))?);
    } else {
        crate::outln!("{}", output::terminal(&header, &analysed).trim_end());
    }
    if let (Some(page), Some(path)) = (page, &a.output) {
        let text = match page {
            Page::Markdown => output::markdown(&header, &analysed),
            Page::Html => output::html(&header, &analysed),
        };
        std::fs::write(path, text)
            .with_context(|| format!("cannot write {}", path.display()))
            .map_err(crate::exit::failed)?;
        crate::errln!("svcbench: history written to {}", path.display());
    }
    match a.fail_on {
        Some(FailOnHistory::Regression) => {
            let regressed: Vec<String> = analysed
                .iter()
                .filter_map(|x| x.newest().filter(|f| f.regressed()).map(|f| (x, f)))
                .map(|(x, f)| format!("{} {} at {} {}", x.series.service, x.series.figure.key(), f.range(), f.size()))
                .collect();
            if regressed.is_empty() {
                return Ok(crate::exit::DONE);
            }
            crate::errln!("svcbench: the newest change point is a regression: {}", regressed.join("; "));
            Ok(crate::exit::FAILED)
        }
        None => Ok(crate::exit::DONE),
    }
}

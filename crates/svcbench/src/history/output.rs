//! A history as people and scripts read it: the terminal table, a Markdown or HTML page (a chart per
//! metric, the change points marked as the report marks a flagged step), and JSON.
use super::findings::{Analysed, Found};
use super::series::{short, Point};
use crate::report::{chart_box, color, escape, footer, num_fractional, standalone_page, Axis, Chart};
use serde::Serialize;
use std::fmt::Write;

/// What every output says, besides the series.
pub struct Header {
    pub repo: String,
    pub stores: usize,
    /// Commits in the repository's history, and of them those with a session.
    pub commits: usize,
    pub max_pvalue: f64,
    pub warnings: Vec<String>,
}

fn series_name(a: &Analysed) -> String {
    let step = a.series.step.as_ref().map(|s| format!(" step {s}")).unwrap_or_default();
    format!("{}{step}", a.series.figure.key())
}

fn commits_measured(points: &[Point]) -> usize {
    let mut c: Vec<&str> = points.iter().map(|p| p.commit.as_str()).collect();
    c.dedup();
    c.len()
}

fn p_text(p: f64) -> String {
    if p < 1e-4 {
        format!("{p:.1e}")
    } else {
        format!("{p:.4}")
    }
}

/// One row per change point, a row "no change point" for a series without one.
fn rows(all: &[Analysed]) -> Vec<[String; 8]> {
    let mut out = Vec::new();
    for a in all {
        let (svc, metric) = (a.series.service.clone(), series_name(a));
        let (points, commits) = (a.series.points.len().to_string(), commits_measured(&a.series.points).to_string());
        if a.found.is_empty() {
            let why = if a.series.points.len() < 2 * super::change_points::MIN_SIDE {
                format!("too few sessions to judge (a change needs {} a side)", super::change_points::MIN_SIDE)
            } else {
                "no change point".into()
            };
            out.push([svc, metric, points, commits, why, String::new(), String::new(), String::new()]);
            continue;
        }
        for f in &a.found {
            out.push([
                svc.clone(),
                metric.clone(),
                points.clone(),
                commits.clone(),
                f.range(),
                f.size(),
                p_text(f.p),
                direction_text(f),
            ]);
        }
    }
    out
}

fn direction_text(f: &Found) -> String {
    if f.coincides_with.is_empty() {
        f.direction.to_string()
    } else {
        format!("{}; coincides with a change of {}", f.direction, f.coincides_with.join(", "))
    }
}

const HEADS: [&str; 8] =
    ["service", "metric", "sessions", "commits", "change at", "after/before [95 %]", "p", "direction"];

/// The terminal's table, columns aligned.
pub fn terminal(h: &Header, all: &[Analysed]) -> String {
    let rows = rows(all);
    let mut width = HEADS.map(|s| s.chars().count());
    for r in &rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i + 1 == cells.len() {
                s.push_str(c);
            } else {
                let _ = write!(s, "{c:<w$}  ", w = width[i]);
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = format!(
        "history of {} over {} store(s): {} commit(s) measured, change points at p ≤ {}\n",
        h.repo, h.stores, h.commits, h.max_pvalue
    );
    out.push_str(&line(&HEADS.map(String::from)));
    for r in &rows {
        out.push_str(&line(r));
    }
    for w in &h.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    out
}

/// The Markdown page: the change points, then each series commit by commit.
pub fn markdown(h: &Header, all: &[Analysed]) -> String {
    let mut s = format!(
        "# svcbench history\n\n{} over {} store(s), {} commit(s) measured; change points by e-divisive means, each \
         kept at p ≤ {} (docs/history.md).\n\n",
        h.repo, h.stores, h.commits, h.max_pvalue
    );
    s.push_str("## Change points\n\n");
    let _ = writeln!(s, "| {} |", HEADS.join(" | "));
    let _ = writeln!(s, "|{}", "---|".repeat(HEADS.len()));
    for r in rows(all) {
        let _ = writeln!(s, "| {} |", r.map(|c| c.replace('|', "\\|")).join(" | "));
    }
    if !h.warnings.is_empty() {
        s.push_str("\n## Left out\n\n");
        for w in &h.warnings {
            let _ = writeln!(s, "- {w}");
        }
    }
    s.push_str("\n## Series\n\nThe median of each session's counted runs, oldest commit first; ▲ marks the first session at a new level.\n");
    for a in all {
        let _ = write!(s, "\n### {} {} ({})\n\n", a.series.service, series_name(a), a.series.figure.unit());
        s.push_str("| commit | store | session | runs | value |\n|---|---|---|---|---|\n");
        for (i, p) in a.series.points.iter().enumerate() {
            let mark = if a.found.iter().any(|f| f.index == i) { " ▲" } else { "" };
            let _ = writeln!(
                s,
                "| {}{mark} | {} | {} | {} | {} |",
                short(&p.commit),
                p.store,
                p.session,
                p.runs,
                num_fractional(p.value)
            );
        }
    }
    s
}

/// The charts: one per metric (and step), one line per service over the commits, each change point a ▲.
pub fn charts(all: &[Analysed]) -> Vec<Chart> {
    let mut keys: Vec<(&'static str, Option<String>)> = Vec::new();
    for a in all {
        let k = (a.series.figure.key(), a.series.step.clone());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut services: Vec<&str> = Vec::new();
    for a in all {
        if !services.contains(&a.series.service.as_str()) {
            services.push(&a.series.service);
        }
    }
    keys.into_iter()
        .enumerate()
        .map(|(n, (key, step))| {
            let mine: Vec<&Analysed> =
                all.iter().filter(|a| a.series.figure.key() == key && a.series.step == step).collect();
            let figure = mine[0].series.figure;
            let mut commits: Vec<(usize, &str)> =
                mine.iter().flat_map(|a| a.series.points.iter().map(|p| (p.commit_index, p.commit.as_str()))).collect();
            commits.sort_unstable();
            commits.dedup();
            let series = mine
                .iter()
                .map(|a| {
                    let g = services.iter().position(|s| *s == a.series.service).unwrap_or(0);
                    let points = a
                        .series
                        .points
                        .iter()
                        .enumerate()
                        .map(|(i, p)| crate::report::Point {
                            x: commits.iter().position(|c| c.1 == p.commit).unwrap_or(0) as f64,
                            y: p.value,
                            step: format!("session {} of {}, {} run(s)", p.session, p.store, p.runs),
                            flag: a.found.iter().find(|f| f.index == i).map(|f| {
                                format!(
                                    "change point {} {}, p {}: {}",
                                    f.range(),
                                    f.size(),
                                    p_text(f.p),
                                    direction_text(f)
                                )
                            }),
                        })
                        .collect();
                    crate::report::Series {
                        group: a.series.service.clone(),
                        run: a.series.service.clone(),
                        color: color(g),
                        points,
                    }
                })
                .collect();
            let title = match &step {
                Some(s) => format!("{} at step {s}", figure.title()),
                None => figure.title().to_string(),
            };
            Chart {
                id: format!("history-{n}"),
                title,
                note: format!(
                    "One point per session (the median of its runs) at the commit it measured, oldest first; ▲ marks \
                     the first session after a change point. {}.",
                    if figure.higher_is_better() { "Higher is better" } else { "Lower is better" }
                ),
                kind: "line",
                x: Axis {
                    name: "commit".into(),
                    scale: "category",
                    unit: String::new(),
                    categories: commits.iter().map(|c| short(c.1).to_string()).collect(),
                },
                y: Axis {
                    name: figure.title().into(),
                    scale: "linear",
                    unit: figure.unit().into(),
                    categories: Vec::new(),
                },
                series,
            }
        })
        .collect()
}

/// The HTML page: the change points' table, what was left out, a chart per metric.
pub fn html(h: &Header, all: &[Analysed]) -> String {
    let mut body = format!(
        "<header><h1>svcbench history</h1><p class=\"sub\">{} over {} store(s), {} commit(s) measured; change points by \
         e-divisive means, each kept at p ≤ {}</p></header><section id=\"s-changes\"><h2>Change points</h2><table><thead><tr>",
        escape(&h.repo),
        h.stores,
        h.commits,
        h.max_pvalue
    );
    for head in HEADS {
        let _ = write!(body, "<th>{}</th>", escape(head));
    }
    body.push_str("</tr></thead><tbody>");
    for r in rows(all) {
        body.push_str("<tr>");
        for c in r {
            let _ = write!(body, "<td>{}</td>", escape(&c));
        }
        body.push_str("</tr>");
    }
    body.push_str("</tbody></table></section>");
    if !h.warnings.is_empty() {
        body.push_str("<section id=\"s-left-out\"><h2>Left out</h2><ul>");
        for w in &h.warnings {
            let _ = write!(body, "<li>{}</li>", escape(w));
        }
        body.push_str("</ul></section>");
    }
    let charts = charts(all);
    body.push_str(
        "<section id=\"s-charts\"><h2>Charts</h2><p class=\"note\">Hover a point for its session; click a legend \
         entry to hide or show a service in every chart.</p><div class=\"charts\">",
    );
    for c in &charts {
        body.push_str(&chart_box(c));
    }
    body.push_str("</div></section>");
    body.push_str(&footer());
    standalone_page("svcbench history", &body, &charts.iter().collect::<Vec<_>>())
}

#[derive(Serialize)]
struct JsonSeries<'a> {
    service: &'a str,
    metric: &'static str,
    step: Option<&'a str>,
    unit: &'static str,
    higher_is_better: bool,
    points: &'a [Point],
    change_points: &'a [Found],
}

/// The JSON scripts read: the header, then every series with its points and change points.
pub fn json(h: &Header, all: &[Analysed]) -> serde_json::Value {
    let series: Vec<JsonSeries> = all
        .iter()
        .map(|a| JsonSeries {
            service: &a.series.service,
            metric: a.series.figure.key(),
            step: a.series.step.as_deref(),
            unit: a.series.figure.unit(),
            higher_is_better: a.series.figure.higher_is_better(),
            points: &a.series.points,
            change_points: &a.found,
        })
        .collect();
    serde_json::json!({
        "repo": h.repo,
        "stores": h.stores,
        "commits_measured": h.commits,
        "max_pvalue": h.max_pvalue,
        "warnings": h.warnings,
        "series": series,
    })
}

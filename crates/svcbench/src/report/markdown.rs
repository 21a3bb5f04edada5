//! The Markdown report, for pull requests and issues: the same tables as the HTML page, and in place of the
//! charts a table of successful requests/s per step.
use super::levels;
use super::table::Table;
use super::Report;
use std::fmt::Write;

fn cell_text(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

pub fn table(t: &Table) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "| {} |", t.head.iter().map(|h| cell_text(h)).collect::<Vec<_>>().join(" | "));
    // Numbers align right, text left: a column is numeric when any of its cells is.
    let numeric = |i: usize| t.rows.iter().any(|r| r.cells.get(i).is_some_and(|c| c.class == "num"));
    let _ = writeln!(
        s,
        "|{}|",
        (0..t.head.len()).map(|i| if numeric(i) { "--:" } else { "---" }).collect::<Vec<_>>().join("|")
    );
    for r in &t.rows {
        let cells: Vec<String> = r
            .cells
            .iter()
            .map(|c| {
                let text = cell_text(&c.full_text());
                // Failures stand out in bold, as the HTML highlights them.
                if c.class == "fail" && !text.is_empty() {
                    format!("**{text}**")
                } else {
                    text
                }
            })
            .collect();
        let _ = writeln!(s, "| {} |", cells.join(" | "));
    }
    if !t.note.is_empty() {
        let _ = writeln!(s, "\n{}", t.note);
    }
    s
}

pub fn render(r: &Report) -> String {
    let d = &r.data;
    let mut s = String::new();
    let scen = if d.runs.is_empty() { "duets".to_string() } else { d.scenarios().join(", ") };
    let _ = writeln!(s, "## svcbench report: {scen}\n");
    let _ = writeln!(
        s,
        "{} from `{}`; filter: {}; generated {} by svcbench {}.\n",
        r.holds(),
        d.source,
        d.filter,
        r.generated_at,
        env!("CARGO_PKG_VERSION")
    );
    if d.runs.is_empty() {
        // A store of duets alone.
        s.push_str(&duets(r));
        return s;
    }
    if let Some(st) = &r.study {
        let _ = writeln!(s, "### Study: {}\n", st.title);
        for p in &st.paragraphs {
            let _ = writeln!(s, "{p}\n");
        }
        for t in &st.tables {
            let _ = writeln!(s, "#### {}\n\n{}", t.caption, table(t));
        }
    }
    let _ = writeln!(s, "### Setup\n\n{}", table(&r.setup));
    let _ = writeln!(s, "### Summary\n\n{}", table(&r.summary));
    for t in &r.quality {
        if !t.rows.is_empty() || t.id == "validity" {
            let body = if t.rows.is_empty() { "Every step of every run is valid.\n".to_string() } else { table(t) };
            let _ = writeln!(s, "### {}\n\n{}", t.caption, body);
        }
    }
    let _ = writeln!(s, "### Services\n\n{}", table(&r.services));
    if let Some(t) = levels::rps_by_step(d) {
        let _ = writeln!(s, "### {}\n\n{}", t.caption, table(&t));
    }
    for t in &r.levels {
        let _ = writeln!(s, "### {}\n\n{}", t.caption, table(t));
    }
    s.push_str(&duets(r));
    let _ = writeln!(s, "### Conformance\n\n{}", table(&r.conformance));
    let _ = writeln!(s, "### Runs\n\n{}", table(&r.runs));
    let _ = writeln!(s, "_Charts: render the HTML report (`svcbench report -o report.html`) with the same filter._");
    s
}

/// Per duet what was measured and its verdict table (the ratio-over-time charts are in the HTML report).
fn duets(r: &Report) -> String {
    let mut s = String::new();
    for du in &r.duets {
        let _ = writeln!(s, "### {}\n\n{}\n\n{}", du.title, du.about, table(&du.table));
    }
    s
}

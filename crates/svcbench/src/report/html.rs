//! The HTML report: one self-contained file. Tables are rendered here; charts are specifications in a JSON
//! block that assets/report.js draws with Apache ECharts, which is embedded too (see build.rs).
use super::charts::{group_color, Chart};
use super::data::Dataset;
use super::table::Table;
use super::Report;
use std::fmt::Write;

const ECHARTS_JS: &str = include_str!(concat!(env!("OUT_DIR"), "/echarts.min.js"));
const ECHARTS_VERSION: &str = include_str!(concat!(env!("OUT_DIR"), "/echarts_version.txt"));
const REPORT_JS: &str = include_str!("../../assets/report.js");
const REPORT_CSS: &str = include_str!("../../assets/report.css");

pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

fn data_attrs(data: &[(String, String)]) -> String {
    data.iter().map(|(k, v)| format!(" data-{}=\"{}\"", escape(k), escape(v))).collect()
}

pub fn table(t: &Table, d: &Dataset) -> String {
    let mut s = String::new();
    let _ = write!(s, "<div class=\"table-wrap\"><table id=\"{}\">", escape(&t.id));
    s.push_str("<thead><tr>");
    for h in &t.head {
        let _ = write!(s, "<th>{}</th>", escape(h));
    }
    s.push_str("</tr></thead><tbody>");
    for r in &t.rows {
        let _ = write!(s, "<tr{}>", data_attrs(&r.data));
        for c in &r.cells {
            let tag = if c.header { "th" } else { "td" };
            let class = if c.class.is_empty() { String::new() } else { format!(" class=\"{}\"", c.class) };
            let title = c.title.as_ref().map(|t| format!(" title=\"{}\"", escape(t))).unwrap_or_default();
            // A service's row header carries its chart colour, so tables and charts read together.
            let swatch = if c.header {
                d.groups
                    .iter()
                    .position(|g| g.name == c.text)
                    .map(|g| format!("<span class=\"swatch\" style=\"background:{}\"></span>", group_color(d, g)))
                    .unwrap_or_default()
            } else {
                String::new()
            };
            let text = match &c.sub {
                Some(sub) => {
                    format!("<span class=\"v\">{}</span><span class=\"range\">{}</span>", escape(&c.text), escape(sub))
                }
                None => escape(&c.text),
            };
            let _ = write!(s, "<{tag}{class}{title}{}>{swatch}{text}</{tag}>", data_attrs(&c.data));
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table></div>");
    if !t.note.is_empty() {
        let _ = write!(s, "<p class=\"note\">{}</p>", escape(&t.note));
    }
    s
}

/// Width a chart's legend has in the narrowest chart box (report.css: 540 px columns, less their padding
/// and the legend's margins).
const LEGEND_WIDTH_PX: usize = 500;
/// Height of a chart with a legend of one row (report.css), and of each further row.
const CHART_HEIGHT_PX: usize = 340;
const LEGEND_ROW_PX: usize = 22;

/// Rows the chart's legend wraps to, every service named in full: a legend that pages instead (seed 004's
/// nine services showed three at a time) leaves the colours of the others unnamed. An entry is taken as
/// its swatch and gaps (45 px) and 7 px a character, a little wider than ECharts draws it, so the plot
/// always starts below the legend.
pub(super) fn legend_rows(c: &Chart) -> usize {
    let mut groups: Vec<&str> = Vec::new();
    for s in &c.series {
        if !groups.contains(&s.group.as_str()) {
            groups.push(&s.group);
        }
    }
    let (mut rows, mut used) = (1, 0);
    for g in groups {
        let width = 45 + 7 * g.chars().count();
        if used > 0 && used + width > LEGEND_WIDTH_PX {
            rows += 1;
            used = 0;
        }
        used += width;
    }
    rows
}

pub fn chart_box(c: &Chart) -> String {
    let rows = legend_rows(c);
    format!(
        "<figure class=\"chart-box\"><figcaption><b>{}</b><span>{}</span></figcaption>\
         <div class=\"chart\" id=\"chart-{}\" data-chart=\"{}\" data-series=\"{}\" data-legend-rows=\"{rows}\" \
         style=\"height: {}px\"></div></figure>",
        escape(&c.title),
        escape(&c.note),
        escape(&c.id),
        escape(&c.id),
        c.series.len(),
        CHART_HEIGHT_PX + LEGEND_ROW_PX * (rows - 1)
    )
}

/// JSON that is safe inside a <script> element: no `</script>` or `<!--` can close or comment it out.
fn script_json(v: &serde_json::Value) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "{}".into()).replace("</", "<\\/").replace("<!--", "<\\!--")
}

pub fn render(r: &Report) -> String {
    let d = &r.data;
    let scen = if d.runs.is_empty() { "duets".to_string() } else { d.scenarios().join(", ") };
    let mut body = String::new();
    let _ = write!(
        body,
        "<header><h1>svcbench report: {}</h1><p class=\"sub\">{} from <code>{}</code> · filter: {} · generated {} by svcbench {}</p>\
         <nav>{}</nav></header>",
        escape(&scen),
        r.holds(),
        escape(&d.source),
        escape(&d.filter),
        escape(&r.generated_at),
        env!("CARGO_PKG_VERSION"),
        nav(r),
    );
    if d.runs.is_empty() {
        // A store of duets alone.
        body.push_str(&duets(r, d));
        return page(r, &scen, body);
    }
    if let Some(st) = &r.study {
        let _ = write!(body, "<section id=\"s-study\"><h2>Study: {}</h2>", escape(&st.title));
        for p in &st.paragraphs {
            let _ = write!(body, "<p>{}</p>", escape(p));
        }
        for t in &st.tables {
            let _ = write!(body, "<h3>{}</h3>{}", escape(&t.caption), table(t, d));
        }
        let boxes: Vec<String> = st.charts.iter().map(chart_box).collect();
        if !boxes.is_empty() {
            let _ = write!(body, "<div class=\"charts\">{}</div>", boxes.join(""));
        }
        body.push_str("</section>");
    }
    let _ = write!(body, "<section id=\"s-setup\"><h2>Setup</h2>{}</section>", table(&r.setup, d));
    let _ = write!(
        body,
        "<section id=\"s-summary\"><h2>Summary</h2>{}<h3>Services</h3>{}</section>",
        table(&r.summary, d),
        table(&r.services, d)
    );
    body.push_str("<section id=\"s-validity\"><h2>Validity</h2>");
    for t in &r.quality {
        if t.rows.is_empty() {
            if t.id == "validity" {
                body.push_str("<p class=\"note\">Every step of every run is valid.</p>");
            }
            continue;
        }
        let _ = write!(body, "<h3>{}</h3>{}", escape(&t.caption), table(t, d));
    }
    body.push_str("</section>");

    body.push_str(
        "<section id=\"s-charts\"><h2>Charts</h2><p class=\"note\">One line per run, one colour per service. Hover a point \
         for its exact value and run; click a legend entry to hide or show a service in every chart. \
         ▲ marks a step svcbench judges not valid (the load generator or the dependencies lacked CPU, connections \
         starved, an open-model schedule not kept or not sustained, the machine slowed, the service OOM-killed or \
         crashed): it never makes a quoted peak; the Validity section says why.</p>",
    );
    type Pick = fn(&Chart) -> bool;
    let sections: [(&str, Pick); 4] = [
        ("", |c| c.id == "startup" || c.id == "errors-by-kind"),
        ("Closed model: load held by connections", |c| {
            c.id != "startup" && c.id != "errors-by-kind" && c.id != "bang" && !c.id.starts_with("open-")
        }),
        ("Open model: load at a fixed arrival rate", |c| c.id.starts_with("open-")),
        ("Efficiency over the whole run", |c| c.id == "bang"),
    ];
    for (title, pick) in sections {
        let boxes: Vec<String> = r.charts.iter().filter(|c| pick(c)).map(chart_box).collect();
        if boxes.is_empty() {
            continue;
        }
        if !title.is_empty() {
            let _ = write!(body, "<h3>{}</h3>", escape(title));
        }
        let _ = write!(body, "<div class=\"charts\">{}</div>", boxes.join(""));
    }
    body.push_str("</section>");

    if !r.levels.is_empty() {
        body.push_str("<section id=\"s-scenario\"><h2>Per step level</h2>");
        for t in &r.levels {
            let _ = write!(body, "<h3>{}</h3>{}", escape(&t.caption), table(t, d));
        }
        body.push_str("</section>");
    }
    body.push_str(&duets(r, d));
    let _ = write!(body, "<section id=\"s-conformance\"><h2>Conformance</h2>{}</section>", table(&r.conformance, d));
    let _ = write!(body, "<section id=\"s-runs\"><h2>Runs</h2>{}</section>", table(&r.runs, d));
    page(r, &scen, body)
}

fn nav(r: &Report) -> String {
    let mut links: Vec<(&str, &str)> = Vec::new();
    if !r.data.runs.is_empty() {
        links.extend([
            ("s-setup", "Setup"),
            ("s-summary", "Summary"),
            ("s-validity", "Validity"),
            ("s-charts", "Charts"),
        ]);
        if !r.levels.is_empty() {
            links.push(("s-scenario", "Per step level"));
        }
    }
    if !r.duets.is_empty() {
        links.push(("s-duets", "Duets"));
    }
    if !r.data.runs.is_empty() {
        links.extend([("s-conformance", "Conformance"), ("s-runs", "Runs")]);
    }
    links.iter().map(|(id, text)| format!("<a href=\"#{id}\">{text}</a>")).collect()
}

/// The duets' section: per duet what was measured, its verdict table and its charts.
fn duets(r: &Report, d: &Dataset) -> String {
    if r.duets.is_empty() {
        return String::new();
    }
    let mut s = String::from(
        "<section id=\"s-duets\"><h2>Duets</h2><p class=\"note\">Two services measured at the same moment \
         (svcbench duet), compared slice by slice: every ratio is B over A (docs/duet.md).</p>",
    );
    for du in &r.duets {
        let _ = write!(s, "<h3>{}</h3><p>{}</p>{}", escape(&du.title), escape(&du.about), table(&du.table, d));
        let boxes: Vec<String> = du.charts.iter().map(chart_box).collect();
        if !boxes.is_empty() {
            let _ = write!(s, "<div class=\"charts\">{}</div>", boxes.join(""));
        }
    }
    s.push_str("</section>");
    s
}

/// The whole page: the body, the footer, and every chart's specification for assets/report.js.
fn page(r: &Report, scen: &str, mut body: String) -> String {
    body.push_str(&footer());
    let study_charts = r.study.iter().flat_map(|s| &s.charts);
    let duet_charts = r.duets.iter().flat_map(|d| &d.charts);
    let charts: Vec<&Chart> = r.charts.iter().chain(study_charts).chain(duet_charts).collect();
    standalone_page(&format!("svcbench report: {scen}"), &body, &charts)
}

/// The page's last line: who made it and what draws the charts.
pub fn footer() -> String {
    format!(
        "<footer>Made by svcbench {} from the store; charts drawn by Apache ECharts {} (Apache License 2.0), embedded in \
         this file so it needs no network.</footer>",
        env!("CARGO_PKG_VERSION"),
        escape(ECHARTS_VERSION.trim())
    )
}

/// A self-contained page of the report's style: `body` (HTML, its footer included), then every chart's
/// specification for assets/report.js, which draws each into its `chart_box`.
pub fn standalone_page(title: &str, body: &str, charts: &[&Chart]) -> String {
    let json = serde_json::json!({ "charts": charts });
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{}</title><style>{}</style></head><body>{}\
         <script type=\"application/json\" id=\"svcbench-data\">{}</script>\
         <script>{}</script><script>{}</script></body></html>\n",
        escape(title),
        REPORT_CSS,
        body,
        script_json(&json),
        ECHARTS_JS,
        REPORT_JS
    )
}

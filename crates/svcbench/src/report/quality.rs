//! How far the figures can be trusted: which steps and runs were left out of the quoted figures and why
//! (validity), failed requests by kind, the connections that got no answers, and whether an open model
//! kept its schedule. Shown in both outputs right after the summary.
use super::data::{median_of, Dataset, StepRow};
use super::table::{num, Cell, Row, Table};
use crate::figures::Validity;

/// The steps of a group at each position of the profile: (seq, label, one step per run).
pub fn steps_by_position(d: &Dataset, g: usize) -> Vec<(i64, String, Vec<&StepRow>)> {
    let mut out: Vec<(i64, String, Vec<&StepRow>)> = Vec::new();
    for r in d.counted_runs(g) {
        for s in &r.steps {
            match out.iter_mut().find(|(seq, label, _)| *seq == s.seq && *label == s.label) {
                Some(e) => e.2.push(s),
                None => out.push((s.seq, s.label.clone(), vec![s])),
            }
        }
    }
    out.sort_by_key(|e| e.0);
    out
}

/// Every run and step whose figures were left out (or, with --include-invalid, flagged), with why.
pub fn validity(d: &Dataset) -> Table {
    let mut t = Table {
        id: "validity".into(),
        caption: "Validity".into(),
        note: if d.include_invalid {
            "--include-invalid: these figures ARE in the summary and the charts' peaks, although svcbench judges them \
             not valid for the reasons given."
                .into()
        } else {
            "Figures in the summary, the peaks and compare come only from valid steps of runs that completed, or \
             that the service ended, under the limits asked; these were left out (report --include-invalid puts them back, still flagged). Hover a \
             reason for its numbers."
                .into()
        },
        head: ["run", "step", "reasons"].map(String::from).to_vec(),
        rows: Vec::new(),
    };
    let mut push = |run: &str, step: &str, v: &Validity| {
        t.rows.push(Row {
            cells: vec![
                Cell::header(run.to_string()),
                Cell::text(step.to_string()),
                Cell::text(v.summary()).class("warn").title(v.details()),
            ],
            data: vec![("run".into(), run.into()), ("flags".into(), v.summary())],
        });
    };
    for g in 0..d.groups.len() {
        for r in d.group_runs(g) {
            let rv = r.validity();
            if !rv.valid() {
                let what = if r.ended_by_the_service() {
                    "whole run: ended by the service, its valid steps before the end count"
                } else {
                    "whole run"
                };
                push(&r.label, what, &rv);
            }
            for s in &r.steps {
                let v = s.validity();
                if !v.valid() {
                    push(&r.label, &format!("#{} {}", s.seq, s.label), &v);
                }
            }
        }
    }
    t
}

/// Failed requests by kind, per service and step (medians over the counted runs), with the connections
/// that got no answer at all and the connection attempts dropped at the service's full accept queue: only
/// kinds that occurred get a column, and the drops only where some occurred.
pub fn errors(d: &Dataset) -> Option<Table> {
    let mut kinds: Vec<&'static str> = Vec::new();
    for r in &d.runs {
        for s in &r.steps {
            for (k, n) in s.errors_by_kind() {
                if n > 0 && !kinds.contains(&k) {
                    kinds.push(k);
                }
            }
        }
    }
    let starved_any = d.runs.iter().flat_map(|r| &r.steps).any(|s| s.conn_starved.unwrap_or(0) > 0);
    // Each dropped attempt's client sent its SYN again a second later: a latency no error column shows.
    let dropped_any = d.runs.iter().flat_map(|r| &r.steps).any(|s| s.listen_drops.unwrap_or(0) > 0);
    if kinds.is_empty() && !starved_any && !dropped_any {
        return None;
    }
    let mut head: Vec<String> = ["service", "step", "requests ok"].map(String::from).to_vec();
    head.extend(kinds.iter().map(|k| k.to_string()));
    // Which answers the status errors were: the store keeps every status's count.
    let statuses_any = kinds.contains(&"status");
    if statuses_any {
        head.push("answers outside 2xx (status: count)".into());
    }
    head.push("connect attempts failed".into());
    if dropped_any {
        head.push("attempts dropped at its accept queue".into());
    }
    head.extend(
        ["starved connections", "answers per connection (min / median / max)", "oldest unanswered (ms)"]
            .map(String::from),
    );
    let mut t = Table {
        id: "errors".into(),
        caption: "Errors by kind and starved connections".into(),
        note:
            "Median per step over the counted runs. Client resources (the generator ran out of sockets or files) are \
               the generator's failure and invalidate the step. Connect attempts failed counts every retry; the error \
               columns count each request once. A starved connection got no answer in the whole step (a blocking \
               server whose workers are all held by other keep-alive connections)."
                .into(),
        head,
        rows: Vec::new(),
    };
    if statuses_any {
        t.note.push_str(
            " Answers outside 2xx: every such status answered, with its median count (0 where most runs had none); \
             a status the scenario's mix counts as a success (a 404, say) is listed there but is no error.",
        );
    }
    if dropped_any {
        t.note.push_str(
            " An attempt dropped at the service's full accept queue was sent again by its client after 1 s, then 3 s \
             (docs/measuring.md).",
        );
    }
    for (g, grp) in d.groups.iter().enumerate() {
        for (seq, label, steps) in steps_by_position(d, g) {
            let mut cells = vec![Cell::header(grp.name.clone()), Cell::text(format!("#{seq} {label}"))];
            cells.push(Cell::num(median_of(&steps, |s| Some(s.requests_ok as f64))));
            for k in &kinds {
                let v = median_of(&steps, |s| s.errors_by_kind().iter().find(|(x, _)| x == k).map(|(_, n)| *n as f64));
                cells.push(Cell::num(v).class(if v.unwrap_or(0.0) > 0.0 { "fail" } else { "num" }));
            }
            if statuses_any {
                cells.push(Cell::text(outside_2xx(&steps)));
            }
            cells.push(Cell::num(median_of(&steps, |s| s.connect_attempts_failed.map(|n| n as f64))));
            if dropped_any {
                cells.push(Cell::num(median_of(&steps, |s| s.listen_drops.map(|n| n as f64))));
            }
            let starved = median_of(&steps, |s| s.conn_starved.map(|n| n as f64));
            cells.push(Cell::num(starved).class(if starved.unwrap_or(0.0) > 0.0 { "fail" } else { "num" }));
            let a = |f: fn(&StepRow) -> Option<i64>| median_of(&steps, |s| f(s).map(|n| n as f64)).map(num);
            cells.push(Cell::text(match (a(|s| s.answers_min), a(|s| s.answers_median), a(|s| s.answers_max)) {
                (Some(lo), Some(mid), Some(hi)) => format!("{lo} / {mid} / {hi}"),
                _ => "–".into(),
            }));
            cells.push(Cell::num(median_of(&steps, |s| s.oldest_unanswered_ms)));
            t.rows.push(Row { cells, data: vec![("service".into(), grp.name.clone())] });
        }
    }
    Some(t)
}

/// The statuses outside 2xx the steps were answered with, each with its median count over the steps (a step
/// without it counts 0), lowest status first; "–" where there were none. Some of them may be successes of
/// the mix (a 404 its `success` counts), which the error columns leave out.
fn outside_2xx(steps: &[&StepRow]) -> String {
    let counts: Vec<std::collections::BTreeMap<u16, u64>> =
        steps.iter().map(|s| serde_json::from_str(&s.status_counts).unwrap_or_default()).collect();
    let codes: std::collections::BTreeSet<u16> =
        counts.iter().flat_map(|c| c.keys().copied()).filter(|c| !(200..300).contains(c)).collect();
    let said: Vec<String> = codes
        .iter()
        .map(|code| {
            let n = crate::figures::median(counts.iter().map(|c| c.get(code).copied().unwrap_or(0) as f64));
            format!("{code}: {}", n.map_or("–".into(), num))
        })
        .collect();
    if said.is_empty() {
        "–".into()
    } else {
        said.join(", ")
    }
}

/// A step whose load is an offered rate: it ran on a schedule.
fn offered_rate(s: &StepRow) -> bool {
    use loadgen::LoadModel;
    s.load().is_some_and(|m| m.axis() == loadgen::LoadAxis::OfferedRate)
}

/// Whether the open model kept its schedule: offered vs achieved rate, requests late or unsent, and the
/// generator's own lag (which, unlike lateness from busy connections, is not the service's doing).
pub fn schedule(d: &Dataset) -> Option<Table> {
    if !d.runs.iter().flat_map(|r| &r.steps).any(offered_rate) {
        return None;
    }
    let mut t = Table {
        id: "schedule".into(),
        caption: "Open model: was the schedule kept?".into(),
        note: "Median per step over the counted runs. Achieved: requests sent in the step's window per second. Late: \
               sent after their time because every allowed connection was busy (the service's doing); lag: the \
               generator's own delay in sending a due request with a connection ready (a step with lag p99 above 1 ms \
               is flagged). In flight: unanswered when the drain after the step ended."
            .into(),
        head: [
            "service",
            "step",
            "offered req/s",
            "achieved req/s",
            "intended",
            "sent late",
            "unsent",
            "lag p50 (ms)",
            "lag p99 (ms)",
            "lag max (ms)",
            "in flight at end",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
    };
    for (g, grp) in d.groups.iter().enumerate() {
        for (seq, label, steps) in steps_by_position(d, g) {
            if !steps.iter().any(|s| offered_rate(s)) {
                continue;
            }
            let m = |f: fn(&StepRow) -> Option<f64>| Cell::num(median_of(&steps, f));
            let mi = |f: fn(&StepRow) -> Option<i64>| Cell::num(median_of(&steps, |s| f(s).map(|n| n as f64)));
            t.rows.push(Row {
                cells: vec![
                    Cell::header(grp.name.clone()),
                    Cell::text(format!("#{seq} {label}")),
                    m(|s| s.rate),
                    m(|s| s.open_achieved_rate),
                    mi(|s| s.open_intended),
                    mi(|s| s.open_late),
                    mi(|s| s.open_unsent),
                    m(|s| s.open_lag_p50_ms),
                    m(|s| s.open_lag_p99_ms),
                    m(|s| s.open_lag_max_ms),
                    mi(|s| s.in_flight_at_end),
                ],
                data: vec![("service".into(), grp.name.clone())],
            });
        }
    }
    Some(t)
}

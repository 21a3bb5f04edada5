//! The report's tables: where it was measured, the services, the summary, conformance, and every run.
use super::data::{Dataset, Session};
use super::summary::{group_summaries, GroupSummary};
use super::table::{num, num_fractional, Cell, Row, Table};

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map(|x| x.to_string()).unwrap_or_else(|| "–".into())
}

/// Host facts and limits, one column per session, so a reader knows what was measured where.
pub fn setup(d: &Dataset) -> Table {
    let mut t = Table {
        id: "setup".into(),
        caption: "Where and how it was measured".into(),
        note: "Limits apply to the service under test; the load generator and dependencies run on the other CPUs."
            .into(),
        head: std::iter::once(String::new()).chain(d.sessions.iter().map(session_title)).collect(),
        rows: Vec::new(),
    };
    let mut row = |name: &str, f: &dyn Fn(&Session) -> Cell| {
        let mut cells = vec![Cell::header(name)];
        cells.extend(d.sessions.iter().map(f));
        t.rows.push(Row { cells, data: vec![("fact".into(), name.into())] });
    };
    row("scenario / profile", &|s| Cell::text(format!("{} / {}", s.scenario, s.profile)));
    row("runs per service", &|s| Cell::text(s.runs_per_service.to_string()));
    row("host", &|s| Cell::text(opt(&s.host_name)));
    row("CPU", &|s| Cell::text(format!("{} ({} cores)", opt(&s.cpu_model), opt(&s.cpu_cores))));
    row("memory", &|s| Cell::text(s.memory_mib.map(|m| format!("{} MiB", num(m))).unwrap_or_else(|| "–".into())));
    row("kernel", &|s| Cell::text(opt(&s.kernel)));
    row("cgroup", &|s| {
        let c = Cell::text(s.cgroup_version.clone());
        if s.cgroup_version == "none" {
            c.class("fail").title("no limits were applied: figures are not comparable to limited runs")
        } else {
            c
        }
    });
    // A study's limits axis is asked per run: list what the session's runs asked.
    let asked = |s: &Session, f: fn(&super::data::Run) -> Option<f64>| -> Option<Vec<f64>> {
        let mut v: Vec<f64> =
            d.runs.iter().filter(|r| r.session_id == s.id && r.cell.is_some()).filter_map(f).collect();
        v.sort_by(f64::total_cmp);
        v.dedup();
        (v.len() > 1).then_some(v)
    };
    let list = |v: Vec<f64>, unit: &str| {
        v.iter().map(|x| format!("{}{unit}", num_fractional(*x))).collect::<Vec<_>>().join(" / ")
    };
    row("study", &|s| Cell::text(opt(&s.study)));
    row("network", &|s| Cell::text(s.network.clone().unwrap_or_else(|| "loopback (one host)".into())));
    if d.sessions.iter().any(|s| !s.other_hosts.is_empty()) {
        row("other hosts", &|s| {
            let each: Vec<String> =
                s.other_hosts.iter().map(|h| format!("{} {} ({})", h.role, h.place, h.facts.describe())).collect();
            Cell::text(if each.is_empty() { "none".into() } else { each.join("; ") })
        });
    }
    row("CPU limit", &|s| match asked(s, |r| r.asked_cpus) {
        Some(v) => Cell::text(format!("per cell: {} CPUs", list(v, ""))),
        None => Cell::text(s.limit_cpus.map(|c| format!("{c} CPUs")).unwrap_or_else(|| "none".into())),
    });
    row("memory limit", &|s| match asked(s, |r| r.asked_memory_mib) {
        Some(v) => Cell::text(format!("per cell: {}, no swap", list(v, " MiB"))),
        None => {
            Cell::text(s.limit_memory_mib.map(|m| format!("{} MiB, no swap", num(m))).unwrap_or_else(|| "none".into()))
        }
    });
    row("service CPUs", &|s| Cell::text(opt(&s.service_cpuset)));
    row("load generator CPUs", &|s| Cell::text(opt(&s.loadgen_cpuset)));
    row("started – ended", &|s| {
        Cell::text(format!("{} – {} ({})", s.started_at, opt(&s.ended_at), s.status))
            .class(if s.status == "completed" { "" } else { "warn" })
    });
    row("svcbench", &|s| Cell::text(s.svcbench_version.clone()));
    row("command", &|s| Cell::text(s.command.clone()).class("cmd"));
    row("warnings", &|s| {
        if s.warnings.is_empty() {
            Cell::text("none")
        } else {
            Cell::text(s.warnings.join("; ")).class("warn")
        }
    });
    t
}

pub fn session_title(s: &Session) -> String {
    match &s.label {
        Some(l) => format!("session {} ({l})", s.id),
        None => format!("session {}", s.id),
    }
}

pub fn services(d: &Dataset) -> Table {
    // Where a service ran as an image or a Pod, how each ran (its artifact is then the image's size).
    let contained = d.groups.iter().any(|g| g.service.ran_contained());
    let mut head: Vec<String> =
        ["service", "language", "framework", "model", "build", "artifact (MiB)"].map(String::from).to_vec();
    if contained {
        head.push("runs as".into());
    }
    // Where git knows the code measured: its commit, the revision as named, and uncommitted changes.
    let committed = d.groups.iter().any(|g| g.service.git_commit.is_some());
    if committed {
        head.push("code".into());
    }
    let mut t =
        Table { id: "services".into(), caption: "Services".into(), note: String::new(), head, rows: Vec::new() };
    for g in &d.groups {
        let s = &g.service;
        let build = if s.build_ok {
            Cell::text(s.build_s.map(|b| format!("ok, {} s", num(b))).unwrap_or_else(|| "ok".into()))
        } else {
            Cell::text("failed").class("fail").title(s.build_error.clone().unwrap_or_default())
        };
        t.rows.push(Row {
            cells: vec![
                Cell::header(g.name.clone()),
                Cell::text(s.language.clone()),
                Cell::text(format!("{} {}", s.framework, s.framework_version)),
                Cell::text(s.model.clone()),
                build,
                Cell::num(s.artifact_bytes.map(|b| b as f64 / (1u64 << 20) as f64)),
            ]
            .into_iter()
            .chain(contained.then(|| Cell::text(s.runtime.clone().unwrap_or_else(|| "process".into()))))
            .chain(committed.then(|| code_cell(s)))
            .collect(),
            data: vec![("service".into(), g.name.clone())],
        });
    }
    t
}

/// The commit a service's code was at: `1a2b3c4 (HEAD~1)` when named at a revision, `1a2b3c4 + changes`
/// when its folder had uncommitted changes.
fn code_cell(s: &crate::store::read::StoredService) -> Cell {
    let Some(commit) = &s.git_commit else { return Cell::text("not in git") };
    let short = &commit[..commit.len().min(7)];
    let text = match (&s.git_revision, s.git_dirty) {
        (Some(rev), _) => format!("{short} ({rev})"),
        (None, Some(true)) => format!("{short} + changes"),
        (None, _) => short.to_string(),
    };
    Cell::text(text).title(commit.clone())
}

/// The counted runs, with how many of them the service ended, how many have no valid step and how many were
/// left out, and why.
pub(super) fn runs_cell(s: &GroupSummary) -> Cell {
    let mut parts = Vec::new();
    let mut why = Vec::new();
    if s.ended_by_the_service > 0 {
        parts.push(format!("{} ended by the service", s.ended_by_the_service));
        why.push(
            "a run the service ended (OOM-killed, crashed) counts with its valid steps before its end, \
                  without its CPU time per request"
                .to_string(),
        );
    }
    if !s.runs_left_out.is_empty() {
        parts.push(format!("{} left out", s.runs_left_out.len()));
        why.extend(s.runs_left_out.iter().cloned());
    }
    // A counted run none of whose steps is valid has no peak: the peak's median is over the others.
    let without_peak = s.runs.saturating_sub(s.peak_rps.as_ref().map_or(0, |p| p.n));
    if without_peak > 0 {
        parts.push(format!("{without_peak} without a valid step"));
        why.push("a run none of whose steps is valid has no peak; the peak is over the other runs".to_string());
    }
    if parts.is_empty() {
        return Cell::text(s.runs.to_string());
    }
    Cell::text(format!("{} ({})", s.runs, parts.join(", "))).class("warn").title(why.join("\n"))
}

pub fn summary(d: &Dataset, vcpu_hour_price: f64) -> (Table, Vec<GroupSummary>) {
    let sums = group_summaries(d, vcpu_hour_price);
    let peak_at_head = if sums.iter().all(|s| s.peak_at_rate) { "at offered req/s" } else { "at connections" };
    let mut t = Table {
        id: "summary".into(),
        caption: "Summary".into(),
        note: format!(
            "Median over the counted runs (completed, or ended by the service, under the limits asked), (min–max) \
             when there are several; the peak is the highest valid step (the Validity section lists what was left out and why). CPU time per request is the run's whole CPU time \
             (startup, idle settling and checks included) over its successful requests, as in seed 000; cost per \
             billion requests assumes ${vcpu_hour_price} per vCPU-hour and perfect utilisation. Peak memory is the \
             cgroup's high-water mark (page cache included); idle memory is read 1 s after startup. The load of the peak step \
             is the lower middle value with an even number of runs, so it is a load that was measured."
        ),
        head: [
            "service",
            "runs",
            "peak success req/s (valid steps)",
            "steps left out of the peak",
            peak_at_head,
            "CPU time per request (µs)",
            "cost per 10⁹ requests ($)",
            "startup (ms)",
            "idle memory (MiB)",
            "peak memory (MiB)",
            "artifact (MiB)",
            "OOM kills",
            "graceful stop",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
    };
    // Only where a step was read second by second (a ramp): other reports keep their columns.
    let knees = sums.iter().any(|s| s.knee_rps.is_some());
    if knees {
        t.head.insert(5, "knee (offered req/s)".into());
        t.note.push_str(
            " The knee is the highest offered rate at which a ramp step still met its objectives, second by second: \
             at least 99 % of each second's answers successful, p99 within 10× the first second's (the limit never \
             below 10 ms), and some answer in every second; each run's highest knee, median over the runs.",
        );
    }
    for s in &sums {
        let runs = runs_cell(s);
        let left_out = if s.steps_left_out.is_empty() {
            Cell::text("none")
        } else {
            Cell::text(s.steps_left_out.join("; ")).class("warn")
        };
        let graceful = Cell::text(format!("{}/{}", s.graceful, s.stopped))
            .class(if s.graceful < s.stopped { "fail" } else { "" })
            .data("metric", "graceful")
            .data("value", s.graceful.to_string());
        let mut row = Row {
            cells: vec![
                Cell::header(s.name.clone()),
                runs.data("metric", "runs").data("value", s.runs.to_string()),
                Cell::spread("peak_rps", s.peak_rps),
                left_out.data("metric", "steps_left_out"),
                Cell::spread("peak_at", s.peak_at),
                Cell::spread("cpu_us_per_req", s.cpu_us_per_req),
                Cell::spread("cost_per_billion", s.cost_per_billion),
                Cell::spread("startup_ms", s.startup_ms),
                Cell::spread("idle_mem_mib", s.idle_mem_mib),
                Cell::spread("peak_mem_mib", s.peak_mem_mib),
                Cell::num(s.artifact_mib)
                    .data("metric", "artifact_mib")
                    .data("value", s.artifact_mib.map(|v| v.to_string()).unwrap_or_default()),
                Cell::text(s.oom_kills.to_string())
                    .class(if s.oom_kills > 0 { "fail" } else { "num" })
                    .data("metric", "oom_kills")
                    .data("value", s.oom_kills.to_string()),
                graceful,
            ],
            data: vec![("service".into(), s.name.clone())],
        };
        if knees {
            row.cells.insert(5, Cell::spread("knee_rps", s.knee_rps));
        }
        t.rows.push(row);
    }
    (t, sums)
}

/// Every check per service: a pass when all runs passed it, otherwise the failing runs and a reason.
pub fn conformance(d: &Dataset) -> Table {
    let mut checks: Vec<(i64, String)> = Vec::new();
    for r in &d.runs {
        for c in &r.checks {
            if !checks.iter().any(|(_, n)| *n == c.name) {
                checks.push((c.seq, c.name.clone()));
            }
        }
    }
    checks.sort_by_key(|(seq, _)| *seq);
    let mut t = Table {
        id: "conformance".into(),
        caption: "Conformance".into(),
        note: "The scenario's checks, run after each startup. A failure names the runs that failed and why (hover for the full reason).".into(),
        head: std::iter::once("check".to_string()).chain(d.groups.iter().map(|g| g.name.clone())).collect(),
        rows: Vec::new(),
    };
    for (_, name) in &checks {
        let mut cells = vec![Cell::header(name.clone())];
        for (g, _) in d.groups.iter().enumerate() {
            let results: Vec<(String, bool, String)> = d
                .group_runs(g)
                .filter_map(|r| {
                    r.checks.iter().find(|c| c.name == *name).map(|c| (r.label.clone(), c.passed, c.reason.clone()))
                })
                .collect();
            let failed: Vec<&(String, bool, String)> = results.iter().filter(|(_, p, _)| !p).collect();
            cells.push(if results.is_empty() {
                Cell::text("not run").class("warn")
            } else if failed.is_empty() {
                Cell::text(format!("pass ({}/{})", results.len(), results.len())).class("ok")
            } else {
                let reason = failed.iter().map(|(run, _, why)| format!("{run}: {why}")).collect::<Vec<_>>().join("\n");
                let first = failed[0].2.lines().next().unwrap_or("").chars().take(80).collect::<String>();
                Cell::text(format!("FAIL {}/{}: {first}", failed.len(), results.len())).class("fail").title(reason)
            });
        }
        t.rows.push(Row { cells, data: vec![("check".into(), name.clone())] });
    }
    if d.groups.iter().any(|g| g.service.refuses_bad_dependency.is_some()) {
        let mut cells = vec![Cell::header("refuses to start when its dependency is broken")];
        for g in &d.groups {
            let s = &g.service;
            cells.push(match s.refuses_bad_dependency {
                None => Cell::text("not tested"),
                Some(true) => Cell::text("pass").class("ok"),
                Some(false) => Cell::text("FAIL").class("fail").title(s.refuse_detail.clone().unwrap_or_default()),
            });
        }
        t.rows.push(Row { cells, data: vec![("check".into(), "refuses_bad_dependency".into())] });
    }
    t
}

fn stage(s: &Option<String>) -> String {
    s.as_ref().map(|s| format!(" ({s})")).unwrap_or_default()
}

/// The limits the run's cgroup held, as read back after the service started.
fn limits_held(r: &super::data::Run) -> Cell {
    let Some(v) = &r.cgroup_version else { return Cell::text("–") };
    let unlimited = r.validity().has(crate::figures::validity::FlagCode::Unlimited);
    let text = format!(
        "{v}: {}, {}, CPUs {}",
        r.applied_cpus.map(|c| format!("{c} CPUs")).unwrap_or_else(|| "no CPU quota".into()),
        r.applied_memory_mib.map(|m| format!("{} MiB", num(m))).unwrap_or_else(|| "no memory cap".into()),
        r.applied_cpuset.clone().unwrap_or_else(|| "any".into())
    );
    Cell::text(text).class(if unlimited || v == "none" { "fail" } else { "" })
}

/// One row per run: how it went, for the reader who wants to know why a line stops early.
pub fn runs(d: &Dataset) -> Table {
    let mut t = Table {
        id: "runs".into(),
        caption: "Runs".into(),
        note: "Every run in order. Steps: how many finished. Shutdown: SIGTERM to exit.".into(),
        head: [
            "run",
            "status",
            "startup (ms)",
            "idle memory (MiB)",
            "idle RSS (MiB)",
            "checks",
            "steps",
            "total CPU (s)",
            "requests ok",
            "shutdown (ms)",
            "stop",
            "limits held (read back)",
            "warnings / error",
        ]
        .map(String::from)
        .to_vec(),
        rows: Vec::new(),
    };
    for g in 0..d.groups.len() {
        for r in d.group_runs(g) {
            let status = Cell::text(r.status.clone()).class(if r.status == "completed" { "ok" } else { "fail" });
            let stop = match (r.oom_killed, r.crashed, r.stopped_gracefully, r.exit_code, r.exit_signal) {
                (true, ..) => Cell::text(format!("OOM-killed{}", stage(&r.failed_stage))).class("fail"),
                (_, true, ..) => Cell::text(format!("crashed{}", stage(&r.failed_stage))).class("fail"),
                (_, _, Some(true), code, _) => Cell::text(format!("graceful (exit {})", opt(&code))).class("ok"),
                // Ctrl-C: svcbench ended the service itself, at once; not the service's stop.
                (_, _, Some(false), ..) if r.status == "interrupted" => Cell::text("ended by svcbench (interrupted)"),
                (_, _, Some(false), code, sig) => {
                    Cell::text(format!("not graceful (exit {}, signal {})", opt(&code), opt(&sig))).class("fail")
                }
                _ => Cell::text("–"),
            };
            let mut notes: Vec<String> = r.warnings.clone();
            notes.extend(r.listen_warning.clone());
            if r.service_user.as_deref() == Some("root") {
                notes.push("ran as root (run_as in its manifest)".into());
            }
            if let Some(e) = &r.error {
                notes.push(e.clone());
            }
            t.rows.push(Row {
                cells: vec![
                    Cell::header(r.label.clone()),
                    status,
                    Cell::num(r.startup_ms),
                    Cell::num(r.idle_mem_mib),
                    Cell::num(r.idle_rss_mib),
                    Cell::text(match (r.checks_passed, r.checks_failed) {
                        (Some(p), Some(f)) => format!("{p}/{}", p + f),
                        _ => "–".into(),
                    })
                    .class(if r.checks_failed.unwrap_or(0) > 0 { "fail" } else { "" }),
                    Cell::text(r.steps.len().to_string()).class("num"),
                    Cell::num(r.total_cpu_s),
                    Cell::num(r.total_requests_ok.map(|n| n as f64)),
                    Cell::num(r.shutdown_ms),
                    stop,
                    limits_held(r),
                    Cell::text(notes.join("; ")).class(if r.error.is_some() {
                        "fail"
                    } else if notes.is_empty() {
                        ""
                    } else {
                        "warn"
                    }),
                ],
                data: vec![("run".into(), r.label.clone())],
            });
        }
    }
    t
}

//! Selects from the store (through its read-only API) what a report or a comparison shows: the selected
//! sessions, their services, runs, steps and checks, with the runs grouped into the lines a reader
//! compares (one group = one colour).
use super::filter::{Filter, SessionKey};
pub use crate::store::read::{Run, Session, StoredService};
use crate::store::Reader;
pub use crate::store::StepRow;
use anyhow::{bail, Result};
use std::collections::BTreeMap;
use std::path::Path;

/// The runs drawn in one colour: one service of one session, or (pooled, for compare) one service name
/// over all selected sessions.
#[derive(Debug, Clone)]
pub struct Group {
    pub name: String,
    pub service: StoredService,
    /// The limits cell of the group's runs, when the selection holds several (a study's limits axis).
    pub cell: Option<String>,
    pub runs: Vec<usize>,
}

#[derive(Debug, Clone)]
pub struct Dataset {
    pub source: String,
    pub filter: String,
    pub sessions: Vec<Session>,
    pub groups: Vec<Group>,
    pub runs: Vec<Run>,
    /// Quote invalid steps and runs too (`--include-invalid`): the reader asked for them, and every
    /// figure still says so.
    pub include_invalid: bool,
}

impl Dataset {
    pub fn group_runs(&self, g: usize) -> impl Iterator<Item = &Run> {
        self.groups[g].runs.iter().map(move |&i| &self.runs[i])
    }

    /// The runs of a group whose figures may be quoted: completed under the limits asked, or ended by the
    /// service under them (`Run::enters_figures`).
    pub fn counted_runs(&self, g: usize) -> impl Iterator<Item = &Run> {
        self.group_runs(g).filter(|r| self.include_invalid || r.enters_figures())
    }

    /// Whether a step's figures may be quoted.
    pub fn quotable(&self, s: &StepRow) -> bool {
        self.include_invalid || s.validity().valid()
    }

    pub fn scenarios(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.sessions.iter().map(|s| s.scenario.as_str()).collect();
        v.dedup();
        v
    }
}

/// Opens a store for reading (a report must not change what it reports on).
pub fn open(path: &Path) -> Result<Reader> {
    Reader::open(path)
}

/// Loads what `filter` selects. `pooled`: one group per service name over all selected sessions (compare);
/// otherwise a service that appears in several sessions gets one group per session (report).
pub fn load(store: &Reader, source: &str, filter: &Filter, pooled: bool) -> Result<Dataset> {
    let all = store.sessions()?;
    if all.is_empty() {
        bail!("store {source} holds no sessions yet; run `svcbench run …` first");
    }
    let latest = all.iter().map(|s| s.id).max().unwrap_or(0);
    let mut sessions: Vec<Session> = all
        .iter()
        .filter(|s| {
            let key = SessionKey { id: s.id, label: s.label.as_deref(), scenario: &s.scenario, profile: &s.profile };
            filter.session_matches(&key, latest)
        })
        .cloned()
        .collect();
    if !filter.picks_sessions() {
        // Default: the newest scenario (that has runs) among what the other terms allow.
        let has_runs = |id: i64| store.run_count(id).unwrap_or(0) > 0;
        if let Some(newest) = sessions.iter().rev().find(|s| has_runs(s.id)).map(|s| s.scenario.clone()) {
            sessions.retain(|s| s.scenario == newest);
        }
    }

    let mut services: Vec<StoredService> = Vec::new();
    let mut runs: Vec<Run> = Vec::new();
    for s in &sessions {
        services.extend(store.services(s.id)?.into_iter().filter(|svc| filter.service_matches(&svc.name)));
        runs.extend(
            store
                .runs(s.id)?
                .into_iter()
                .filter(|r| filter.service_matches(&r.service) && filter.run_matches(r.run_index)),
        );
    }
    for run in &mut runs {
        store.fill(run)?;
    }
    // Sessions that contribute nothing (e.g. every service filtered out) are not shown.
    sessions.retain(|s| runs.iter().any(|r| r.session_id == s.id) || services.iter().any(|v| v.session_id == s.id));
    if runs.is_empty() && services.is_empty() {
        let known: Vec<String> = all
            .iter()
            .map(|s| {
                format!(
                    "{} ({}{}, {})",
                    s.id,
                    s.scenario,
                    s.label.as_ref().map(|l| format!(", label {l}")).unwrap_or_default(),
                    s.started_at
                )
            })
            .collect();
        bail!("no runs in {source} match --filter {}; sessions there: {}", filter.describe(), known.join("; "));
    }

    let groups = group(&sessions, &services, &mut runs, pooled);
    Ok(Dataset {
        source: source.to_string(),
        filter: filter.describe(),
        sessions,
        groups,
        runs,
        include_invalid: false,
    })
}

/// Groups runs into colours. Group order follows the services' order in the store (the command line's).
fn group(sessions: &[Session], services: &[StoredService], runs: &mut [Run], pooled: bool) -> Vec<Group> {
    // How many selected sessions each service name appears in: names seen in several get a session tag.
    let mut seen: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for r in runs.iter() {
        let v = seen.entry(r.service.clone()).or_default();
        if !v.contains(&r.session_id) {
            v.push(r.session_id);
        }
    }
    let tag = |name: &str, session_id: i64| -> String {
        if pooled || seen.get(name).map_or(1, |v| v.len()) <= 1 {
            return name.to_string();
        }
        let label = sessions.iter().find(|s| s.id == session_id).and_then(|s| s.label.clone());
        let label_unique = label.as_ref().is_some_and(|l| {
            seen[name].iter().filter(|&&id| sessions.iter().any(|s| s.id == id && s.label.as_ref() == Some(l))).count()
                == 1
        });
        match label {
            Some(l) if label_unique => format!("{name} ({l})"),
            _ => format!("{name} (session {session_id})"),
        }
    };
    // A limits axis: one group per service and cell, in the order the cells first appear.
    let mut cells: Vec<String> = Vec::new();
    for r in runs.iter() {
        if let Some(c) = &r.cell {
            if !cells.contains(c) {
                cells.push(c.clone());
            }
        }
    }
    let multi = cells.len() > 1;
    let cell_of = |r: &Run| if multi { r.cell.clone() } else { None };
    let named = |name: String, cell: &Option<String>| match cell {
        Some(c) => format!("{name} [{c}]"),
        None => name,
    };
    let mut groups: Vec<Group> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut add = |name: String, svc: &StoredService, cell: Option<String>, groups: &mut Vec<Group>| -> usize {
        *index.entry(name.clone()).or_insert_with(|| {
            groups.push(Group { name, service: svc.clone(), cell, runs: Vec::new() });
            groups.len() - 1
        })
    };
    for svc in services {
        if !multi {
            add(tag(&svc.name, svc.session_id), svc, None, &mut groups);
            continue;
        }
        for c in &cells {
            // A service whose build failed has no runs, and is named in every cell all the same.
            if !svc.build_ok
                || runs
                    .iter()
                    .any(|r| r.service == svc.name && r.session_id == svc.session_id && r.cell.as_ref() == Some(c))
            {
                add(named(tag(&svc.name, svc.session_id), &Some(c.clone())), svc, Some(c.clone()), &mut groups);
            }
        }
    }
    for (i, r) in runs.iter_mut().enumerate() {
        let cell = cell_of(r);
        let name = named(tag(&r.service, r.session_id), &cell);
        let known = services.iter().find(|s| s.name == r.service && s.session_id == r.session_id);
        let row = known.cloned().unwrap_or_else(|| StoredService::placeholder(r.session_id, &r.service));
        let g = add(name, &row, cell, &mut groups);
        r.group = g;
        groups[g].runs.push(i);
    }
    for g in &mut groups {
        g.runs.sort_by_key(|&i| (runs[i].session_id, runs[i].run_index, runs[i].id));
        for (k, &i) in g.runs.iter().enumerate() {
            runs[i].ordinal = k + 1;
            runs[i].label = format!("{} #{}", g.name, k + 1);
        }
    }
    groups
}

/// The median of one figure over the steps that have it (runs' steps at one level, say).
pub fn median_of(steps: &[&StepRow], f: impl Fn(&StepRow) -> Option<f64>) -> Option<f64> {
    crate::figures::median(steps.iter().filter_map(|s| f(s)))
}

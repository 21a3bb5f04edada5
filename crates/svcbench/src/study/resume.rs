//! `--resume` knows what it resumes: a study's sessions record its file, its profile, a hash of its step plan,
//! each service's code, the scenario's parts, svcbench's own build and each container service's image
//! (what_ran.rs); resuming after any of them changed is refused with one line naming what changed,
//! or, with `--new-cell`, runs the study again as a new generation (`NAME#2`, …) whose runs are counted and
//! reported apart from the earlier ones.
use super::file::Study;
use crate::manifest::Service;
use crate::profile::Profile;
use crate::service::code_fingerprint::comparable;
use crate::store::{RecordedStudy, StudyFingerprint};
use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};
use std::path::Path;

/// A hash of everything that decides what a run of the study measures, step by step: each step's load,
/// duration, mix, upstream delay, fresh start, keep-alive and pacing, the request timeout, the stop rule
/// and the study's mix. Not the runs or the cells: adding either continues the study.
pub fn plan_hash(profile: &Profile, study_mix: Option<&str>) -> String {
    let mut text =
        format!("timeout={:?};stop={:?};mix={:?}\n", profile.request_timeout, profile.stop_below_success, study_mix);
    for s in &profile.steps {
        text.push_str(&format!(
            "{}|{:?}|{:?}|{:?}|{:?}|{}|{}|{}\n",
            s.label(),
            s.load,
            s.duration,
            s.mix,
            s.upstream_delay_ms,
            s.fresh_start,
            s.keepalive,
            s.pacing.name()
        ));
    }
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().take(12).map(|b| format!("{b:02x}")).collect()
}

/// The study file as a store records it: its path inside the repository that holds it (`studies/x.toml`),
/// the same in every clone, so a committed store resumes from any of them; outside a repository its
/// canonical path.
pub fn study_file_id(path: &Path) -> Result<String> {
    let file = path.canonicalize().with_context(|| format!("cannot resolve {}", path.display()))?;
    let inside =
        file.ancestors().skip(1).find(|d| d.join(".git").exists()).and_then(|root| file.strip_prefix(root).ok());
    Ok(inside.unwrap_or(&file).display().to_string())
}

/// Whether two recorded study files are the same file: equal, or one recorded as a canonical path by an
/// earlier svcbench and the other as the same path inside its repository.
fn same_study_file(then: &str, now: &str) -> bool {
    let within =
        |abs: &str, rel: &str| abs.starts_with('/') && !rel.starts_with('/') && abs.ends_with(&format!("/{rel}"));
    then == now || within(then, now) || within(now, then)
}

/// The study as it would run now.
pub fn fingerprint(
    study: &Study,
    profile: &Profile,
    scenario: &crate::scenario::Scenario,
    services: &[Service],
) -> Result<StudyFingerprint> {
    let file = study_file_id(&study.path)?;
    let mut code = std::collections::BTreeMap::new();
    for s in services {
        code.insert(s.name().to_string(), crate::service::code_fingerprint::code_fingerprint(s)?);
    }
    Ok(StudyFingerprint {
        study_file: file,
        // As the session stores it (session.profile): the profile's own name.
        profile: profile.name.clone(),
        plan: plan_hash(profile, study.file.mix.as_deref()),
        services: code,
        scenario: super::what_ran::scenario_parts(scenario)?,
        svcbench: super::what_ran::svcbench_build()?,
        images: super::what_ran::image_ids(services),
    })
}

/// What changed between the recorded study and the current one, in words (empty: nothing). A service
/// added since is not a change (it has no earlier runs to mix with); a part an older svcbench did not record
/// is not compared.
pub fn changes(recorded: &StudyFingerprint, now: &StudyFingerprint) -> Vec<String> {
    let mut out = Vec::new();
    if !recorded.scenario.is_empty() {
        let parts: Vec<&str> = now
            .scenario
            .iter()
            .filter(|(part, hash)| recorded.scenario.get(*part).is_some_and(|h| h != *hash))
            .map(|(part, _)| part.as_str())
            .collect();
        if !parts.is_empty() {
            out.push(format!("the scenario's {}", parts.join(", ")));
        }
    }
    if !recorded.svcbench.is_empty() && recorded.svcbench != now.svcbench {
        out.push(format!("svcbench's own build (program {} then, {} now)", recorded.svcbench, now.svcbench));
    }
    for (name, id) in &now.images {
        if let Some(then) = recorded.images.get(name).filter(|then| *then != id) {
            let short = |i: &str| i.trim_start_matches("sha256:").chars().take(12).collect::<String>();
            out.push(format!("service {name}'s image ({} then, {} now)", short(then), short(id)));
        }
    }
    if recorded.profile != now.profile {
        out.push(format!("the profile (`{}` then, `{}` now)", recorded.profile, now.profile));
    } else if recorded.plan != now.plan {
        out.push(format!("the step plan of profile `{}` (its steps, durations or timeouts)", now.profile));
    }
    for (name, code) in &now.services {
        if recorded.services.get(name).is_some_and(|c| comparable(c) && c != code) {
            out.push(format!("service {name}'s code"));
        }
    }
    out
}

/// The services whose recorded code an earlier svcbench fingerprinted by file times, which another clone
/// or checkout changes without a change of code: not comparable, so a resume continues them with a warning.
pub fn unverifiable(recorded: &StudyFingerprint, now: &StudyFingerprint) -> Vec<String> {
    now.services.keys().filter(|n| recorded.services.get(*n).is_some_and(|c| !comparable(c))).cloned().collect()
}

/// The warning a resume prints and stores with its session, when any service's code could not be compared.
pub fn unverifiable_warning(recorded: Option<&RecordedStudy>, now: &StudyFingerprint) -> Option<String> {
    let names = unverifiable(recorded?.fingerprint.as_ref()?, now);
    (!names.is_empty()).then(|| {
        format!(
            "the code of {} was recorded by an earlier svcbench by file times and cannot be compared: this session \
             continues the earlier runs unchecked (compare the service folders' history since the first session)",
            names.join(", ")
        )
    })
}

/// The study a stored name belongs to, as its file's stem: `NAME`, `NAME#3`, `NAME:quick`, `NAME:quick#2`
/// → `NAME` (its generations and its quick form are sessions of the same file).
pub fn study_of(stored: &str) -> &str {
    let name = match stored.rsplit_once('#') {
        Some((name, n)) if n.parse::<u32>().is_ok() => name,
        _ => stored,
    };
    name.strip_suffix(":quick").unwrap_or(name)
}

/// Refuses a store that holds the sessions of another study (`held`: the names its sessions are stored
/// under, the latest first; `held_file`: the file a stored name's latest session recorded, when it did): a store holds
/// the study of one file, so that its report and its resumes never mix two.
pub fn check_one_study(
    db: &Path,
    name: &str,
    held: &[String],
    held_file: impl Fn(&str) -> Option<String>,
) -> Result<()> {
    let mine = study_of(name);
    let Some(latest) = held.iter().find(|h| study_of(h) != mine) else { return Ok(()) };
    let of = held_file(latest).map(|f| format!(" (of {f})")).unwrap_or_default();
    bail!(
        "{} holds the sessions of study `{}`{of}, and a store holds one study's: pass --db with a store for \
         study `{mine}` of its own",
        db.display(),
        study_of(latest)
    )
}

/// `NAME#N` → `NAME#N+1`; `NAME` (the first generation) → `NAME#2`.
pub fn next_generation(name: &str, base: &str) -> String {
    let n = name.strip_prefix(base).and_then(|r| r.strip_prefix('#')).and_then(|n| n.parse::<u32>().ok()).unwrap_or(1);
    format!("{base}#{}", n + 1)
}

/// The name the study's runs are stored under this time: its latest generation in the store, or a new one
/// (`--new-cell`). Refuses a store that holds the study of another file, and a resume after a change
/// without `--new-cell`.
pub fn generation(
    db: &Path,
    base: &str,
    recorded: Option<&RecordedStudy>,
    now: &StudyFingerprint,
    resume: bool,
    new_cell: bool,
) -> Result<String> {
    let Some(rec) = recorded else { return Ok(base.to_string()) };
    let Some(then) = &rec.fingerprint else {
        // Sessions of an svcbench that recorded no fingerprint: nothing to compare with.
        return Ok(if new_cell { next_generation(&rec.name, base) } else { rec.name.clone() });
    };
    if !then.study_file.is_empty() && !same_study_file(&then.study_file, &now.study_file) {
        bail!(
            "{} holds study `{base}` of {}, not of {}: pass --db for a store of this study's own",
            db.display(),
            then.study_file,
            now.study_file
        );
    }
    if new_cell {
        return Ok(next_generation(&rec.name, base));
    }
    let changed = changes(then, now);
    if resume && !changed.is_empty() {
        bail!(
            "{}: study `{base}` changed since its earlier runs: {}; pass --resume --new-cell to run it again with \
             those runs kept apart, or --db for a new store",
            db.display(),
            changed.join(", ")
        );
    }
    Ok(rec.name.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(profile: &str, plan: &str, code: &[(&str, &str)]) -> StudyFingerprint {
        StudyFingerprint {
            study_file: "/studies/s.toml".into(),
            profile: profile.into(),
            plan: plan.into(),
            services: code.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn a_changed_scenario_build_or_image_is_refused_and_an_older_store_resumes() {
        let db = Path::new("results/studies/s.db");
        let map = |kv: &[(&str, &str)]| kv.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
        let full = StudyFingerprint {
            scenario: map(&[("checks", "c1"), ("mixes", "m1"), ("data files", "d1")]),
            svcbench: "b1".into(),
            images: map(&[("a@container", "sha256:0123456789abcdef")]),
            ..fp("quick", "p1", &[])
        };
        let then = recorded("s", full.clone());
        assert_eq!(generation(db, "s", Some(&then), &full, true, false).unwrap(), "s", "nothing changed");
        for (now, want) in [
            (
                StudyFingerprint {
                    scenario: map(&[("checks", "c2"), ("mixes", "m1"), ("data files", "d2")]),
                    ..full.clone()
                },
                "the scenario's checks, data files",
            ),
            (
                StudyFingerprint { svcbench: "b2".into(), ..full.clone() },
                "svcbench's own build (program b1 then, b2 now)",
            ),
            (
                StudyFingerprint { images: map(&[("a@container", "sha256:fedcba9876543210")]), ..full.clone() },
                "service a@container's image (0123456789ab then, fedcba987654 now)",
            ),
        ] {
            let e = generation(db, "s", Some(&then), &now, true, false).unwrap_err().to_string();
            assert!(e.contains(want) && e.contains("--new-cell") && !e.contains('\n'), "{e}");
            assert_eq!(generation(db, "s", Some(&then), &now, true, true).unwrap(), "s#2");
        }
        // A store of an svcbench that recorded none of these resumes whatever they are now.
        let old = recorded("s", fp("quick", "p1", &[]));
        assert_eq!(generation(db, "s", Some(&old), &full, true, false).unwrap(), "s");
        // An image not here now (to be pulled) is not compared.
        let gone = StudyFingerprint { images: Default::default(), ..full.clone() };
        assert_eq!(generation(db, "s", Some(&then), &gone, true, false).unwrap(), "s");
    }

    fn recorded(name: &str, f: StudyFingerprint) -> RecordedStudy {
        RecordedStudy { name: name.into(), fingerprint: Some(f) }
    }

    #[test]
    fn a_resume_after_a_change_is_refused_naming_what_changed() {
        let db = Path::new("results/studies/s.db");
        let then = recorded("s", fp("quick", "p1", &[("a", "content:1"), ("b", "content:2")]));
        let gen = |now: &StudyFingerprint, new_cell| generation(db, "s", Some(&then), now, true, new_cell);
        assert_eq!(
            gen(&fp("quick", "p1", &[("a", "content:1"), ("b", "content:2"), ("c", "content:9")]), false).unwrap(),
            "s"
        );
        for (now, want) in [
            (
                fp("standard", "p2", &[("a", "content:1"), ("b", "content:2")]),
                "the profile (`quick` then, `standard` now)",
            ),
            (fp("quick", "p2", &[("a", "content:1"), ("b", "content:2")]), "the step plan of profile `quick`"),
            (fp("quick", "p1", &[("a", "content:1"), ("b", "content:3")]), "service b's code"),
        ] {
            let e = gen(&now, false).unwrap_err().to_string();
            assert!(e.contains(want) && e.contains("--new-cell") && e.contains("s.db"), "{e}");
            assert!(!e.contains("service a"), "{e}");
            assert!(!e.contains('\n'), "{e}");
            assert_eq!(gen(&now, true).unwrap(), "s#2", "--new-cell keeps the old runs apart");
        }
        let later = recorded("s#2", fp("quick", "p1", &[]));
        assert_eq!(generation(db, "s", Some(&later), &fp("quick", "p1", &[]), true, false).unwrap(), "s#2");
        assert_eq!(generation(db, "s", Some(&later), &fp("quick", "p1", &[]), true, true).unwrap(), "s#3");
    }

    #[test]
    fn code_recorded_by_file_times_is_continued_with_a_warning_and_content_is_checked() {
        let db = Path::new("s.db");
        let then = recorded("s", fp("quick", "p1", &[("a", "00ff00ff00ff00ff"), ("b", "content:01")]));
        let now = fp("quick", "p1", &[("a", "content:aa"), ("b", "content:01")]);
        assert_eq!(generation(db, "s", Some(&then), &now, true, false).unwrap(), "s");
        let w = unverifiable_warning(Some(&then), &now).expect("a warning for a");
        assert!(w.contains("the code of a was recorded") && w.contains("file times"), "b is comparable: {w}");
        let changed = fp("quick", "p1", &[("a", "content:aa"), ("b", "content:02")]);
        let e = generation(db, "s", Some(&then), &changed, true, false).unwrap_err().to_string();
        assert!(e.contains("service b's code") && !e.contains("service a"), "{e}");
        assert!(unverifiable_warning(Some(&recorded("s", now.clone())), &now).is_none());
        assert!(unverifiable_warning(None, &now).is_none());
    }

    #[test]
    fn a_store_holds_the_study_of_one_file() {
        let then = recorded("s", fp("quick", "p1", &[]));
        let mut now = fp("quick", "p1", &[]);
        now.study_file = "/elsewhere/s.toml".into();
        let e = generation(Path::new("s.db"), "s", Some(&then), &now, true, false).unwrap_err().to_string();
        assert!(e.contains("/studies/s.toml") && e.contains("/elsewhere/s.toml") && e.contains("--db"), "{e}");
        assert_eq!(generation(Path::new("s.db"), "s", None, &now, false, false).unwrap(), "s");
        // The same file recorded by an earlier svcbench as a canonical path in another clone.
        let inside = |f: &str| StudyFingerprint { study_file: f.into(), ..fp("quick", "p1", &[]) };
        let old = recorded("s", inside("/work/clone-a/studies/s.toml"));
        assert_eq!(
            generation(Path::new("s.db"), "s", Some(&old), &inside("studies/s.toml"), true, false).unwrap(),
            "s"
        );
        assert!(generation(Path::new("s.db"), "s", Some(&old), &inside("other/s.toml"), true, false).is_err());
        assert!(generation(Path::new("s.db"), "s", Some(&old), &inside("ies/s.toml"), true, false).is_err());
    }

    #[test]
    fn a_store_holding_another_studys_sessions_is_refused_naming_it() {
        let db = Path::new("results/studies/mine.db");
        let held = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let file = |s: &str| (study_of(s) == "mine").then(|| "studies/mine.toml".to_string());
        // Its own generations and its quick form are the same study.
        for name in ["mine", "mine:quick", "mine#2", "mine:quick#3"] {
            assert!(check_one_study(db, name, &held(&["mine", "mine#2", "mine:quick"]), file).is_ok(), "{name}");
        }
        assert!(check_one_study(db, "mine2", &[], file).is_ok(), "an empty store, or one of plain runs");
        for name in ["mine2", "third:quick"] {
            let e = check_one_study(db, name, &held(&["mine:quick", "mine"]), file).unwrap_err().to_string();
            let want = format!("study `{}` of its own", study_of(name));
            assert!(e.contains("mine.db holds the sessions of study `mine` (of studies/mine.toml)"), "{e}");
            assert!(e.contains("--db") && e.contains(&want) && !e.contains('\n'), "{e}");
        }
        assert_eq!(study_of("a#b"), "a#b");
        assert_eq!(study_of("seed-004-capacity:quick#2"), "seed-004-capacity");
    }

    #[test]
    fn a_study_file_is_recorded_by_its_path_inside_its_repository() {
        let tmp = tempfile::tempdir().unwrap();
        let clone = |name: &str| {
            let dir = tmp.path().join(name);
            std::fs::create_dir_all(dir.join(".git")).unwrap();
            std::fs::create_dir_all(dir.join("studies")).unwrap();
            std::fs::write(dir.join("studies/s.toml"), "").unwrap();
            dir.join("studies/s.toml")
        };
        let (a, b) = (clone("a"), clone("b"));
        assert_eq!(study_file_id(&a).unwrap(), "studies/s.toml");
        assert_eq!(study_file_id(&a).unwrap(), study_file_id(&b).unwrap());
        let loose = tmp.path().join("loose.toml");
        std::fs::write(&loose, "").unwrap();
        let id = study_file_id(&loose).unwrap();
        assert!(id.starts_with('/') && id.ends_with("/loose.toml"), "{id}");
    }

    #[test]
    fn the_plan_hash_follows_the_steps() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("p.toml");
        let hash = |text: &str| {
            std::fs::write(&p, text).unwrap();
            plan_hash(&Profile::load(&p).unwrap(), None)
        };
        let base = hash("name='p'\n[[step]]\nconnections=[1,2]\nduration='2s'\n");
        assert_eq!(base, hash("name='p'\n[[step]]\nconnections=[1,2]\nduration='2s'\n"));
        assert_ne!(base, hash("name='p'\n[[step]]\nconnections=[1,2]\nduration='3s'\n"));
        assert_ne!(base, hash("name='p'\n[[step]]\nconnections=[1,4]\nduration='2s'\n"));
        assert_ne!(base, hash("name='p'\nrequest_timeout='2s'\n[[step]]\nconnections=[1,2]\nduration='2s'\n"));
    }
}

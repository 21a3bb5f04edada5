//! A study file: its question, services and variants, limits axis (cells), profile, runs, SLO and short
//! form, read and checked before anything is built, what a resume must match (resume.rs, what_ran.rs) and whether its profile reaches
//! its SLO's rate (slo_rate.rs). `svcbench
//! study` (commands/study.rs) runs it; the report (report/study.rs) renders its rounds.
pub mod file;
pub mod resume;
pub mod slo_rate;
pub mod what_ran;

//! A study file: its question, services and variants, limits axis (cells), profile, runs, SLO and short
//! form, read and checked before anything is built, and what a resume must match (resume.rs). `svcbench
//! study` (commands/study.rs) runs it; the report (report/study.rs) renders its rounds.
pub mod file;
pub mod resume;

//! `svcbench gate`: a change against its base by duet, decided as a pull request's check needs it —
//! regression, no regression, or could not decide (never a pass). command.rs: its arguments and the duet it runs; decision.rs: the rule; summary.rs: the
//! Markdown for a PR comment and the JSON.
pub mod command;
pub mod decision;
pub mod summary;

//! `svcbench history`: each service's figures along its commits, over one store or several (one per CI run),
//! with the change points e-divisive means finds in them (docs/history.md). One file per concern: series
//! (stores → points in git order), change_points (the detector), findings (a change point as commits, size,
//! direction and what else changed), output (terminal, Markdown, HTML, JSON).
pub mod change_points;
pub mod findings;
pub mod output;
pub mod series;

pub use change_points::Settings;
pub use findings::{analyse, Analysed, Found};

//! What a history finds in each series: its change points named by commit, their size and direction, and
//! what else changed in the sessions' environment there.
use super::change_points::{change_points, Settings};
use super::series::{short, Series};
use crate::report::stats::{Change, LogTest};
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct Found {
    /// The first commit measured at the new level, and the last commit measured before it.
    pub commit: String,
    pub commit_before: String,
    /// The first point at the new level (an index into the series' points).
    pub index: usize,
    /// After/before, the ratio of geometric means of the sessions between the neighbouring change points.
    pub ratio: f64,
    pub ci: [f64; 2],
    pub p: f64,
    /// `regression` or `improvement`, as the metric's better direction says.
    pub direction: &'static str,
    /// The sessions' environment that changed between the last point before and the first after: a cause
    /// the code may not be ("svcbench from … to …").
    pub coincides_with: Vec<String>,
}

impl Found {
    pub fn regressed(&self) -> bool {
        self.direction == REGRESSION
    }

    /// "×1.052 [1.041, 1.063]".
    pub fn size(&self) -> String {
        format!("×{:.3} [{:.3}, {:.3}]", self.ratio, self.ci[0], self.ci[1])
    }

    /// "a1b2c3d..e4f5a6b".
    pub fn range(&self) -> String {
        format!("{}..{}", short(&self.commit_before), short(&self.commit))
    }
}

pub const REGRESSION: &str = "regression";
pub const IMPROVEMENT: &str = "improvement";

/// A series with its change points, oldest first.
pub struct Analysed {
    pub series: Series,
    pub found: Vec<Found>,
}

impl Analysed {
    /// The newest change point (what `--fail-on regression` judges).
    pub fn newest(&self) -> Option<&Found> {
        self.found.last()
    }
}

/// The change points of a series. A change may fall only between two commits: a commit's sessions stay
/// on one side.
pub fn analyse(series: Series, settings: &Settings) -> Analysed {
    let p = &series.points;
    let values: Vec<f64> = p.iter().map(|x| x.value).collect();
    let cps = change_points(&values, &|i| i > 0 && p[i - 1].commit != p[i].commit, settings);
    let found = cps
        .into_iter()
        .map(|cp| {
            let (before, after) = (&p[cp.index - 1], &p[cp.index]);
            Found {
                commit: after.commit.clone(),
                commit_before: before.commit.clone(),
                index: cp.index,
                ratio: cp.test.ratio,
                ci: cp.test.ci,
                p: cp.test.p,
                direction: direction(&cp.test, series.figure.higher_is_better()),
                coincides_with: after.environment.changes_since(&before.environment),
            }
        })
        .collect();
    Analysed { series, found }
}

fn direction(t: &LogTest, higher_is_better: bool) -> &'static str {
    match Change::of(t.ratio, true, higher_is_better) {
        Change::Worse => REGRESSION,
        _ => IMPROVEMENT,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::series::{Environment, Figure, Point};
    use crate::report::METRICS;

    fn env(svcbench: &str) -> Environment {
        Environment {
            svcbench: svcbench.into(),
            host: Some("h".into()),
            kernel: Some("6.1".into()),
            cpu_model: None,
            scenario: "hello".into(),
            profile: "quick".into(),
            limit_cpus: Some(1.0),
            limit_memory_mib: None,
        }
    }

    /// Eight commits, two sessions each; the figure steps up by `step` from commit 4 on, where svcbench's
    /// own version changes too.
    fn series(key: &str, step: f64) -> Series {
        let figure = Figure::Run(METRICS.iter().find(|m| m.key == key).unwrap());
        let points = (0..16)
            .map(|i| {
                let c = i / 2;
                let noise = [0.0, 0.004, -0.003, 0.002, -0.005, 0.001, 0.003, -0.002][i % 8];
                Point {
                    commit: format!("{c:040}"),
                    commit_index: c,
                    store: format!("s{i}.db"),
                    session: 1,
                    started_at: format!("t{i:02}"),
                    value: 100.0 * (1.0 + noise) * if c >= 4 { step } else { 1.0 },
                    runs: 3,
                    environment: env(if c >= 4 { "0.2.0" } else { "0.1.0" }),
                }
            })
            .collect();
        Series { service: "svc".into(), figure, step: None, points }
    }

    #[test]
    fn a_change_is_named_by_its_commits_direction_and_what_else_changed() {
        let a = analyse(series("cpu_per_req", 1.1), &Settings::default());
        assert_eq!(a.found.len(), 1, "{:?}", a.found);
        let f = &a.found[0];
        assert_eq!(
            (f.index, f.commit.as_str(), f.commit_before.as_str()),
            (8, &*format!("{:040}", 4), &*format!("{:040}", 3))
        );
        assert_eq!(f.direction, REGRESSION, "more CPU per request is worse");
        assert!(f.ci[0] > 1.05 && f.ci[1] < 1.15, "{f:?}");
        assert_eq!(f.coincides_with, ["svcbench from 0.1.0 to 0.2.0"]);
        // The same step in req/s is better.
        let up = analyse(series("peak_rps", 1.1), &Settings::default());
        assert_eq!(up.newest().unwrap().direction, IMPROVEMENT);
        assert!(!up.newest().unwrap().regressed());
    }
}

//! Why NEW has no figure on a line BASE has one for: the service's own failures (OOM-killed, crashed, starved
//! connections, no request answered, its checks or its build failed), which `--fail-on` counts as a
//! regression; or the measurement's (its steps or runs left out for the generator's, the machine's or the
//! run's reasons), which says nothing of the service and is not judged. Read from NEW's stored runs and steps.
use crate::figures::validity::FlagCode;
use crate::report::data::{Dataset, Run, StepRow};

/// What NEW's runs say about a figure they do not give.
#[derive(Debug, Clone, PartialEq)]
pub struct Absence {
    /// The service's own doing (a regression), rather than the measurement's.
    pub service: bool,
    /// "every NEW step at #4 c=64 left out: 3 × load generator lost CPU to other processes".
    pub why: String,
}

/// Reasons with their counts, the service's apart from the measurement's, in the order first seen.
#[derive(Default)]
struct Reasons {
    service: Vec<(String, usize)>,
    measurement: Vec<(String, usize)>,
}

/// Counts `why` in `list`, in the order the reasons first came.
pub fn tally(list: &mut Vec<(String, usize)>, why: String) {
    match list.iter_mut().find(|(w, _)| *w == why) {
        Some(e) => e.1 += 1,
        None => list.push((why, 1)),
    }
}

impl Reasons {
    fn add(&mut self, service: bool, why: String) {
        tally(if service { &mut self.service } else { &mut self.measurement }, why);
    }

    /// A step left out: the service's when one of its flags is the service's own failure. A valid step where
    /// no request succeeded and some failed is the service's too: it answered only errors.
    fn step(&mut self, s: &StepRow) {
        let v = s.validity();
        if !v.valid() {
            self.add(v.flags.iter().any(|f| f.code.is_service_failure()), v.summary());
        } else if s.requests_ok == 0 && s.requests_err > 0 {
            self.add(true, "no request succeeded".into());
        }
    }

    fn is_empty(&self) -> bool {
        self.service.is_empty() && self.measurement.is_empty()
    }

    /// "3 × service OOM-killed, 1 × load generator lost CPU to other processes": the service's first.
    fn text(&self) -> String {
        let each: Vec<String> =
            self.service.iter().chain(&self.measurement).map(|(w, n)| format!("{n} × {w}")).collect();
        each.join(", ")
    }
}

/// How a run the service ended died: "service OOM-killed in step 3".
fn ended(r: &Run) -> String {
    let how = if r.oom_killed {
        "service OOM-killed"
    } else if r.crashed {
        "service crashed"
    } else {
        "service stuck at its memory cap"
    };
    match &r.failed_stage {
        Some(stage) => format!("{how} in {stage}"),
        None => how.to_string(),
    }
}

/// Why NEW's group `g` has no value of a per-step metric at step `seq` (`label`): its steps there, from the
/// counted runs, and their flags.
pub fn at_step(new: &Dataset, g: usize, seq: i64, label: &str) -> Absence {
    at_step_of(new, g, seq, label, "NEW")
}

/// `at_step` for either side, named `side` in the text.
fn at_step_of(new: &Dataset, g: usize, seq: i64, label: &str, side: &str) -> Absence {
    let mut r = Reasons::default();
    for run in new.counted_runs(g) {
        for s in run.steps.iter().filter(|s| s.seq == seq && s.label == label) {
            r.step(s);
        }
    }
    let why = match r.is_empty() {
        true => format!("no {side} step at #{seq} {label} gives this figure"),
        false => format!("every {side} step at #{seq} {label} left out: {}", r.text()),
    };
    Absence { service: !r.service.is_empty(), why }
}

/// Why NEW's group `g` has no value of a whole-run metric: runs left out (interrupted, limits not applied,
/// failed checks), runs the service ended, runs where no request succeeded, and for a figure of the peak step
/// (`from_steps`) the steps left out.
pub fn of_runs(new: &Dataset, g: usize, from_steps: bool) -> Absence {
    of_runs_of(new, g, from_steps, "NEW")
}

/// `of_runs` for either side, named `side` in the text.
fn of_runs_of(new: &Dataset, g: usize, from_steps: bool, side: &str) -> Absence {
    let (mut runs, mut steps) = (Reasons::default(), Reasons::default());
    let mut any = false;
    for run in new.group_runs(g) {
        any = true;
        if !new.include_invalid && !run.enters_figures() {
            if run.checks_failed.unwrap_or(0) > 0 {
                runs.add(true, "failed its conformance checks".into());
            } else if run.validity().has(FlagCode::Unlimited) {
                runs.add(false, "limits not applied as asked".into());
            } else if run.status == "failed" {
                // Ended in an error of none of the measurement's kinds: the service never got ready, or its
                // start failed (the error is in the report's runs table). A NEW that cannot start is a regression.
                runs.add(true, "failed (the service did not start or answer; its error in the report)".into());
            } else {
                runs.add(false, run.status.clone());
            }
        } else if run.ended_by_the_service() {
            runs.add(true, ended(run));
        } else if run.total_requests_ok == Some(0) {
            runs.add(true, "no request succeeded".into());
        } else if from_steps {
            run.steps.iter().for_each(|s| steps.step(s));
        }
    }
    if !any {
        return match new.groups[g].service.build_ok {
            false => Absence { service: true, why: format!("its build failed in {side}") },
            true => Absence { service: false, why: format!("{side} has no run of it") },
        };
    }
    let mut parts = Vec::new();
    if !runs.is_empty() {
        parts.push(format!("runs: {}", runs.text()));
    }
    if !steps.is_empty() {
        parts.push(format!("steps left out: {}", steps.text()));
    }
    let why = match parts.is_empty() {
        true => format!("no counted {side} run gives this figure"),
        false => format!("no {side} run gives it ({})", parts.join("; ")),
    };
    Absence { service: !runs.service.is_empty() || !steps.service.is_empty(), why }
}

/// Why neither side has a figure on a line both sides' services name (`compare`'s "no data"): each side's
/// runs and steps, so that a line beside counted runs, all of whose steps were left out, does not read as
/// runs that never happened.
pub fn on_both_sides(
    base: (&Dataset, usize),
    new: (&Dataset, usize),
    step: Option<&(i64, String)>,
    from_steps: bool,
) -> String {
    let why = |(d, g): (&Dataset, usize), side: &str| match step {
        Some((seq, label)) => at_step_of(d, g, *seq, label, side).why,
        None => of_runs_of(d, g, from_steps, side).why,
    };
    format!("BASE: {}; NEW: {}", why(base, "BASE"), why(new, "NEW"))
}

//! The bounds a profile file must keep (docs/profile.md): checked while it is read, before any step is
//! made, so that a typo is refused with one line instead of expanding until memory runs out.
use std::time::Duration;

/// Most steps one profile expands to (after `repeat`, rate ranges and lists). The bundled profiles have
/// under 40; a thousand steps of even a second each are a quarter of an hour per run.
pub const MAX_STEPS: usize = 1_000;
/// Most times one `[[step]]` may repeat: more repeats than that measure nothing new.
pub const MAX_REPEAT: usize = 100;
/// Longest `request_timeout`: the generator's own bound (an hour).
pub const MAX_REQUEST_TIMEOUT: Duration = loadgen::MAX_TIMEOUT;
/// Highest rate of a step, in requests/s: the generator's own bound.
pub const MAX_RATE: f64 = loadgen::MAX_RATE;

/// The rates of `rate_range = [from, to, by]`, counted before any is made (the open model's own rule).
pub fn rate_range(from: f64, to: f64, by: f64) -> Result<Vec<f64>, String> {
    loadgen::models::rate_range(from, to, by).map_err(|e| e.to_string())
}

/// `repeat` between 1 and [`MAX_REPEAT`].
pub fn check_repeat(repeat: usize) -> Result<(), String> {
    if repeat == 0 || repeat > MAX_REPEAT {
        return Err(format!("repeat = {repeat}: must be between 1 and {MAX_REPEAT}"));
    }
    Ok(())
}

/// The steps a profile holds after adding `repeat × loads × delays × keepalives` to `so_far`, refused
/// beyond [`MAX_STEPS`] before any is made.
pub fn check_step_count(so_far: usize, factors: &[usize]) -> Result<usize, String> {
    let total = factors.iter().try_fold(1usize, |n, f| n.checked_mul(*f)).and_then(|n| n.checked_add(so_far));
    match total {
        Some(t) if t <= MAX_STEPS => Ok(t),
        _ => Err(format!(
            "the profile would hold more than {MAX_STEPS} steps; fewer repeats, rates or list entries keep it runnable"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_ranges_are_counted_before_they_are_made() {
        assert_eq!(rate_range(100.0, 300.0, 100.0).unwrap(), [100.0, 200.0, 300.0]);
        assert_eq!(rate_range(1.0, 1.0, 5.0).unwrap(), [1.0]);
        // Each of these looped until memory ran out.
        for (f, t, b, want) in [
            (1.0, f64::INFINITY, 1.0, "finite"),
            (1e16, 2e16, 1.0, "at most 10000000"),
            (1.0, 1e7, 1e-3, "at most 1000"),
            (1.0, 2.0, f64::NAN, "finite"),
            (1.0, 2.0, 0.0, "step > 0"),
        ] {
            let e = rate_range(f, t, b).unwrap_err();
            assert!(e.contains(want), "[{f}, {t}, {b}]: {e}");
        }
        assert_eq!(rate_range(1.0, 1000.0, 1.0).unwrap().len(), MAX_STEPS);
        assert!(rate_range(1.0, 1001.0, 1.0).is_err());
    }

    #[test]
    fn repeats_and_step_counts_are_bounded() {
        assert!(check_repeat(0).is_err() && check_repeat(MAX_REPEAT + 1).is_err() && check_repeat(5).is_ok());
        assert_eq!(check_step_count(10, &[2, 3, 4]), Ok(34));
        assert!(check_step_count(0, &[usize::MAX, 2]).is_err());
        assert!(check_step_count(999, &[1, 2]).is_err());
    }
}

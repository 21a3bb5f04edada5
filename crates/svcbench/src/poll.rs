//! Polling until a deadline: the one loop behind svcbench's waits on the kernel (a cgroup to empty, a process
//! to be reaped), on its own children and on the far side of a host connection.
use std::time::{Duration, Instant};

/// Tries `attempt` at once, then every `every`, until it answers `Some` or `timeout` has passed. A try comes
/// at or after the deadline before giving up, so even a zero timeout tries once.
pub fn until<T>(timeout: Duration, every: Duration, mut attempt: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(answer) = attempt() {
            return Some(answer);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(every);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn until_returns_the_first_answer_and_stops_trying() {
        let mut tries = 0;
        let answer = until(Duration::from_secs(10), Duration::from_millis(1), || {
            tries += 1;
            (tries == 3).then_some(tries * 10)
        });
        assert_eq!(answer, Some(30));
        assert_eq!(tries, 3);
    }

    #[test]
    fn until_gives_up_after_the_timeout_having_tried_at_least_once() {
        let mut tries = 0;
        assert_eq!(
            until(Duration::ZERO, Duration::from_millis(1), || -> Option<()> {
                tries += 1;
                None
            }),
            None
        );
        assert_eq!(tries, 1);
        let t0 = Instant::now();
        tries = 0;
        assert_eq!(
            until(Duration::from_millis(30), Duration::from_millis(5), || -> Option<()> {
                tries += 1;
                None
            }),
            None
        );
        assert!(t0.elapsed() >= Duration::from_millis(30));
        assert!(tries >= 2, "{tries}");
    }
}

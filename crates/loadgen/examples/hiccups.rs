//! The machine's own schedule-lag floor (bench/open-model-lag.sh): a thread spins on the
//! monotonic clock for a while and records every gap between two readings, the moments its CPU
//! was taken away (by the hypervisor, an interrupt, another process). A request due at a random
//! instant inside a gap of length g leaves up to g late, whatever the generator does, so the
//! gaps give the lag distribution a perfect generator would have on this CPU: its p99 is the
//! floor under the generator's own lag p99. (jHiccup measures JVM pauses the same way.)
//! `cargo run --release -p loadgen --example hiccups -- 5` (seconds), pinned with taskset.
//! Prints one JSON line.

use std::time::{Duration, Instant};

/// Gaps shorter than this are the loop's own cost, not a lost CPU.
const GAP_FLOOR: Duration = Duration::from_micros(2);

/// Lag at quantile `q` of a request due at a uniformly random instant of `total`, given the
/// gaps: inside a gap of length g the lag is uniform on [0, g], elsewhere it is zero, so
/// P(lag > x) = Σ max(0, g − x) / total. Found by bisection on x.
fn floor_quantile(gaps: &[Duration], total: Duration, q: f64) -> Duration {
    let total = total.as_secs_f64();
    let above = |x: f64| gaps.iter().map(|g| (g.as_secs_f64() - x).max(0.0)).sum::<f64>() / total;
    let (mut lo, mut hi) = (0.0, gaps.iter().max().map_or(0.0, Duration::as_secs_f64));
    if above(0.0) <= 1.0 - q {
        return Duration::ZERO;
    }
    for _ in 0..60 {
        let mid = (lo + hi) / 2.0;
        if above(mid) > 1.0 - q {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Duration::from_secs_f64(hi)
}

fn main() {
    let secs: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(5.0);
    let length = Duration::from_secs_f64(secs.clamp(0.1, 600.0));
    let start = Instant::now();
    let mut last = start;
    let mut gaps = Vec::new();
    loop {
        let now = Instant::now();
        let gap = now - last;
        if gap >= GAP_FLOOR {
            gaps.push(gap);
        }
        last = now;
        if now - start >= length {
            break;
        }
    }
    let total = last - start;
    let lost: Duration = gaps.iter().filter(|g| **g >= Duration::from_micros(100)).sum();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "{{\"seconds\":{:.3},\"gaps_over_100us\":{},\"lost_share\":{:.5},\"max_us\":{:.0},\"floor_p50_us\":{:.1},\"floor_p99_us\":{:.1},\"floor_p999_us\":{:.1}}}",
        total.as_secs_f64(),
        gaps.iter().filter(|g| **g >= Duration::from_micros(100)).count(),
        lost.as_secs_f64() / total.as_secs_f64(),
        us(gaps.iter().copied().max().unwrap_or_default()),
        us(floor_quantile(&gaps, total, 0.5)),
        us(floor_quantile(&gaps, total, 0.99)),
        us(floor_quantile(&gaps, total, 0.999)),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_gaps_no_floor() {
        assert_eq!(floor_quantile(&[], Duration::from_secs(1), 0.99), Duration::ZERO);
    }

    #[test]
    fn one_long_gap_sets_the_tail() {
        // 20 ms lost in 1 s: 2 % of instants fall inside it, with a lag uniform on [0, 20 ms].
        // P(lag > x) = (20 ms − x) / 1 s = 1 % at x = 10 ms; the median lag is zero.
        let gaps = [Duration::from_millis(20)];
        let p99 = floor_quantile(&gaps, Duration::from_secs(1), 0.99);
        assert!((p99.as_secs_f64() - 0.010).abs() < 1e-6, "{p99:?}");
        assert_eq!(floor_quantile(&gaps, Duration::from_secs(1), 0.5), Duration::ZERO);
        // Half as much lost time, below the 1 % tail: no floor at p99.
        let short = [Duration::from_millis(10)];
        assert_eq!(floor_quantile(&short, Duration::from_secs(1), 0.99), Duration::ZERO);
    }
}

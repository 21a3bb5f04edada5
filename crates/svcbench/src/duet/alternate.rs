//! A duet's alternating mode, for two services whose quotas cannot fit side by side (each may take all the
//! service CPUs): both are up, and the load alternates between them in 1 s slots, the order of each round's
//! two slots drawn at random (randomised multiple interleaved trials: Abedi and Brecht, ICPE 2017). A round's
//! two slots make one slice, A's slot beside B's, so what slowed the machine in those two seconds slowed both
//! about alike; a slice's figures, guard and verdict are the side-by-side mode's.
use super::reading::{read_now, Reading};
use super::setup::{load_config, DuetSetup};
use super::slices::{SideSlice, Slice};
use crate::profile::Step;
use crate::service::instance::Instance;
use anyhow::Result;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// One side's turn at the load in a round.
pub const SLOT: Duration = Duration::from_secs(1);

/// Whether A takes the first slot of a round: drawn from the duet's seed, the pair, the step and the round
/// (SplitMix64), so a duet's schedule is random across rounds yet the same when it is run again.
pub fn a_first_in_round(seed: u64, pair: u32, step: u32, round: u32) -> bool {
    let mut z = seed ^ ((pair as u64) << 40) ^ ((step as u64) << 20) ^ round as u64;
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) & 1 == 1
}

/// One slot as measured: the generator's report of it and both cgroups' counters at its ends.
pub struct Slot {
    pub side: usize,
    pub ok: u64,
    pub errors: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub before: Reading,
    pub after: Reading,
}

/// Drives one step as rounds of two slots, one per side in the round's drawn order; a round is one slice.
pub fn drive_step(
    setup: &DuetSetup,
    insts: [&Instance; 2],
    step: &Step,
    seq: u32,
    pair: u32,
    stop: &Arc<AtomicBool>,
) -> Result<Vec<Slice>> {
    let mut cfgs = [load_config(setup, insts[0], step, seq, stop)?, load_config(setup, insts[1], step, seq, stop)?];
    for c in &mut cfgs {
        c.duration = SLOT;
    }
    let probes = [insts[0].sandbox.probe(), insts[1].sandbox.probe()];
    let mut slices = Vec::new();
    for round in 0..step.duration.as_secs() as u32 {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let a_first = a_first_in_round(setup.seed, pair, seq, round);
        let mut slots = Vec::with_capacity(2);
        for side in if a_first { [0, 1] } else { [1, 0] } {
            let before = read_now(&probes, setup.store);
            let r = loadgen::run(&cfgs[side], None)?;
            let after = read_now(&probes, setup.store);
            slots.push(Slot {
                side,
                ok: r.requests_ok,
                errors: r.requests_err,
                p50_ms: r.latency.p50,
                p99_ms: r.latency.p99,
                before,
                after,
            });
        }
        slices.push(slice_of_round(&slots, seq, round, setup.gen_cpus.len()));
    }
    Ok(slices)
}

/// The slice of a round's two slots (in the order they ran): each side's figures from its own slot only,
/// its CPU read from its cgroup across that slot; the slice's length the slots' mean, the generators' share
/// of CPU over both.
pub fn slice_of_round(slots: &[Slot], step: u32, round: u32, gen_cpus: usize) -> Slice {
    let figures = |i: usize| {
        let s = slots.iter().find(|s| s.side == i).expect("a round has a slot per side");
        SideSlice {
            ok: s.ok,
            errors: s.errors,
            cpu_s: s.after.cpu_s[i] - s.before.cpu_s[i],
            throttled_s: s.after.throttled_s[i] - s.before.throttled_s[i],
            p50_ms: s.p50_ms,
            p99_ms: s.p99_ms,
        }
    };
    let lengths: Vec<f64> = slots.iter().map(|s| s.after.at.duration_since(s.before.at).as_secs_f64()).collect();
    let total: f64 = lengths.iter().sum();
    let generator_s: f64 = slots.iter().map(|s| s.after.generator_cpu_s - s.before.generator_cpu_s).sum();
    Slice {
        pair: 0,
        a_first: slots.first().is_some_and(|s| s.side == 0),
        step,
        second: round,
        seconds: total / lengths.len().max(1) as f64,
        a: figures(0),
        b: figures(1),
        generator_busy: generator_s / (total * gen_cpus.max(1) as f64),
        // A slot's mean, as the slice's length is: the store's share over the whole round.
        store_cpu_s: slots
            .iter()
            .map(|s| s.before.store_cpu_s.zip(s.after.store_cpu_s).map(|(a, b)| (b - a).max(0.0)))
            .sum::<Option<f64>>()
            .map(|cpu| cpu / lengths.len().max(1) as f64),
        invalid: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn reading(at: Instant, cpu: [f64; 2], gen: f64) -> Reading {
        Reading { at, cpu_s: cpu, throttled_s: [0.0, 0.0], generator_cpu_s: gen, store_cpu_s: None }
    }

    #[test]
    fn a_round_pairs_each_side_with_its_own_slot_whatever_ran_first() {
        let t = Instant::now();
        let s = |k: u64| t + Duration::from_millis(k);
        // B ran first (0–1000 ms, B's cgroup 0.30 CPU-s, A idle but for 0.01), then A (1000–2000 ms, 0.20).
        let slots = [
            Slot {
                side: 1,
                ok: 900,
                errors: 1,
                p50_ms: 0.4,
                p99_ms: 3.0,
                before: reading(s(0), [1.00, 5.00], 10.0),
                after: reading(s(1000), [1.01, 5.30], 10.4),
            },
            Slot {
                side: 0,
                ok: 1000,
                errors: 0,
                p50_ms: 0.3,
                p99_ms: 2.0,
                before: reading(s(1000), [1.01, 5.30], 10.4),
                after: reading(s(2000), [1.21, 5.31], 10.8),
            },
        ];
        let sl = slice_of_round(&slots, 2, 7, 1);
        assert!(!sl.a_first);
        assert_eq!((sl.step, sl.second), (2, 7));
        assert_eq!((sl.a.ok, sl.b.ok, sl.b.errors), (1000, 900, 1));
        // Each side's CPU is read across its own slot only: the other side's idle CPU is not counted.
        assert!((sl.a.cpu_s - 0.20).abs() < 1e-9 && (sl.b.cpu_s - 0.30).abs() < 1e-9, "{sl:?}");
        assert_eq!((sl.a.p50_ms, sl.b.p99_ms), (0.3, 3.0));
        assert!((sl.seconds - 1.0).abs() < 1e-9);
        assert!((sl.generator_busy - 0.4).abs() < 1e-9, "{}", sl.generator_busy);
    }

    #[test]
    fn the_order_of_a_rounds_slots_is_random_yet_repeatable() {
        let firsts: Vec<bool> = (0..400).map(|r| a_first_in_round(42, 0, 0, r)).collect();
        let a = firsts.iter().filter(|f| **f).count();
        assert!((160..=240).contains(&a), "A first in {a} of 400 rounds");
        // Not a fixed alternation: both orders follow each order.
        let runs = firsts.windows(2).filter(|w| w[0] == w[1]).count();
        assert!(runs > 100, "{runs} repeats");
        assert_eq!(firsts, (0..400).map(|r| a_first_in_round(42, 0, 0, r)).collect::<Vec<_>>());
        assert_ne!(firsts, (0..400).map(|r| a_first_in_round(42, 1, 0, r)).collect::<Vec<_>>(), "pairs differ");
    }
}

//! A duet's slices: per second and side the figures the verdict compares, the rules that make a slice not
//! valid (the two sides may have interfered, or the generator measured itself), and the slices' log-ratios
//! grouped by step, metric and pair for verdict.rs.
use serde::{Deserialize, Serialize};

/// One side's figures in one slice: the store's row type, so the two cannot drift apart.
pub use crate::store::DuetSideRow as SideSlice;

/// Both sides in one slice of one step of one pair. `a` is always the duet's first service, whatever side
/// of the machine (start and generator order) it had in this pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slice {
    pub pair: u32,
    /// A was started and driven first (side by side: the pair's order; alternating: the round's).
    pub a_first: bool,
    pub step: u32,
    pub second: u32,
    /// Length of the slice as read (the counters are read at its boundaries).
    pub seconds: f64,
    pub a: SideSlice,
    pub b: SideSlice,
    /// Share of the generators' CPUs the generators (this process) used in the slice.
    pub generator_busy: f64,
    /// CPU seconds the shared store's processes used in the slice (None: no store measured).
    #[serde(default)]
    pub store_cpu_s: Option<f64>,
    /// Why the slice is not compared (None: valid).
    pub invalid: Option<String>,
}

/// A side throttled for more than this share of a slice sat at its quota: it could not take the load asked,
/// so the two sides no longer got the same load.
pub const THROTTLED_MAX_SHARE: f64 = 0.5;
/// A side using more than its quota by this factor: the quota did not hold, so it may have taken the other
/// side's CPU.
pub const QUOTA_SLACK: f64 = 1.1;
/// The generators busier than this share of their CPUs: the slice may measure the generator.
pub const GENERATOR_MAX_BUSY: f64 = 0.9;

/// In an open-model step, a side answering fewer than this share of the rate in a slice did not take the
/// load asked (its quota, or the machine, starved it): its figures are of a queue, not of the rate.
pub const RATE_MIN_SHARE: f64 = 0.9;

/// Why a slice must not be compared, or None. `quota`: each side's CPU quota in CPUs (None: unlimited);
/// `rate`: the step's open-model rate (None: closed model).
pub fn guard(s: &Slice, quota: Option<f64>, rate: Option<f64>) -> Option<String> {
    let sides = [("A", &s.a), ("B", &s.b)];
    for (name, side) in sides {
        if side.ok == 0 {
            return Some(format!("{name} answered nothing"));
        }
        if let Some(r) = rate {
            let served = side.ok as f64 / s.seconds;
            if served < RATE_MIN_SHARE * r {
                return Some(format!("{name} answered {served:.0} of {r:.0} req/s"));
            }
        }
        if side.throttled_s > THROTTLED_MAX_SHARE * s.seconds {
            return Some(format!("{name} throttled {:.2} s of {:.2} s", side.throttled_s, s.seconds));
        }
        if let Some(q) = quota {
            if side.cpu_s > q * s.seconds * QUOTA_SLACK {
                return Some(format!("{name} used {:.3} CPU-s, above its quota of {q} CPUs", side.cpu_s));
            }
        }
    }
    if s.generator_busy > GENERATOR_MAX_BUSY {
        return Some(format!("generators {:.0} % busy", s.generator_busy * 100.0));
    }
    None
}

/// The CPUs the shared store may use, as the store's guard needs them: how many, and how many generator
/// CPUs it shares when svcbench placed it on them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StoreCpus {
    pub cpus: usize,
    pub with_generators: Option<usize>,
}

/// The prefix of the reason of every slice the store's guard invalidated (the duet's table counts them).
pub const STORE_SATURATED: &str = "store saturated";

/// Why the store may have slowed a slice, or None: the store is saturated when its processes used at least
/// `figures::SATURATED` (90 %) of the CPUs it may use in the slice, or, on the generators' CPUs, when it and
/// the generators together used that share of those CPUs. Both sides waited for the same store, but not
/// necessarily alike (whichever queued behind the other), so such a slice compares the queue, not the
/// services. Checked before the sides' own rules: a starved store is what made a side miss its rate.
pub fn store_guard(s: &Slice, store: Option<StoreCpus>) -> Option<String> {
    let (store, cpu_s) = (store?, s.store_cpu_s?);
    let alone = crate::figures::cpu_share(cpu_s, s.seconds, store.cpus);
    let together = store.with_generators.map_or(0.0, |n| alone * store.cpus as f64 / n as f64 + s.generator_busy);
    let limit = crate::figures::SATURATED;
    if alone >= limit {
        Some(format!("{STORE_SATURATED}: {:.0} % of its {} CPU(s)", alone * 100.0, store.cpus))
    } else if together >= limit {
        Some(format!("{STORE_SATURATED}: it and the generators used {:.0} % of their CPUs", together * 100.0))
    } else {
        None
    }
}

/// The figures a duet compares: the store's type (it owns the keys of `duet_line.metric`), so the two cannot
/// drift apart.
pub use crate::store::DuetMetric as Metric;

impl Metric {
    /// ln(B/A) of a slice, None when either side has no figure.
    pub fn log_ratio(self, s: &Slice) -> Option<f64> {
        Some(self.ratio(&s.a, &s.b, s.seconds)?.ln())
    }
}

/// The valid slices' log-ratios of one step and metric, one list per pair (in pair order).
pub fn log_ratios_by_pair(slices: &[Slice], step: u32, metric: Metric) -> Vec<Vec<f64>> {
    let mut pairs: std::collections::BTreeMap<u32, Vec<f64>> = Default::default();
    for s in slices.iter().filter(|s| s.step == step && s.invalid.is_none()) {
        let list = pairs.entry(s.pair).or_default();
        if let Some(r) = metric.log_ratio(s) {
            list.push(r);
        }
    }
    pairs.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::duet::verdict::{verdicts, Line, Verdict};

    fn side(ok: u64, cpu_s: f64) -> SideSlice {
        SideSlice { ok, errors: 0, cpu_s, throttled_s: 0.0, p50_ms: 0.2, p99_ms: 1.0 }
    }

    fn slice(pair: u32, second: u32, a: SideSlice, b: SideSlice) -> Slice {
        Slice {
            pair,
            a_first: true,
            step: 0,
            second,
            seconds: 1.0,
            a,
            b,
            generator_busy: 0.5,
            store_cpu_s: None,
            invalid: None,
        }
    }

    #[test]
    fn a_throttled_side_an_overrun_quota_or_a_busy_generator_invalidates_the_slice() {
        let ok = slice(0, 0, side(1000, 0.2), side(1000, 0.2));
        assert_eq!(guard(&ok, Some(0.45), None), None);
        let mut throttled = ok.clone();
        throttled.b.throttled_s = 0.6;
        assert!(guard(&throttled, Some(0.45), None).unwrap().contains("B throttled"));
        let mut over = ok.clone();
        over.a.cpu_s = 0.6;
        assert!(guard(&over, Some(0.45), None).unwrap().contains("above its quota"));
        assert_eq!(guard(&over, None, None), None, "without a quota there is none to overrun");
        let mut busy = ok.clone();
        busy.generator_busy = 0.97;
        assert!(guard(&busy, Some(0.45), None).unwrap().contains("generators"));
        assert_eq!(guard(&ok, Some(0.45), Some(1000.0)), None);
        assert!(guard(&ok, Some(0.45), Some(1500.0)).unwrap().contains("answered 1000 of 1500 req/s"));
        let mut silent = ok;
        silent.a.ok = 0;
        assert!(guard(&silent, Some(0.45), None).is_some());
    }

    #[test]
    fn a_store_at_90_percent_of_its_cpus_alone_or_with_the_generators_invalidates_the_slice() {
        let mut s = slice(0, 0, side(1000, 0.2), side(1000, 0.2));
        let one = StoreCpus { cpus: 1, with_generators: None };
        assert_eq!(store_guard(&s, Some(one)), None, "no store reading, nothing to judge");
        s.store_cpu_s = Some(0.5);
        assert_eq!(store_guard(&s, Some(one)), None);
        assert_eq!(store_guard(&s, None), None, "no store measured");
        s.store_cpu_s = Some(0.9);
        assert!(store_guard(&s, Some(one)).unwrap().starts_with(STORE_SATURATED));
        // Two CPUs: 0.9 CPU-s is 45 %.
        assert_eq!(store_guard(&s, Some(StoreCpus { cpus: 2, with_generators: None })), None);
        // On the generators' one CPU: 0.5 of the store and the generators' 0.5 together fill it.
        s.store_cpu_s = Some(0.5);
        let shared = StoreCpus { cpus: 1, with_generators: Some(1) };
        assert!(store_guard(&s, Some(shared)).unwrap().contains("it and the generators used 100 %"));
        s.generator_busy = 0.2;
        assert_eq!(store_guard(&s, Some(shared)), None);
    }

    #[test]
    fn invalid_slices_are_left_out_of_the_ratios() {
        // Four pairs where both sides cost the same, except slices in which B sat throttled at its quota
        // and the guard must drop: kept, they would make B look 3× costlier.
        let mut slices = Vec::new();
        for pair in 0..4 {
            for second in 0..10 {
                let wobble = 1.0 + 0.01 * ((pair * 10 + second) % 3) as f64;
                let mut s = slice(pair, second, side(1000, 0.2), side(1000, 0.2 * wobble));
                if second % 3 == 0 {
                    s.b.cpu_s = 0.6;
                    s.b.throttled_s = 0.7;
                }
                s.invalid = guard(&s, Some(0.45), None);
                slices.push(s);
            }
        }
        let pairs = log_ratios_by_pair(&slices, 0, Metric::CpuUsPerReq);
        assert_eq!(pairs.len(), 4);
        assert!(pairs.iter().all(|p| p.len() == 6), "{pairs:?}");
        let (r, v) = verdicts(&[Line { pairs: &pairs, higher_is_better: false }]).remove(0);
        let r = r.unwrap();
        assert!(r.ratio > 0.99 && r.ratio < 1.03, "{r:?} {v:?}");
        // Without the guard the throttled slices count.
        for s in &mut slices {
            s.invalid = None;
        }
        let all = log_ratios_by_pair(&slices, 0, Metric::CpuUsPerReq);
        assert!(all.iter().all(|p| p.len() == 10));
    }

    #[test]
    fn the_ratio_is_b_over_a_whatever_side_each_had() {
        let s = slice(1, 0, side(1000, 0.2), side(1000, 0.22));
        assert!((Metric::CpuUsPerReq.log_ratio(&s).unwrap() - 1.1f64.ln()).abs() < 1e-12);
        assert!((Metric::OkRps.log_ratio(&s).unwrap()).abs() < 1e-12);
        assert_eq!(Verdict::Slower.text(), "slower");
    }
}

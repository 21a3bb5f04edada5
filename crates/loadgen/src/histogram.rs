//! Latency histograms: HDR, microsecond values, and their standard encoding (V2 + DEFLATE,
//! base64), which the Java, Go and Rust HdrHistogram libraries all read.

use anyhow::{anyhow, Result};
use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

use serde::{Deserialize, Serialize};

/// Highest latency tracked exactly: one hour, in µs (longer values are clamped to it).
pub const MAX_LATENCY_US: u64 = 3_600_000_000;

/// Full-precision run histogram: 3 significant digits (0.1 % error) from 1 µs to an hour.
pub fn new_latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_US, 3).expect("valid histogram bounds")
}

/// Smaller histogram for one second of the time series (1 % error is plenty for p50/p99).
pub(crate) fn new_second_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_US, 2).expect("valid histogram bounds")
}

#[inline]
pub(crate) fn record_us(h: &mut Histogram<u64>, us: u64) {
    h.saturating_record(us.clamp(1, MAX_LATENCY_US));
}

/// Base64 of the V2 + DEFLATE encoding.
pub fn encode(h: &Histogram<u64>) -> Result<String> {
    let mut bytes = Vec::new();
    V2DeflateSerializer::new()
        .serialize(h, &mut bytes)
        .map_err(|e| anyhow!("cannot encode the latency histogram: {e}"))?;
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// Reads what [`encode`] wrote (or any V2 / V2 + DEFLATE histogram, base64-encoded).
pub fn decode(text: &str) -> Result<Histogram<u64>> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .map_err(|e| anyhow!("latency histogram is not valid base64: {e}"))?;
    let h: Histogram<u64> = Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| anyhow!("latency histogram is not an HDR V2 encoding: {e:?}"))?;
    Ok(h)
}

/// Writes `h` as an HdrHistogram interval log (`.hlog`, one interval covering the run), the
/// text format HdrHistogram's log processors and plotters read. Values are µs; the log's max
/// column is in ms (divisor 1000).
pub fn write_interval_log(
    path: &std::path::Path,
    h: &Histogram<u64>,
    start: std::time::SystemTime,
    duration: std::time::Duration,
) -> Result<()> {
    use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
    let mut out = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    let mut writer = IntervalLogWriterBuilder::new()
        .add_comment("svcbench load: latency of successful responses, values in microseconds")
        .with_start_time(start)
        .with_base_time(start)
        .with_max_value_divisor(1000.0)
        .begin_log_with(&mut out, &mut serializer)
        .map_err(|e| anyhow!("cannot write the histogram log: {e}"))?;
    writer
        .write_histogram(h, std::time::Duration::ZERO, duration, None)
        .map_err(|e| anyhow!("cannot write the histogram log: {e:?}"))?;
    std::fs::write(path, out).map_err(|e| anyhow!("cannot write {}: {e}", path.display()))
}

fn ms(us: f64) -> f64 {
    us / 1000.0
}

/// Latency summary in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub mean: f64,
    pub stdev: f64,
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub p9999: f64,
    pub max: f64,
}

/// Summary figures in milliseconds (all zero for an empty histogram).
pub fn percentiles(h: &Histogram<u64>) -> Percentiles {
    if h.is_empty() {
        return Percentiles::default();
    }
    let q = |p: f64| ms(h.value_at_quantile(p) as f64);
    Percentiles {
        mean: ms(h.mean()),
        stdev: ms(h.stdev()),
        p50: q(0.50),
        p75: q(0.75),
        p90: q(0.90),
        p99: q(0.99),
        p999: q(0.999),
        p9999: q(0.9999),
        max: ms(h.max() as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trip() {
        let mut h = new_latency_histogram();
        for v in [1, 5, 100, 1_000, 20_000, 1_000_000, 60_000_000, u64::MAX] {
            record_us(&mut h, v);
        }
        let back = decode(&encode(&h).unwrap()).unwrap();
        assert_eq!(back.len(), h.len());
        assert_eq!(percentiles(&back), percentiles(&h));
        assert_eq!(back.max(), h.max());
        assert!(decode("not base64!").is_err());
        assert!(decode("aGVsbG8=").is_err());
    }

    #[test]
    fn precision_covers_a_minute() {
        let mut h = new_latency_histogram();
        record_us(&mut h, 60_000_000);
        let p = percentiles(&h);
        assert!((p.max - 60_000.0).abs() / 60_000.0 < 0.001, "{}", p.max);
    }
}

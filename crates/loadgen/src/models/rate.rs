//! The open model's arrival rate: constant, or moving from one rate to another over a step.

use anyhow::{anyhow, bail, Result};

/// Arrival rate of the open model, in requests per second. Constant when `start == end`;
/// otherwise it moves from `start` to `end` over the run, linearly, or in `steps` equal steps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateRamp {
    pub start: f64,
    pub end: f64,
    pub steps: Option<u32>,
}

/// Highest rate the open model accepts, in requests per second.
pub const MAX_RATE: f64 = 10_000_000.0;
impl RateRamp {
    pub fn constant(rate: f64) -> RateRamp {
        RateRamp { start: rate, end: rate, steps: None }
    }

    /// `R` or `A:B` (requests per second).
    pub fn parse(s: &str) -> Result<RateRamp> {
        let num = |v: &str| -> Result<f64> {
            v.trim()
                .parse::<f64>()
                .ok()
                .filter(|r| r.is_finite())
                .ok_or_else(|| anyhow!("rate '{v}' is not a number of requests per second (e.g. 1000 or 100:2000)"))
                .and_then(|r| {
                    if r < 0.0 {
                        bail!("rate '{v}' is negative: give a positive number of requests per second (e.g. 1000)")
                    }
                    // Beyond what one machine can send; a schedule that size is a typo.
                    if r > MAX_RATE {
                        bail!("rate '{v}' is above {MAX_RATE:.0} requests per second: give a rate one machine can send")
                    }
                    Ok(r)
                })
        };
        let ramp = match s.split_once(':') {
            Some((a, b)) => RateRamp { start: num(a)?, end: num(b)?, steps: None },
            None => RateRamp::constant(num(s)?),
        };
        if ramp.start == 0.0 && ramp.end == 0.0 {
            bail!("rate '{s}' is zero: give a positive number of requests per second");
        }
        Ok(ramp)
    }

    pub fn is_constant(&self) -> bool {
        self.start == self.end
    }
}

impl std::fmt::Display for RateRamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_constant() {
            write!(f, "{} req/s", self.start)
        } else if let Some(n) = self.steps {
            write!(f, "{} to {} req/s in {n} steps", self.start, self.end)
        } else {
            write!(f, "{} to {} req/s (linear)", self.start, self.end)
        }
    }
}

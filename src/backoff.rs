//! Reconnect delays for every supervised link (upstream bridges, connectors): capped
//! exponential backoff with jitter, from a record's `reconnect` object
//! (`{"initial": "1s", "max": "60s", "jitter": 0.2}`).

use crate::duration::parse_duration;
use rand::Rng;
use serde_json::{Map, Value};
use std::time::Duration;

/// Reconnect delays: `initial` doubling up to `max`, each varied by ± `jitter` of itself so
/// that many edges do not reconnect in step after an outage.
pub struct Backoff {
    initial: Duration,
    max: Duration,
    jitter: f64,
}

impl Backoff {
    pub fn of(fields: &Map<String, Value>) -> Backoff {
        let reconnect = fields.get("reconnect");
        let duration = |name: &str, default: u64| {
            reconnect
                .and_then(|r| r.get(name))
                .and_then(Value::as_str)
                .and_then(|text| parse_duration(text).ok())
                .unwrap_or(Duration::from_secs(default))
        };
        Backoff {
            initial: duration("initial", 1),
            max: duration("max", 60),
            jitter: reconnect
                .and_then(|r| r.get("jitter"))
                .and_then(Value::as_f64)
                .unwrap_or(0.2),
        }
    }

    /// The delay after the `failures`-th failure in a row (1 = the first).
    pub fn delay(&self, failures: u32) -> Duration {
        let doubled = self
            .initial
            .saturating_mul(1u32 << failures.saturating_sub(1).min(20));
        let base = doubled.min(self.max).as_secs_f64();
        let spread = base * self.jitter;
        let varied = if spread > 0.0 {
            base + rand::thread_rng().gen_range(-spread..=spread)
        } else {
            base
        };
        Duration::from_secs_f64(varied.max(0.05))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_up_to_the_cap_within_the_jitter() {
        let backoff = Backoff {
            initial: Duration::from_secs(1),
            max: Duration::from_secs(8),
            jitter: 0.0,
        };
        let delays: Vec<u64> = (1..=6).map(|n| backoff.delay(n).as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 8, 8]);
        let jittered = Backoff {
            jitter: 0.5,
            ..backoff
        };
        for _ in 0..100 {
            let d = jittered.delay(3).as_secs_f64();
            assert!((2.0..=6.0).contains(&d), "{d}");
        }
        assert!(jittered.delay(u32::MAX) <= Duration::from_secs(12));
    }
}

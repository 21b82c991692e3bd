//! Alarm system performance as ISA-18.2 and EEMUA 191 measure it: the rate of new alarms per
//! 10 minutes (now, on average and at peak over the last 24 hours), floods (more than 10 new
//! alarms in 10 minutes) and the share of time spent in one, chattering alarms (raised again
//! and again within a short window) and stale ones (standing for longer than a day), with the
//! counts of alarms in each state.

use super::state::StateName;
use serde::Serialize;
use std::collections::{HashMap, VecDeque};

const TEN_MINUTES: i64 = 10 * 60 * 1000;
const DAY: i64 = 24 * 60 * 60 * 1000;

/// The thresholds health is measured against.
#[derive(Debug, Clone, PartialEq)]
pub struct HealthRules {
    /// An alarm raised this many times within `chatter_window_ms` chatters.
    pub chatter_count: usize,
    pub chatter_window_ms: i64,
    /// An alarm standing (raised and not back to normal) longer than this is stale.
    pub stale_after_ms: i64,
    /// More new alarms than this in 10 minutes is a flood.
    pub flood_count: usize,
}

impl Default for HealthRules {
    fn default() -> HealthRules {
        HealthRules {
            chatter_count: 3,
            chatter_window_ms: 60_000,
            stale_after_ms: DAY,
            flood_count: 10,
        }
    }
}

/// When a domain's alarms were raised: the last 24 hours of the domain, and each alarm's
/// raises within its chatter window.
#[derive(Debug, Default)]
pub struct Activity {
    raised: VecDeque<i64>,
    by_alarm: HashMap<String, VecDeque<i64>>,
}

impl Activity {
    pub fn raised(&mut self, alarm: &str, now: i64, rules: &HealthRules) {
        self.raised.push_back(now);
        while self.raised.front().is_some_and(|t| *t <= now - DAY) {
            self.raised.pop_front();
        }
        let recent = self.by_alarm.entry(alarm.to_string()).or_default();
        recent.push_back(now);
        while recent
            .front()
            .is_some_and(|t| *t <= now - rules.chatter_window_ms)
        {
            recent.pop_front();
        }
    }
}

/// How many alarms stand in each state.
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct Counts {
    pub total: usize,
    pub active: usize,
    pub unacknowledged: usize,
    pub latched: usize,
    pub shelved: usize,
    pub suppressed: usize,
    pub out_of_service: usize,
}

/// A domain's alarm system performance.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Health {
    /// New alarms in the last 10 minutes.
    pub rate_10min: usize,
    /// New alarms per 10 minutes, averaged over the last 24 hours.
    pub average_rate_10min: f64,
    /// The most new alarms in any 10 minutes of the last 24 hours.
    pub peak_rate_10min: usize,
    /// Whether the last 10 minutes are a flood, how many 10-minute periods of the last 24
    /// hours were, and the share of those 24 hours spent in one, in percent.
    pub flood: bool,
    pub flood_periods_24h: usize,
    pub time_in_flood_percent: f64,
    pub chattering: Vec<String>,
    pub stale: Vec<String>,
    pub counts: Counts,
    pub rules: RulesView,
}

/// The thresholds, as the health report states them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RulesView {
    pub chatter_count: usize,
    pub chatter_window_seconds: f64,
    pub stale_after_seconds: f64,
    pub flood_count: usize,
}

impl Health {
    /// Measures `activity` and the alarms' `(name, state, raised at)` at `now`.
    pub fn measure(
        rules: &HealthRules,
        activity: &Activity,
        alarms: &[(&str, StateName, Option<i64>)],
        now: i64,
    ) -> Health {
        let day: Vec<i64> = activity
            .raised
            .iter()
            .copied()
            .filter(|t| *t > now - DAY)
            .collect();
        let rate_10min = day.iter().filter(|t| **t > now - TEN_MINUTES).count();
        // Periods end at `now`: period k covers (now - (k+1)·10 min, now - k·10 min].
        let mut periods = [0usize; 144];
        for t in &day {
            let k = ((now - t) / TEN_MINUTES).clamp(0, 143) as usize;
            periods[k] += 1;
        }
        let flood_periods = periods.iter().filter(|n| **n > rules.flood_count).count();
        let mut chattering: Vec<String> = activity
            .by_alarm
            .iter()
            .filter(|(_, raises)| {
                raises
                    .iter()
                    .filter(|t| **t > now - rules.chatter_window_ms)
                    .count()
                    >= rules.chatter_count
            })
            .map(|(name, _)| name.clone())
            .collect();
        chattering.sort();
        let mut stale: Vec<String> = alarms
            .iter()
            .filter(|(_, state, raised)| {
                matches!(
                    state,
                    StateName::ActiveUnacknowledged
                        | StateName::ActiveAcknowledged
                        | StateName::Latched
                ) && raised.is_some_and(|r| now - r >= rules.stale_after_ms)
            })
            .map(|(name, _, _)| name.to_string())
            .collect();
        stale.sort();
        let mut counts = Counts {
            total: alarms.len(),
            ..Counts::default()
        };
        for (_, state, _) in alarms {
            match state {
                StateName::ActiveUnacknowledged => {
                    counts.active += 1;
                    counts.unacknowledged += 1;
                }
                StateName::ActiveAcknowledged => counts.active += 1,
                StateName::ReturnedUnacknowledged => counts.unacknowledged += 1,
                StateName::Latched => counts.latched += 1,
                StateName::Shelved => counts.shelved += 1,
                StateName::Suppressed => counts.suppressed += 1,
                StateName::OutOfService => counts.out_of_service += 1,
                StateName::Normal => {}
            }
        }
        Health {
            rate_10min,
            average_rate_10min: day.len() as f64 / 144.0,
            peak_rate_10min: periods.iter().copied().max().unwrap_or(0),
            flood: rate_10min > rules.flood_count,
            flood_periods_24h: flood_periods,
            time_in_flood_percent: flood_periods as f64 * 100.0 / 144.0,
            chattering,
            stale,
            counts,
            rules: RulesView {
                chatter_count: rules.chatter_count,
                chatter_window_seconds: rules.chatter_window_ms as f64 / 1000.0,
                stale_after_seconds: rules.stale_after_ms as f64 / 1000.0,
                flood_count: rules.flood_count,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floods_chattering_and_stale_are_found() {
        let rules = HealthRules::default();
        let mut activity = Activity::default();
        let now = DAY * 10;
        for i in 0..11 {
            activity.raised(&format!("a{i}"), now - 1000 * i, &rules);
        }
        for i in 0..3 {
            activity.raised("chatty", now - 5000 * i, &rules);
        }
        let alarms = [
            ("old", StateName::ActiveAcknowledged, Some(now - DAY - 1)),
            ("new", StateName::ActiveUnacknowledged, Some(now - 1)),
            ("shelved", StateName::Shelved, Some(now - 2 * DAY)),
        ];
        let health = Health::measure(&rules, &activity, &alarms, now);
        assert_eq!(health.rate_10min, 14);
        assert!(health.flood);
        assert_eq!(health.flood_periods_24h, 1);
        assert_eq!(health.chattering, vec!["chatty".to_string()]);
        assert_eq!(health.stale, vec!["old".to_string()]);
        assert_eq!(
            (
                health.counts.active,
                health.counts.unacknowledged,
                health.counts.shelved
            ),
            (2, 1, 1)
        );
    }
}

//! One alarm's ISA-18.2 state machine. The condition judged from the tag's values goes
//! through the on-delay and off-delay; the delayed condition drives annunciation
//! (unacknowledged, acknowledged, returned to normal unacknowledged, latched) unless the
//! alarm is masked: shelved by an operator (until an expiry), suppressed by design (its enable
//! condition does not hold) or out of service. While masked the condition is still followed,
//! so an alarm unmasked while its condition holds is raised again, unacknowledged.
//!
//! Times are the evaluating instance's clock (`now`), never a value's own timestamp, which
//! may lie in the past or the future; the rate of change alone uses the values' times.

use super::condition::{judge, numeric, Sample};
use super::definition::{Definition, Kind};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The states ISA-18.2 names, as the API spells them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum StateName {
    #[default]
    Normal,
    ActiveUnacknowledged,
    ActiveAcknowledged,
    ReturnedUnacknowledged,
    Latched,
    Shelved,
    Suppressed,
    OutOfService,
}

impl StateName {
    pub fn as_str(self) -> &'static str {
        match self {
            StateName::Normal => "normal",
            StateName::ActiveUnacknowledged => "active_unacknowledged",
            StateName::ActiveAcknowledged => "active_acknowledged",
            StateName::ReturnedUnacknowledged => "returned_unacknowledged",
            StateName::Latched => "latched",
            StateName::Shelved => "shelved",
            StateName::Suppressed => "suppressed",
            StateName::OutOfService => "out_of_service",
        }
    }

    pub const ALL: [StateName; 8] = [
        StateName::Normal,
        StateName::ActiveUnacknowledged,
        StateName::ActiveAcknowledged,
        StateName::ReturnedUnacknowledged,
        StateName::Latched,
        StateName::Shelved,
        StateName::Suppressed,
        StateName::OutOfService,
    ];

    pub fn parse(text: &str) -> Option<StateName> {
        StateName::ALL.into_iter().find(|s| s.as_str() == text)
    }

    /// Whether an operator must still act (an unacknowledged or latched alarm).
    pub fn needs_acknowledgement(self) -> bool {
        matches!(
            self,
            StateName::ActiveUnacknowledged
                | StateName::ReturnedUnacknowledged
                | StateName::Latched
        )
    }
}

/// Who shelved an alarm, why, and until when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Shelved {
    pub until_ms: i64,
    pub reason: String,
    pub by: String,
}

/// Who took an alarm out of service, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutOfService {
    pub by: String,
    pub comment: Option<String>,
}

/// What an operator does to an alarm.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Acknowledge,
    Shelve { until_ms: i64, reason: String },
    Unshelve,
    OutOfService,
    InService,
}

impl Action {
    pub fn name(&self) -> &'static str {
        match self {
            Action::Acknowledge => "acknowledge",
            Action::Shelve { .. } => "shelve",
            Action::Unshelve => "unshelve",
            Action::OutOfService => "out-of-service",
            Action::InService => "in-service",
        }
    }
}

/// One alarm's state: what is kept in the store so that it survives a restart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlarmState {
    /// The condition judged from the last value, before the delays.
    pub raw: bool,
    /// The condition after the delays: what annunciation follows.
    pub condition: bool,
    /// When `raw` began to differ from `condition` (the running delay's start).
    pub pending_since_ms: Option<i64>,
    pub acknowledged: bool,
    /// A latching alarm whose condition is gone but which waits to be reset (acknowledged).
    pub latched: bool,
    pub shelved: Option<Shelved>,
    pub suppressed: bool,
    pub out_of_service: Option<OutOfService>,
    /// The tag's last value, its quality, and when it arrived (this instance's clock).
    pub value: Value,
    pub quality: String,
    pub value_ms: Option<i64>,
    /// The last numeric value and its own time (the rate of change's previous point).
    pub last_number: Option<(i64, f64)>,
    /// When the state's name last changed (kept by the engine), and when the alarm was last
    /// raised.
    pub since_ms: i64,
    pub raised_ms: Option<i64>,
}

impl AlarmState {
    /// A new alarm's state: normal, its stale clock starting `now`.
    pub fn new(now: i64) -> AlarmState {
        AlarmState {
            raw: false,
            condition: false,
            pending_since_ms: None,
            acknowledged: true,
            latched: false,
            shelved: None,
            suppressed: false,
            out_of_service: None,
            value: Value::Null,
            quality: "good".into(),
            value_ms: Some(now),
            last_number: None,
            since_ms: now,
            raised_ms: None,
        }
    }

    pub fn name(&self) -> StateName {
        if self.out_of_service.is_some() {
            StateName::OutOfService
        } else if self.shelved.is_some() {
            StateName::Shelved
        } else if self.suppressed {
            StateName::Suppressed
        } else if self.latched {
            StateName::Latched
        } else if self.condition {
            if self.acknowledged {
                StateName::ActiveAcknowledged
            } else {
                StateName::ActiveUnacknowledged
            }
        } else if !self.acknowledged {
            StateName::ReturnedUnacknowledged
        } else {
            StateName::Normal
        }
    }

    fn masked(&self) -> bool {
        self.out_of_service.is_some() || self.shelved.is_some() || self.suppressed
    }

    /// Takes a value of the watched tag.
    pub fn on_sample(&mut self, alarm: &Definition, sample: &Sample, now: i64) {
        if let Some(raw) = judge(alarm, sample, self.raw, self.last_number) {
            self.set_raw(raw, now);
        }
        if let Some(number) = numeric(&sample.value) {
            self.last_number = Some((sample.ts_ms, number));
        }
        self.value = sample.value.clone();
        let quality = sample.quality.label();
        if self.quality != quality {
            self.quality = quality.into();
        }
        self.value_ms = Some(now);
        self.settle(alarm, now);
    }

    /// Whether the enable condition holds (false: suppressed by design).
    pub fn set_enabled(&mut self, alarm: &Definition, enabled: bool, now: i64) {
        if self.suppressed != enabled {
            return;
        }
        self.suppressed = !enabled;
        self.remask(now);
        self.settle(alarm, now);
    }

    /// Applies the delays and expiries due by `now`.
    pub fn on_time(&mut self, alarm: &Definition, now: i64) {
        if alarm.kind == Kind::Stale {
            if let Some(at) = self.value_ms {
                if now >= at + alarm.stale_after_ms() {
                    self.set_raw(true, now);
                }
            }
        }
        if self.shelved.as_ref().is_some_and(|s| now >= s.until_ms) {
            self.shelved = None;
            self.remask(now);
        }
        self.settle(alarm, now);
    }

    /// An operator's action; the error is why it does not apply (a 409's sentence).
    pub fn act(
        &mut self,
        alarm: &Definition,
        action: &Action,
        who: &str,
        now: i64,
    ) -> Result<(), String> {
        let state = self.name();
        match action {
            Action::Acknowledge => {
                if !state.needs_acknowledgement() && state != StateName::ActiveAcknowledged {
                    return Err(format!(
                        "alarm `{}` is {}: there is nothing to acknowledge",
                        alarm.name,
                        state.as_str()
                    ));
                }
                if state == StateName::ActiveAcknowledged {
                    return Err(format!("alarm `{}` is already acknowledged", alarm.name));
                }
                self.acknowledged = true;
                self.latched = false;
            }
            Action::Shelve { until_ms, reason } => {
                if self.out_of_service.is_some() {
                    return Err(format!(
                        "alarm `{}` is out of service and cannot be shelved",
                        alarm.name
                    ));
                }
                self.shelved = Some(Shelved {
                    until_ms: *until_ms,
                    reason: reason.clone(),
                    by: who.to_string(),
                });
                self.remask(now);
            }
            Action::Unshelve => {
                if self.shelved.take().is_none() {
                    return Err(format!("alarm `{}` is not shelved", alarm.name));
                }
                self.remask(now);
            }
            Action::OutOfService => {
                if self.out_of_service.is_some() {
                    return Err(format!("alarm `{}` is already out of service", alarm.name));
                }
                self.shelved = None;
                self.out_of_service = Some(OutOfService {
                    by: who.to_string(),
                    comment: None,
                });
                self.remask(now);
            }
            Action::InService => {
                if self.out_of_service.take().is_none() {
                    return Err(format!("alarm `{}` is not out of service", alarm.name));
                }
                self.remask(now);
            }
        }
        self.settle(alarm, now);
        Ok(())
    }

    /// When something is next due for this alarm (a delay ending, a shelve expiring, the tag
    /// going stale), if anything is.
    pub fn due(&self, alarm: &Definition) -> Option<i64> {
        let mut due: Option<i64> = None;
        let mut at = |t: i64| due = Some(due.map_or(t, |d| d.min(t)));
        if let Some(since) = self.pending_since_ms {
            at(since
                + if self.raw {
                    alarm.on_delay_ms
                } else {
                    alarm.off_delay_ms
                });
        }
        if let Some(shelved) = &self.shelved {
            at(shelved.until_ms);
        }
        if alarm.kind == Kind::Stale && !self.raw {
            if let Some(value_ms) = self.value_ms {
                at(value_ms + alarm.stale_after_ms());
            }
        }
        due
    }

    fn set_raw(&mut self, raw: bool, now: i64) {
        if raw != self.raw {
            self.raw = raw;
            self.pending_since_ms = (raw != self.condition).then_some(now);
        }
    }

    /// Moves the delayed condition when its delay has run, and annunciates the change.
    fn settle(&mut self, alarm: &Definition, now: i64) {
        if self.raw != self.condition {
            let delay = if self.raw {
                alarm.on_delay_ms
            } else {
                alarm.off_delay_ms
            };
            let since = *self.pending_since_ms.get_or_insert(now);
            if now >= since + delay {
                self.pending_since_ms = None;
                self.condition = self.raw;
                if !self.masked() {
                    if self.condition {
                        self.acknowledged = false;
                        self.latched = false;
                        self.raised_ms = Some(now);
                    } else if alarm.latching {
                        self.latched = true;
                    }
                }
            }
        } else {
            self.pending_since_ms = None;
        }
    }

    /// Masking changed: a masked alarm is not annunciated; an unmasked one whose condition
    /// holds is raised again.
    fn remask(&mut self, now: i64) {
        self.latched = false;
        if self.masked() {
            self.acknowledged = true;
        } else if self.condition {
            self.acknowledged = false;
            self.raised_ms = Some(now);
        } else {
            self.acknowledged = true;
        }
    }
}

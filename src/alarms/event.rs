//! An alarm's state change as everything downstream of the engine carries it: the journal
//! (one row each), `$SYS/svc/alarms/<domain>/<alarm>`, the Server-Sent Events stream and the
//! notification pipelines; and an alarm's current status, as `GET /svc/alarms/active` and the
//! stream's snapshot list it. Times are RFC 3339 in UTC, as everywhere in the API.

use super::definition::{Definition, Kind, Priority};
pub use super::state::StateName;
use super::state::{AlarmState, OutOfService, Shelved};
use crate::historian::format_ms;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One change of an alarm's state, or an operator's action on it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlarmEvent {
    pub domain: String,
    pub alarm: String,
    pub tag: String,
    pub kind: Kind,
    pub priority: Priority,
    pub state: StateName,
    pub previous: StateName,
    /// The tag's value when the change happened, and its quality.
    pub value: Value,
    pub quality: String,
    pub unit: Option<String>,
    /// The alarm's message, rendered with that value.
    pub message: String,
    pub at: String,
    #[serde(skip)]
    pub at_ms: i64,
    /// Who acted (an operator's action), or `None` when the process changed it.
    pub who: Option<String>,
    pub comment: Option<String>,
    /// What the change was: `raised`, `cleared`, `acknowledge`, `shelve`, … (the action's
    /// name for an operator's action).
    pub cause: String,
}

impl AlarmEvent {
    /// Whether the event's state is one an alarm summary lists (anything but normal).
    pub fn is_standing(&self) -> bool {
        self.state != StateName::Normal
    }
}

/// An alarm as it stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlarmStatus {
    pub name: String,
    pub description: Option<String>,
    pub tag: String,
    pub kind: Kind,
    pub priority: Priority,
    pub setpoint: Value,
    pub deadband: f64,
    pub state: StateName,
    /// Whether the condition holds now (after its delays), whatever the annunciation.
    pub condition: bool,
    pub value: Value,
    pub quality: String,
    pub unit: Option<String>,
    pub message: String,
    /// When the state last changed, and when the alarm was last raised.
    pub since: String,
    pub raised: Option<String>,
    pub shelved: Option<ShelvedStatus>,
    pub out_of_service: Option<OutOfService>,
}

/// A shelved alarm's shelve, its expiry as a time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShelvedStatus {
    pub until: String,
    pub reason: String,
    pub by: String,
}

impl From<&Shelved> for ShelvedStatus {
    fn from(shelved: &Shelved) -> ShelvedStatus {
        ShelvedStatus {
            until: format_ms(shelved.until_ms),
            reason: shelved.reason.clone(),
            by: shelved.by.clone(),
        }
    }
}

impl AlarmStatus {
    pub fn of(alarm: &Definition, state: &AlarmState, unit: Option<&str>) -> AlarmStatus {
        AlarmStatus {
            name: alarm.name.clone(),
            description: alarm.description.clone(),
            tag: alarm.tag.clone(),
            kind: alarm.kind,
            priority: alarm.priority,
            setpoint: alarm.setpoint.clone(),
            deadband: alarm.deadband,
            state: state.name(),
            condition: state.condition,
            value: state.value.clone(),
            quality: state.quality.clone(),
            unit: unit.map(str::to_string),
            message: alarm.render(&state.value, unit),
            since: format_ms(state.since_ms),
            raised: state.raised_ms.map(format_ms),
            shelved: state.shelved.as_ref().map(ShelvedStatus::from),
            out_of_service: state.out_of_service.clone(),
        }
    }
}

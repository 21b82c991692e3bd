//! The REST side of the monitor: device discovery (`GET /svc/`), the server's last values
//! (`GET /svc/tag/stream`'s snapshot, see `snapshot.rs`), the domain's historized tags
//! (`GET /svc/historian/list`), its upstreams' and connectors' states (`GET /svc/upstreams/status`,
//! `GET /svc/connectors/status`), how many of its alarms wait for acknowledgement
//! (`GET /svc/alarms/active`) and the
//! last hour of one tag (`PATCH /svc/historian`: raw values, or 10-second means when the hour
//! holds more than [`RAW_LIMIT`]), fetched with blocking reqwest on a background thread so the
//! UI never waits on HTTP.

use super::snapshot::{self, LastValue};
use crate::client::{Client, Credential};
use crate::model::{DeviceInfo, LinkBrief};
use anyhow::anyhow;
use reqwest::blocking::RequestBuilder;
use reqwest::Method;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use std::io::BufReader;
use std::sync::mpsc::{Receiver, Sender};
use std::time::Instant;

/// The REST calls of the monitor, through the CLI's client (same URL, domain and credential
/// resolution as every client subcommand: flags, environment, then the profile).
#[derive(Clone)]
pub struct Rest {
    client: Client,
}

impl Rest {
    pub fn new(client: Client) -> Rest {
        Rest { client }
    }

    /// The base URL of the REST API.
    pub fn base(&self) -> &str {
        &self.client.base
    }

    /// The MQTT password matching the REST credential: the API key or the JWT (the broker
    /// accepts both).
    pub fn mqtt_password(&self) -> Option<String> {
        match &self.client.credential {
            Credential::ApiKey(secret) | Credential::Token(secret) => Some(secret.clone()),
            Credential::None => None,
        }
    }

    fn send<T: DeserializeOwned>(&self, req: RequestBuilder, what: &str) -> anyhow::Result<T> {
        self.client.json(req).map_err(|e| anyhow!("{what}: {e}"))
    }

    /// `GET /svc/`: the broker's listeners.
    pub fn device_info(&self) -> anyhow::Result<DeviceInfo> {
        self.send(self.client.request(Method::GET, "/svc/"), "GET /svc/")
    }

    /// The last value of every tag of the domain matching `filter`, from the opening snapshot
    /// of `GET /svc/tag/stream` (the stream is closed once it is read).
    pub fn last_values(&self, filter: &str) -> anyhow::Result<Vec<LastValue>> {
        const WHAT: &str = "GET /svc/tag/stream";
        let req = self
            .client
            .request(Method::GET, "/svc/tag/stream")
            .query(&[("topic", filter), ("payload", "raw")]);
        let stream = self.client.send(req).map_err(|e| anyhow!("{WHAT}: {e}"))?;
        let now_ms = chrono::Utc::now().timestamp_millis();
        snapshot::read(BufReader::new(stream), now_ms).map_err(|e| anyhow!("{WHAT}: {e:#}"))
    }

    /// `GET /svc/historian/list`: the domain's historized tags.
    pub fn historized(&self) -> anyhow::Result<Vec<String>> {
        self.send(
            self.client.request(Method::GET, "/svc/historian/list"),
            "GET /svc/historian/list",
        )
    }

    /// The last hour of `topic`: the raw values when there are at most [`RAW_LIMIT`], else
    /// 10-second means.
    pub fn trend(&self, topic: &str) -> anyhow::Result<Trend> {
        let now = chrono::Utc::now();
        let start = now - chrono::Duration::hours(1);
        let mut body = json!({
            "topic": topic,
            "start_time": start.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "range": "1h",
            "limit": RAW_LIMIT + 1,
        });
        let raw = self.query(&body)?;
        if raw.as_array().map_or(0, Vec::len) <= RAW_LIMIT {
            return Ok(Trend::from_points(&raw, now.timestamp_millis(), false));
        }
        body["limit"] = Value::Null;
        body["bucket"] = json!("10s");
        body["aggregation"] = json!("mean");
        let means = self.query(&body)?;
        Ok(Trend::from_points(&means, now.timestamp_millis(), true))
    }

    /// `GET /svc/upstreams/status`: the domain's upstreams and their states.
    pub fn upstreams(&self) -> anyhow::Result<Vec<LinkBrief>> {
        self.send(
            self.client.request(Method::GET, "/svc/upstreams/status"),
            "GET /svc/upstreams/status",
        )
    }

    /// `GET /svc/connectors/status`: the domain's connectors and their states.
    pub fn connectors(&self) -> anyhow::Result<Vec<LinkBrief>> {
        self.send(
            self.client.request(Method::GET, "/svc/connectors/status"),
            "GET /svc/connectors/status",
        )
    }

    /// `GET /svc/alarms/active`: the domain's standing alarms, counted.
    pub fn alarms(&self) -> anyhow::Result<AlarmCount> {
        let standing: Vec<StandingAlarm> = self.send(
            self.client.request(Method::GET, "/svc/alarms/active"),
            "GET /svc/alarms/active",
        )?;
        Ok(AlarmCount::of(&standing))
    }

    fn query(&self, body: &Value) -> anyhow::Result<Value> {
        self.send(
            self.client
                .request(Method::PATCH, "/svc/historian")
                .json(body),
            "PATCH /svc/historian",
        )
    }
}

/// Most raw points charted; a busier hour is fetched as 10-second means.
pub const RAW_LIMIT: usize = 1000;

/// A historian trend ready to chart: x in minutes relative to the fetch (-60..0), y the value.
#[derive(Debug, Clone, PartialEq)]
pub struct Trend {
    pub points: Vec<(f64, f64)>,
    /// Points in the answer, numeric or not.
    pub total: usize,
    /// Whether the points are 10-second means rather than raw values.
    pub bucketed: bool,
}

impl Trend {
    /// Reads `[{"timestamp","value"}]`; keeps the points with a numeric value (or a numeric
    /// `value` member) and a readable timestamp.
    pub fn from_points(answer: &Value, now_ms: i64, bucketed: bool) -> Trend {
        let list = answer.as_array().map(Vec::as_slice).unwrap_or_default();
        let points = list
            .iter()
            .filter_map(|p| {
                let ts =
                    chrono::DateTime::parse_from_rfc3339(p.get("timestamp")?.as_str()?).ok()?;
                let value = p.get("value")?;
                let y = value
                    .as_f64()
                    .or_else(|| value.get("value").and_then(Value::as_f64))?;
                let x = (ts.timestamp_millis() - now_ms) as f64 / 60_000.0;
                Some((x, y))
            })
            .collect();
        Trend {
            points,
            total: list.len(),
            bucketed,
        }
    }
}

/// What the status bar needs of a standing alarm.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct StandingAlarm {
    pub state: String,
    pub priority: String,
}

/// Priorities, most urgent first.
const PRIORITIES: [&str; 4] = ["critical", "high", "medium", "low"];

/// The domain's alarms waiting for an operator's acknowledgement (the server's
/// "unacknowledged": active or returned and not yet acknowledged, or latched), and the highest
/// priority among them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AlarmCount {
    pub unacknowledged: usize,
    /// `critical`, `high`, `medium` or `low`; `None` when none waits.
    pub top: Option<&'static str>,
}

impl AlarmCount {
    pub fn of(standing: &[StandingAlarm]) -> AlarmCount {
        let waiting: Vec<&StandingAlarm> = standing
            .iter()
            .filter(|a| {
                matches!(
                    a.state.as_str(),
                    "active_unacknowledged" | "returned_unacknowledged" | "latched"
                )
            })
            .collect();
        let top = PRIORITIES
            .into_iter()
            .find(|p| waiting.iter().any(|a| a.priority == *p));
        AlarmCount {
            unacknowledged: waiting.len(),
            top,
        }
    }
}

/// Work for the history thread.
#[derive(Debug, Clone, PartialEq)]
pub enum HistoryRequest {
    /// The server's last values of the tags matching this filter.
    LastValues(String),
    Historized,
    Trend(String),
    Upstreams,
    Alarms,
}

/// Answers of the history thread.
#[derive(Debug, Clone)]
pub enum HistoryEvent {
    LastValues(Result<Vec<LastValue>, String>),
    Historized(Result<Vec<String>, String>),
    Trend {
        topic: String,
        result: Result<Trend, String>,
        at: Instant,
    },
    /// The domain's upstreams; `None` when they cannot be read (no rights, an older server).
    Upstreams(Option<Vec<LinkBrief>>),
    /// The domain's connectors; `None` when they cannot be read.
    Connectors(Option<Vec<LinkBrief>>),
    /// The domain's alarms waiting for acknowledgement; `None` when they cannot be read (no
    /// right to read alarms, an older server).
    Alarms(Option<AlarmCount>),
}

/// Starts the history thread; it ends when either channel's other side is dropped. Requests
/// that queued up while a fetch ran are coalesced: only the latest trend (and snapshot of last
/// values) is fetched.
pub fn spawn(
    rest: Rest,
    requests: Receiver<HistoryRequest>,
    events: Sender<HistoryEvent>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("svc-tui-history".into())
        .spawn(move || {
            while let Ok(first) = requests.recv() {
                let mut last_values = None;
                let mut historized = false;
                let mut trend = None;
                let mut upstreams = false;
                let mut alarms = false;
                for request in std::iter::once(first).chain(requests.try_iter()) {
                    match request {
                        HistoryRequest::LastValues(filter) => last_values = Some(filter),
                        HistoryRequest::Historized => historized = true,
                        HistoryRequest::Trend(topic) => trend = Some(topic),
                        HistoryRequest::Upstreams => upstreams = true,
                        HistoryRequest::Alarms => alarms = true,
                    }
                }
                // First: the tree is empty until they arrive.
                if let Some(filter) = last_values {
                    let list = rest.last_values(&filter).map_err(|e| format!("{e:#}"));
                    if events.send(HistoryEvent::LastValues(list)).is_err() {
                        return;
                    }
                }
                if alarms {
                    let count = rest.alarms().ok();
                    if events.send(HistoryEvent::Alarms(count)).is_err() {
                        return;
                    }
                }
                if upstreams {
                    let list = rest.upstreams().ok();
                    if events.send(HistoryEvent::Upstreams(list)).is_err() {
                        return;
                    }
                    let list = rest.connectors().ok();
                    if events.send(HistoryEvent::Connectors(list)).is_err() {
                        return;
                    }
                }
                if historized {
                    let list = rest.historized().map_err(|e| format!("{e:#}"));
                    if events.send(HistoryEvent::Historized(list)).is_err() {
                        return;
                    }
                }
                if let Some(topic) = trend {
                    let result = rest.trend(&topic).map_err(|e| format!("{e:#}"));
                    let at = Instant::now();
                    if events
                        .send(HistoryEvent::Trend { topic, result, at })
                        .is_err()
                    {
                        return;
                    }
                }
            }
        })
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trend_keeps_numeric_points_relative_to_now() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-01-01T01:00:00Z")
            .unwrap()
            .timestamp_millis();
        let answer = json!([
            {"timestamp": "2026-01-01T00:00:00.000Z", "value": 1.5},
            {"timestamp": "2026-01-01T00:30:00.000Z", "value": {"value": 2}},
            {"timestamp": "2026-01-01T00:45:00.000Z", "value": null},
            {"timestamp": "bad", "value": 3},
            {"timestamp": "2026-01-01T00:59:00.000Z", "value": "text"}
        ]);
        let trend = Trend::from_points(&answer, now, false);
        assert_eq!(trend.points, [(-60.0, 1.5), (-30.0, 2.0)]);
        assert_eq!(trend.total, 5);
        assert_eq!(Trend::from_points(&json!({}), now, true).total, 0);
    }

    #[test]
    fn alarms_waiting_for_acknowledgement_are_counted_with_the_top_priority() {
        let standing: Vec<StandingAlarm> = serde_json::from_value(json!([
            {"name": "a", "state": "active_acknowledged", "priority": "critical"},
            {"name": "b", "state": "active_unacknowledged", "priority": "medium"},
            {"name": "c", "state": "returned_unacknowledged", "priority": "high"},
            {"name": "d", "state": "latched", "priority": "low"},
            {"name": "e", "state": "shelved", "priority": "critical"}
        ]))
        .unwrap();
        let count = AlarmCount::of(&standing);
        assert_eq!(
            count,
            AlarmCount {
                unacknowledged: 3,
                top: Some("high")
            }
        );
        assert_eq!(AlarmCount::of(&standing[..1]), AlarmCount::default());
    }
}

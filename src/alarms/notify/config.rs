//! An `alarm_notifications` record: one notification pipeline of a domain. It takes the events
//! of the domain's alarms whose priority is in `priorities` and whose new state is in `states`,
//! and sends each to a `webhook` (an HTTP POST of JSON) and/or by `email` (one plain-text mail
//! per address in `to`, through the SMTP server the record names; its `password` is write-only
//! and never stored in the record). Optional: a `rate_limit` per recipient, a `digest` that
//! folds a burst of events into one message, and an `escalation` that tells a second list when
//! a raised alarm stays unacknowledged. Every field is checked with an error naming it; what is
//! stored is complete, with its defaults filled in (see docs/decisions/alarm-notifications.md).

use crate::alarms::{Priority, StateName};
use crate::duration::parse_duration;
use crate::fields::{named_record, number, object, only, text, within};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::str::FromStr;

/// The system table of notification pipelines; its records fall under the `alarms` feature.
pub const TABLE: &str = "alarm_notifications";

/// The states a pipeline notifies when the record names none: an alarm raised, and an alarm
/// back to normal.
pub const DEFAULT_STATES: [StateName; 2] = [StateName::ActiveUnacknowledged, StateName::Normal];
const DEFAULT_DIGEST_WINDOW: &str = "1m";
const DEFAULT_DIGEST_MIN: u64 = 5;
const DEFAULT_RATE_PER: &str = "10m";
const DEFAULT_ESCALATION_AFTER: &str = "15m";

/// How the SMTP connection is secured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tls {
    /// Plain SMTP (a relay on the same host or network).
    None,
    /// Plain, upgraded with STARTTLS before anything is sent (refused when the server cannot).
    Starttls,
    /// TLS from the first byte (SMTPS), as `tls: "tls"` says.
    Implicit,
}

impl Tls {
    fn parse(text: &str) -> Option<Tls> {
        match text {
            "none" => Some(Tls::None),
            "starttls" => Some(Tls::Starttls),
            "tls" => Some(Tls::Implicit),
            _ => None,
        }
    }

    /// The port when the record names none: 25, 587 (submission) or 465 (SMTPS).
    fn default_port(self) -> u64 {
        match self {
            Tls::None => 25,
            Tls::Starttls => 587,
            Tls::Implicit => 465,
        }
    }
}

/// Where a webhook POSTs, with the headers it adds (an authorization, say).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Webhook {
    pub url: String,
    #[serde(default)]
    pub headers: Vec<(String, String)>,
}

/// The SMTP server and the addresses of a pipeline's mails (the password is kept apart).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Email {
    pub host: String,
    pub port: u16,
    pub tls: Tls,
    pub username: Option<String>,
    pub from: String,
    pub to: Vec<String>,
}

/// At most `count` messages to one recipient in any `per_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    pub count: usize,
    pub per_ms: i64,
}

/// At least `min` events within `window_ms` go as one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Digest {
    pub window_ms: i64,
    pub min: usize,
}

/// Who is told when a raised alarm is still unacknowledged `after_ms` later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escalation {
    pub after_ms: i64,
    /// `after` as the record says it ("15m"), for the message.
    pub after: String,
    pub to: Vec<String>,
    pub webhook: Option<Webhook>,
}

/// A pipeline, read from its stored (normalised) record.
#[derive(Debug, Clone, PartialEq)]
pub struct Pipeline {
    /// The record's key: what the queue and the password are kept under.
    pub key: String,
    pub name: String,
    pub enabled: bool,
    pub priorities: Vec<Priority>,
    pub states: Vec<StateName>,
    pub webhook: Option<Webhook>,
    pub email: Option<Email>,
    pub rate_limit: Option<RateLimit>,
    pub digest: Option<Digest>,
    pub escalation: Option<Escalation>,
}

impl Pipeline {
    /// The pipeline of a stored record with key `key`; `None` when the record is not one
    /// [`normalise`] wrote (it never is, but a broken row must not stop the others).
    pub fn from_record(key: &str, record: &Value) -> Option<Pipeline> {
        let fields = record.as_object()?;
        let ms = |map: &Map<String, Value>, name: &str| -> Option<i64> {
            let text = map.get(name)?.as_str()?;
            Some(parse_duration(text).ok()?.as_millis().min(i64::MAX as u128) as i64)
        };
        let email = match fields.get("email") {
            Some(Value::Object(e)) => Some(Email {
                host: e.get("host")?.as_str()?.to_string(),
                port: u16::try_from(e.get("port")?.as_u64()?).ok()?,
                tls: Tls::parse(e.get("tls")?.as_str()?)?,
                username: e
                    .get("username")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                from: e.get("from")?.as_str()?.to_string(),
                to: strings(e.get("to")),
            }),
            _ => None,
        };
        let rate_limit = match fields.get("rate_limit") {
            Some(Value::Object(r)) => Some(RateLimit {
                count: r.get("count")?.as_u64()? as usize,
                per_ms: ms(r, "per")?,
            }),
            _ => None,
        };
        let digest = match fields.get("digest") {
            Some(Value::Object(d)) => Some(Digest {
                window_ms: ms(d, "window")?,
                min: d.get("min")?.as_u64()? as usize,
            }),
            _ => None,
        };
        let escalation = match fields.get("escalation") {
            Some(Value::Object(e)) => Some(Escalation {
                after_ms: ms(e, "after")?,
                after: e.get("after")?.as_str()?.to_string(),
                to: strings(e.get("to")),
                webhook: e.get("webhook").and_then(webhook_of),
            }),
            _ => None,
        };
        Some(Pipeline {
            key: key.to_string(),
            name: fields.get("name")?.as_str()?.to_string(),
            enabled: fields
                .get("enabled")
                .and_then(Value::as_bool)
                .unwrap_or(true),
            priorities: strings(fields.get("priorities"))
                .iter()
                .filter_map(|p| Priority::parse(p))
                .collect(),
            states: strings(fields.get("states"))
                .iter()
                .filter_map(|s| StateName::parse(s))
                .collect(),
            webhook: fields.get("webhook").and_then(webhook_of),
            email,
            rate_limit,
            digest,
            escalation,
        })
    }

    /// Whether the pipeline notifies an event of this priority that brought this state.
    pub fn takes(&self, priority: Priority, state: StateName) -> bool {
        self.enabled && self.priorities.contains(&priority) && self.states.contains(&state)
    }
}

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn webhook_of(value: &Value) -> Option<Webhook> {
    let map = value.as_object()?;
    let headers = map
        .get("headers")
        .and_then(Value::as_object)
        .map(|h| {
            h.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    Some(Webhook {
        url: map.get("url")?.as_str()?.to_string(),
        headers,
    })
}

/// Checks an `alarm_notifications` record and rewrites it normalised (known fields, defaults
/// filled in). The write-only `password` was taken out before (see `take_password_secret`).
pub fn normalise(fields: &mut Map<String, Value>) -> Result<(), String> {
    let known = [
        "name",
        "description",
        "enabled",
        "priorities",
        "states",
        "webhook",
        "email",
        "password_set",
        "rate_limit",
        "digest",
        "escalation",
    ];
    let mut out = named_record(fields, &known)?;
    out.insert(
        "priorities".into(),
        json!(priorities(fields.get("priorities"))?),
    );
    out.insert("states".into(), json!(states(fields.get("states"))?));
    let webhook = optional(fields, "webhook", |v| webhook("webhook", v))?;
    let email = optional(fields, "email", email)?;
    if webhook.is_none() && email.is_none() {
        return Err(
            "field `webhook` or field `email` is required: a pipeline needs somewhere to send"
                .into(),
        );
    }
    let escalation = optional(fields, "escalation", |v| escalation(v, email.is_some()))?;
    for (name, value) in [
        ("webhook", webhook),
        ("email", email),
        ("escalation", escalation),
    ] {
        if let Some(value) = value {
            out.insert(name.into(), value);
        }
    }
    if let Some(rate_limit) = optional(fields, "rate_limit", rate_limit)? {
        out.insert("rate_limit".into(), rate_limit);
    }
    if let Some(digest) = optional(fields, "digest", digest)? {
        out.insert("digest".into(), digest);
    }
    if let Some(set) = fields.get("password_set").and_then(Value::as_bool) {
        out.insert("password_set".into(), json!(set));
    }
    *fields = out;
    Ok(())
}

/// Runs `check` on field `name` when it is there and not null.
fn optional(
    fields: &Map<String, Value>,
    name: &str,
    check: impl FnOnce(&Value) -> Result<Value, String>,
) -> Result<Option<Value>, String> {
    match fields.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => check(value).map(Some),
    }
}

fn names<'a>(
    value: Option<&'a Value>,
    name: &str,
    what: &str,
) -> Result<Option<Vec<&'a str>>, String> {
    let items = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(items)) if !items.is_empty() => items,
        Some(_) => {
            return Err(format!(
                "field `{name}` must be a non-empty array of {what}"
            ))
        }
    };
    items
        .iter()
        .map(|item| {
            item.as_str()
                .ok_or_else(|| format!("field `{name}` must hold {what}, not {item}"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

fn priorities(value: Option<&Value>) -> Result<Vec<&'static str>, String> {
    let what = "priorities (low, medium, high, critical)";
    let Some(items) = names(value, "priorities", what)? else {
        return Ok(crate::alarms::definition::PRIORITIES
            .iter()
            .map(|(n, _)| *n)
            .collect());
    };
    items
        .into_iter()
        .map(|p| {
            Priority::parse(p)
                .map(Priority::name)
                .ok_or_else(|| format!("field `priorities` must hold {what}, not `{p}`"))
        })
        .collect()
}

fn states(value: Option<&Value>) -> Result<Vec<&'static str>, String> {
    let Some(items) = names(value, "states", "alarm states")? else {
        return Ok(DEFAULT_STATES.iter().map(|s| s.as_str()).collect());
    };
    items
        .into_iter()
        .map(|s| {
            StateName::parse(s).map(StateName::as_str).ok_or_else(|| {
                format!("field `states` must hold alarm states such as `active_unacknowledged` or `normal`, not `{s}`")
            })
        })
        .collect()
}

fn webhook(name: &str, value: &Value) -> Result<Value, String> {
    let map = object(Some(value), name)?;
    only(&map, name, &["url", "headers"])?;
    let url = text(&map, "url")
        .map_err(within(name))?
        .ok_or_else(|| format!("field `{name}.url` is required"))?;
    let parsed = reqwest::Url::parse(&url)
        .map_err(|e| format!("field `{name}.url` is not a URL ({e}): `{url}`"))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(format!(
            "field `{name}.url` must be an http or https URL with a host, not `{url}`"
        ));
    }
    let headers = object(map.get("headers"), &format!("{name}.headers"))?;
    for (header, value) in &headers {
        if http::HeaderName::from_bytes(header.as_bytes()).is_err() {
            return Err(format!(
                "field `{name}.headers` holds `{header}`, which is not a header name"
            ));
        }
        let valid = value
            .as_str()
            .is_some_and(|v| http::HeaderValue::from_str(v).is_ok());
        if !valid {
            return Err(format!(
                "field `{name}.headers.{header}` must be a string a header can carry"
            ));
        }
    }
    Ok(json!({"url": url, "headers": headers}))
}

fn email(value: &Value) -> Result<Value, String> {
    let map = object(Some(value), "email")?;
    only(
        &map,
        "email",
        &["host", "port", "tls", "username", "from", "to"],
    )?;
    let host = text(&map, "host")
        .map_err(within("email"))?
        .filter(|h| !h.trim().is_empty())
        .ok_or("field `email.host` is required (the SMTP server)")?;
    let tls_text = text(&map, "tls")
        .map_err(within("email"))?
        .unwrap_or_else(|| "starttls".into());
    let tls = Tls::parse(&tls_text).ok_or_else(|| {
        format!("field `email.tls` must be `none`, `starttls` or `tls`, not `{tls_text}`")
    })?;
    let port = number(&map, "port", 1, 65535)
        .map_err(within("email"))?
        .unwrap_or_else(|| tls.default_port());
    let username = text(&map, "username").map_err(within("email"))?;
    let from = text(&map, "from")
        .map_err(within("email"))?
        .ok_or("field `email.from` is required")?;
    mailbox("email.from", &from)?;
    let to = addresses("email.to", map.get("to"))?;
    let mut out = json!({"host": host, "port": port, "tls": tls_text, "from": from, "to": to});
    if let Some(username) = username {
        out["username"] = json!(username);
    }
    Ok(out)
}

/// A non-empty list of mail addresses (`ops@example.com` or `Ops <ops@example.com>`).
fn addresses(name: &str, value: Option<&Value>) -> Result<Vec<String>, String> {
    let items = names(value, name, "mail addresses")?.ok_or_else(|| {
        format!("field `{name}` is required (a non-empty array of mail addresses)")
    })?;
    items.into_iter().map(|a| mailbox(name, a)).collect()
}

fn mailbox(name: &str, address: &str) -> Result<String, String> {
    lettre::message::Mailbox::from_str(address.trim())
        .map(|_| address.trim().to_string())
        .map_err(|_| format!("field `{name}` must hold mail addresses, not `{address}`"))
}

fn duration(
    map: &Map<String, Value>,
    parent: &str,
    name: &str,
    default: Option<&str>,
) -> Result<String, String> {
    let field = format!("{parent}.{name}");
    let text = text(map, name)
        .map_err(|_| format!("field `{field}` must be a duration such as \"10m\""))?
        .or(default.map(str::to_string))
        .ok_or_else(|| format!("field `{field}` is required"))?;
    let parsed = parse_duration(&text).map_err(|e| format!("field `{field}`: {e}"))?;
    if parsed.is_zero() {
        return Err(format!("field `{field}` must be longer than zero"));
    }
    Ok(text)
}

fn rate_limit(value: &Value) -> Result<Value, String> {
    let map = object(Some(value), "rate_limit")?;
    only(&map, "rate_limit", &["count", "per"])?;
    let count = number(&map, "count", 1, 10_000)
        .map_err(within("rate_limit"))?
        .ok_or("field `rate_limit.count` is required")?;
    let per = duration(&map, "rate_limit", "per", Some(DEFAULT_RATE_PER))?;
    Ok(json!({"count": count, "per": per}))
}

fn digest(value: &Value) -> Result<Value, String> {
    let map = object(Some(value), "digest")?;
    only(&map, "digest", &["window", "min"])?;
    let window = duration(&map, "digest", "window", Some(DEFAULT_DIGEST_WINDOW))?;
    let min = number(&map, "min", 2, 10_000)
        .map_err(within("digest"))?
        .unwrap_or(DEFAULT_DIGEST_MIN);
    Ok(json!({"window": window, "min": min}))
}

fn escalation(value: &Value, has_email: bool) -> Result<Value, String> {
    let map = object(Some(value), "escalation")?;
    only(&map, "escalation", &["after", "to", "webhook"])?;
    let after = duration(&map, "escalation", "after", Some(DEFAULT_ESCALATION_AFTER))?;
    let to = match map.get("to") {
        None | Some(Value::Null) => Vec::new(),
        some => addresses("escalation.to", some)?,
    };
    let webhook = optional(&map, "webhook", |v| webhook("escalation.webhook", v))?;
    if to.is_empty() && webhook.is_none() {
        return Err("field `escalation.to` or field `escalation.webhook` is required".into());
    }
    if !to.is_empty() && !has_email {
        return Err(
            "field `escalation.to` needs field `email`, whose server sends the escalation".into(),
        );
    }
    let mut out = json!({"after": after, "to": to});
    if let Some(webhook) = webhook {
        out["webhook"] = webhook;
    }
    Ok(out)
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;

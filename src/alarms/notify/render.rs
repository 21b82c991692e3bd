//! What a notification says: a plain-text mail (subject and body) and a webhook's JSON, for
//! one event, a digest of several, or an escalation of an alarm left unacknowledged. A mail
//! names the alarm, its state (and the one before), priority, tag, value with its unit and
//! quality, the alarm's message, the time, and who acted with their comment.

use crate::alarms::AlarmEvent;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::fmt::Write;

/// Which kind of message to make of the events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// One event (or, with several, a digest).
    Alarm,
    /// A raised alarm still unacknowledged after the escalation's delay (its text, e.g. "15m").
    Escalation,
}

/// A plain-text mail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mail {
    pub subject: String,
    pub text: String,
}

/// The mail of `events` (at least one) of pipeline `pipeline` in `domain`: one event's own, or
/// a digest listing them in order. `after` is the escalation's delay for [`Kind::Escalation`].
pub fn mail(domain: &str, pipeline: &str, events: &[AlarmEvent], kind: Kind, after: &str) -> Mail {
    let mut text = String::new();
    let subject = match (kind, events) {
        (Kind::Escalation, [event, ..]) => {
            let _ = writeln!(
                text,
                "Alarm {} of {} is still not acknowledged {} after it was raised.\n",
                event.alarm, domain, after
            );
            format!(
                "[svc] ESCALATION: {} alarm {} not acknowledged for {}",
                event.priority.name(),
                event.alarm,
                after
            )
        }
        (_, [event]) => format!(
            "[svc] {} alarm {}: {}",
            event.priority.name(),
            event.alarm,
            event.state.as_str()
        ),
        (_, events) => {
            let _ = writeln!(
                text,
                "{} alarm notifications of {} (pipeline {}), oldest first:\n",
                events.len(),
                domain,
                pipeline
            );
            format!("[svc] {} alarm notifications of {}", events.len(), domain)
        }
    };
    for (i, event) in events.iter().enumerate() {
        if i > 0 {
            text.push('\n');
        }
        block(&mut text, event);
    }
    let _ = write!(
        text,
        "\n-- \nsvc alarm notifications, domain {domain}, pipeline {pipeline}\n"
    );
    Mail {
        // A header never holds a line break, whatever an alarm's name holds.
        subject: subject.replace(['\r', '\n'], " "),
        text,
    }
}

fn block(text: &mut String, event: &AlarmEvent) {
    let mut line = |label: &str, value: String| {
        let _ = writeln!(text, "{label:<10}{value}");
    };
    line("Alarm:", event.alarm.clone());
    line(
        "State:",
        format!(
            "{} (was {}; {})",
            event.state.as_str(),
            event.previous.as_str(),
            event.cause
        ),
    );
    line("Priority:", event.priority.name().to_string());
    line("Tag:", event.tag.clone());
    line(
        "Value:",
        format!("{} (quality {})", value_with_unit(event), event.quality),
    );
    line("Message:", event.message.clone());
    line("Time:", event.at.clone());
    if let Some(who) = &event.who {
        line("By:", who.clone());
    }
    if let Some(comment) = &event.comment {
        line("Comment:", comment.clone());
    }
}

/// The value as a person reads it: a string without its quotes, then the unit.
pub fn value_with_unit(event: &AlarmEvent) -> String {
    let value = match &event.value {
        Value::String(s) => s.clone(),
        Value::Null => "none".to_string(),
        other => other.to_string(),
    };
    match event.unit.as_deref() {
        Some(unit) if !unit.is_empty() => format!("{value} {unit}"),
        _ => value,
    }
}

/// A webhook's JSON: `{"type": "alarm", "event": …}` for one event, `{"type": "digest",
/// "events": […]}` for several, `{"type": "escalation", "after": …, "event": …}`; each with the
/// domain and the pipeline's name. Events are as the alarm stream carries them.
pub fn webhook_body(
    domain: &str,
    pipeline: &str,
    events: &[AlarmEvent],
    kind: Kind,
    after: &str,
) -> Value {
    match (kind, events) {
        (Kind::Escalation, [event, ..]) => json!({
            "type": "escalation", "domain": domain, "pipeline": pipeline,
            "after": after, "event": event,
        }),
        (_, [event]) => json!({
            "type": "alarm", "domain": domain, "pipeline": pipeline, "event": event,
        }),
        (_, events) => json!({
            "type": "digest", "domain": domain, "pipeline": pipeline,
            "count": events.len(), "events": events,
        }),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::alarms::definition::Kind as AlarmKind;
    use crate::alarms::{Priority, StateName};

    pub(crate) fn event(alarm: &str, state: StateName, at_ms: i64) -> AlarmEvent {
        AlarmEvent {
            domain: "acme".into(),
            alarm: alarm.into(),
            tag: "plant/boiler/temp".into(),
            kind: AlarmKind::High,
            priority: Priority::High,
            state,
            previous: StateName::Normal,
            value: json!(97.5),
            quality: "good".into(),
            unit: Some("°C".into()),
            message: format!("{alarm}: boiler at 97.5 °C"),
            at: crate::historian::format_ms(at_ms),
            at_ms,
            who: None,
            comment: None,
            cause: "raised".into(),
        }
    }

    #[test]
    fn one_event_names_alarm_state_priority_value_message_and_time() {
        let mut e = event(
            "boiler_hot",
            StateName::ActiveUnacknowledged,
            1_700_000_000_000,
        );
        e.who = Some("alice".into());
        e.comment = Some("on it".into());
        let m = mail("acme", "ops", &[e], Kind::Alarm, "");
        assert_eq!(
            m.subject,
            "[svc] high alarm boiler_hot: active_unacknowledged"
        );
        for needle in [
            "Alarm:    boiler_hot",
            "State:    active_unacknowledged (was normal; raised)",
            "Priority: high",
            "Value:    97.5 °C (quality good)",
            "Message:  boiler_hot: boiler at 97.5 °C",
            "Time:     2023-11-14T22:13:20.000Z",
            "By:       alice",
            "Comment:  on it",
        ] {
            assert!(
                m.text.contains(needle),
                "{needle} missing from:\n{}",
                m.text
            );
        }
    }

    #[test]
    fn a_digest_lists_every_event_and_an_escalation_says_how_long() {
        let events: Vec<_> = (0..3)
            .map(|i| event(&format!("a{i}"), StateName::ActiveUnacknowledged, i))
            .collect();
        let m = mail("acme", "ops", &events, Kind::Alarm, "");
        assert_eq!(m.subject, "[svc] 3 alarm notifications of acme");
        assert!(m.text.contains("Alarm:    a0") && m.text.contains("Alarm:    a2"));
        let body = webhook_body("acme", "ops", &events, Kind::Alarm, "");
        assert_eq!(body["type"], "digest");
        assert_eq!(body["events"].as_array().unwrap().len(), 3);
        let m = mail("acme", "ops", &events[..1], Kind::Escalation, "15m");
        assert!(
            m.subject.contains("ESCALATION") && m.subject.contains("15m"),
            "{}",
            m.subject
        );
        let body = webhook_body("acme", "ops", &events[..1], Kind::Escalation, "15m");
        assert_eq!(
            (body["type"].as_str(), body["event"]["alarm"].as_str()),
            (Some("escalation"), Some("a0"))
        );
    }

    #[test]
    fn a_subject_never_breaks_a_line() {
        let e = event("bad\r\nBcc: x@y.z", StateName::Normal, 0);
        let m = mail("acme", "ops", &[e], Kind::Alarm, "");
        assert!(!m.subject.contains(['\r', '\n']), "{}", m.subject);
    }
}

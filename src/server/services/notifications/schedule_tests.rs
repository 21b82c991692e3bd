//! The scheduler's rules, driven with events and times alone: what goes at once, what a digest
//! or a rate limit holds and when it goes, and when an escalation fires.

use super::*;
use crate::alarms::notify::config::normalise;
use crate::alarms::notify::render::tests::event;
use serde_json::{json, Value};

const MIN: i64 = 60_000;

fn pipeline(extra: Value) -> Pipeline {
    let mut body = json!({
        "name": "ops",
        "webhook": {"url": "http://hooks.local/alarm"},
        "email": {"host": "mail", "from": "svc@example.com", "to": ["a@example.com", "b@example.com"]},
    });
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let mut fields = body.as_object().unwrap().clone();
    normalise(&mut fields).unwrap();
    Pipeline::from_record("p1", &Value::Object(fields)).unwrap()
}

/// The deliveries due at `now`, as (recipient, alarms in the message, kind of message).
fn due(
    scheduler: &mut Scheduler,
    queue: &mut Queue,
    pipelines: &[Pipeline],
    unacknowledged: bool,
    now: i64,
) -> Vec<(String, Vec<String>, String)> {
    let find = |_: &str, key: &str| pipelines.iter().find(|p| p.key == key).cloned();
    let ids = scheduler.on_due(queue, &find, &|_| unacknowledged, now);
    ids.into_iter()
        .map(|id| {
            let item = queue.remove(id).unwrap();
            match item.job {
                Job::Webhook { url, body, .. } => {
                    let events = match body["type"].as_str().unwrap() {
                        "digest" => body["events"].as_array().unwrap().clone(),
                        _ => vec![body["event"].clone()],
                    };
                    let alarms = events
                        .iter()
                        .map(|e| e["alarm"].as_str().unwrap().to_string())
                        .collect();
                    (url, alarms, body["type"].as_str().unwrap().to_string())
                }
                Job::Email { to, mail } => {
                    let alarms = mail
                        .text
                        .lines()
                        .filter_map(|l| l.strip_prefix("Alarm:    "))
                        .map(str::to_string)
                        .collect();
                    (to, alarms, mail.subject)
                }
                other => panic!("not a delivery: {other:?}"),
            }
        })
        .collect()
}

fn raised(alarm: &str, at: i64) -> AlarmEvent {
    event(alarm, StateName::ActiveUnacknowledged, at)
}

#[test]
fn an_event_goes_at_once_to_every_recipient_and_others_are_not_taken() {
    let p = vec![pipeline(json!({"priorities": ["high", "critical"]}))];
    let (mut s, mut q) = (Scheduler::default(), Queue::default());
    s.on_event(&mut q, &p, &raised("a1", 0), 0);
    s.on_event(
        &mut q,
        &p,
        &event("a1", StateName::ActiveAcknowledged, 1),
        1,
    );
    let mut low = raised("a2", 2);
    low.priority = crate::alarms::Priority::Low;
    s.on_event(&mut q, &p, &low, 2);
    let sent = due(&mut s, &mut q, &p, true, 2);
    let to: Vec<&str> = sent.iter().map(|(to, _, _)| to.as_str()).collect();
    assert_eq!(
        to,
        ["http://hooks.local/alarm", "a@example.com", "b@example.com"]
    );
    assert!(sent.iter().all(|(_, alarms, _)| alarms == &["a1"]));
    assert_eq!(q.items().count(), 0);
}

#[test]
fn over_the_rate_limit_events_are_held_and_go_as_one_digest_when_it_allows() {
    let p = vec![pipeline(json!({"rate_limit": {"count": 2, "per": "10m"}}))];
    let (mut s, mut q) = (Scheduler::default(), Queue::default());
    for i in 0..5 {
        s.on_event(&mut q, &p, &raised(&format!("a{i}"), i), i);
    }
    let first = due(&mut s, &mut q, &p, true, 10);
    let to_a: Vec<_> = first
        .iter()
        .filter(|(to, _, _)| to == "a@example.com")
        .collect();
    assert_eq!(to_a.len(), 2, "{first:?}");
    assert_eq!(
        q.counts(),
        (0, 9),
        "three events held for each of three recipients"
    );
    assert!(due(&mut s, &mut q, &p, true, 10 * MIN - 1).is_empty());
    let later = due(&mut s, &mut q, &p, true, 10 * MIN);
    assert_eq!(later.len(), 3, "{later:?}");
    for (_, alarms, _) in &later {
        assert_eq!(alarms, &["a2", "a3", "a4"]);
    }
    assert_eq!(q.items().count(), 0, "nothing is lost or left");
    // The digest took one of the two messages of the period: one more goes, the next waits.
    s.on_event(&mut q, &p, &raised("a5", 10 * MIN + 1), 10 * MIN + 1);
    s.on_event(&mut q, &p, &raised("a6", 10 * MIN + 2), 10 * MIN + 2);
    let now = due(&mut s, &mut q, &p, true, 10 * MIN + 2);
    assert!(
        now.iter().all(|(_, alarms, _)| alarms == &["a5"]) && now.len() == 3,
        "{now:?}"
    );
    assert_eq!(q.counts(), (0, 3));
}

#[test]
fn a_burst_of_at_least_min_events_goes_as_one_digest_and_fewer_go_one_by_one() {
    let p = vec![pipeline(json!({"digest": {"window": "1m", "min": 3}}))];
    let (mut s, mut q) = (Scheduler::default(), Queue::default());
    for i in 0..4 {
        s.on_event(&mut q, &p, &raised(&format!("a{i}"), i * 1000), i * 1000);
    }
    assert!(due(&mut s, &mut q, &p, true, MIN - 1).is_empty());
    let digest = due(&mut s, &mut q, &p, true, MIN);
    assert_eq!(digest.len(), 3, "one message per recipient: {digest:?}");
    assert_eq!(digest[0].1, ["a0", "a1", "a2", "a3"]);
    assert_eq!(digest[0].2, "digest");
    assert_eq!(digest[1].2, "[svc] 4 alarm notifications of acme");
    s.on_event(&mut q, &p, &raised("b0", 2 * MIN), 2 * MIN);
    s.on_event(&mut q, &p, &raised("b1", 2 * MIN), 2 * MIN);
    let single = due(&mut s, &mut q, &p, true, 3 * MIN);
    assert_eq!(single.len(), 6, "{single:?}");
    assert!(single.iter().all(|(_, alarms, _)| alarms.len() == 1));
}

#[test]
fn an_escalation_fires_when_the_alarm_stays_unacknowledged_and_not_when_acknowledged() {
    let p = vec![pipeline(json!({
        "states": ["active_unacknowledged"],
        "escalation": {"after": "15m", "to": ["boss@example.com"], "webhook": {"url": "http://pager.local/"}}
    }))];
    let (mut s, mut q) = (Scheduler::default(), Queue::default());
    s.on_event(&mut q, &p, &raised("hot", 0), 0);
    assert_eq!(due(&mut s, &mut q, &p, true, 0).len(), 3);
    // Raised again before anyone acknowledged: the first raise's clock keeps running.
    s.on_event(&mut q, &p, &raised("hot", 5 * MIN), 5 * MIN);
    due(&mut s, &mut q, &p, true, 5 * MIN);
    assert!(due(&mut s, &mut q, &p, true, 15 * MIN - 1).is_empty());
    let escalated = due(&mut s, &mut q, &p, true, 15 * MIN);
    let to: Vec<&str> = escalated.iter().map(|(to, _, _)| to.as_str()).collect();
    assert_eq!(to, ["http://pager.local/", "boss@example.com"]);
    assert!(escalated[1].2.contains("ESCALATION"), "{:?}", escalated[1]);
    assert_eq!(escalated[0].2, "escalation");
    assert!(due(&mut s, &mut q, &p, true, 60 * MIN).is_empty(), "once");

    s.on_event(&mut q, &p, &raised("cold", 100 * MIN), 100 * MIN);
    due(&mut s, &mut q, &p, true, 100 * MIN);
    s.on_event(
        &mut q,
        &p,
        &event("cold", StateName::ActiveAcknowledged, 101 * MIN),
        101 * MIN,
    );
    assert!(due(&mut s, &mut q, &p, true, 200 * MIN).is_empty());
    assert_eq!(q.items().count(), 0);

    // Armed, but the engine says the alarm was acknowledged meanwhile: nothing.
    s.on_event(&mut q, &p, &raised("warm", 300 * MIN), 300 * MIN);
    due(&mut s, &mut q, &p, true, 300 * MIN);
    assert!(due(&mut s, &mut q, &p, false, 400 * MIN).is_empty());
}

#[test]
fn what_a_deleted_pipeline_held_or_queued_is_dropped() {
    let p = vec![pipeline(json!({"digest": {"window": "1m"}}))];
    let (mut s, mut q) = (Scheduler::default(), Queue::default());
    s.on_event(&mut q, &p, &raised("a", 0), 0);
    assert!(due(&mut s, &mut q, &[], true, MIN).is_empty());
    assert_eq!(q.items().count(), 0);
}

#[test]
fn a_disabled_pipeline_takes_nothing() {
    let p = vec![pipeline(json!({"enabled": false}))];
    let (mut s, mut q) = (Scheduler::default(), Queue::default());
    s.on_event(&mut q, &p, &raised("a", 0), 0);
    assert_eq!(q.items().count(), 0);
}

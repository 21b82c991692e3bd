//! The state machine through the engine: scripted values and times, every ISA-18.2 transition.

use super::condition::Sample;
use super::definition::Definition;
use super::engine::{ActError, Engine};
use super::health::HealthRules;
use super::state::{Action, StateName};
use crate::store::Quality;
use serde_json::{json, Value};
use std::collections::HashMap;

const D: &str = "alpha";

fn engine_with(record: Value) -> Engine {
    let mut engine = Engine::new(HealthRules::default());
    let alarm = Definition::from_record(&record).unwrap();
    engine.set_domain(
        D,
        vec![(alarm, Some("°C".into()))],
        HashMap::new(),
        &|_| None,
        0,
    );
    engine
}

fn high(extra: Value) -> Engine {
    let mut record =
        json!({"name": "hot", "tag": "t", "kind": "high", "setpoint": 80, "deadband": 2});
    for (k, v) in extra.as_object().unwrap() {
        record[k] = v.clone();
    }
    engine_with(record)
}

fn put(engine: &mut Engine, topic: &str, value: Value, now: i64) -> Vec<StateName> {
    let sample = Sample {
        ts_ms: now,
        value,
        quality: Quality::GOOD,
    };
    engine
        .on_value(D, topic, &sample, now)
        .into_iter()
        .map(|c| c.event.state)
        .collect()
}

fn state(engine: &Engine) -> StateName {
    engine.status(D, "hot").unwrap().state
}

#[test]
fn raise_acknowledge_and_return() {
    let mut e = high(json!({}));
    assert_eq!(
        put(&mut e, "t", json!(81), 1),
        vec![StateName::ActiveUnacknowledged]
    );
    e.act(D, "hot", &Action::Acknowledge, "op", None, 2)
        .unwrap();
    assert_eq!(state(&e), StateName::ActiveAcknowledged);
    assert_eq!(
        put(&mut e, "t", json!(79), 3),
        vec![],
        "inside the deadband"
    );
    assert_eq!(put(&mut e, "t", json!(77), 4), vec![StateName::Normal]);
    // Returned before acknowledgement, then acknowledged.
    assert_eq!(
        put(&mut e, "t", json!(90), 5),
        vec![StateName::ActiveUnacknowledged]
    );
    assert_eq!(
        put(&mut e, "t", json!(10), 6),
        vec![StateName::ReturnedUnacknowledged]
    );
    let ack = e
        .act(D, "hot", &Action::Acknowledge, "op", Some("seen".into()), 7)
        .unwrap();
    assert_eq!(
        (ack.event.state, ack.event.who.as_deref()),
        (StateName::Normal, Some("op"))
    );
    assert!(matches!(
        e.act(D, "hot", &Action::Acknowledge, "op", None, 8),
        Err(ActError::Conflict(_))
    ));
    assert_eq!(
        e.act(D, "nope", &Action::Acknowledge, "op", None, 8)
            .unwrap_err(),
        ActError::NotFound
    );
    assert_eq!(e.unacknowledged(D), 0);
}

#[test]
fn on_and_off_delays_need_the_condition_to_hold() {
    let mut e = high(json!({"on_delay": "5s", "off_delay": "2s"}));
    assert_eq!(put(&mut e, "t", json!(85), 0), vec![]);
    assert_eq!(
        put(&mut e, "t", json!(70), 3000),
        vec![],
        "gone before the on-delay ran"
    );
    assert!(e.on_time(10_000).is_empty());
    put(&mut e, "t", json!(85), 10_000);
    assert_eq!(e.next_due(), Some(15_000));
    assert!(e.on_time(14_999).is_empty());
    let raised: Vec<_> = e
        .on_time(15_000)
        .into_iter()
        .map(|c| c.event.state)
        .collect();
    assert_eq!(raised, vec![StateName::ActiveUnacknowledged]);
    e.act(D, "hot", &Action::Acknowledge, "op", None, 15_001)
        .unwrap();
    put(&mut e, "t", json!(70), 16_000);
    put(&mut e, "t", json!(85), 17_000);
    assert!(
        e.on_time(20_000).is_empty(),
        "back before the off-delay ran"
    );
    put(&mut e, "t", json!(70), 21_000);
    let cleared: Vec<_> = e
        .on_time(23_000)
        .into_iter()
        .map(|c| c.event.state)
        .collect();
    assert_eq!(cleared, vec![StateName::Normal]);
}

#[test]
fn a_latching_alarm_waits_for_its_reset() {
    let mut e = high(json!({"latching": true}));
    put(&mut e, "t", json!(90), 1);
    e.act(D, "hot", &Action::Acknowledge, "op", None, 2)
        .unwrap();
    assert_eq!(put(&mut e, "t", json!(10), 3), vec![StateName::Latched]);
    assert_eq!(put(&mut e, "t", json!(11), 4), vec![]);
    let reset = e
        .act(D, "hot", &Action::Acknowledge, "op", None, 5)
        .unwrap();
    assert_eq!(reset.event.state, StateName::Normal);
}

#[test]
fn shelving_hides_and_expires() {
    let mut e = high(json!({}));
    put(&mut e, "t", json!(90), 0);
    let shelve = Action::Shelve {
        until_ms: 60_000,
        reason: "sensor swap".into(),
    };
    let change = e.act(D, "hot", &shelve, "op", None, 1).unwrap();
    assert_eq!(change.event.state, StateName::Shelved);
    assert_eq!(e.unacknowledged(D), 0);
    assert_eq!(
        put(&mut e, "t", json!(95), 2),
        vec![],
        "followed, not annunciated"
    );
    assert_eq!(e.next_due(), Some(60_000));
    let back: Vec<_> = e
        .on_time(60_000)
        .into_iter()
        .map(|c| (c.event.state, c.event.cause))
        .collect();
    assert_eq!(
        back,
        vec![(
            StateName::ActiveUnacknowledged,
            "shelve-expired".to_string()
        )]
    );
    // Unshelved by hand while the condition is gone: normal.
    e.act(D, "hot", &shelve, "op", None, 61_000).unwrap();
    put(&mut e, "t", json!(10), 62_000);
    assert_eq!(
        e.act(D, "hot", &Action::Unshelve, "op", None, 63_000)
            .unwrap()
            .event
            .state,
        StateName::Normal
    );
}

#[test]
fn out_of_service_and_back() {
    let mut e = high(json!({}));
    assert_eq!(
        e.act(
            D,
            "hot",
            &Action::OutOfService,
            "tech",
            Some("calibration".into()),
            0
        )
        .unwrap()
        .event
        .state,
        StateName::OutOfService
    );
    assert_eq!(put(&mut e, "t", json!(90), 1), vec![]);
    assert!(matches!(
        e.act(
            D,
            "hot",
            &Action::Shelve {
                until_ms: 9,
                reason: "x".into()
            },
            "op",
            None,
            2
        ),
        Err(ActError::Conflict(_))
    ));
    let back = e
        .act(D, "hot", &Action::InService, "tech", None, 3)
        .unwrap();
    assert_eq!(
        back.event.state,
        StateName::ActiveUnacknowledged,
        "raised again: the condition holds"
    );
}

#[test]
fn the_enable_condition_suppresses_by_design() {
    let mut e = engine_with(
        json!({"name": "hot", "tag": "t", "kind": "high", "setpoint": 80,
        "enable_tag": "pump/running", "enable_value": true}),
    );
    assert_eq!(
        state(&e),
        StateName::Suppressed,
        "no value of the enable tag yet"
    );
    assert_eq!(put(&mut e, "t", json!(90), 1), vec![]);
    assert_eq!(
        put(&mut e, "pump/running", json!(true), 2),
        vec![StateName::ActiveUnacknowledged]
    );
    assert_eq!(
        put(&mut e, "pump/running", json!(false), 3),
        vec![StateName::Suppressed]
    );
    assert_eq!(put(&mut e, "t", json!(10), 4), vec![]);
    assert_eq!(
        put(&mut e, "pump/running", json!(true), 5),
        vec![StateName::Normal]
    );
}

#[test]
fn a_stale_tag_raises_and_a_value_clears() {
    let mut e = engine_with(json!({"name": "hot", "tag": "t", "kind": "stale", "setpoint": 10}));
    put(&mut e, "t", json!(1), 1000);
    assert_eq!(e.next_due(), Some(11_000));
    assert!(e.on_time(10_999).is_empty());
    let raised: Vec<_> = e
        .on_time(11_000)
        .into_iter()
        .map(|c| c.event.state)
        .collect();
    assert_eq!(raised, vec![StateName::ActiveUnacknowledged]);
    assert_eq!(
        put(&mut e, "t", json!(2), 12_000),
        vec![StateName::ReturnedUnacknowledged]
    );
}

#[test]
fn another_domains_value_is_not_evaluated() {
    let mut e = high(json!({}));
    let sample = Sample {
        ts_ms: 0,
        value: json!(99),
        quality: Quality::GOOD,
    };
    assert!(e.on_value("beta", "t", &sample, 0).is_empty());
    assert_eq!(state(&e), StateName::Normal);
}

#[test]
fn a_redefinition_keeps_the_state_and_a_removal_returns_to_normal() {
    let mut e = high(json!({}));
    put(&mut e, "t", json!(90), 0);
    let same = Definition::from_record(
        &json!({"name": "hot", "tag": "t", "kind": "high", "setpoint": 85}),
    )
    .unwrap();
    assert!(e
        .set_domain(D, vec![(same, None)], HashMap::new(), &|_| None, 1)
        .is_empty());
    assert_eq!(state(&e), StateName::ActiveUnacknowledged);
    let gone = e.set_domain(D, vec![], HashMap::new(), &|_| None, 2);
    assert_eq!(gone.len(), 1);
    assert_eq!(
        (gone[0].event.state, gone[0].state.is_none()),
        (StateName::Normal, true)
    );
    assert!(e.status(D, "hot").is_none());
}

#[test]
fn a_kept_state_survives_a_restart() {
    let mut e = high(json!({}));
    put(&mut e, "t", json!(90), 0);
    e.act(D, "hot", &Action::Acknowledge, "op", None, 1)
        .unwrap();
    let kept = e.on_value(
        D,
        "t",
        &Sample {
            ts_ms: 2,
            value: json!(91),
            quality: Quality::GOOD,
        },
        2,
    );
    assert!(kept.is_empty());
    let snapshot = serde_json::to_string(&e.status(D, "hot").unwrap()).unwrap();
    assert!(snapshot.contains("active_acknowledged"));
}

fn defined(record: Value) -> Definition {
    Definition::from_record(&record).unwrap()
}

#[test]
fn one_record_put_keeps_the_state_of_the_same_alarm_and_a_rename_starts_anew() {
    let mut e = Engine::new(HealthRules::default());
    let hot =
        json!({"id": "alpha.alarms:r1", "name": "hot", "tag": "t", "kind": "high", "setpoint": 80});
    assert!(e
        .put(D, defined(hot.clone()), None, &|_| None, 0)
        .is_empty());
    assert!(e.watchers("t").is_some());
    put(&mut e, "t", json!(90), 1);
    let mut changed = hot.clone();
    changed["setpoint"] = json!(85);
    assert!(e.put(D, defined(changed), None, &|_| None, 2).is_empty());
    assert_eq!(state(&e), StateName::ActiveUnacknowledged);
    assert_eq!(e.status(D, "hot").unwrap().setpoint, json!(85));

    // The same record under another name and on another tag: the old alarm returns to normal.
    let renamed = json!({"id": "alpha.alarms:r1", "name": "warm", "tag": "u", "kind": "high", "setpoint": 80});
    let gone = e.put(D, defined(renamed), None, &|_| None, 3);
    assert_eq!(gone.len(), 1);
    assert_eq!(
        (gone[0].event.alarm.as_str(), gone[0].event.cause.as_str()),
        ("hot", "removed")
    );
    assert!(e.status(D, "hot").is_none());
    assert_eq!(e.status(D, "warm").unwrap().state, StateName::Normal);
    assert!(e.watchers("t").is_none() && e.watchers("u").is_some());
}

#[test]
fn one_record_disabled_or_forgotten_returns_to_normal_once() {
    let mut e = Engine::new(HealthRules::default());
    let hot =
        json!({"id": "alpha.alarms:r1", "name": "hot", "tag": "t", "kind": "high", "setpoint": 80});
    e.put(D, defined(hot.clone()), None, &|_| None, 0);
    put(&mut e, "t", json!(90), 1);
    let mut disabled = hot.clone();
    disabled["enabled"] = json!(false);
    let gone = e.put(D, defined(disabled), None, &|_| None, 2);
    assert_eq!(gone.len(), 1);
    assert_eq!(gone[0].event.state, StateName::Normal);
    assert!(e.status(D, "hot").is_none() && e.watchers("t").is_none());

    e.put(D, defined(hot), None, &|_| None, 3);
    put(&mut e, "t", json!(95), 4);
    assert!(e.forget("beta", "alpha.alarms:r1", 5).is_empty());
    let gone = e.forget(D, "alpha.alarms:r1", 6);
    assert_eq!(gone.len(), 1);
    assert_eq!(
        (gone[0].event.state, gone[0].state.is_none()),
        (StateName::Normal, true)
    );
    assert!(e.status(D, "hot").is_none() && e.watchers("t").is_none());
}

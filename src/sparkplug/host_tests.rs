//! The host's rules on decoded messages: births declare and publish, aliases resolve per
//! session, gaps and unknown nodes bring one (throttled) rebirth, deaths turn tags bad, and
//! writes become commands with the metric's alias and datatype.

use super::*;
use crate::sparkplug::session::BD_SEQ;
use crate::store::Quality;
use serde_json::json;

fn host() -> Host {
    let host = Host::default();
    let record = json!({"name": "site", "namespace": "plant/sp", "groups": ["G"],
        "tag_template": crate::sparkplug::config::DEFAULT_TEMPLATE, "historize": true,
        "rebirth_throttle": "5s", "enabled": true});
    host.set_domain("d", vec![HostConfig::from_record("d", &record).unwrap()]);
    host
}

fn m(name: Option<&str>, alias: u64, t: DataType, value: metric::Value) -> Metric {
    let mut metric = Metric::new();
    if let Some(name) = name {
        metric.set_name(name.into());
    }
    metric.set_alias(alias).set_datatype(t).set_value(value);
    metric
}

fn payload(seq: u64, metrics: Vec<Metric>) -> Vec<u8> {
    Payload {
        timestamp: Some(1_767_225_600_000),
        metrics,
        seq: Some(seq),
        uuid: None,
        body: None,
    }
    .encode_to_vec()
}

fn nbirth(bd_seq: u64) -> Vec<u8> {
    let mut bd = Metric::new();
    bd.set_name(BD_SEQ.into())
        .set_datatype(DataType::Int64)
        .set_value(metric::Value::LongValue(bd_seq));
    payload(
        0,
        vec![
            bd,
            m(
                Some("Temp"),
                1,
                DataType::Int32,
                metric::Value::IntValue(4_294_967_284),
            ),
            m(
                Some("Big"),
                2,
                DataType::UInt64,
                metric::Value::LongValue(u64::MAX),
            ),
        ],
    )
}

const T0: i64 = 1_767_225_600_000;

#[test]
fn a_birth_declares_and_publishes_and_data_resolves_aliases() {
    let host = host();
    let birth = host
        .handle("d", "spBv1.0/G/NBIRTH/n1", &nbirth(3), T0)
        .unwrap();
    let tags: Vec<&str> = birth
        .outcome
        .declarations
        .iter()
        .map(|d| d.tag.as_str())
        .collect();
    assert_eq!(tags, ["plant/sp/G/n1/Temp", "plant/sp/G/n1/Big"]);
    assert_eq!(birth.outcome.updates[0].value, json!(-12));
    assert_eq!(birth.outcome.updates[1].value, json!(u64::MAX));
    assert!(birth.rebirth.is_none());
    let data = payload(
        1,
        vec![m(None, 1, DataType::Int32, metric::Value::IntValue(7))],
    );
    let handled = host
        .handle("d", "spBv1.0/G/NDATA/n1", &data, T0 + 1)
        .unwrap();
    assert_eq!(handled.outcome.updates.len(), 1);
    assert_eq!(handled.outcome.updates[0].tag, "plant/sp/G/n1/Temp");
    assert_eq!(handled.outcome.updates[0].value, json!(7));
    assert!(handled.rebirth.is_none());
}

#[test]
fn a_sequence_gap_asks_one_rebirth_within_the_throttle() {
    let host = host();
    host.handle("d", "spBv1.0/G/NBIRTH/n1", &nbirth(0), T0)
        .unwrap();
    let gap = payload(
        5,
        vec![m(None, 1, DataType::Int32, metric::Value::IntValue(1))],
    );
    let first = host.handle("d", "spBv1.0/G/NDATA/n1", &gap, T0).unwrap();
    let (topic, _) = first.rebirth.expect("a rebirth request");
    assert_eq!(topic, "spBv1.0/G/NCMD/n1");
    // The values still count: the gap lost others, not these.
    assert_eq!(first.outcome.updates.len(), 1);
    let again = payload(9, vec![]);
    assert!(host
        .handle("d", "spBv1.0/G/NDATA/n1", &again, T0)
        .unwrap()
        .rebirth
        .is_none());
    assert_eq!(host.statuses("d")[0].rebirths_requested, 1);
}

#[test]
fn data_from_a_node_never_born_asks_a_rebirth_and_publishes_nothing() {
    let host = host();
    let data = payload(
        4,
        vec![m(None, 1, DataType::Int32, metric::Value::IntValue(1))],
    );
    let handled = host.handle("d", "spBv1.0/G/NDATA/n9", &data, T0).unwrap();
    assert!(handled.rebirth.is_some());
    assert!(handled.outcome.updates.is_empty());
    let rebirth = Payload::decode(handled.rebirth.unwrap().1.as_slice()).unwrap();
    assert_eq!(rebirth.metrics[0].name.as_deref(), Some(REBIRTH));
    assert_eq!(
        rebirth.metrics[0].value,
        Some(metric::Value::BooleanValue(true))
    );
}

#[test]
fn a_death_of_the_session_turns_its_tags_bad_and_a_stale_one_is_ignored() {
    let host = host();
    host.handle("d", "spBv1.0/G/NBIRTH/n1", &nbirth(4), T0)
        .unwrap();
    let mut stale = Metric::new();
    stale
        .set_name(BD_SEQ.into())
        .set_datatype(DataType::Int64)
        .set_value(metric::Value::LongValue(3));
    let ignored = host
        .handle("d", "spBv1.0/G/NDEATH/n1", &payload(0, vec![stale]), T0)
        .unwrap();
    assert!(ignored.outcome.updates.is_empty());
    assert!(host.statuses("d")[0].online);
    let mut live = Metric::new();
    live.set_name(BD_SEQ.into())
        .set_datatype(DataType::Int64)
        .set_value(metric::Value::LongValue(4));
    let death = host
        .handle("d", "spBv1.0/G/NDEATH/n1", &payload(0, vec![live]), T0 + 5)
        .unwrap();
    assert_eq!(death.outcome.updates.len(), 2);
    assert!(death
        .outcome
        .updates
        .iter()
        .all(|u| u.quality == Quality::BAD));
    assert_eq!(
        death.outcome.updates[0].value,
        json!(-12),
        "the last value is kept"
    );
    assert!(!host.statuses("d")[0].online);
}

#[test]
fn writes_become_commands_by_alias_with_the_datatype() {
    let host = host();
    host.handle("d", "spBv1.0/G/NBIRTH/n1", &nbirth(0), T0)
        .unwrap();
    let (topic, bytes) = host
        .command("d", "plant/sp/G/n1/Temp", &json!(-5))
        .unwrap()
        .unwrap();
    assert_eq!(topic, "spBv1.0/G/NCMD/n1");
    let command = Payload::decode(bytes.as_slice()).unwrap();
    assert_eq!(command.metrics[0].alias, Some(1));
    assert_eq!(command.metrics[0].datatype, Some(DataType::Int32 as u32));
    assert_eq!(
        command.metrics[0].value,
        Some(metric::Value::IntValue(-5i32 as u32))
    );
    assert!(matches!(
        host.command("d", "plant/sp/G/n1/Temp", &json!("hot")),
        Some(Err(CommandError::Invalid(_)))
    ));
    assert!(host.command("d", "plant/sp/G/n1/Nope", &json!(1)).is_none());
    assert!(host
        .command("other", "plant/sp/G/n1/Temp", &json!(1))
        .is_none());
    host.handle("d", "spBv1.0/G/NDEATH/n1", &payload(0, vec![]), T0)
        .unwrap();
    assert!(matches!(
        host.command("d", "plant/sp/G/n1/Temp", &json!(1)),
        Some(Err(CommandError::Offline(_)))
    ));
}

#[test]
fn other_groups_domains_and_garbage_are_not_taken() {
    let host = host();
    assert!(host
        .handle("d", "spBv1.0/H/NBIRTH/n1", &nbirth(0), T0)
        .is_none());
    assert!(host
        .handle("e", "spBv1.0/G/NBIRTH/n1", &nbirth(0), T0)
        .is_none());
    assert!(host.handle("d", "spBv1.0/STATE/h", b"{}", T0).is_none());
    assert!(host
        .handle("d", "spBv1.0/G/NBIRTH/n1", b"\xff\xff\xff", T0)
        .is_none());
    assert!(host.statuses("d")[0].last_problem.is_some());
    assert!(host.statuses("e").is_empty());
}

#[test]
fn a_metric_no_birth_declared_asks_a_rebirth() {
    let host = host();
    host.handle("d", "spBv1.0/G/NBIRTH/n1", &nbirth(0), T0)
        .unwrap();
    let data = payload(
        1,
        vec![m(None, 99, DataType::Int32, metric::Value::IntValue(1))],
    );
    let handled = host.handle("d", "spBv1.0/G/NDATA/n1", &data, T0).unwrap();
    assert!(handled.rebirth.is_some());
    assert!(handled.outcome.updates.is_empty());
    let status = &host.statuses("d")[0];
    assert!(
        status
            .last_problem
            .as_deref()
            .unwrap_or_default()
            .contains("99"),
        "{status:?}"
    );
}

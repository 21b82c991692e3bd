//! The edge node's payloads, decoded as a host would decode them: NBIRTH (bdSeq, node
//! control, a metric per tag with alias, datatype, value, unit and time), NDATA by alias with
//! its sequence numbers, the rebirths a new tag or a datatype change needs, NDEATH, and what
//! an NCMD asks.

use super::node::{death, Command, NodeState, Rebirth};
use crate::sparkplug::session::{BD_SEQ, REBIRTH};
use crate::sparkplug::value::{properties_json, to_json};
use crate::upstream::relay::LocalTag;
use bytes::Bytes;
use prost::Message as _;
use serde_json::{json, Value};
use srad_types::payload::{metric, DataType, Metric, Payload};

fn tag(path: &str, unit: Option<&str>, last: Option<(i64, &str)>) -> LocalTag {
    LocalTag {
        path: path.into(),
        unit: unit.map(str::to_string),
        last: last.map(|(ms, payload)| (ms, Bytes::from(payload.to_string()))),
    }
}

fn decode(bytes: &[u8]) -> Payload {
    Payload::decode(bytes).expect("a Sparkplug B payload")
}

fn named<'p>(payload: &'p Payload, name: &str) -> &'p Metric {
    payload
        .metrics
        .iter()
        .find(|m| m.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no metric `{name}` in {payload:?}"))
}

fn datatype_of(metric: &Metric) -> DataType {
    DataType::try_from(metric.datatype.expect("a datatype") as i32).expect("a known datatype")
}

fn value(metric: &Metric, datatype: DataType) -> Value {
    to_json(datatype, metric).expect("a value of its datatype")
}

fn plant() -> Vec<LocalTag> {
    vec![
        tag("acme/site1/line1/temp", Some("°C"), Some((1_000, "21.5"))),
        tag("acme/site1/line1/count", None, Some((2_000, "42"))),
        tag(
            "acme/site1/line1/running",
            None,
            Some((3_000, r#"{"value": true, "timestamp": 3500}"#)),
        ),
        tag("acme/site1/mode", None, Some((4_000, "\"auto\""))),
        tag("acme/site1/recipe", None, Some((5_000, r#"{"a": 1}"#))),
        tag("acme/site1/setpoint", Some("bar"), None),
    ]
}

#[test]
fn the_nbirth_declares_bd_seq_node_control_and_every_tag_by_sorted_alias() {
    let mut node = NodeState::new("acme/site1", 7);
    let (bytes, problems) = node.birth(&plant(), 9_000);
    assert!(problems.is_empty(), "{problems:?}");
    let birth = decode(&bytes);
    assert_eq!(birth.seq, Some(0));
    assert_eq!(birth.timestamp, Some(9_000));
    let bd_seq = named(&birth, BD_SEQ);
    assert_eq!(datatype_of(bd_seq), DataType::Int64);
    assert_eq!(bd_seq.value, Some(metric::Value::LongValue(7)));
    let rebirth = named(&birth, REBIRTH);
    assert_eq!(datatype_of(rebirth), DataType::Boolean);
    assert_eq!(rebirth.value, Some(metric::Value::BooleanValue(false)));
    assert_eq!(node.metric_count(), 8);

    let tags: Vec<(&str, u64, DataType, Value, Option<u64>)> = birth.metrics[2..]
        .iter()
        .map(|m| {
            let t = datatype_of(m);
            (
                m.name.as_deref().unwrap(),
                m.alias.unwrap(),
                t,
                value(m, t),
                m.timestamp,
            )
        })
        .collect();
    assert_eq!(
        tags,
        [
            ("line1/count", 1, DataType::Int64, json!(42), Some(2_000)),
            (
                "line1/running",
                2,
                DataType::Boolean,
                json!(true),
                Some(3_500)
            ),
            ("line1/temp", 3, DataType::Double, json!(21.5), Some(1_000)),
            ("mode", 4, DataType::String, json!("auto"), Some(4_000)),
            (
                "recipe",
                5,
                DataType::Text,
                json!(r#"{"a":1}"#),
                Some(5_000)
            ),
            ("setpoint", 6, DataType::String, Value::Null, None),
        ]
    );
    let temp = named(&birth, "line1/temp");
    let properties = properties_json(temp.properties.as_ref().expect("properties"));
    assert_eq!(properties, json!({"engUnit": "°C"}));
    let setpoint = named(&birth, "setpoint");
    assert_eq!(setpoint.is_null, Some(true));
    assert_eq!(
        properties_json(setpoint.properties.as_ref().unwrap()),
        json!({"engUnit": "bar"})
    );
    assert!(named(&birth, "line1/count").properties.is_none());
}

#[test]
fn ndata_goes_by_alias_with_the_next_sequence_number_and_wraps_at_256() {
    let mut node = NodeState::new("acme/site1", 0);
    node.birth(&plant(), 0);
    assert_eq!(node.data(1), None, "nothing waits");
    node.change("acme/site1/line1/temp", 10_000, b"22.5")
        .unwrap();
    node.change("acme/site1/line1/count", 10_001, b"43")
        .unwrap();
    node.change("acme/site1/line1/temp", 10_002, b"23").unwrap();
    let data = decode(&node.data(10_003).expect("an NDATA"));
    assert_eq!(data.seq, Some(1));
    // (alias, name, datatype, timestamp) of each metric.
    type Seen<'a> = (Option<u64>, Option<&'a str>, Option<u32>, Option<u64>);
    let got: Vec<Seen> = data
        .metrics
        .iter()
        .map(|m| (m.alias, m.name.as_deref(), m.datatype, m.timestamp))
        .collect();
    assert_eq!(
        got,
        [
            (Some(3), None, None, Some(10_000)),
            (Some(1), None, None, Some(10_001)),
            (Some(3), None, None, Some(10_002)),
        ],
        "by alias only, without datatypes, in arrival order"
    );
    assert_eq!(value(&data.metrics[0], DataType::Double), json!(22.5));
    assert_eq!(value(&data.metrics[1], DataType::Int64), json!(43));
    // An integer after a Double stays a Double: no rebirth.
    assert_eq!(value(&data.metrics[2], DataType::Double), json!(23.0));
    for expected in (2..256).chain(0..3) {
        node.change("acme/site1/line1/count", 1, b"1").unwrap();
        let data = decode(&node.data(1).unwrap());
        assert_eq!(data.seq, Some(expected));
    }
}

#[test]
fn a_bad_quality_goes_out_as_the_quality_property() {
    let mut node = NodeState::new("acme/site1", 0);
    node.birth(&plant(), 0);
    node.change(
        "acme/site1/line1/count",
        1,
        br#"{"value": 44, "quality": "bad"}"#,
    )
    .unwrap();
    let data = decode(&node.data(2).unwrap());
    let properties = properties_json(data.metrics[0].properties.as_ref().unwrap());
    assert_eq!(properties, json!({"Quality": 0}));
}

#[test]
fn a_new_tag_or_a_value_of_another_datatype_needs_a_rebirth() {
    let mut node = NodeState::new("acme/site1", 0);
    node.birth(&plant(), 0);
    assert_eq!(
        node.change("acme/site1/line2/temp", 1, b"1"),
        Err(Rebirth::NewMetric("line2/temp".into()))
    );
    assert_eq!(
        node.change("acme/site1/line1/count", 1, b"4.5"),
        Err(Rebirth::Datatype {
            name: "line1/count".into(),
            born: DataType::Int64,
            now: DataType::Double
        })
    );
    assert!(matches!(
        node.change("acme/site1/mode", 1, b"3"),
        Err(Rebirth::Datatype { .. })
    ));
    // A tag without a value was born a null String; its first number needs a rebirth.
    assert!(node.change("acme/site1/setpoint", 1, b"3").is_err());
    // A null fits any datatype; topics outside the branch are nobody's business.
    node.change("acme/site1/line1/count", 1, b"null").unwrap();
    node.change("acme/site10/x", 1, b"1").unwrap();
    node.change("other/x", 1, b"1").unwrap();
    assert_eq!(node.pending(), 1);
}

#[test]
fn a_rebirth_starts_at_seq_0_keeps_the_aliases_and_gives_new_tags_the_next_ones() {
    let mut node = NodeState::new("acme/site1", 3);
    node.birth(&plant(), 0);
    node.change("acme/site1/line1/count", 1, b"43").unwrap();
    node.data(2).unwrap();
    node.change("acme/site1/line1/count", 1, b"44").unwrap();
    let mut tags = plant();
    tags.push(tag("acme/site1/a_first", None, Some((6_000, "1"))));
    // The temperature's latest value is an integer now: it stays a Double.
    tags[0].last = Some((7_000, Bytes::from_static(b"22")));
    let (bytes, _) = node.birth(&tags, 8_000);
    let birth = decode(&bytes);
    assert_eq!(birth.seq, Some(0));
    assert_eq!(node.pending(), 0, "the NBIRTH has the latest values");
    assert_eq!(node.data(9), None);
    assert_eq!(named(&birth, "a_first").alias, Some(7));
    assert_eq!(named(&birth, "line1/count").alias, Some(1));
    let temp = named(&birth, "line1/temp");
    assert_eq!((temp.alias, datatype_of(temp)), (Some(3), DataType::Double));
    assert_eq!(value(temp, DataType::Double), json!(22.0));
    assert_eq!(
        named(&birth, BD_SEQ).value,
        Some(metric::Value::LongValue(3)),
        "a rebirth on the same connection keeps its bdSeq"
    );
    node.change("acme/site1/a_first", 1, b"2").unwrap();
    let data = decode(&node.data(10).unwrap());
    assert_eq!((data.seq, data.metrics[0].alias), (Some(1), Some(7)));
}

#[test]
fn the_branch_tag_takes_its_last_level_and_node_control_names_are_left_out() {
    let mut node = NodeState::new("acme/site1", 0);
    let tags = vec![
        tag("acme/site1", None, Some((1, "1"))),
        tag("acme/site1/site1", None, Some((1, "2"))),
        tag("acme/site1/bdSeq", None, Some((1, "3"))),
        tag("acme/site1/Node Control/Reboot", None, Some((1, "true"))),
        tag("acme/site1/ok", None, Some((1, "4"))),
    ];
    let (bytes, problems) = node.birth(&tags, 0);
    let birth = decode(&bytes);
    let names: Vec<&str> = birth.metrics[2..]
        .iter()
        .map(|m| m.name.as_deref().unwrap())
        .collect();
    assert_eq!(names, ["ok", "site1"]);
    assert_eq!(value(named(&birth, "site1"), DataType::Int64), json!(1));
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(node.matches(&tags));
    let mut fewer = tags.clone();
    fewer.pop();
    assert!(!node.matches(&fewer), "a deleted tag");
    let mut unit = tags.clone();
    unit[0].unit = Some("m".into());
    assert!(!node.matches(&unit), "a changed unit");
    // Values of the left-out tags are ignored, not taken for new metrics.
    node.change("acme/site1/site1", 1, b"5").unwrap();
    node.change("acme/site1/bdSeq", 1, b"5").unwrap();
    assert_eq!(node.pending(), 0);
}

#[test]
fn the_ndeath_carries_bd_seq_and_no_sequence_number() {
    let ndeath = decode(&death(255, 1_234));
    assert_eq!(ndeath.seq, None);
    assert_eq!(ndeath.metrics.len(), 1);
    let bd_seq = named(&ndeath, BD_SEQ);
    assert_eq!(datatype_of(bd_seq), DataType::Int64);
    assert_eq!(bd_seq.value, Some(metric::Value::LongValue(255)));
}

fn ncmd(metrics: Vec<Metric>) -> Vec<u8> {
    Payload {
        timestamp: Some(1),
        metrics,
        seq: None,
        uuid: None,
        body: None,
    }
    .encode_to_vec()
}

#[test]
fn an_ncmd_asks_a_rebirth_or_writes_the_tags_of_its_metrics() {
    let mut node = NodeState::new("acme/site1", 0);
    node.birth(&plant(), 0);
    let mut rebirth = Metric::new();
    rebirth
        .set_name(REBIRTH.into())
        .set_datatype(DataType::Boolean)
        .set_value(metric::Value::BooleanValue(true));
    let mut by_name = Metric::new();
    by_name
        .set_name("line1/temp".into())
        .set_datatype(DataType::Double)
        .set_value(metric::Value::DoubleValue(19.5));
    let mut by_alias = Metric::new();
    // Int64 by the NBIRTH's datatype: −5 as two's complement.
    by_alias
        .set_alias(1)
        .set_value(metric::Value::LongValue((-5i64) as u64));
    let mut unknown = Metric::new();
    unknown
        .set_name("nope".into())
        .set_value(metric::Value::IntValue(1));
    let mut no_value = Metric::new();
    no_value.set_name("mode".into()).set_null();
    let command = node
        .command(&ncmd(vec![rebirth, by_name, by_alias, unknown, no_value]))
        .unwrap();
    assert!(command.rebirth);
    assert_eq!(
        command.writes,
        [
            ("acme/site1/line1/temp".to_string(), json!(19.5)),
            ("acme/site1/line1/count".to_string(), json!(-5)),
        ]
    );
    assert_eq!(command.problems.len(), 2, "{:?}", command.problems);
    let mut no = Metric::new();
    no.set_name(REBIRTH.into())
        .set_value(metric::Value::BooleanValue(false));
    assert_eq!(node.command(&ncmd(vec![no])).unwrap(), Command::default());
    assert!(node.command(b"\xff\xff not protobuf").is_err());
}

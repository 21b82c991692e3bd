//! Metric values by datatype: what arrives reads exactly, and what svc writes reads back.

use super::*;

fn metric(t: DataType, value: metric::Value) -> Metric {
    let mut m = Metric::new();
    m.set_datatype(t).set_value(value);
    m
}

fn round_trip(t: DataType, value: Value) {
    let encoded = from_json(t, &value).unwrap_or_else(|e| panic!("{t:?} {value}: {e}"));
    let decoded = to_json(t, &metric(t, encoded)).unwrap();
    assert_eq!(decoded, value, "{t:?}");
}

#[test]
fn signed_integers_keep_their_sign_whatever_width_they_were_sent_in() {
    use metric::Value::*;
    // Tahu's JavaScript sends the 32-bit two's complement, others the datatype's own width.
    assert_eq!(
        to_json(
            DataType::Int8,
            &metric(DataType::Int8, IntValue(4_294_967_284))
        ),
        Ok(json!(-12))
    );
    assert_eq!(
        to_json(DataType::Int8, &metric(DataType::Int8, IntValue(244))),
        Ok(json!(-12))
    );
    assert_eq!(
        to_json(DataType::Int16, &metric(DataType::Int16, IntValue(65_524))),
        Ok(json!(-12))
    );
    assert_eq!(
        to_json(
            DataType::Int32,
            &metric(DataType::Int32, IntValue(4_294_967_284))
        ),
        Ok(json!(-12))
    );
    assert_eq!(
        to_json(
            DataType::Int64,
            &metric(DataType::Int64, LongValue(1 << 63))
        ),
        Ok(json!(i64::MIN))
    );
}

#[test]
fn unsigned_integers_keep_every_bit_and_refuse_what_their_width_cannot_hold() {
    use metric::Value::*;
    assert_eq!(
        to_json(
            DataType::UInt64,
            &metric(DataType::UInt64, LongValue(u64::MAX))
        ),
        Ok(json!(u64::MAX))
    );
    assert_eq!(
        to_json(
            DataType::UInt32,
            &metric(DataType::UInt32, IntValue(u32::MAX))
        ),
        Ok(json!(u32::MAX))
    );
    assert!(to_json(DataType::UInt8, &metric(DataType::UInt8, IntValue(256))).is_err());
}

#[test]
fn every_scalar_datatype_round_trips() {
    for (t, v) in [
        (DataType::Int8, json!(-128)),
        (DataType::Int16, json!(-32768)),
        (DataType::Int32, json!(-12)),
        (DataType::Int64, json!(i64::MIN)),
        (DataType::UInt8, json!(255)),
        (DataType::UInt16, json!(65535)),
        (DataType::UInt32, json!(u32::MAX)),
        (DataType::UInt64, json!(u64::MAX)),
        (DataType::Float, json!(0.1)),
        (DataType::Double, json!(0.1)),
        (DataType::Boolean, json!(true)),
        (DataType::String, json!("pump ⚙")),
        (DataType::Text, json!("long text")),
        (
            DataType::Uuid,
            json!("2f9e4c42-3f3e-4d1a-9a9a-1b2c3d4e5f60"),
        ),
        (DataType::DateTime, json!(1_767_225_600_000u64)),
        (DataType::Bytes, json!("AAEC/w==")),
        (DataType::File, json!("aGVsbG8=")),
    ] {
        round_trip(t, v);
    }
}

#[test]
fn writes_out_of_range_or_of_the_wrong_kind_are_refused_with_a_sentence() {
    for (t, v) in [
        (DataType::Int8, json!(128)),
        (DataType::UInt8, json!(-1)),
        (DataType::UInt64, json!(-1)),
        (DataType::Int32, json!("twelve")),
        (DataType::Int32, json!(1.5)),
        (DataType::Boolean, json!("yes")),
        (DataType::Double, json!("x")),
        (DataType::Bytes, json!("not base64!")),
        (DataType::Int8Array, json!(5)),
    ] {
        let error = from_json(t, &v)
            .err()
            .unwrap_or_else(|| panic!("{t:?} {v} accepted"));
        assert!(!error.is_empty() && !error.contains('\n'), "{error}");
    }
    // 64-bit integers may come as decimal strings (JavaScript cannot hold them as numbers).
    assert_eq!(
        from_json(DataType::UInt64, &json!("18446744073709551615")),
        Ok(metric::Value::LongValue(u64::MAX))
    );
}

#[test]
fn arrays_round_trip() {
    for (t, v) in [
        (DataType::Int8Array, json!([-1, 0, 127])),
        (DataType::Int16Array, json!([-300, 300])),
        (DataType::Int32Array, json!([-12, 70000])),
        (DataType::Int64Array, json!([i64::MIN, 1])),
        (DataType::UInt8Array, json!([0, 255])),
        (DataType::UInt16Array, json!([65535])),
        (DataType::UInt32Array, json!([u32::MAX])),
        (DataType::UInt64Array, json!([u64::MAX, 0])),
        (DataType::FloatArray, json!([0.1, -2.5])),
        (DataType::DoubleArray, json!([0.1, 1e300])),
        (
            DataType::BooleanArray,
            json!([true, false, true, true, false, false, false, false, true]),
        ),
        (DataType::StringArray, json!(["a", "", "ü"])),
        (DataType::DateTimeArray, json!([1_767_225_600_000i64])),
    ] {
        round_trip(t, v);
    }
}

#[test]
fn malformed_arrays_are_errors_not_panics() {
    use metric::Value::BytesValue;
    assert!(to_json(
        DataType::Int32Array,
        &metric(DataType::Int32Array, BytesValue(vec![1, 2, 3]))
    )
    .is_err());
    assert!(to_json(
        DataType::BooleanArray,
        &metric(DataType::BooleanArray, BytesValue(vec![9, 0, 0, 0, 1]))
    )
    .is_err());
    assert!(to_json(
        DataType::BooleanArray,
        &metric(DataType::BooleanArray, BytesValue(vec![1]))
    )
    .is_err());
    assert!(to_json(
        DataType::StringArray,
        &metric(DataType::StringArray, BytesValue(vec![0xff, 0]))
    )
    .is_err());
}

#[test]
fn datasets_and_templates_become_json_and_back() {
    round_trip(
        DataType::DataSet,
        json!({"columns": ["n", "ok", "name"], "types": ["Int32", "Boolean", "String"],
               "rows": [[-1, true, "a"], [2, false, null]]}),
    );
    let template = json!({"template_ref": "Motor", "version": "1", "is_definition": false,
        "parameters": {"rated": 5.5},
        "metrics": {"Speed": 1500, "Running": true, "Name": "M1"}});
    let encoded = from_json(DataType::Template, &template).unwrap();
    let decoded = to_json(DataType::Template, &metric(DataType::Template, encoded)).unwrap();
    assert_eq!(decoded, template);
}

#[test]
fn a_value_of_another_kind_than_its_datatype_is_an_error() {
    let m = metric(DataType::Boolean, metric::Value::StringValue("x".into()));
    assert!(to_json(DataType::Boolean, &m).is_err());
    let mut null = Metric::new();
    null.set_datatype(DataType::Int32).set_null();
    assert_eq!(to_json(DataType::Int32, &null), Ok(Value::Null));
}

#[test]
fn properties_become_an_object() {
    let set = PropertySet {
        keys: vec!["engUnit".into(), "Quality".into()],
        values: vec![
            srad_types::payload::PropertyValue {
                r#type: Some(DataType::String as u32),
                is_null: None,
                value: Some(property_value::Value::StringValue("°C".into())),
            },
            srad_types::payload::PropertyValue {
                r#type: Some(DataType::Int32 as u32),
                is_null: None,
                value: Some(property_value::Value::IntValue(192)),
            },
        ],
    };
    assert_eq!(
        properties_json(&set),
        json!({"engUnit": "°C", "Quality": 192})
    );
}

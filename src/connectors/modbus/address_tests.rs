//! The address checks' tests: defaults, every type, and errors that name the member.

use super::*;
use serde_json::json;

fn checked(address: Value, writable: bool) -> Result<Value, String> {
    let mut map = address.as_object().unwrap().clone();
    check(4, &mut map, writable).map(|()| Value::Object(map))
}

#[test]
fn defaults_are_filled_in() {
    assert_eq!(
        checked(json!({"function": "holding_register", "address": 7}), true).unwrap(),
        json!({"function": "holding_register", "address": 7, "type": "uint16",
               "byte_order": "big", "word_order": "big", "poll_interval": "1s"})
    );
    assert_eq!(
        checked(json!({"function": "coil", "address": 0}), true).unwrap(),
        json!({"function": "coil", "address": 0, "type": "bool", "poll_interval": "1s"})
    );
}

#[test]
fn every_type_parses_with_its_width() {
    let cases = [
        (json!({"type": "bit", "bit": 15}), DataType::Bit(15), 1),
        (json!({"type": "int16"}), DataType::Int16, 1),
        (json!({"type": "uint16"}), DataType::Uint16, 1),
        (json!({"type": "int32"}), DataType::Int32, 2),
        (json!({"type": "uint32"}), DataType::Uint32, 2),
        (json!({"type": "float32"}), DataType::Float32, 2),
        (json!({"type": "int64"}), DataType::Int64, 4),
        (json!({"type": "uint64"}), DataType::Uint64, 4),
        (json!({"type": "float64"}), DataType::Float64, 4),
        (
            json!({"type": "string", "length": 123}),
            DataType::String(123),
            123,
        ),
    ];
    for (extra, data_type, width) in cases {
        let mut map = extra.as_object().unwrap().clone();
        map.insert("function".into(), json!("input_register"));
        map.insert("address".into(), json!(10));
        map.insert("word_order".into(), json!("little"));
        map.insert("byte_order".into(), json!("little"));
        map.insert("poll_interval".into(), json!("250ms"));
        let address = Address::parse("", &map).unwrap();
        assert_eq!(address.data_type, data_type);
        assert_eq!(address.width(), width);
        assert_eq!(
            (address.byte_order, address.word_order),
            (Order::Little, Order::Little)
        );
        assert_eq!(address.poll_interval, Duration::from_millis(250));
    }
}

#[test]
fn errors_name_the_member() {
    let hr = |extra: Value| {
        let mut map = extra.as_object().unwrap().clone();
        map.insert("function".into(), json!("holding_register"));
        map.entry("address").or_insert(json!(0));
        Value::Object(map)
    };
    let cases = [
        (json!({"address": 1}), "function"),
        (json!({"function": "register", "address": 1}), "function"),
        (json!({"function": "coil"}), "address"),
        (json!({"function": "coil", "address": 65536}), "address"),
        (json!({"function": "coil", "address": -1}), "address"),
        (
            json!({"function": "coil", "address": 1, "type": "int16"}),
            "type",
        ),
        (
            json!({"function": "coil", "address": 1, "byte_order": "little"}),
            "byte_order",
        ),
        (hr(json!({"type": "bool"})), "type"),
        (hr(json!({"type": "int8"})), "type"),
        (hr(json!({"type": "bit"})), "bit"),
        (hr(json!({"type": "bit", "bit": 16})), "bit"),
        (hr(json!({"type": "uint16", "bit": 3})), "bit"),
        (hr(json!({"type": "string"})), "length"),
        (hr(json!({"type": "string", "length": 124})), "length"),
        (hr(json!({"type": "string", "length": 0})), "length"),
        (hr(json!({"type": "int32", "length": 2})), "length"),
        (hr(json!({"type": "float64", "address": 65533})), "address"),
        (
            hr(json!({"type": "string", "length": 10, "address": 65530})),
            "address",
        ),
        (hr(json!({"byte_order": "middle"})), "byte_order"),
        (hr(json!({"word_order": 1})), "word_order"),
        (hr(json!({"poll_interval": "5ms"})), "poll_interval"),
        (hr(json!({"poll_interval": "often"})), "poll_interval"),
        (hr(json!({"poll_interval": 1})), "poll_interval"),
        (hr(json!({"unit": 1})), "unit"),
    ];
    for (address, member) in cases {
        let error = checked(address.clone(), false).unwrap_err();
        let field = format!("points[4].address.{member}");
        assert!(error.starts_with(&field), "{address}: {error}");
    }
    // The last register of the table is still an address.
    checked(hr(json!({"type": "float64", "address": 65532})), false).unwrap();
}

#[test]
fn inputs_cannot_be_writable() {
    for function in ["discrete_input", "input_register"] {
        let address = json!({"function": function, "address": 3});
        let error = checked(address.clone(), true).unwrap_err();
        assert!(error.starts_with("points[4].address.function"), "{error}");
        checked(address, false).unwrap();
    }
}

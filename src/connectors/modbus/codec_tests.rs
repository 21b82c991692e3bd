//! The codec's tests: every type in every byte and word order, and the checks of writes.

use super::*;
use crate::connectors::modbus::address::Function;
use serde_json::json;
use std::time::Duration;

const ORDERS: [(Order, Order); 4] = [
    (Order::Big, Order::Big),
    (Order::Big, Order::Little),
    (Order::Little, Order::Big),
    (Order::Little, Order::Little),
];

fn at(data_type: DataType, byte_order: Order, word_order: Order) -> Address {
    Address {
        function: Function::HoldingRegister,
        start: 0,
        data_type,
        byte_order,
        word_order,
        poll_interval: Duration::from_secs(1),
    }
}

fn big(data_type: DataType) -> Address {
    at(data_type, Order::Big, Order::Big)
}

/// `registers` in each of [`ORDERS`] hold `value`, and writing `value` gives them back.
fn both_ways(data_type: DataType, value: Value, registers: [&[u16]; 4]) {
    for ((byte_order, word_order), registers) in ORDERS.into_iter().zip(registers) {
        let address = at(data_type, byte_order, word_order);
        let context = format!(
            "{} byte {byte_order:?} word {word_order:?}",
            data_type.name()
        );
        assert_eq!(decode(&address, registers).unwrap(), value, "{context}");
        assert_eq!(encode(&address, &value).unwrap(), registers, "{context}");
    }
}

#[test]
fn sixteen_bit_values() {
    both_ways(
        DataType::Int16,
        json!(-12),
        [&[0xFFF4], &[0xFFF4], &[0xF4FF], &[0xF4FF]],
    );
    both_ways(
        DataType::Uint16,
        json!(65524),
        [&[0xFFF4], &[0xFFF4], &[0xF4FF], &[0xF4FF]],
    );
    both_ways(
        DataType::Int16,
        json!(i16::MIN),
        [&[0x8000], &[0x8000], &[0x0080], &[0x0080]],
    );
    both_ways(
        DataType::Uint16,
        json!(0x0102),
        [&[0x0102], &[0x0102], &[0x0201], &[0x0201]],
    );
}

#[test]
fn thirty_two_bit_values() {
    let minus_12: [&[u16]; 4] = [
        &[0xFFFF, 0xFFF4],
        &[0xFFF4, 0xFFFF],
        &[0xFFFF, 0xF4FF],
        &[0xF4FF, 0xFFFF],
    ];
    both_ways(DataType::Int32, json!(-12), minus_12);
    both_ways(DataType::Uint32, json!(0xFFFF_FFF4_u32), minus_12);
    both_ways(
        DataType::Uint32,
        json!(0x0102_0304),
        [
            &[0x0102, 0x0304],
            &[0x0304, 0x0102],
            &[0x0201, 0x0403],
            &[0x0403, 0x0201],
        ],
    );
    // 1.5f32 is 0x3FC0_0000.
    both_ways(
        DataType::Float32,
        json!(1.5),
        [
            &[0x3FC0, 0x0000],
            &[0x0000, 0x3FC0],
            &[0xC03F, 0x0000],
            &[0x0000, 0xC03F],
        ],
    );
    both_ways(
        DataType::Int32,
        json!(i32::MIN),
        [&[0x8000, 0], &[0, 0x8000], &[0x0080, 0], &[0, 0x0080]],
    );
}

#[test]
fn sixty_four_bit_values() {
    both_ways(
        DataType::Uint64,
        json!(0x0102_0304_0506_0708_u64),
        [
            &[0x0102, 0x0304, 0x0506, 0x0708],
            &[0x0708, 0x0506, 0x0304, 0x0102],
            &[0x0201, 0x0403, 0x0605, 0x0807],
            &[0x0807, 0x0605, 0x0403, 0x0201],
        ],
    );
    let all: [&[u16]; 4] = [&[0xFFFF; 4], &[0xFFFF; 4], &[0xFFFF; 4], &[0xFFFF; 4]];
    both_ways(DataType::Uint64, json!(u64::MAX), all);
    both_ways(DataType::Int64, json!(-1), all);
    both_ways(
        DataType::Int64,
        json!(-12),
        [
            &[0xFFFF, 0xFFFF, 0xFFFF, 0xFFF4],
            &[0xFFF4, 0xFFFF, 0xFFFF, 0xFFFF],
            &[0xFFFF, 0xFFFF, 0xFFFF, 0xF4FF],
            &[0xF4FF, 0xFFFF, 0xFFFF, 0xFFFF],
        ],
    );
    both_ways(
        DataType::Int64,
        json!(i64::MIN),
        [
            &[0x8000, 0, 0, 0],
            &[0, 0, 0, 0x8000],
            &[0x0080, 0, 0, 0],
            &[0, 0, 0, 0x0080],
        ],
    );
    // -2.25f64 is 0xC002_0000_0000_0000.
    both_ways(
        DataType::Float64,
        json!(-2.25),
        [
            &[0xC002, 0, 0, 0],
            &[0, 0, 0, 0xC002],
            &[0x02C0, 0, 0, 0],
            &[0, 0, 0, 0x02C0],
        ],
    );
}

#[test]
fn floats_round_trip_exactly() {
    for value in [0.1, -123.456, 1e-300, f64::MAX, f64::MIN_POSITIVE] {
        for (byte_order, word_order) in ORDERS {
            let address = at(DataType::Float64, byte_order, word_order);
            let registers = encode(&address, &json!(value)).unwrap();
            assert_eq!(decode(&address, &registers).unwrap(), json!(value));
        }
    }
    let address = big(DataType::Float32);
    let registers = encode(&address, &json!(0.1)).unwrap();
    assert_eq!(
        decode(&address, &registers).unwrap(),
        json!(f64::from(0.1f32))
    );
}

#[test]
fn non_finite_floats_are_errors_not_panics() {
    for registers in [[0x7FC0, 0], [0x7F80, 0], [0xFF80, 0]] {
        let error = decode(&big(DataType::Float32), &registers).unwrap_err();
        assert!(error.contains("float32"), "{error}");
    }
    decode(&big(DataType::Float64), &[0x7FF8, 0, 0, 0]).unwrap_err();
    assert!(encode(&big(DataType::Float32), &json!(1e39))
        .unwrap_err()
        .contains("out of range"));
    assert!(encode(&big(DataType::Float32), &json!(-1e39)).is_err());
    encode(&big(DataType::Float32), &json!(f32::MAX)).unwrap();
}

#[test]
fn bits_of_a_register() {
    let address = |bit| big(DataType::Bit(bit));
    assert_eq!(decode(&address(15), &[0x8001]).unwrap(), json!(true));
    assert_eq!(decode(&address(0), &[0x8001]).unwrap(), json!(true));
    assert_eq!(decode(&address(1), &[0x8001]).unwrap(), json!(false));
    assert_eq!(decode_bool(true), json!(true));
}

#[test]
fn strings() {
    let string =
        |length, byte_order, word_order| at(DataType::String(length), byte_order, word_order);
    // Word order does not apply to strings; byte order does.
    for word_order in [Order::Big, Order::Little] {
        let address = string(3, Order::Big, word_order);
        assert_eq!(
            encode(&address, &json!("ABC")).unwrap(),
            [0x4142, 0x4300, 0]
        );
        assert_eq!(
            decode(&address, &[0x4142, 0x4300, 0]).unwrap(),
            json!("ABC")
        );
        let address = string(3, Order::Little, word_order);
        assert_eq!(
            encode(&address, &json!("ABC")).unwrap(),
            [0x4241, 0x0043, 0]
        );
        assert_eq!(
            decode(&address, &[0x4241, 0x0043, 0]).unwrap(),
            json!("ABC")
        );
    }
    let address = string(2, Order::Big, Order::Big);
    assert_eq!(encode(&address, &json!("")).unwrap(), [0, 0]);
    assert_eq!(decode(&address, &[0, 0]).unwrap(), json!(""));
    assert_eq!(encode(&address, &json!("ABCD")).unwrap(), [0x4142, 0x4344]);
    // "é" is two bytes of UTF-8.
    assert_eq!(
        decode(&address, &encode(&address, &json!("é!")).unwrap()).unwrap(),
        json!("é!")
    );
    assert!(encode(&address, &json!("ABCDE"))
        .unwrap_err()
        .contains("at most 4"));
    assert!(encode(&address, &json!(5)).is_err());
    // Invalid UTF-8 is read lossily; a NUL inside is kept, trailing ones are not.
    assert_eq!(decode(&address, &[0xFF41, 0]).unwrap(), json!("\u{FFFD}A"));
    assert_eq!(
        decode(&address, &[0x4100, 0x4200]).unwrap(),
        json!("A\u{0}B")
    );
}

#[test]
fn integer_writes_are_range_checked() {
    let ok = |data_type, value: Value| encode(&big(data_type), &value).unwrap();
    let refused = |data_type, value: Value| {
        let error = encode(&big(data_type), &value).unwrap_err();
        assert!(!error.is_empty() && !error.contains('\n'));
        error
    };
    assert_eq!(ok(DataType::Uint16, json!(65535)), [0xFFFF]);
    assert!(
        refused(DataType::Uint16, json!(65536)).contains("out of range for uint16 (0 to 65535)")
    );
    assert!(refused(DataType::Uint16, json!(-1)).contains("out of range"));
    assert_eq!(ok(DataType::Int16, json!(-32768)), [0x8000]);
    refused(DataType::Int16, json!(32768));
    refused(DataType::Int16, json!(-32769));
    refused(DataType::Uint32, json!(4_294_967_296_u64));
    refused(DataType::Int32, json!(2_147_483_648_u64));
    refused(DataType::Int64, json!(u64::MAX));
    refused(DataType::Uint64, json!(-1));
    refused(DataType::Uint64, json!(1.9e19));
    // Whole-number floats, and values reverse scaling left a hair off a whole number.
    assert_eq!(ok(DataType::Uint16, json!(12.0)), [12]);
    assert_eq!(ok(DataType::Uint16, json!(11.999_999_9)), [12]);
    assert_eq!(ok(DataType::Int16, json!(-12.4)), [0xFFF4]);
    assert_eq!(ok(DataType::Uint64, json!(u64::MAX)), [0xFFFF; 4]);
    assert_eq!(
        ok(DataType::Int64, json!(i64::MAX)),
        [0x7FFF, 0xFFFF, 0xFFFF, 0xFFFF]
    );
    // Wrong JSON types.
    for value in [
        json!("12"),
        json!(true),
        json!(null),
        json!([1]),
        json!({"v": 1}),
    ] {
        assert!(refused(DataType::Int32, value.clone()).contains("write a number"));
        refused(DataType::Float32, value);
    }
    refused(DataType::Bool, json!(true));
}

#[test]
fn bool_writes() {
    assert_eq!(encode_bool(&json!(true)), Ok(true));
    assert_eq!(encode_bool(&json!(false)), Ok(false));
    assert_eq!(encode_bool(&json!(1)), Ok(true));
    assert_eq!(encode_bool(&json!(0.0)), Ok(false));
    for value in [json!(2), json!("true"), json!(null), json!(0.5)] {
        assert!(encode_bool(&value).unwrap_err().contains("bool point"));
    }
}

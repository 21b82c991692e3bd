//! Random values and series for the property tests: every kind a block holds, weighted towards
//! the edges (special floats, integers near ±2^63, u64 above i64::MAX, equal timestamps).

use super::super::BlockPoint;
use proptest::prelude::*;
use serde_json::{Map, Number, Value};

/// Finite floats worth a special look: zeros, subnormals and the extremes.
const SPECIAL_FLOATS: [f64; 10] = [
    0.0,
    -0.0,
    f64::MIN_POSITIVE,
    -f64::MIN_POSITIVE,
    5e-324,                      // the smallest subnormal
    -2.225_073_858_507_201e-308, // the largest subnormal, negative
    f64::MAX,
    f64::MIN,
    f64::EPSILON,
    1e300,
];

fn float(x: f64) -> Value {
    Value::Number(Number::from_f64(x).expect("finite"))
}

/// Any finite float: random bits (NaN and ±inf are not JSON numbers), specials, and the
/// decimal-looking values plants publish.
pub fn float_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<u64>()
            .prop_map(f64::from_bits)
            .prop_filter("JSON numbers are finite", |x| x.is_finite())
            .prop_map(float),
        prop::sample::select(SPECIAL_FLOATS.to_vec()).prop_map(float),
        (-1_000_000i64..1_000_000).prop_map(|c| float(c as f64 / 100.0)),
    ]
}

/// Any integer: i64 (near the ends too), small ones, and u64 above i64::MAX.
pub fn int_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        (-1000i64..1000).prop_map(Value::from),
        (0i64..4).prop_map(|d| Value::from(i64::MAX - d)),
        (0i64..4).prop_map(|d| Value::from(i64::MIN + d)),
        ((i64::MAX as u64 + 1)..=u64::MAX).prop_map(Value::from),
        (0u64..4).prop_map(|d| Value::from(u64::MAX - d)),
        // Around 2^53, where a double stops holding every integer.
        (-4i64..4).prop_map(|d| Value::from((1i64 << 53) + d)),
        (-4i64..4).prop_map(|d| Value::from(-(1i64 << 53) + d)),
    ]
}

/// Any Unicode text, empty included (built from chars: proptest's regex strings are slow to
/// generate by the thousand).
pub fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(any::<char>(), 0..12).prop_map(String::from_iter)
}

/// A value without nesting: a number, bool, null or any Unicode string (empty included).
pub fn leaf_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        float_value(),
        int_value(),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
        text().prop_map(Value::String),
        prop::sample::select(vec!["", "running", "idle", "fault"]).prop_map(Value::from),
    ]
}

/// Any value a block holds: leaves and JSON arrays and objects of them (nested a little).
pub fn any_value() -> impl Strategy<Value = Value> {
    leaf_value().prop_recursive(2, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(text(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// Timestamps: mostly close together (many equal), sometimes anywhere in i64.
fn ts() -> impl Strategy<Value = i64> {
    prop_oneof![
        4 => -3i64..3,
        1 => any::<i64>(),
        1 => prop::sample::select(vec![i64::MIN, i64::MAX, -1, 0]),
    ]
}

/// Quality: mostly good, then the severities, then any code.
fn quality() -> impl Strategy<Value = u32> {
    prop_oneof![
        4 => Just(0u32),
        1 => prop::sample::select(vec![0x4000_0000u32, 0x8000_0000, 0x8034_0000]),
        1 => any::<u32>(),
    ]
}

/// Seq: mostly 0, as it is except for equal timestamps.
fn seq() -> impl Strategy<Value = i64> {
    prop_oneof![4 => Just(0i64), 1 => any::<i64>(), 1 => 0i64..4]
}

/// `len` points of random values, sorted by (ts, seq) as a block's input is.
pub fn series(
    len: impl Into<prop::collection::SizeRange>,
    value: impl Strategy<Value = Value>,
) -> impl Strategy<Value = Vec<BlockPoint>> {
    prop::collection::vec((ts(), seq(), value, quality()), len).prop_map(|raw| {
        let mut points: Vec<BlockPoint> = raw
            .into_iter()
            .map(|(ts_ms, seq, value, quality)| BlockPoint {
                ts_ms,
                seq,
                value,
                quality,
            })
            .collect();
        points.sort_by_key(|p| (p.ts_ms, p.seq));
        points
    })
}

/// A plant-like numeric series: regular 1 s timestamps from `start`, two-decimal walk values,
/// some published as integers (`21` for 21.0).
pub fn regular_walk(len: usize) -> impl Strategy<Value = Vec<BlockPoint>> {
    (any::<i32>(), prop::collection::vec(-5i64..=5, len)).prop_map(move |(start, steps)| {
        let mut level = 2500i64;
        steps
            .into_iter()
            .enumerate()
            .map(|(i, step)| {
                level += step;
                let value = if level % 100 == 0 {
                    Value::from(level / 100)
                } else {
                    float(level as f64 / 100.0)
                };
                BlockPoint {
                    ts_ms: i64::from(start) * 1000 + i as i64 * 1000,
                    seq: 0,
                    value,
                    quality: 0,
                }
            })
            .collect()
    })
}

//! The block codec's tests: property tests over random series (round trips, summaries) and over
//! damaged bytes, plus the cases worth naming. Values are compared bit for bit ([`same_value`]),
//! since serde_json's own equality calls -0.0 and 0.0 equal.

mod corrupt;
mod decimal;
mod paged;
mod roundtrip;
mod strategies;
mod summary;

use super::BlockPoint;
use serde_json::Value;

/// Whether two values are the same JSON: same shape, numbers of the same kind (integer, u64,
/// float) and, for floats, the same bits.
pub fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            (x.is_i64(), x.is_u64(), x.is_f64()) == (y.is_i64(), y.is_u64(), y.is_f64())
                && x.as_i64() == y.as_i64()
                && x.as_u64() == y.as_u64()
                && x.as_f64().map(f64::to_bits) == y.as_f64().map(f64::to_bits)
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same_value(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((ka, va), (kb, vb))| ka == kb && same_value(va, vb))
        }
        _ => a == b,
    }
}

/// Whether two point lists are the same, point by point, values bit for bit.
pub fn same_points(a: &[BlockPoint], b: &[BlockPoint]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(p, q)| {
            p.ts_ms == q.ts_ms
                && p.seq == q.seq
                && p.quality == q.quality
                && same_value(&p.value, &q.value)
        })
}

/// A point at `ts_ms` with seq and quality 0.
pub fn point(ts_ms: i64, value: Value) -> BlockPoint {
    BlockPoint {
        ts_ms,
        seq: 0,
        value,
        quality: 0,
    }
}
mod old_versions;

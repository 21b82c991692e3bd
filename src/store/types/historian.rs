//! Historian values as the storage interface passes them, and the bucketing both engines share.

use crate::store::StoreResult;
use serde_json::Value;

// ---- Historian ----

/// One value to historize.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryWrite {
    pub domain: String,
    pub topic: String,
    pub ts_ms: i64,
    pub value: Value,
}

/// One stored value, or one bucket of an aggregate query (then `ts_ms` is the bucket start).
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryPoint {
    pub ts_ms: i64,
    pub value: Value,
}

/// The numeric reading of a value: a JSON number, or a bool as 0/1.
pub fn numeric(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        _ => None,
    }
}

/// An aggregate as JSON: whole numbers (that fit a double exactly) as integers, NULL as null.
pub fn number_json(x: Option<f64>) -> Value {
    match x {
        Some(x) if x.fract() == 0.0 && x.abs() <= 9_007_199_254_740_992.0 => Value::from(x as i64),
        Some(x) => Value::from(x),
        None => Value::Null,
    }
}

/// Buckets between consecutive `edges` (ascending): bucket `i` covers `[edges[i], edges[i + 1])`
/// cut to the window `start_ms..end_ms` and is stamped `edges[i]`, even when the window starts
/// later. `fixed(lo, hi)` aggregates one cut bucket as a single fixed bucket (at most one
/// point). For buckets of unequal length, such as local days across a DST change.
pub fn buckets_between(
    start_ms: i64,
    end_ms: i64,
    edges: &[i64],
    mut fixed: impl FnMut(i64, i64) -> StoreResult<Vec<HistoryPoint>>,
) -> StoreResult<Vec<HistoryPoint>> {
    let mut points = Vec::new();
    for pair in edges.windows(2) {
        let (lo, hi) = (pair[0].max(start_ms), pair[1].min(end_ms));
        if lo >= hi {
            continue;
        }
        for point in fixed(lo, hi)? {
            points.push(HistoryPoint {
                ts_ms: pair[0],
                ..point
            });
        }
    }
    Ok(points)
}

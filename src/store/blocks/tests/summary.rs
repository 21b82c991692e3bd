//! Summaries against a naive computation over the same points.

use super::strategies::{any_value, series};
use super::{point, same_points};
use crate::store::blocks::{decode_readings, encode, summarize, BlockPoint};
use proptest::prelude::*;
use serde_json::{json, Value};

/// The numeric reading written out again on purpose, so the test does not reuse what it checks.
fn reading(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::Bool(true) => Some(1.0),
        Value::Bool(false) => Some(0.0),
        _ => None,
    }
}

proptest! {
    #[test]
    fn summary_agrees_with_a_naive_computation(points in series(1..150, any_value())) {
        let summary = summarize(&points).unwrap();
        let readings: Vec<f64> = points.iter().filter_map(|p| reading(&p.value)).collect();
        prop_assert_eq!(summary.count, points.len() as i64);
        prop_assert_eq!(summary.num_count, readings.len() as i64);
        prop_assert_eq!(summary.start_ms, points[0].ts_ms);
        prop_assert_eq!(summary.end_ms, points[points.len() - 1].ts_ms);
        // The input is sorted: first is the first point, last the last.
        prop_assert!(same_points(std::slice::from_ref(&summary.first), &points[..1]));
        prop_assert!(same_points(std::slice::from_ref(&summary.last), &points[points.len() - 1..]));
        if readings.is_empty() {
            prop_assert_eq!((summary.min, summary.max, summary.sum), (None, None, None));
        } else {
            let mut sorted = readings.clone();
            sorted.sort_by(f64::total_cmp);
            prop_assert_eq!(summary.min, Some(sorted[0]));
            prop_assert_eq!(summary.max, Some(sorted[sorted.len() - 1]));
            let mut sum = 0.0;
            for x in &readings {
                sum += x;
            }
            // Same order, same additions: the same bits (an overflow to ±inf included).
            prop_assert_eq!(summary.sum.map(f64::to_bits), Some(sum.to_bits()));
        }
    }
}

proptest! {
    /// A block's readings are its points' numeric readings, in order, bit for bit.
    #[test]
    fn readings_are_the_numeric_values(points in series(1..150, any_value())) {
        let readings = decode_readings(&encode(&points).unwrap()).unwrap();
        let expected: Vec<(i64, u64)> = points
            .iter()
            .filter_map(|p| reading(&p.value).map(|x| (p.ts_ms, x.to_bits())))
            .collect();
        let got: Vec<(i64, u64)> = readings
            .ts
            .iter()
            .zip(&readings.values)
            .map(|(&ts, x)| (ts, x.to_bits()))
            .collect();
        prop_assert_eq!(got, expected);
    }
}

#[test]
fn empty_has_no_summary() {
    assert_eq!(summarize(&[]), None);
}

#[test]
fn first_and_last_follow_ts_then_seq() {
    let at = |ts_ms, seq, value: Value| BlockPoint {
        seq,
        ..point(ts_ms, value)
    };
    let points = vec![
        at(10, 2, json!("b")),
        at(10, 1, json!("a")),
        at(12, 0, json!(true)),
        at(12, 3, json!(4)),
    ];
    let summary = summarize(&points).unwrap();
    assert_eq!(summary.first.value, json!("a"));
    assert_eq!(summary.last.value, json!(4));
    assert_eq!((summary.start_ms, summary.end_ms), (10, 12));
    assert_eq!((summary.count, summary.num_count), (4, 2));
    assert_eq!(
        (summary.min, summary.max, summary.sum),
        (Some(1.0), Some(4.0), Some(5.0))
    );
}

//! Blocks whose floats are decimals at one scale store them as integers; every other block keeps
//! the float column; both read back bit for bit.

use super::{point, same_points};
use crate::store::blocks::{decode, decode_readings, encode, BlockPoint};
use proptest::prelude::*;
use serde_json::{json, Value};

fn block(values: impl IntoIterator<Item = Value>) -> Vec<BlockPoint> {
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| point(i as i64 * 1000, v))
        .collect()
}

fn round_trips(points: &[BlockPoint]) -> usize {
    let bytes = encode(points).unwrap();
    assert!(same_points(&decode(&bytes).unwrap(), points));
    bytes.len()
}

#[test]
fn a_float_that_is_no_short_decimal_keeps_the_whole_block_exact() {
    let mut values: Vec<Value> = (0..500)
        .map(|i| json!(20.0 + f64::from(i % 50) / 100.0))
        .collect();
    let decimal = round_trips(&block(values.clone()));
    values[250] = json!(0.1 + 0.2); // 0.30000000000000004: 17 significant digits
    let plain = round_trips(&block(values));
    assert!(decimal < plain, "{decimal} against {plain}");
}

#[test]
fn negative_zero_and_integers_in_the_float_column_stay_what_they_were() {
    let points = block([json!(-0.0), json!(1.25), json!(3), json!(-2.5), json!(0.0)]);
    round_trips(&points);
    let back = decode(&encode(&points).unwrap()).unwrap();
    assert!(back[0].value.as_f64().unwrap().is_sign_negative());
    assert!(back[2].value.is_i64());
    let readings = decode_readings(&encode(&points).unwrap()).unwrap();
    assert_eq!(readings.values[4].to_bits(), 0.0f64.to_bits());
}

proptest! {
    /// Decimals of any scale, mixed with integers, booleans and text, read back exactly.
    #[test]
    fn decimal_blocks_round_trip(
        ms in prop::collection::vec(-1_000_000_000i64..1_000_000_000, 1..400),
        k in 0u32..=9,
        other in prop::collection::vec((0usize..400, prop_oneof![
            Just(json!(true)), Just(json!("state")), (-1000i64..1000).prop_map(|i| json!(i)),
        ]), 0..5),
    ) {
        let mut values: Vec<Value> = ms
            .iter()
            .map(|m| json!(format!("{m}e-{k}").parse::<f64>().unwrap()))
            .collect();
        for (at, value) in other {
            if at < values.len() {
                values[at] = value;
            }
        }
        round_trips(&block(values));
    }
}

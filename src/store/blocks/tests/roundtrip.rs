//! Round trips: whatever a block is given, it gives back, bit for bit.

use super::strategies::{any_value, float_value, int_value, regular_walk, series};
use super::{point, same_points, same_value};
use crate::store::blocks::layout::Columns;
use crate::store::blocks::numbers::{decode_numbers, encode_numbers};
use crate::store::blocks::{decode, encode, BlockError, BlockPoint, MAX_POINTS};
use pco::ChunkConfig;
use proptest::prelude::*;
use serde_json::{json, Value};

fn round_trip(points: &[BlockPoint]) -> Vec<BlockPoint> {
    decode(&encode(points).expect("encodes")).expect("decodes")
}

proptest! {
    /// Random series of every kind (equal timestamps, any seq and quality) read back exactly.
    #[test]
    fn random_series_round_trip(points in series(1..300, any_value())) {
        let back = round_trip(&points);
        prop_assert!(same_points(&points, &back), "{points:?}\n{back:?}");
    }

    /// Numbers only, where the f64/i64 routing matters: floats and integers mixed in one block.
    #[test]
    fn mixed_numbers_round_trip(points in series(1..300, prop_oneof![float_value(), int_value()])) {
        let back = round_trip(&points);
        prop_assert!(same_points(&points, &back), "{points:?}\n{back:?}");
    }

    /// The float column alone keeps every bit pattern: NaN payloads, ±inf, −0.0, subnormals.
    #[test]
    fn float_column_keeps_every_bit_pattern(bits in prop::collection::vec(any::<u64>(), 1..500)) {
        let floats: Vec<f64> = bits.iter().map(|&b| f64::from_bits(b)).collect();
        let bytes = encode_numbers(&floats, &ChunkConfig::default()).unwrap();
        let back: Vec<f64> = decode_numbers(&bytes, floats.len()).unwrap();
        prop_assert_eq!(bits, back.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
    }

    /// A plant's walk with some values published as integers reads back with the integers as
    /// integers (they share the float column).
    #[test]
    fn walk_with_integers_round_trips(points in regular_walk(2000)) {
        let back = round_trip(&points);
        prop_assert!(same_points(&points, &back));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3))]

    /// Full blocks of every kind round-trip too.
    #[test]
    fn full_blocks_round_trip(points in series(MAX_POINTS, any_value())) {
        let back = round_trip(&points);
        prop_assert!(same_points(&points, &back));
    }
}

#[test]
fn one_point_blocks_round_trip() {
    for value in [
        json!(null),
        json!(true),
        json!(false),
        json!(""),
        json!("ünïcødé ✓ 🌡"),
        json!(0),
        json!(-0.0),
        json!(1.0),
        json!(1),
        json!(u64::MAX),
        json!(i64::MIN),
        json!([1, 1.0, "x", null, {"a": [true]}]),
        json!({}),
        json!([]),
    ] {
        for ts_ms in [i64::MIN, -1, 0, i64::MAX] {
            let points = vec![BlockPoint {
                ts_ms,
                seq: 7,
                value: value.clone(),
                quality: 0x8000_0000,
            }];
            assert!(same_points(&points, &round_trip(&points)), "{points:?}");
        }
    }
}

#[test]
fn float_column_keeps_nan_payloads_and_infinities() {
    let floats = [
        f64::NAN,
        -f64::NAN,
        f64::from_bits(0x7ff0_0000_0000_0001), // a signalling NaN
        f64::from_bits(0x7ff8_dead_beef_0001), // a quiet NaN with a payload
        f64::from_bits(0xfff4_0000_0000_0000),
        f64::INFINITY,
        f64::NEG_INFINITY,
        -0.0,
        0.0,
        5e-324,
        f64::MAX,
        f64::MIN_POSITIVE,
        21.37,
        21.38,
    ];
    // Alone and among decimal-looking values, where pco's float-multiplier mode may apply.
    let mut walk: Vec<f64> = (0..4000)
        .map(|i| 2000.0 + f64::from(i % 37) / 100.0)
        .collect();
    walk.extend_from_slice(&floats);
    for column in [floats.to_vec(), walk] {
        let bytes = encode_numbers(&column, &ChunkConfig::default()).unwrap();
        let back: Vec<f64> = decode_numbers(&bytes, column.len()).unwrap();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&column), bits(&back));
    }
}

#[test]
fn integers_and_floats_stay_apart() {
    let values = [
        json!(1),
        json!(1.0),
        json!(-0.0),
        json!(0),
        json!(9007199254740993i64),
    ];
    let points: Vec<BlockPoint> = values.iter().map(|v| point(0, v.clone())).collect();
    let back = round_trip(&points);
    for (a, b) in points.iter().zip(&back) {
        assert!(
            same_value(&a.value, &b.value),
            "{:?} came back as {:?}",
            a.value,
            b.value
        );
    }
    assert!(back[0].value.is_i64() && back[1].value.is_f64());
    assert_eq!(
        back[2].value.as_f64().unwrap().to_bits(),
        (-0.0f64).to_bits()
    );
}

#[test]
fn integers_share_the_float_column_only_where_exact() {
    let points = vec![
        point(0, json!(21.5)),
        point(1, json!(21)),
        point(2, json!(9007199254740993i64)), // 2^53 + 1: no double holds it
    ];
    let columns = Columns::split(&points).unwrap();
    assert_eq!(columns.floats, vec![21.5, 21.0]);
    assert_eq!(columns.ints, vec![9007199254740993]);
    assert!(same_points(&points, &round_trip(&points)));
}

#[test]
fn encode_refuses_empty_and_unsorted_input() {
    assert!(matches!(encode(&[]), Err(BlockError::Empty)));
    let unsorted = [point(2, json!(1)), point(1, json!(2))];
    assert!(matches!(
        encode(&unsorted),
        Err(BlockError::Unsorted { index: 1 })
    ));
    let seq_unsorted = [
        BlockPoint {
            seq: 1,
            ..point(5, json!(1))
        },
        BlockPoint {
            seq: 0,
            ..point(5, json!(2))
        },
    ];
    assert!(matches!(
        encode(&seq_unsorted),
        Err(BlockError::Unsorted { index: 1 })
    ));
    // Equal (ts, seq) pairs are in order.
    assert!(encode(&[point(5, json!(1)), point(5, json!(2))]).is_ok());
}

/// All-zero seq and all-good quality cost nothing: one point that differs adds a column.
#[test]
fn zero_seq_and_good_quality_are_free() {
    let walk: Vec<BlockPoint> = (0..4096)
        .map(|i| {
            point(
                1_700_000_000_000 + i * 1000,
                json!(20.0 + (i % 50) as f64 / 100.0),
            )
        })
        .collect();
    let plain = encode(&walk).unwrap().len();
    // A regular two-decimal series: well under one byte a point.
    assert!(plain < 4096, "{plain} bytes for 4096 points");
    let mut with_quality = walk.clone();
    with_quality[100].quality = 0x8000_0000;
    let mut with_seq = walk.clone();
    with_seq[4095].seq = 1;
    assert!(encode(&with_quality).unwrap().len() > plain);
    assert!(encode(&with_seq).unwrap().len() > plain);
}

/// A string state (a few words in long runs) compresses to almost nothing.
#[test]
fn repeated_strings_compress() {
    let states = ["running", "idle", "fault"];
    let points: Vec<BlockPoint> = (0..8192)
        .map(|i| point(i * 1000, Value::from(states[(i / 600) as usize % 3])))
        .collect();
    let bytes = encode(&points).unwrap();
    assert!(bytes.len() < 1000, "{} bytes", bytes.len());
    assert!(same_points(&points, &decode(&bytes).unwrap()));
}

/// A step setpoint (8 changes in 4,096 points) stays near 0.03 bytes a point: pco's automatic
/// delta choice alone stored it in ~1.4 KB; first-order deltas take ~0.1 KB.
#[test]
fn step_signals_stay_small() {
    let points: Vec<BlockPoint> = (0..4096)
        .map(|i| point(i * 1000, json!(40.0 + 5.0 * ((i / 500) % 9) as f64)))
        .collect();
    let bytes = encode(&points).unwrap();
    assert!(bytes.len() < 300, "{} bytes", bytes.len());
    assert!(same_points(&points, &decode(&bytes).unwrap()));
}

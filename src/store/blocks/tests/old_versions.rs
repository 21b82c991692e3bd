//! Blocks written by earlier formats still read: each constant below is the exact output of an
//! earlier version of `encode` (format 1, before decimal floats) for the points built next to it.

use super::{point, same_points};
use crate::store::blocks::{decode, decode_readings, encode, BlockPoint};
use serde_json::json;

/// Every kind, a quality and a seq: format 1, from commit 8cba2d8.
const MIXED_V1: &str = "016d114da828021200030201000107010801050106010201001e3770636f210300050a040104270000813e000000000000100101800000000000000040000400500600000000000000f744370b9cc42000002270636f210300050a040101270000002500f000000000000000000002004a450507005970636f2103000509040106230000b247e17a14ae47f80b35000043fdffffffffff7f805e7d0000000000003800340800000000008000080000000000000000000600618406708c88638d68ac118d35a2b146340a20100804001870636f2103008104010101000000100020000000200090001a28b52ffd201189000069646c657b2261223a5b312c322e355d7d";

/// A two-decimal walk: format 1, from commit 8cba2d8.
const WALK_V1: &str = "0144d078c91e0002001e3770636f21030084070401041d0000813e000000000000100101800000000000000040000400500600000000000000f744370b9cc42000005370636f21030084070401061d0000b247e17a14ae47f81b41030018fdffffffffffff03f4010000000000002000d600000000000000011000f8ffffffffffffff0b003408000000000080f95ab91afcfd9fff00";

fn mixed_points() -> Vec<BlockPoint> {
    let mut points: Vec<BlockPoint> = (0..40)
        .map(|i| {
            point(
                1_700_000_000_000 + i * 1000,
                json!(20.0 + (i % 7) as f64 * 0.01 + 0.05),
            )
        })
        .collect();
    points[3].value = json!(21);
    points[5].value = json!("idle");
    points[6].value = json!({"a": [1, 2.5]});
    points[7].value = json!(true);
    points[8].value = json!(null);
    points[9].value = json!(-7);
    points[10].quality = 0x4000_0000;
    points
}

fn walk_points() -> Vec<BlockPoint> {
    (0..30)
        .map(|i| {
            let text = format!("{}.{:02}", 21 + i / 10, (i * 7) % 100);
            point(
                1_700_000_000_000 + i * 1000,
                json!(text.parse::<f64>().unwrap()),
            )
        })
        .collect()
}

fn bytes(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn format_1_blocks_still_decode() {
    for (hex, points) in [(MIXED_V1, mixed_points()), (WALK_V1, walk_points())] {
        let old = bytes(hex);
        assert_eq!(old[0], 1);
        assert!(same_points(&decode(&old).unwrap(), &points));
        let readings = decode_readings(&old).unwrap();
        assert_eq!(
            readings,
            decode_readings(&encode(&points).unwrap()).unwrap()
        );
    }
}

#[test]
fn new_blocks_are_format_2_and_decimal_walks_shrink() {
    let walk = walk_points();
    let new = encode(&walk).unwrap();
    assert_eq!(new[0], 2);
    assert!(same_points(&decode(&new).unwrap(), &walk));
    assert!(new.len() < bytes(WALK_V1).len(), "{} bytes", new.len());
}

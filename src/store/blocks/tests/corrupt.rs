//! Damaged bytes: random input, truncations, flipped bits (with the checksum mended, so the
//! column decoders themselves are reached) and other versions all give Err, never a panic.

use super::strategies::{any_value, series};
use super::{point, same_points};
use crate::store::blocks::{decode, decode_readings, encode, BlockError};
use proptest::prelude::*;
use serde_json::json;

/// `bytes` with its checksum recomputed, as a block damaged before it was checksummed would be.
fn mend_checksum(mut bytes: Vec<u8>) -> Vec<u8> {
    if bytes.len() >= 5 {
        let crc = crc32fast::hash(&bytes[5..]);
        bytes[1..5].copy_from_slice(&crc.to_le_bytes());
    }
    bytes
}

proptest! {
    #[test]
    fn random_bytes_are_refused(bytes in prop::collection::vec(any::<u8>(), 0..2000)) {
        prop_assert!(decode(&bytes).is_err());
    }

    /// Random bodies behind a valid header reach the body's parser, which refuses them.
    #[test]
    fn random_bodies_are_refused(body in prop::collection::vec(any::<u8>(), 0..2000)) {
        let mut bytes = vec![1, 0, 0, 0, 0];
        bytes.extend(body);
        let bytes = mend_checksum(bytes);
        prop_assert!(decode(&bytes).is_err());
        prop_assert!(decode_readings(&bytes).is_err());
    }

    /// Proper prefixes of a valid block are refused, checksum mended or not: every cut in the
    /// header and the first columns, and random cuts after them.
    #[test]
    fn truncated_blocks_are_refused(
        points in series(1..100, any_value()),
        cuts in prop::collection::vec(any::<prop::sample::Index>(), 16),
    ) {
        let bytes = encode(&points).unwrap();
        let early = 0..bytes.len().min(24);
        let later = cuts.iter().map(|cut| cut.index(bytes.len()));
        for len in early.chain(later) {
            prop_assert!(decode(&bytes[..len]).is_err(), "prefix of {len} bytes");
            prop_assert!(decode_readings(&bytes[..len]).is_err(), "prefix of {len} bytes");
            prop_assert!(decode(&mend_checksum(bytes[..len].to_vec())).is_err(), "mended prefix of {len}");
        }
    }

    /// A flipped bit fails the checksum; with the checksum mended, the decoders still never
    /// panic (they may find another valid block: a flip inside a number is just another number).
    #[test]
    fn flipped_bits_never_panic(
        points in series(1..200, any_value()),
        flips in prop::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..4),
    ) {
        let bytes = encode(&points).unwrap();
        let mut damaged = bytes.clone();
        for (at, bit) in &flips {
            damaged[at.index(bytes.len())] ^= 1 << bit;
        }
        if damaged != bytes {
            prop_assert!(decode(&damaged).is_err());
        }
        let mended = mend_checksum(damaged);
        if let Ok(back) = decode(&mended) {
            prop_assert!(!back.is_empty());
        }
        let _ = decode_readings(&mended);
        // Appended bytes are refused too.
        let mut longer = bytes.clone();
        longer.push(0);
        prop_assert!(decode(&mend_checksum(longer)).is_err());
    }
}

#[test]
fn another_version_is_named() {
    let mut bytes = encode(&[point(0, json!(1.5))]).unwrap();
    bytes[0] = 4;
    let err = decode(&bytes).unwrap_err();
    assert!(matches!(err, BlockError::UnknownVersion(4)));
    assert_eq!(
        err.to_string(),
        "the block is in format version 4, which this version of svc cannot read"
    );
}

#[test]
fn errors_are_one_plain_sentence() {
    let err = decode(&[]).unwrap_err();
    assert_eq!(err.to_string(), "the block is corrupt: it is empty");
    let mut bytes = encode(&[point(0, json!("x"))]).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    assert_eq!(
        decode(&bytes).unwrap_err().to_string(),
        "the block is corrupt: its checksum does not match"
    );
}

/// A valid block whose count is mended to say more points than it holds is refused.
#[test]
fn a_count_that_lies_is_refused() {
    let points: Vec<_> = (0..10).map(|i| point(i, json!(i))).collect();
    let bytes = encode(&points).unwrap();
    assert!(same_points(&points, &decode(&bytes).unwrap()));
    // The count is the varint right after the header: 10 fits one byte.
    assert_eq!(bytes[5], 10);
    for count in [0u8, 9, 11, 127] {
        let mut lying = bytes.clone();
        lying[5] = count;
        assert!(decode(&mend_checksum(lying)).is_err(), "count {count}");
    }
}

//! Blocks in pages (format 3): long blocks round-trip exactly, every page subset reads back the
//! points of those pages, the directory sums up each page as `summarize` does, and damaged
//! paged blocks are refused without a panic.

use super::strategies::{any_value, float_value, int_value, regular_walk, series};
use super::{point, same_points};
use crate::store::blocks::layout::Readings;
use crate::store::blocks::{
    decode, decode_readings, encode, open, summarize, BlockError, BlockPoint, PageSummary,
    PAGE_POINTS,
};
use proptest::prelude::*;
use serde_json::json;

fn page_summaries(bytes: &[u8]) -> Result<Option<Vec<PageSummary>>, BlockError> {
    Ok(open(bytes)?.pages().map(<[PageSummary]>::to_vec))
}

fn decode_pages(bytes: &[u8], keep: &[bool]) -> Result<Vec<BlockPoint>, BlockError> {
    open(bytes)?.points(Some(keep))
}

fn decode_page_readings(bytes: &[u8], keep: &[bool]) -> Result<Readings, BlockError> {
    open(bytes)?.readings(Some(keep))
}

/// The pages' point ranges as the directory lists them.
fn page_ranges(bytes: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut start = 0;
    page_summaries(bytes)
        .unwrap()
        .expect("a long block is in pages")
        .iter()
        .map(|p| {
            start += p.count as usize;
            start - p.count as usize..start
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Long series of every kind, straddling page boundaries, round-trip bit for bit, and
    /// each subset of pages reads back exactly the points of those pages.
    #[test]
    fn long_series_round_trip_by_page(
        points in series(PAGE_POINTS + 1..3 * PAGE_POINTS + 7, any_value()),
        keep in prop::collection::vec(any::<bool>(), 4),
    ) {
        let bytes = encode(&points).unwrap();
        prop_assert!(same_points(&points, &decode(&bytes).unwrap()));
        let ranges = page_ranges(&bytes);
        prop_assert!(ranges.len() >= 2);
        let keep: Vec<bool> = (0..ranges.len()).map(|i| keep[i % keep.len()]).collect();
        let wanted: Vec<BlockPoint> = ranges
            .iter()
            .zip(&keep)
            .filter(|(_, &k)| k)
            .flat_map(|(r, _)| points[r.clone()].to_vec())
            .collect();
        prop_assert!(same_points(&wanted, &decode_pages(&bytes, &keep).unwrap()));
        let readings = decode_page_readings(&bytes, &keep).unwrap();
        let expected: Vec<(i64, u64)> = wanted
            .iter()
            .filter_map(|p| crate::store::types::numeric(&p.value).map(|x| (p.ts_ms, x.to_bits())))
            .collect();
        let got: Vec<(i64, u64)> = readings.ts.iter().zip(&readings.values).map(|(&t, x)| (t, x.to_bits())).collect();
        prop_assert_eq!(expected, got);
    }

    /// Numbers of both kinds, where a page may hold no integers (that column is then whole).
    #[test]
    fn long_mixed_numbers_round_trip(
        points in series(PAGE_POINTS * 2 + 1..PAGE_POINTS * 3, prop_oneof![20 => float_value(), 1 => int_value()]),
    ) {
        let bytes = encode(&points).unwrap();
        prop_assert!(same_points(&points, &decode(&bytes).unwrap()));
        let all = decode_readings(&bytes).unwrap();
        prop_assert_eq!(all.ts.len(), points.len());
    }

    /// The directory holds what `summarize` says of each page's points.
    #[test]
    fn page_summaries_match_the_points(points in regular_walk(3 * PAGE_POINTS + 100)) {
        let bytes = encode(&points).unwrap();
        let pages = page_summaries(&bytes).unwrap().unwrap();
        for (page, range) in pages.iter().zip(page_ranges(&bytes)) {
            let expected = summarize(&points[range]).unwrap();
            prop_assert_eq!(page.start_ms, expected.start_ms);
            prop_assert_eq!(page.end_ms, expected.end_ms);
            prop_assert_eq!(page.count, expected.count);
            prop_assert_eq!(page.num_count, expected.num_count);
            prop_assert_eq!(page.min.map(f64::to_bits), expected.min.map(f64::to_bits));
            prop_assert_eq!(page.max.map(f64::to_bits), expected.max.map(f64::to_bits));
            prop_assert_eq!(page.sum.map(f64::to_bits), expected.sum.map(f64::to_bits));
        }
    }

    /// Damaged paged blocks (checksum mended) give Err or other points, never a panic, and a
    /// truncated one is refused.
    #[test]
    fn damaged_paged_blocks_never_panic(
        flips in prop::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..4),
        cut in any::<prop::sample::Index>(),
    ) {
        let points: Vec<BlockPoint> = (0..PAGE_POINTS as i64 * 2 + 3)
            .map(|i| point(i * 1000, json!(20.0 + (i % 17) as f64 / 100.0)))
            .collect();
        let bytes = encode(&points).unwrap();
        let mut damaged = bytes.clone();
        for (at, bit) in &flips {
            let i = 5 + at.index(damaged.len() - 5);
            damaged[i] ^= 1 << bit;
        }
        let crc = crc32fast::hash(&damaged[5..]);
        damaged[1..5].copy_from_slice(&crc.to_le_bytes());
        let _ = decode(&damaged);
        let _ = decode_readings(&damaged);
        let _ = page_summaries(&damaged);
        if let Ok(block) = open(&damaged) {
            let keep = block.pages().map(|p| vec![true; p.len()]);
            let _ = block.points(keep.as_deref());
        }
        let len = cut.index(bytes.len());
        let mut short = bytes[..len].to_vec();
        if short.len() >= 5 {
            let crc = crc32fast::hash(&short[5..]);
            short[1..5].copy_from_slice(&crc.to_le_bytes());
        }
        prop_assert!(decode(&short).is_err());
    }
}

#[test]
fn a_block_of_one_page_has_no_directory() {
    let points: Vec<BlockPoint> = (0..PAGE_POINTS as i64)
        .map(|i| point(i, json!(i)))
        .collect();
    assert_eq!(page_summaries(&encode(&points).unwrap()).unwrap(), None);
}

/// A long text column and a quality column read back by page.
#[test]
fn text_and_quality_read_back_by_page() {
    let points: Vec<BlockPoint> = (0..PAGE_POINTS as i64 * 2 + 1)
        .map(|i| BlockPoint {
            ts_ms: i,
            seq: i % 3,
            value: if i % 5 == 0 {
                json!(format!("s{i}"))
            } else {
                json!({"v": i})
            },
            quality: if i % 7 == 0 { 0x8000_0000 } else { 0 },
        })
        .collect();
    let bytes = encode(&points).unwrap();
    let ranges = page_ranges(&bytes);
    let keep: Vec<bool> = (0..ranges.len()).map(|i| i == 1).collect();
    assert!(same_points(
        &points[ranges[1].clone()],
        &decode_pages(&bytes, &keep).unwrap()
    ));
    assert!(same_points(&points, &decode(&bytes).unwrap()));
}

/// A float tag's readings come from its timestamps and floats alone, with seq and quality
/// columns passed over; they equal what the points say, page subset by page subset.
#[test]
fn float_readings_skip_the_other_columns() {
    for (seq, quality) in [(false, false), (true, true), (false, true)] {
        let points: Vec<BlockPoint> = (0..PAGE_POINTS as i64 * 3 + 5)
            .map(|i| BlockPoint {
                ts_ms: i * 1000,
                seq: if seq { i % 2 } else { 0 },
                value: json!(
                    20.0 + (i % 101) as f64 / 100.0 + if i % 7 == 0 { 0.001 } else { 0.0 }
                ),
                quality: if quality && i % 5 == 0 {
                    0x8000_0000
                } else {
                    0
                },
            })
            .collect();
        let bytes = encode(&points).unwrap();
        let ranges = page_ranges(&bytes);
        for keep in [
            vec![true, false, true, false],
            vec![false, false, false, true],
        ] {
            let got = decode_page_readings(&bytes, &keep).unwrap();
            let want: Vec<(i64, u64)> = ranges
                .iter()
                .zip(&keep)
                .filter(|(_, &k)| k)
                .flat_map(|(r, _)| points[r.clone()].iter())
                .map(|p| (p.ts_ms, p.value.as_f64().unwrap().to_bits()))
                .collect();
            let got: Vec<(i64, u64)> = got
                .ts
                .iter()
                .zip(&got.values)
                .map(|(&t, x)| (t, x.to_bits()))
                .collect();
            assert_eq!(got, want, "seq {seq}, quality {quality}");
        }
    }
}

//! Historian values as the storage interface passes them, and the bucketing both engines share.

use crate::store::StoreResult;
use serde_json::Value;
use std::fmt;
use std::str::FromStr;

// ---- Historian ----

/// One value to historize.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryWrite {
    pub domain: String,
    pub topic: String,
    pub ts_ms: i64,
    pub value: Value,
    pub quality: Quality,
}

/// One stored value, or one bucket of an aggregate query (then `ts_ms` is the bucket start
/// and the quality is good).
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryPoint {
    pub ts_ms: i64,
    pub value: Value,
    pub quality: Quality,
}

impl HistoryPoint {
    /// A point of good quality.
    pub fn good(ts_ms: i64, value: Value) -> HistoryPoint {
        HistoryPoint {
            ts_ms,
            value,
            quality: Quality::GOOD,
        }
    }
}

/// A point's quality as an OPC UA StatusCode: the top two bits are the severity (00 good,
/// 01 uncertain, 10 and 11 bad), the rest an optional specific code. Kept whole, so a
/// connector's status reads back exactly; a point without one is good (0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Quality(pub u32);

impl Quality {
    pub const GOOD: Quality = Quality(0);
    pub const UNCERTAIN: Quality = Quality(0x4000_0000);
    pub const BAD: Quality = Quality(0x8000_0000);

    /// `good`, `uncertain` or `bad`.
    pub fn label(self) -> &'static str {
        match self.0 >> 30 {
            0 => "good",
            1 => "uncertain",
            _ => "bad",
        }
    }

    /// The specific status code, when there is one beyond the bare severity.
    pub fn status(self) -> Option<u32> {
        (self.0 & 0x3FFF_FFFF != 0 || self.0 >> 30 == 3).then_some(self.0)
    }

    /// A payload's `quality` member: `good`, `uncertain` or `bad` (any letter case), or an
    /// OPC UA StatusCode as a number; None for anything else.
    pub fn from_json(member: &Value) -> Option<Quality> {
        match member {
            Value::String(text) => [Quality::GOOD, Quality::UNCERTAIN, Quality::BAD]
                .into_iter()
                .find(|q| q.label().eq_ignore_ascii_case(text.trim())),
            Value::Number(n) => n.as_u64().and_then(|c| u32::try_from(c).ok()).map(Quality),
            _ => None,
        }
    }
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

/// A series' hot tail: the rows not yet closed into blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HotTail {
    pub domain: String,
    pub topic: String,
    pub count: u64,
    pub first_ms: i64,
    pub last_ms: i64,
}

/// A series' day that holds more blocks than merging would leave (`store::history::merge`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DayToMerge {
    pub domain: String,
    pub topic: String,
    /// The day's first instant (UTC midnight).
    pub day_ms: i64,
}

/// A series' values that one fold wrote straight into blocks (a burst newer than everything the
/// series held, `store::history::bursts`), for the writer to compact later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StraightToBlocks {
    pub domain: String,
    pub topic: String,
    pub points: u64,
    /// The first value's time: where the series' run of such blocks starts.
    pub first_ms: i64,
}

/// How much of a series' blocks the writer compacts after a run of blocks folds wrote straight
/// (`store::history::bursts::compact_from`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StraightCompaction {
    /// The run's blocks into a block's worth each, and the days it has left merged whole once
    /// no hot row is left in them.
    Run,
    /// Also the complete groups of the run's last day (`merge::Groups::Complete`): a merged
    /// block's worth has been written since they were last merged.
    Day,
    /// Also the run's last day whole once no hot row is left in it: the tag has gone quiet.
    Idle,
}

/// What closing a block took from a hot tail.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sealed {
    /// Points moved into the block (0: the tail was empty).
    pub points: u64,
    /// Points rewritten by merging the day the block closed (0: none), so the writer can count
    /// a merge's work against its budget between folds.
    pub merged: u64,
    /// The oldest time left in the tail, if any.
    pub next_first_ms: Option<i64>,
}

/// How values of one bucket are reduced to one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Aggregation {
    Mean,
    Sum,
    Min,
    Max,
    Median,
    Count,
    First,
    Last,
}

impl Aggregation {
    pub const ALL: [Aggregation; 8] = [
        Aggregation::Mean,
        Aggregation::Sum,
        Aggregation::Min,
        Aggregation::Max,
        Aggregation::Median,
        Aggregation::Count,
        Aggregation::First,
        Aggregation::Last,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Aggregation::Mean => "mean",
            Aggregation::Sum => "sum",
            Aggregation::Min => "min",
            Aggregation::Max => "max",
            Aggregation::Median => "median",
            Aggregation::Count => "count",
            Aggregation::First => "first",
            Aggregation::Last => "last",
        }
    }
}

impl fmt::Display for Aggregation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Aggregation {
    type Err = String;

    /// Accepts the names in any letter case.
    fn from_str(text: &str) -> Result<Aggregation, String> {
        Aggregation::ALL
            .into_iter()
            .find(|a| a.as_str().eq_ignore_ascii_case(text.trim()))
            .ok_or_else(|| {
                format!(
                    "`aggregation` `{text}` is not one of mean, sum, min, max, median, count, \
                     first, last"
                )
            })
    }
}

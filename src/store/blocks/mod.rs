//! The historian's block codec (issue 33): a series' closed points as one compressed value, plus
//! the summary the store keeps beside it in plain columns. Pure and engine-neutral: both engines
//! store what [`encode`] returns as one BLOB/bytea and read it back with [`decode`].
//!
//! A block is columns, each compressed by the codec that suits it (see `layout.rs` for the split,
//! `codec.rs` and `frame.rs` for the bytes): timestamps, seq, f64 values, i64 values and quality
//! through pco (floats that are all decimals at one scale as that scale and integers,
//! `decimal.rs`); strings and JSON through zstd; the per-point kind as runs. Everything reads back exactly as written:
//! floats bit for bit, integers as integers, text and JSON as given.
//!
//! Sizes: a block closes at [`MAX_POINTS`] points or [`MAX_SPAN_MS`] of time, whichever comes
//! first, chosen by `examples/historian_codec.rs` (bench/historian-codec-results.md).

// The store's block tables (issue 33) call encode, decode and summarize; `layout`, `numbers`
// and `text` are public for examples/historian_codec.rs, which measures them.

mod codec;
mod decimal;
mod frame;
pub mod layout;
pub mod numbers;
mod paged;
mod runs;
mod summary;
pub mod text;

#[cfg(test)]
mod tests;

// `examples/historian_codec.rs` includes this module and uses `encode_with` and `Settings`;
// each of the server and the example leaves some of these unused.
#[allow(unused_imports)]
pub use codec::{decode, decode_readings, encode, encode_with, open, OpenBlock, Settings};
#[allow(unused_imports)]
pub use paged::{PageSummary, PAGE_POINTS};
#[allow(unused_imports)]
pub use summary::summarize;

use serde_json::Value;

/// Points a block holds at most: the sealer closes a block at this count. 4,096 (68 minutes
/// at 1 Hz): within 5 % of the bytes of 8,192-point blocks with their rows counted, and half
/// the decoding where a year chart's 500 bucket edges cut blocks (36 ms against 56 ms in
/// bench/historian-codec-results.md).
pub const MAX_POINTS: usize = 4_096;

/// Points a block in pages holds at most, as the store merges a day's blocks into one
/// (`store::history::merge`) or closes an idle tail at once: 32 pages. A day at 1 Hz (86,400)
/// is one block; a faster tag's day is several, merged a block's worth at a time, so no merge
/// encodes more than this at once (and decodes no more than the blocks it is reading).
pub const MERGED_MAX_POINTS: usize = 32 * PAGE_POINTS;

/// The time a block covers at most (first to last point): the sealer closes a block when the
/// next point is this far from its first. One day, so a slow tag still seals daily (its hot
/// rows are the expensive ones) and retention drops whole blocks within a day of its limit,
/// while a tag at one point a minute still fills blocks of 1,440 points.
pub const MAX_SPAN_MS: i64 = 86_400_000;

/// The most points [`decode`] accepts in one block (and [`encode`] writes): far above
/// [`MAX_POINTS`], so blocks written with a larger size later still read, yet a corrupt count
/// cannot make the decoder allocate without bound.
pub const MAX_DECODE_POINTS: usize = 1 << 20;

/// The most bytes of text (strings and JSON) one block holds, for the same reason.
pub const MAX_TEXT_BYTES: usize = 1 << 30;

/// One point as a block keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockPoint {
    pub ts_ms: i64,
    pub seq: i64,
    pub value: Value,
    /// An OPC UA StatusCode: 0 good, 0x4000_0000 uncertain, 0x8000_0000 bad (the top two bits
    /// are the severity), or a specific code.
    pub quality: u32,
}

/// What a block's plain columns say about it.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockSummary {
    /// The first and the last point's timestamp (inclusive).
    pub start_ms: i64,
    pub end_ms: i64,
    /// Points in the block.
    pub count: i64,
    /// Points with a numeric reading (a JSON number, or a bool as 0/1).
    pub num_count: i64,
    /// Over the numeric readings; `None` when `num_count` is 0.
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub sum: Option<f64>,
    /// The first and the last point in (ts, seq) order.
    pub first: BlockPoint,
    pub last: BlockPoint,
}

/// Why a block could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum BlockError {
    #[error("a block needs at least one point")]
    Empty,
    #[error("a block holds at most {max} points, not {count}")]
    TooManyPoints { count: usize, max: usize },
    #[error("a block's points must be in (timestamp, seq) order; point {index} is not")]
    Unsorted { index: usize },
    #[error("a block holds at most {max} bytes of text, not {bytes}")]
    TooMuchText { bytes: usize, max: usize },
    #[error("the block is in format version {0}, which this version of svc cannot read")]
    UnknownVersion(u8),
    #[error("the block is corrupt: {0}")]
    Corrupt(String),
    /// A codec refused to compress (not expected for valid input; kept as a sentence).
    #[error("the block could not be compressed: {0}")]
    Compress(String),
}

impl BlockError {
    pub(crate) fn corrupt(what: impl std::fmt::Display) -> BlockError {
        BlockError::Corrupt(what.to_string())
    }
}

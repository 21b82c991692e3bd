//! [`encode`] and [`decode`]: a block's columns in the frame, in one fixed order.
//!
//! ```text
//! count (varint) | flags (byte) | kinds (runs) | ts | seq (when any is not 0) | quality (when any is not good) | f64s | i64s | text lengths | text
//! ```
//! f64s, i64s and text are present when a kind calls for them; every numeric section is one pco
//! chunk, the text one zstd frame, the kinds (kind, run length) pairs. From format version 2 on,
//! f64s that are all decimals at one scale (`decimal.rs`) are written as that scale (a byte)
//! and their integers (a pco chunk), flagged [`DECIMAL`]; version 1 blocks, which never have
//! the flag, read as before. Nothing in the body is trusted: counts are bounded, sections
//! must hold exactly what the kinds say, and bytes left over are an error.

use super::decimal::{from_decimal, to_decimal};
use super::frame::{Reader, Writer, PAGED_VERSION};
use super::layout::{ColumnLengths, Columns, Readings};
use super::numbers::{decode_numbers, encode_numbers};
use super::paged::{self, PageSummary, PAGE_POINTS};
use super::runs::{decode_runs, encode_runs};
use super::text::{decode_text, encode_text};
use super::{BlockError, BlockPoint, MAX_DECODE_POINTS, MAX_TEXT_BYTES};
use pco::ChunkConfig;

/// Some seq is not 0: the seq section follows.
pub(super) const HAS_SEQ: u8 = 1;
/// Some quality is not 0 (good): the quality section follows.
pub(super) const HAS_QUALITY: u8 = 2;
/// The f64s are a scale and integers (format version 2 on).
pub(super) const DECIMAL: u8 = 4;
pub(super) const KNOWN_FLAGS: u8 = HAS_SEQ | HAS_QUALITY | DECIMAL;

/// How hard the codecs work. Decoding needs none of it (a block says how it was written), so
/// these can change without a format version.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The numeric columns' pco configuration.
    pub numbers: ChunkConfig,
    /// The text column's zstd level.
    pub text_level: i32,
    /// Whether floats that are all decimals at one scale are written as integers (else always
    /// as floats, as format 1 did; the measurements compare the two).
    pub decimal: bool,
}

impl Default for Settings {
    /// What bench/historian-codec-results.md chose: pco's defaults (level 8, automatic mode
    /// and delta; level 4 is as small, 12 no smaller, 0 up to 7x larger), zstd level 3 for text,
    /// decimal floats as integers.
    fn default() -> Settings {
        Settings {
            numbers: ChunkConfig::default(),
            text_level: 3,
            decimal: true,
        }
    }
}

/// `points` (sorted by (ts, seq), non-empty) as one block, with the default [`Settings`].
pub fn encode(points: &[BlockPoint]) -> Result<Vec<u8>, BlockError> {
    encode_with(points, &Settings::default())
}

/// [`encode`] with chosen [`Settings`] (the measurements compare them). More points than a
/// page holds are written in pages (format 3, `paged.rs`).
pub fn encode_with(points: &[BlockPoint], settings: &Settings) -> Result<Vec<u8>, BlockError> {
    check_points(points)?;
    if points.len() > PAGE_POINTS {
        return paged::encode(points, settings);
    }
    let columns = Columns::split(points)?;
    let numbers = &settings.numbers;
    let has_seq = columns.seq.iter().any(|&s| s != 0);
    let has_quality = columns.quality.iter().any(|&q| q != 0);
    let decimal = settings
        .decimal
        .then(|| to_decimal(&columns.floats))
        .flatten();

    let mut out = Writer::new();
    out.varint(points.len() as u64);
    out.byte(
        flag(has_seq, HAS_SEQ)
            | flag(has_quality, HAS_QUALITY)
            | flag(decimal.is_some() && !columns.floats.is_empty(), DECIMAL),
    );
    out.section(&encode_runs(&columns.kinds));
    out.section(&encode_numbers(&columns.ts, numbers)?);
    if has_seq {
        out.section(&encode_numbers(&columns.seq, numbers)?);
    }
    if has_quality {
        out.section(&encode_numbers(&columns.quality, numbers)?);
    }
    match &decimal {
        _ if columns.floats.is_empty() => {}
        Some((scale, ints)) => {
            out.byte(*scale);
            out.section(&encode_numbers(ints, numbers)?);
        }
        None => out.section(&encode_numbers(&columns.floats, numbers)?),
    }
    if !columns.ints.is_empty() {
        out.section(&encode_numbers(&columns.ints, numbers)?);
    }
    if !columns.text_lens.is_empty() {
        out.section(&encode_numbers(&columns.text_lens, numbers)?);
        out.section(&encode_text(&columns.text, settings.text_level)?);
    }
    Ok(out.finish())
}

/// The points of a block [`encode`] wrote, exactly; Err (never a panic) for anything else.
pub fn decode(bytes: &[u8]) -> Result<Vec<BlockPoint>, BlockError> {
    open(bytes)?.points(None)
}

/// Only the timestamps and numeric readings of a block's points (what aggregates need), without
/// building values or reading its text: for a float tag, the two pco columns as they decode.
/// (The store reads through [`open`]; the tests and examples/historian_codec.rs use this.)
#[allow(dead_code)]
pub fn decode_readings(bytes: &[u8]) -> Result<Readings, BlockError> {
    open(bytes)?.readings(None)
}

/// A block whose checksum and version were checked, and, in pages, whose directory was read:
/// what a reader needs to choose pages before decoding them, from one pass over the bytes.
pub struct OpenBlock<'a> {
    version: u8,
    body: Body<'a>,
}

enum Body<'a> {
    Whole(Reader<'a>),
    Paged(paged::PagedBlock<'a>),
}

/// Opens a block [`encode`] wrote.
pub fn open(bytes: &[u8]) -> Result<OpenBlock<'_>, BlockError> {
    let (version, block) = Reader::open(bytes)?;
    let body = if version == PAGED_VERSION {
        Body::Paged(paged::open(block)?)
    } else {
        Body::Whole(block)
    };
    Ok(OpenBlock { version, body })
}

impl OpenBlock<'_> {
    /// The page directory of a block in pages; `None` for a block of one page.
    pub fn pages(&self) -> Option<&[PageSummary]> {
        match &self.body {
            Body::Paged(block) => Some(&block.pages),
            Body::Whole(_) => None,
        }
    }

    /// The points of the pages `keep` selects (all when `None`, or for a block of one page).
    pub fn points(self, keep: Option<&[bool]>) -> Result<Vec<BlockPoint>, BlockError> {
        self.columns(keep, true)?.join()
    }

    /// The numeric readings of the pages `keep` selects, as [`decode_readings`] gives them.
    pub fn readings(self, keep: Option<&[bool]>) -> Result<Readings, BlockError> {
        match self.body {
            Body::Paged(block) if block.all_floats() => block.float_readings(keep),
            _ => self.columns(keep, false)?.readings(),
        }
    }

    fn columns(self, keep: Option<&[bool]>, with_text: bool) -> Result<Columns, BlockError> {
        match self.body {
            Body::Paged(block) => block.read_columns(keep, with_text),
            Body::Whole(block) => read_columns(self.version, block, with_text),
        }
    }
}

/// A block's point count, within what a block may hold.
pub(super) fn point_count(block: &mut Reader<'_>) -> Result<usize, BlockError> {
    let count = block.varint()?;
    if count == 0 || count > MAX_DECODE_POINTS as u64 {
        return Err(BlockError::corrupt(format!(
            "it says it holds {count} points"
        )));
    }
    Ok(count as usize)
}

/// A format 1 or 2 block's columns; its text is left unread (and empty) unless `with_text`.
fn read_columns(
    version: u8,
    mut block: Reader<'_>,
    with_text: bool,
) -> Result<Columns, BlockError> {
    let n = point_count(&mut block)?;
    let flags = block.byte()?;
    let known = if version == 1 {
        KNOWN_FLAGS & !DECIMAL
    } else {
        KNOWN_FLAGS
    };
    if flags & !known != 0 {
        return Err(BlockError::corrupt(format!(
            "it has unknown flags {flags:#x}"
        )));
    }
    let kinds = decode_runs(block.section()?, n)?;
    let lengths = ColumnLengths::of(&kinds)?;
    let ts = decode_numbers(block.section()?, n)?;
    let seq = optional(&mut block, flags & HAS_SEQ != 0, n)?;
    let quality = optional(&mut block, flags & HAS_QUALITY != 0, n)?;
    let floats = if flags & DECIMAL != 0 && lengths.floats > 0 {
        let scale = block.byte()?;
        from_decimal(scale, &decode_numbers(block.section()?, lengths.floats)?)?
    } else {
        optional(&mut block, lengths.floats > 0, lengths.floats)?
    };
    let ints = optional(&mut block, lengths.ints > 0, lengths.ints)?;
    let mut columns = Columns {
        ts,
        seq,
        kinds,
        floats,
        ints,
        quality,
        ..Columns::default()
    };
    if lengths.texts > 0 {
        if !with_text {
            return Ok(columns);
        }
        columns.text_lens = decode_numbers(block.section()?, lengths.texts)?;
        let total: u64 = columns.text_lens.iter().map(|&l| u64::from(l)).sum();
        if total > MAX_TEXT_BYTES as u64 {
            return Err(BlockError::corrupt("its text is longer than a block holds"));
        }
        columns.text = decode_text(block.section()?, total as usize)?;
    }
    block.finish()?;
    Ok(columns)
}

/// The next section's `n` numbers when `present`, else none.
fn optional<T: pco::data_types::Number>(
    block: &mut Reader<'_>,
    present: bool,
    n: usize,
) -> Result<Vec<T>, BlockError> {
    if present {
        decode_numbers(block.section()?, n)
    } else {
        Ok(Vec::new())
    }
}

fn flag(on: bool, bit: u8) -> u8 {
    if on {
        bit
    } else {
        0
    }
}

/// Non-empty, within the decoder's bound, in (ts, seq) order.
fn check_points(points: &[BlockPoint]) -> Result<(), BlockError> {
    if points.is_empty() {
        return Err(BlockError::Empty);
    }
    if points.len() > MAX_DECODE_POINTS {
        return Err(BlockError::TooManyPoints {
            count: points.len(),
            max: MAX_DECODE_POINTS,
        });
    }
    match points
        .windows(2)
        .position(|w| (w[0].ts_ms, w[0].seq) > (w[1].ts_ms, w[1].seq))
    {
        Some(i) => Err(BlockError::Unsorted { index: i + 1 }),
        None => Ok(()),
    }
}

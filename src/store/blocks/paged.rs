//! Block format 3: a long block in pages. When the store merges a closed day's blocks into one
//! (`store::history::merge`), the day is written as pages of about [`PAGE_POINTS`] points, each
//! with its summary in a directory at the front, and each numeric column as one pco chunk whose
//! pages decode on their own. One chunk per column keeps pco's per-chunk cost (its bins and
//! delta choice) once per day instead of once per 4,096 points, which is most of what a day in
//! one block saves; the pages keep what small blocks gave: a window read decodes only the pages
//! it overlaps, and a chart adds whole pages from their summaries, so a year still decodes
//! only the pages its bucket edges cut (bench/historian-codec-results.md).
//!
//! ```text
//! count | flags | kinds (runs) | pages | points per page… | page summaries… | pco header
//! | ts | seq? | quality? | [scale] f64s? | i64s? | text lengths? | text?
//! ```
//! A numeric column is a mode byte and then either one pco chunk (mode 0, for a column some
//! page holds none of: pco pages cannot be empty) or a chunk's metadata and one section per
//! page (mode 1). Text lengths and text are whole, as in format 2. A page summary is its first
//! and last time, its numeric count and, when that is not 0, its min, max and sum.

use super::codec::{point_count, Settings, DECIMAL, HAS_QUALITY, HAS_SEQ, KNOWN_FLAGS};
use super::decimal::{from_decimal, to_decimal};
use super::frame::{Reader, Writer};
use super::layout::{ColumnLengths, Columns, Kind, Readings};
use super::numbers::{decode_numbers, encode_numbers, smallest};
use super::runs::{decode_run_list, encode_runs};
use super::summary::summarize;
use super::text::{decode_text, encode_text};
use super::{BlockError, BlockPoint, MAX_TEXT_BYTES};
use pco::data_types::Number;
use pco::wrapped::{FileCompressor, FileDecompressor};
use pco::{ChunkConfig, PagingSpec};
use std::ops::Range;

/// Points a page holds at most: the size small blocks have (`blocks::MAX_POINTS`), so a chart's
/// bucket edges decode as much of a merged day as they did of its small blocks.
pub const PAGE_POINTS: usize = 4_096;

/// A column stored as one chunk.
const WHOLE: u8 = 0;
/// A column stored as a chunk in pages.
const IN_PAGES: u8 = 1;

/// What a block's directory says about one of its pages.
#[derive(Debug, Clone, PartialEq)]
pub struct PageSummary {
    /// The first and the last point's timestamp (inclusive).
    pub start_ms: i64,
    pub end_ms: i64,
    pub count: i64,
    pub num_count: i64,
    /// Over the numeric readings; `None` when `num_count` is 0.
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub sum: Option<f64>,
}

/// `points` (checked by the caller: sorted, not empty, within bounds) as a block in pages.
pub(super) fn encode(points: &[BlockPoint], settings: &Settings) -> Result<Vec<u8>, BlockError> {
    let columns = Columns::split(points)?;
    let sizes = page_sizes(points.len());
    let ranges = ranges(&sizes);
    let lengths = ranges
        .iter()
        .map(|r| ColumnLengths::of(&columns.kinds[r.clone()]))
        .collect::<Result<Vec<_>, _>>()?;
    let per_page = |of: fn(&ColumnLengths) -> usize| lengths.iter().map(of).collect::<Vec<_>>();
    let has_seq = columns.seq.iter().any(|&s| s != 0);
    let has_quality = columns.quality.iter().any(|&q| q != 0);
    let decimal = settings
        .decimal
        .then(|| to_decimal(&columns.floats))
        .flatten()
        .filter(|_| !columns.floats.is_empty());

    let mut out = Writer::paged();
    out.varint(points.len() as u64);
    let mut flags = 0;
    for (on, bit) in [
        (has_seq, HAS_SEQ),
        (has_quality, HAS_QUALITY),
        (decimal.is_some(), DECIMAL),
    ] {
        if on {
            flags |= bit;
        }
    }
    out.byte(flags);
    out.section(&encode_runs(&columns.kinds));
    out.varint(sizes.len() as u64);
    for &size in &sizes {
        out.varint(size as u64);
    }
    let mut previous_end = 0i64;
    for range in &ranges {
        let Some(page) = summarize(&points[range.clone()]) else {
            return Err(BlockError::Empty);
        };
        out.varint(zigzag(page.start_ms.wrapping_sub(previous_end)));
        out.varint(page.end_ms.wrapping_sub(page.start_ms) as u64);
        out.varint(page.num_count as u64);
        if let (Some(min), Some(max), Some(sum)) = (page.min, page.max, page.sum) {
            out.f64(min);
            out.f64(max);
            out.f64(sum);
        }
        previous_end = page.end_ms;
    }
    let header = FileCompressor::default()
        .write_header(Vec::new())
        .map_err(compress_error)?;
    out.section(&header);
    let config = &settings.numbers;
    write_column(&mut out, &columns.ts, &sizes, config)?;
    if has_seq {
        write_column(&mut out, &columns.seq, &sizes, config)?;
    }
    if has_quality {
        write_column(&mut out, &columns.quality, &sizes, config)?;
    }
    let floats = per_page(|l| l.floats);
    match &decimal {
        _ if columns.floats.is_empty() => {}
        Some((scale, ints)) => {
            out.byte(*scale);
            write_column(&mut out, ints, &floats, config)?;
        }
        None => write_column(&mut out, &columns.floats, &floats, config)?,
    }
    if !columns.ints.is_empty() {
        write_column(&mut out, &columns.ints, &per_page(|l| l.ints), config)?;
    }
    if !columns.text_lens.is_empty() {
        out.section(&encode_numbers(&columns.text_lens, config)?);
        out.section(&encode_text(&columns.text, settings.text_level)?);
    }
    Ok(out.finish())
}

/// `n` points as near-equal pages of at most [`PAGE_POINTS`] (a last page of a few points
/// would cost pco a page header for little).
fn page_sizes(n: usize) -> Vec<usize> {
    let pages = n.div_ceil(PAGE_POINTS).max(1);
    (0..pages)
        .map(|i| n / pages + usize::from(i < n % pages))
        .collect()
}

/// The point range of each page.
fn ranges(sizes: &[usize]) -> Vec<Range<usize>> {
    let mut start = 0;
    sizes
        .iter()
        .map(|&size| {
            start += size;
            start - size..start
        })
        .collect()
}

/// One numeric column, in pages of `counts` when every page holds some of it.
fn write_column<T: Number>(
    out: &mut Writer,
    values: &[T],
    counts: &[usize],
    config: &ChunkConfig,
) -> Result<(), BlockError> {
    if counts.contains(&0) {
        out.byte(WHOLE);
        out.section(&encode_numbers(values, config)?);
        return Ok(());
    }
    let size = |(meta, pages): &(Vec<u8>, Vec<Vec<u8>>)| {
        meta.len() + pages.iter().map(Vec::len).sum::<usize>()
    };
    let (meta, pages) = smallest(values, config, size, |config| {
        let config = config
            .clone()
            .with_paging_spec(PagingSpec::Exact(counts.to_vec()));
        let mut chunk = FileCompressor::default()
            .chunk_compressor(values, &config)
            .map_err(compress_error)?;
        let meta = chunk.write_meta(Vec::new()).map_err(compress_error)?;
        let pages = (0..counts.len())
            .map(|i| chunk.write_page(i, Vec::new()).map_err(compress_error))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((meta, pages))
    })?;
    out.byte(IN_PAGES);
    out.section(&meta);
    for page in &pages {
        out.section(page);
    }
    Ok(())
}

fn compress_error(e: pco::errors::PcoError) -> BlockError {
    BlockError::Compress(e.to_string())
}

/// A block in pages, read up to its columns.
pub(super) struct PagedBlock<'a> {
    flags: u8,
    /// The kinds as (code, length) runs: spelled out only for the pages a read keeps.
    runs: Vec<(u8, usize)>,
    sizes: Vec<usize>,
    pub pages: Vec<PageSummary>,
    files: FileDecompressor,
    columns: Reader<'a>,
}

/// Opens the body of a format-3 block: everything before its columns, checked.
pub(super) fn open(mut block: Reader<'_>) -> Result<PagedBlock<'_>, BlockError> {
    let n = point_count(&mut block)?;
    let count = n as u64;
    let flags = block.byte()?;
    if flags & !KNOWN_FLAGS != 0 {
        return Err(BlockError::corrupt(format!(
            "it has unknown flags {flags:#x}"
        )));
    }
    let runs = decode_run_list(block.section()?, n)?;
    let pages = block.varint()?;
    if pages == 0 || pages > count {
        return Err(BlockError::corrupt(format!("it says it has {pages} pages")));
    }
    let mut sizes = Vec::with_capacity(pages as usize);
    for _ in 0..pages {
        let size = block.varint()?;
        if size == 0 || size > count {
            return Err(BlockError::corrupt(format!(
                "it has a page of {size} points"
            )));
        }
        sizes.push(size as usize);
    }
    if sizes.iter().sum::<usize>() != n {
        return Err(BlockError::corrupt("its pages do not hold its points"));
    }
    let mut summaries: Vec<PageSummary> = Vec::with_capacity(sizes.len());
    let mut previous_end = 0i64;
    for &size in &sizes {
        let start_ms = previous_end.wrapping_add(unzigzag(block.varint()?));
        let end_ms = start_ms.wrapping_add(block.varint()? as i64);
        let num_count = block.varint()?;
        let after_previous = summaries.last().is_none_or(|p| start_ms >= p.end_ms);
        if num_count > size as u64 || end_ms < start_ms || !after_previous {
            return Err(BlockError::corrupt("its page directory is out of order"));
        }
        let (min, max, sum) = if num_count > 0 {
            (Some(block.f64()?), Some(block.f64()?), Some(block.f64()?))
        } else {
            (None, None, None)
        };
        summaries.push(PageSummary {
            start_ms,
            end_ms,
            count: size as i64,
            num_count: num_count as i64,
            min,
            max,
            sum,
        });
        previous_end = end_ms;
    }
    let (files, rest) = FileDecompressor::new(block.section()?).map_err(BlockError::corrupt)?;
    if !rest.is_empty() {
        return Err(BlockError::corrupt("its pco header is longer than one"));
    }
    Ok(PagedBlock {
        flags,
        runs,
        sizes,
        pages: summaries,
        files,
        columns: block,
    })
}

impl PagedBlock<'_> {
    /// The columns of the pages `keep` selects (one flag a page; all when `None`), in point
    /// order; text is left unread (and empty) unless `with_text`.
    pub fn read_columns(
        mut self,
        keep: Option<&[bool]>,
        with_text: bool,
    ) -> Result<Columns, BlockError> {
        let all = vec![true; self.sizes.len()];
        let keep = keep.unwrap_or(&all);
        if keep.len() != self.sizes.len() {
            return Err(BlockError::corrupt(
                "a read asked for pages it does not have",
            ));
        }
        let (lengths, kinds) = self.spell_out(keep)?;
        let per_page = |of: fn(&ColumnLengths) -> usize| lengths.iter().map(of).collect::<Vec<_>>();
        let mut columns = Columns {
            kinds,
            ..Columns::default()
        };
        columns.ts = self.column(&self.sizes.clone(), keep)?;
        if self.flags & HAS_SEQ != 0 {
            columns.seq = self.column(&self.sizes.clone(), keep)?;
        }
        if self.flags & HAS_QUALITY != 0 {
            columns.quality = self.column(&self.sizes.clone(), keep)?;
        }
        let floats = per_page(|l| l.floats);
        if floats.iter().any(|&n| n > 0) {
            columns.floats = if self.flags & DECIMAL != 0 {
                let scale = self.columns.byte()?;
                from_decimal(scale, &self.column::<i64>(&floats, keep)?)?
            } else {
                self.column(&floats, keep)?
            };
        }
        let ints = per_page(|l| l.ints);
        if ints.iter().any(|&n| n > 0) {
            columns.ints = self.column(&ints, keep)?;
        }
        let texts = per_page(|l| l.texts);
        if texts.iter().any(|&n| n > 0) {
            if !with_text {
                return Ok(columns);
            }
            let lens: Vec<u32> =
                decode_numbers(self.columns.section()?, texts.iter().sum::<usize>())?;
            let total: u64 = lens.iter().map(|&l| u64::from(l)).sum();
            if total > MAX_TEXT_BYTES as u64 {
                return Err(BlockError::corrupt("its text is longer than a block holds"));
            }
            let text = decode_text(self.columns.section()?, total as usize)?;
            let (mut at_len, mut at_byte) = (0usize, 0usize);
            for (&n, &k) in texts.iter().zip(keep) {
                let page_lens = &lens[at_len..at_len + n];
                let bytes: usize = page_lens.iter().map(|&l| l as usize).sum();
                if k {
                    columns.text_lens.extend_from_slice(page_lens);
                    columns
                        .text
                        .extend_from_slice(&text[at_byte..at_byte + bytes]);
                }
                at_len += n;
                at_byte += bytes;
            }
        }
        self.columns.finish()?;
        Ok(columns)
    }

    /// Whether every point is a float (a float tag): its readings are its timestamps and its
    /// float column as they decode.
    pub fn all_floats(&self) -> bool {
        self.runs.iter().all(|&(code, _)| code == Kind::Float as u8)
    }

    /// The readings of the kept pages of a block [`PagedBlock::all_floats`] holds: the
    /// timestamps and floats decoded, the other columns skipped, no kind spelled out (a year
    /// chart's edge pages are millions of points).
    pub fn float_readings(mut self, keep: Option<&[bool]>) -> Result<Readings, BlockError> {
        let all = vec![true; self.sizes.len()];
        let keep = keep.unwrap_or(&all);
        if keep.len() != self.sizes.len() {
            return Err(BlockError::corrupt(
                "a read asked for pages it does not have",
            ));
        }
        let sizes = self.sizes.clone();
        let ts = self.column(&sizes, keep)?;
        for present in [self.flags & HAS_SEQ != 0, self.flags & HAS_QUALITY != 0] {
            if present {
                self.skip_column(sizes.len())?;
            }
        }
        let values = if self.flags & DECIMAL != 0 {
            let scale = self.columns.byte()?;
            from_decimal(scale, &self.column::<i64>(&sizes, keep)?)?
        } else {
            self.column(&sizes, keep)?
        };
        self.columns.finish()?;
        Ok(Readings { ts, values })
    }

    /// Passes over the next column of `pages` pages without decoding it.
    fn skip_column(&mut self, pages: usize) -> Result<(), BlockError> {
        let sections = match self.columns.byte()? {
            WHOLE => 1,
            IN_PAGES => 1 + pages,
            mode => {
                return Err(BlockError::corrupt(format!(
                    "a column has an unknown mode {mode}"
                )))
            }
        };
        for _ in 0..sections {
            self.columns.section()?;
        }
        Ok(())
    }

    /// How many values of each column every page holds, and the kinds of the kept pages'
    /// points, from the runs in one pass (a page of one float run costs one step, not 4,096).
    fn spell_out(&self, keep: &[bool]) -> Result<(Vec<ColumnLengths>, Vec<u8>), BlockError> {
        let mut lengths = vec![ColumnLengths::default(); self.sizes.len()];
        let wanted: usize = self
            .sizes
            .iter()
            .zip(keep)
            .filter(|(_, &k)| k)
            .map(|(n, _)| n)
            .sum();
        let mut kinds = Vec::with_capacity(wanted);
        let mut runs = self.runs.iter().copied();
        let (mut code, mut left) = (0u8, 0usize);
        for (page, (&size, &kept)) in self.sizes.iter().zip(keep).enumerate() {
            let mut need = size;
            while need > 0 {
                if left == 0 {
                    (code, left) = runs
                        .next()
                        .ok_or_else(|| BlockError::corrupt("its kinds do not cover its pages"))?;
                }
                let take = need.min(left);
                lengths[page].add_run(code, take)?;
                if kept {
                    kinds.resize(kinds.len() + take, code);
                }
                need -= take;
                left -= take;
            }
        }
        Ok((lengths, kinds))
    }

    /// The next column's values on the kept pages, given how many each page holds.
    fn column<T: Number>(&mut self, counts: &[usize], keep: &[bool]) -> Result<Vec<T>, BlockError> {
        let wanted: usize = counts
            .iter()
            .zip(keep)
            .filter(|(_, &k)| k)
            .map(|(n, _)| n)
            .sum();
        let mut values = Vec::with_capacity(wanted);
        match self.columns.byte()? {
            WHOLE => {
                let all: Vec<T> = decode_numbers(self.columns.section()?, counts.iter().sum())?;
                let mut at = 0;
                for (&n, &k) in counts.iter().zip(keep) {
                    if k {
                        values.extend_from_slice(&all[at..at + n]);
                    }
                    at += n;
                }
            }
            IN_PAGES => {
                let (mut chunk, rest) = self
                    .files
                    .chunk_decompressor::<T, _>(self.columns.section()?)
                    .map_err(BlockError::corrupt)?;
                if !rest.is_empty() {
                    return Err(BlockError::corrupt("a column's metadata is longer than it"));
                }
                for (&n, &k) in counts.iter().zip(keep) {
                    let page = self.columns.section()?;
                    if !k {
                        continue;
                    }
                    if n == 0 {
                        return Err(BlockError::corrupt("a column has a page with no values"));
                    }
                    let at = values.len();
                    values.resize(at + n, T::default());
                    let mut reader = chunk
                        .page_decompressor(page, n)
                        .map_err(BlockError::corrupt)?;
                    let progress = reader
                        .read(&mut values[at..])
                        .map_err(BlockError::corrupt)?;
                    if progress.n_processed != n || !progress.finished {
                        return Err(BlockError::corrupt(
                            "a page holds a different number of values than its kinds say",
                        ));
                    }
                }
            }
            mode => {
                return Err(BlockError::corrupt(format!(
                    "a column has an unknown mode {mode}"
                )))
            }
        }
        Ok(values)
    }
}

fn zigzag(x: i64) -> u64 {
    ((x << 1) ^ (x >> 63)) as u64
}

fn unzigzag(x: u64) -> i64 {
    ((x >> 1) as i64) ^ -((x & 1) as i64)
}

//! A bucketed read's blocks that straddle buckets, down to their pages: a block in pages
//! (`blocks::paged`) has a summary per page, so its pages wholly inside one bucket are counted
//! from those as whole blocks are, and only the pages a bucket edge cuts are decoded. A year
//! chart whose 500 bucket edges each cut a merged day so decodes a page per edge, not the day.

use super::{internal, Accumulator, BlockKey, BlockMeta};
use crate::store::blocks::{self, PageSummary};
use crate::store::StoreResult;

/// Adds the blocks `keys` (with their `data`, in the same order) to `acc`, over the window
/// `[start_ms, end_ms)`.
pub fn add_blocks(
    acc: &mut Accumulator,
    keys: &[BlockKey],
    data: &[Vec<u8>],
    start_ms: i64,
    end_ms: i64,
) -> StoreResult<()> {
    // First every page summary that can be counted, then the pages a min or max may skip
    // given all of them, then the decoding: as for whole blocks in `read_buckets`.
    let mut pages = Vec::with_capacity(data.len());
    for (key, bytes) in keys.iter().zip(data) {
        let Some(summaries) = blocks::page_summaries(bytes).map_err(internal)? else {
            pages.push(None);
            continue;
        };
        let metas: Vec<BlockMeta> = summaries.iter().map(|p| page_meta(key, p)).collect();
        let mut keep = Vec::with_capacity(metas.len());
        for meta in &metas {
            let outside = meta.end_ms < start_ms || meta.start_ms >= end_ms;
            let inside = meta.start_ms >= start_ms && meta.end_ms < end_ms;
            keep.push(!outside && !(inside && acc.add_summary(meta)?));
        }
        pages.push(Some((metas, keep)));
    }
    for (metas, keep) in pages.iter_mut().flatten() {
        for (meta, keep) in metas.iter().zip(keep.iter_mut()) {
            *keep = *keep && !acc.block_cannot_change(meta, start_ms, end_ms);
        }
    }
    for (bytes, pages) in data.iter().zip(&pages) {
        let keep = pages.as_ref().map(|(_, keep)| keep.as_slice());
        if keep.is_some_and(|k| !k.contains(&true)) {
            continue;
        }
        if acc.needs_only_readings() {
            // Only the numeric readings matter: skip building values and reading text.
            let readings = match keep {
                Some(keep) => blocks::decode_page_readings(bytes, keep),
                None => blocks::decode_readings(bytes),
            }
            .map_err(internal)?;
            acc.add_readings(&readings.ts, &readings.values, start_ms, end_ms);
        } else {
            let points = match keep {
                Some(keep) => blocks::decode_pages(bytes, keep),
                None => blocks::decode(bytes),
            }
            .map_err(internal)?;
            for point in points
                .iter()
                .filter(|p| (start_ms..end_ms).contains(&p.ts_ms))
            {
                acc.add_point(point);
            }
        }
    }
    Ok(())
}

/// A page's summary as a block's, so the accumulator treats both alike.
fn page_meta(key: &BlockKey, page: &PageSummary) -> BlockMeta {
    BlockMeta {
        id: key.id,
        start_ms: page.start_ms,
        end_ms: page.end_ms,
        count: page.count,
        num_count: page.num_count,
        min: page.min,
        max: page.max,
        sum: page.sum,
        first_seq: 0,
        last_seq: 0,
    }
}

//! A bucketed read's blocks that straddle buckets, down to their pages: a block in pages
//! (`blocks::paged`) has a summary per page, so its pages wholly inside one bucket are counted
//! from those as whole blocks are, and only the pages a bucket edge cuts are decoded. A year
//! chart whose 500 bucket edges each cut a merged day so decodes a page per edge, not the day.

use super::{blocks_for_range, internal, Accumulator, BlockKey, BlockMeta};
use crate::store::blocks::{self, BlockPoint, PageSummary};
use crate::store::StoreResult;

/// The points a read of the first `limit` points of `[start_ms, end_ms)` needs from the blocks
/// `metas` (with their `data`, in the same order), block by block: the pages of blocks in
/// pages are chosen as blocks are (`blocks_for_range`), so a read of 100,000 points through a
/// window that runs on for days decodes about 100,000 points, not every page after its start.
pub fn points_for_range(
    metas: &[&BlockMeta],
    data: &[Vec<u8>],
    start_ms: i64,
    end_ms: i64,
    limit: Option<u64>,
) -> StoreResult<Vec<Vec<BlockPoint>>> {
    let opened = data
        .iter()
        .map(|bytes| blocks::open(bytes).map_err(internal))
        .collect::<StoreResult<Vec<_>>>()?;
    // Every block of one page, and every page of the others that meets the window, as a unit
    // `blocks_for_range` chooses among; a unit's id is its index here.
    let mut units = Vec::new();
    let mut owners = Vec::new();
    for (b, (meta, block)) in metas.iter().zip(&opened).enumerate() {
        match block.pages() {
            None => {
                owners.push((b, None));
                units.push(BlockMeta {
                    id: units.len() as i64,
                    ..(*meta).clone()
                });
            }
            Some(pages) => {
                for (p, page) in pages.iter().enumerate() {
                    if page.end_ms >= start_ms && page.start_ms < end_ms {
                        owners.push((b, Some(p)));
                        units.push(page_meta(units.len() as i64, page));
                    }
                }
            }
        }
    }
    let mut keep: Vec<Option<Vec<bool>>> = opened
        .iter()
        .map(|block| block.pages().map(|pages| vec![false; pages.len()]))
        .collect();
    let mut whole = vec![false; opened.len()];
    for key in blocks_for_range(&units, start_ms, end_ms, limit) {
        let (b, page) = owners[key.id as usize];
        match (page, &mut keep[b]) {
            (Some(p), Some(pages)) => pages[p] = true,
            _ => whole[b] = true,
        }
    }
    opened
        .into_iter()
        .zip(keep.iter().zip(&whole))
        .filter(|(_, (keep, &whole))| whole || keep.as_ref().is_some_and(|k| k.contains(&true)))
        .map(|(block, (keep, _))| block.points(keep.as_deref()).map_err(internal))
        .collect()
}

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
    // given all of them, then the decoding: as for whole blocks in `read_buckets`. Each block
    // is opened (checksum, directory) once.
    let mut opened = Vec::with_capacity(data.len());
    let mut pages = Vec::with_capacity(data.len());
    for (key, bytes) in keys.iter().zip(data) {
        let block = blocks::open(bytes).map_err(internal)?;
        let metas: Option<Vec<BlockMeta>> = block
            .pages()
            .map(|summaries| summaries.iter().map(|p| page_meta(key.id, p)).collect());
        opened.push(block);
        let Some(metas) = metas else {
            pages.push(None);
            continue;
        };
        let mut keep = Vec::with_capacity(metas.len());
        for meta in &metas {
            let outside = meta.end_ms < start_ms || meta.start_ms >= end_ms;
            let inside = meta.start_ms >= start_ms && meta.end_ms < end_ms;
            // Outside the window: not needed; inside one bucket: counted from its summary
            // unless the aggregation needs its points.
            keep.push(match (outside, inside) {
                (true, _) => false,
                (false, true) => !acc.add_summary(meta)?,
                (false, false) => true,
            });
        }
        pages.push(Some((metas, keep)));
    }
    for (metas, keep) in pages.iter_mut().flatten() {
        for (meta, keep) in metas.iter().zip(keep.iter_mut()) {
            *keep = *keep && !acc.block_cannot_change(meta, start_ms, end_ms);
        }
    }
    for (block, pages) in opened.into_iter().zip(&pages) {
        let keep = pages.as_ref().map(|(_, keep)| keep.as_slice());
        if keep.is_some_and(|k| !k.contains(&true)) {
            continue;
        }
        if acc.needs_only_readings() {
            // Only the numeric readings matter: skip building values and reading text.
            let readings = block.readings(keep).map_err(internal)?;
            acc.add_readings(&readings.ts, &readings.values, start_ms, end_ms);
        } else {
            let points = block.points(keep).map_err(internal)?;
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

/// A page's summary as a block's (under `id`), so the accumulator and `blocks_for_range` treat
/// both alike.
fn page_meta(id: i64, page: &PageSummary) -> BlockMeta {
    BlockMeta {
        id,
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

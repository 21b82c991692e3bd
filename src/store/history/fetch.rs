//! The historian's raw reads written once as futures, over how an engine fetches blocks and
//! hot rows ([`Fetch`]). An engine whose queries are futures (PostgreSQL) awaits them on the
//! server's workers; a synchronous layout ([`HistoryLayout`]) reaches the same code through
//! [`Now`], whose futures are ready when made, and [`now`] runs them to the end on the calling
//! thread. So the range and last-N reads have one implementation whichever way they are
//! called, and both engines still read exactly alike.

use super::HistoryLayout;
use super::{blocks_for_range, in_order, internal, nth_newest, pages, BlockKey, BlockMeta};
use crate::store::blocks::{self, BlockPoint};
use crate::store::StoreResult;
use std::collections::HashMap;
use std::future::{ready, Future};

/// How an engine fetches one series' blocks and hot rows, as futures; the meaning of each is
/// [`HistoryLayout`]'s method of the same name.
pub trait Fetch {
    /// Summaries of the series' blocks whose start lies in `[from_ms, to_ms)`, by start.
    fn block_metas(
        &self,
        series: i64,
        from_ms: i64,
        to_ms: i64,
    ) -> impl Future<Output = StoreResult<Vec<BlockMeta>>>;
    /// Summaries of up to `limit` blocks starting before `before_ms`, newest start first.
    fn newest_blocks(
        &self,
        series: i64,
        before_ms: i64,
        limit: u32,
    ) -> impl Future<Output = StoreResult<Vec<BlockMeta>>>;
    /// The encoded data of blocks, in the order of `keys`.
    fn block_data(
        &self,
        series: i64,
        keys: &[BlockKey],
    ) -> impl Future<Output = StoreResult<Vec<Vec<u8>>>>;
    /// Hot rows with `start_ms <= ts < end_ms` in (ts, seq) order, at most `limit`.
    fn hot_range(
        &self,
        series: i64,
        start_ms: i64,
        end_ms: i64,
        limit: Option<u64>,
    ) -> impl Future<Output = StoreResult<Vec<BlockPoint>>>;
    /// The newest `n` hot rows, newest first.
    fn hot_last(&self, series: i64, n: u64) -> impl Future<Output = StoreResult<Vec<BlockPoint>>>;
}

/// A synchronous layout as a [`Fetch`]: each call is made when its future is, so the future is
/// ready and borrows nothing.
pub struct Now<'a, L: ?Sized>(pub &'a L);

impl<L: HistoryLayout + ?Sized> Fetch for Now<'_, L> {
    fn block_metas(
        &self,
        series: i64,
        from_ms: i64,
        to_ms: i64,
    ) -> impl Future<Output = StoreResult<Vec<BlockMeta>>> {
        ready(self.0.block_metas(series, from_ms, to_ms))
    }

    fn newest_blocks(
        &self,
        series: i64,
        before_ms: i64,
        limit: u32,
    ) -> impl Future<Output = StoreResult<Vec<BlockMeta>>> {
        ready(self.0.newest_blocks(series, before_ms, limit))
    }

    fn block_data(
        &self,
        series: i64,
        keys: &[BlockKey],
    ) -> impl Future<Output = StoreResult<Vec<Vec<u8>>>> {
        ready(self.0.block_data(series, keys))
    }

    fn hot_range(
        &self,
        series: i64,
        start_ms: i64,
        end_ms: i64,
        limit: Option<u64>,
    ) -> impl Future<Output = StoreResult<Vec<BlockPoint>>> {
        ready(self.0.hot_range(series, start_ms, end_ms, limit))
    }

    fn hot_last(&self, series: i64, n: u64) -> impl Future<Output = StoreResult<Vec<BlockPoint>>> {
        ready(self.0.hot_last(series, n))
    }
}

/// Runs a read over [`Now`] to its end on this thread (its futures never wait).
pub fn now<T>(read: impl Future<Output = T>) -> T {
    futures::executor::block_on(read)
}

/// Summaries of the blocks overlapping `[start_ms, end_ms)`, by start.
pub async fn blocks_overlapping(
    fetch: &impl Fetch,
    series: i64,
    start_ms: i64,
    end_ms: i64,
) -> StoreResult<Vec<BlockMeta>> {
    let mut metas = fetch
        .block_metas(series, start_ms.saturating_sub(blocks::MAX_SPAN_MS), end_ms)
        .await?;
    metas.retain(|m| m.end_ms >= start_ms);
    Ok(metas)
}

/// The points of the blocks `keys`, decoded.
pub async fn decode_blocks(
    fetch: &impl Fetch,
    series: i64,
    keys: &[BlockKey],
) -> StoreResult<Vec<Vec<BlockPoint>>> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    fetch
        .block_data(series, keys)
        .await?
        .iter()
        .map(|data| blocks::decode(data).map_err(internal))
        .collect()
}

/// Points with `start_ms <= ts < end_ms` in (ts, seq) order, at most `limit`.
pub async fn read_range(
    fetch: &impl Fetch,
    series: i64,
    start_ms: i64,
    end_ms: i64,
    limit: Option<u64>,
) -> StoreResult<Vec<BlockPoint>> {
    if start_ms >= end_ms {
        return Ok(Vec::new());
    }
    let metas = blocks_overlapping(fetch, series, start_ms, end_ms).await?;
    let keys = blocks_for_range(&metas, start_ms, end_ms, limit);
    let by_key: HashMap<BlockKey, &BlockMeta> = metas.iter().map(|m| (m.key(), m)).collect();
    let chosen: Vec<&BlockMeta> = keys
        .iter()
        .filter_map(|key| by_key.get(key).copied())
        .collect();
    let data = fetch.block_data(series, &keys).await?;
    let blocks = pages::points_for_range(&chosen, &data, start_ms, end_ms, limit)?;
    let hot = fetch.hot_range(series, start_ms, end_ms, limit).await?;
    // Sized once: growing a vector of a hundred thousand points copied it several times.
    let mut points = Vec::with_capacity(blocks.iter().map(Vec::len).sum::<usize>() + hot.len());
    for block in blocks {
        points.extend(
            block
                .into_iter()
                .filter(|p| (start_ms..end_ms).contains(&p.ts_ms)),
        );
    }
    points.extend(hot);
    Ok(in_order(points, limit))
}

/// The newest `n` points, newest first: the hot tail first, then blocks newest first for as
/// long as one can still hold a point newer than the n-th newest found so far.
pub async fn read_last(fetch: &impl Fetch, series: i64, n: u64) -> StoreResult<Vec<BlockPoint>> {
    let wanted = usize::try_from(n).unwrap_or(usize::MAX);
    if wanted == 0 {
        return Ok(Vec::new());
    }
    let mut points = fetch.hot_last(series, n).await?;
    let mut cursor = i64::MAX;
    'pages: loop {
        let page = fetch.newest_blocks(series, cursor, 64).await?;
        let Some(oldest) = page.last() else {
            break;
        };
        cursor = oldest.start_ms;
        for meta in &page {
            if let Some(horizon) = nth_newest(&points, wanted) {
                if meta.start_ms.saturating_add(blocks::MAX_SPAN_MS) < horizon {
                    break 'pages; // this block and every older one end before it
                }
                if meta.end_ms < horizon {
                    continue;
                }
            }
            for block in decode_blocks(fetch, series, &[meta.key()]).await? {
                points.extend(block);
            }
        }
    }
    let mut points = in_order(points, None);
    points.reverse();
    points.truncate(wanted);
    Ok(points)
}

//! The rows of a report's `historian` relation, the same on both engines. Blocks can only be
//! decoded in Rust, so before a report runs, the points its scope admits
//! ([`crate::report_sql::scope`]) are read through the historian's own read path (blocks and hot
//! rows merged in (ts, seq) order, in the caller's one snapshot) and handed to the engine,
//! which copies them into a temporary table of the report's own transaction. The relation is
//! then a CTE over that table instead of `hist_points`.
//!
//! A report reads at most [`ReportLimits::max_points`] points this way, and only while its
//! time limit lasts: both refusals tell the caller to narrow the time range.

use super::blocks::BlockPoint;
use super::history::HistoryLayout;
use super::{ReportLimits, StoreError, StoreResult};
use crate::report_sql::scope::HistorianScope;
use std::time::Instant;

/// Points asked of the read path at once: bounds what a report holds in memory.
const PAGE: u64 = 50_000;

/// The temporary table the relation is read from (in the report's transaction only).
pub const TEMP_TABLE: &str = "svc_report_historian";

/// The refusal of a report that ran past its time limit.
pub fn over_time(limits: ReportLimits) -> StoreError {
    StoreError::Unprocessable(format!(
        "the query ran longer than its time limit of {} s",
        limits.timeout.as_secs_f64()
    ))
}

/// How a refusal tells the caller to read fewer points.
const NARROW: &str = "narrow its time range with a condition on `timestamp` (such as \
     `WHERE timestamp >= '2026-01-01'`) or name its topics with `topic = '…'`";

fn too_many_points(limits: ReportLimits) -> StoreError {
    StoreError::Unprocessable(format!(
        "the query reads more than {} historian points; {NARROW}",
        limits.max_points
    ))
}

fn reading_over_time(limits: ReportLimits) -> StoreError {
    StoreError::Unprocessable(format!(
        "reading the historian points of the query took longer than its time limit of {} s; \
         {NARROW}",
        limits.timeout.as_secs_f64()
    ))
}

/// `error` of a report's reading of historian points, or the time-limit refusal when the
/// deadline had passed (the engine then cancels what runs, whatever error that gives).
pub fn past_deadline(error: StoreError, limits: ReportLimits, deadline: Instant) -> StoreError {
    if Instant::now() >= deadline {
        reading_over_time(limits)
    } else {
        error
    }
}

/// Hands the points of each of `series` (id, topic) that `scope` admits to `sink`, series by
/// series, each in (ts, seq) order, a page at a time; how many there were. Refused once they
/// pass `limits.max_points` or the clock passes `deadline`.
pub fn read_scope(
    layout: &impl HistoryLayout,
    series: &[(i64, String)],
    scope: &HistorianScope,
    limits: ReportLimits,
    deadline: Instant,
    sink: impl FnMut(&str, &[BlockPoint]) -> StoreResult<()>,
) -> StoreResult<u64> {
    read_pages(layout, series, scope, (limits, deadline), PAGE, sink)
}

/// [`read_scope`] asking the read path for `page` points at a time.
pub(crate) fn read_pages(
    layout: &impl HistoryLayout,
    series: &[(i64, String)],
    scope: &HistorianScope,
    (limits, deadline): (ReportLimits, Instant),
    page_size: u64,
    mut sink: impl FnMut(&str, &[BlockPoint]) -> StoreResult<()>,
) -> StoreResult<u64> {
    let mut read = 0u64;
    let mut take = |topic: &str, points: &[BlockPoint]| {
        read += points.len() as u64;
        if read > limits.max_points {
            return Err(too_many_points(limits));
        }
        if Instant::now() > deadline {
            return Err(reading_over_time(limits));
        }
        sink(topic, points)
    };
    if scope.is_empty() {
        return Ok(0);
    }
    for (id, topic) in series.iter().filter(|(_, t)| scope.has_topic(t)) {
        let mut from = scope.start_ms;
        while from < scope.end_ms {
            let page = layout.read_range(*id, from, scope.end_ms, Some(page_size))?;
            let Some(last) = page.last().map(|p| p.ts_ms) else {
                break;
            };
            if (page.len() as u64) < page_size {
                take(topic, &page)?;
                break;
            }
            // A full page may stop among the points of its last millisecond: keep those
            // before it and go on from it, or, when the page is all that one millisecond,
            // read it whole.
            let before = page.partition_point(|p| p.ts_ms < last);
            if before > 0 {
                take(topic, &page[..before])?;
                from = last;
            } else {
                take(topic, &layout.read_range(*id, last, last + 1, None)?)?;
                from = last + 1;
            }
        }
    }
    Ok(read)
}

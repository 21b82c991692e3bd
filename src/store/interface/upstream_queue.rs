//! The store's copy of the upstream bridges' out-queues: every message an upstream has not yet
//! had acknowledged survives a restart.

use crate::store::types::UpstreamMessage;
use crate::store::StoreResult;

/// The durable out-queues of upstream bridges, keyed by upstream.
pub trait UpstreamQueue {
    /// Appends messages and deletes acknowledged or dropped ones (by seq), in one transaction.
    fn upstream_queue_write(
        &self,
        appends: &[(&str, &UpstreamMessage)],
        deletes: &[(&str, &[i64])],
    ) -> StoreResult<()>;
    /// Every message waiting for `upstream`, in seq order.
    fn upstream_queue_load(&self, upstream: &str) -> StoreResult<Vec<UpstreamMessage>>;
    /// The highest seq any queue holds (0 when all are empty), so new seqs continue after it.
    fn upstream_queue_last_seq(&self) -> StoreResult<i64>;
    /// Deletes every message waiting for `upstream` (deleted or reconfigured).
    fn upstream_queue_clear(&self, upstream: &str) -> StoreResult<()>;
}

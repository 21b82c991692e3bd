//! The Unified Namespace as the server holds it in memory, one handle for what every accepted
//! message touches: the tag registry (which domain owns each topic, which tags are historized
//! and how), the latest value of every topic, and the historian writer with the compression
//! state of the tags that have it.

use crate::historian::writer::HistorianWriter;
use crate::server::services::historize::Series;
use crate::server::services::last_values::LastValues;
use crate::server::services::tag_registry::TagRegistry;
use std::sync::Arc;

pub struct Uns {
    pub tags: Arc<TagRegistry>,
    pub last_values: Arc<LastValues>,
    pub historian: HistorianWriter,
    /// The filters of the tags with compression (what the historian keeps of them).
    pub compressed: Series,
}

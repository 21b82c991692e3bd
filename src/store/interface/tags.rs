//! Reads of the per-domain `tags` and `namespaces` system tables that the tag registry needs.

use crate::store::types::TagRow;
use crate::store::StoreResult;

/// The tag registry's reads.
pub trait Tags {
    /// Every tag record of `domain`, as the registry keeps it.
    fn tags_of(&self, domain: &str) -> StoreResult<Vec<TagRow>>;
    /// The paths of `domain`'s namespaces.
    fn namespaces_of(&self, domain: &str) -> StoreResult<Vec<String>>;
}

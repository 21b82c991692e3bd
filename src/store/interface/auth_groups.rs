//! Changing a group after it was made. Each change is one transaction; `false` when the group
//! (or membership) does not exist in the domain.

use crate::model::Grant;
use crate::store::StoreResult;

/// Changes to existing groups.
pub trait GroupChanges {
    /// Replaces a group's grants with `grants`.
    fn set_group_grants(
        &self,
        domain: &str,
        group_key: &str,
        grants: &[Grant],
    ) -> StoreResult<bool>;
    /// Takes a user out of a group of the domain.
    fn remove_group_member(
        &self,
        domain: &str,
        group_key: &str,
        user_key: &str,
    ) -> StoreResult<bool>;
    /// Deletes a group of the domain and every membership of it.
    fn delete_group(&self, domain: &str, group_key: &str) -> StoreResult<bool>;
    /// Adds grants (those it lacks) to a group of the domain; false when there is no such group.
    fn add_group_grants(
        &self,
        domain: &str,
        group_key: &str,
        grants: &[Grant],
    ) -> StoreResult<bool>;
}

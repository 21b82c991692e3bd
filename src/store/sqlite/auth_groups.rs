//! Changing a group after it was made: replacing its grants, removing a member, and deleting
//! it with its memberships. Each is one transaction; `false` when the group (or membership)
//! does not exist in the domain.

use super::{SqliteStore, StoreResult};
use crate::model::Grant;
use crate::store::interface::GroupChanges;
use crate::store::types::*;
use rusqlite::{params, OptionalExtension, TransactionBehavior};

impl GroupChanges for SqliteStore {
    /// Replaces a group's grants with `grants`.
    fn set_group_grants(
        &self,
        domain: &str,
        group_key: &str,
        grants: &[Grant],
    ) -> StoreResult<bool> {
        let changed = self.conn()?.execute(
            "UPDATE auth_groups SET grants = ?3 WHERE domain = ?1 AND key = ?2",
            params![domain, group_key, serde_json::to_string(grants)?],
        )?;
        Ok(changed > 0)
    }

    /// Takes a user out of a group of the domain.
    fn remove_group_member(
        &self,
        domain: &str,
        group_key: &str,
        user_key: &str,
    ) -> StoreResult<bool> {
        let removed = self.conn()?.execute(
            "DELETE FROM auth_group_members WHERE domain = ?1 AND group_key = ?2 AND user_key = ?3",
            params![domain, group_key, user_key],
        )?;
        Ok(removed > 0)
    }

    /// Deletes a group of the domain and every membership of it.
    fn delete_group(&self, domain: &str, group_key: &str) -> StoreResult<bool> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "DELETE FROM auth_group_members WHERE domain = ?1 AND group_key = ?2",
            params![domain, group_key],
        )?;
        let removed = tx.execute(
            "DELETE FROM auth_groups WHERE domain = ?1 AND key = ?2",
            params![domain, group_key],
        )?;
        tx.commit()?;
        Ok(removed > 0)
    }

    /// Adds grants (those it lacks) to a group of the domain; false when there is no such group.
    fn add_group_grants(
        &self,
        domain: &str,
        group_key: &str,
        grants: &[Grant],
    ) -> StoreResult<bool> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let current: Option<String> = tx
            .query_row(
                "SELECT grants FROM auth_groups WHERE domain = ?1 AND key = ?2",
                params![domain, group_key],
                |r| r.get(0),
            )
            .optional()?;
        let Some(current) = current else {
            return Ok(false);
        };
        let all = merged_grants(serde_json::from_str(&current)?, grants);
        tx.execute(
            "UPDATE auth_groups SET grants = ?3 WHERE domain = ?1 AND key = ?2",
            params![domain, group_key, serde_json::to_string(&all)?],
        )?;
        tx.commit()?;
        Ok(true)
    }
}

//! Changing a group after it was made: replacing its grants, removing a member, and deleting
//! it with its memberships. Each is one transaction; `false` when the group (or membership)
//! does not exist in the domain.

use super::{SqliteStore, StoreResult};
use crate::model::Grant;
use rusqlite::{params, TransactionBehavior};

impl SqliteStore {
    /// Replaces a group's grants with `grants`.
    pub fn set_group_grants(
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
    pub fn remove_group_member(
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
    pub fn delete_group(&self, domain: &str, group_key: &str) -> StoreResult<bool> {
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
}

//! Changing a group after it was made: replacing or adding grants, removing a member, deleting
//! it with its memberships. Each is one transaction; `false` when the group (or membership)
//! does not exist in the domain.

use super::PgStore;
use crate::model::Grant;
use crate::store::interface::GroupChanges;
use crate::store::types::*;
use crate::store::StoreResult;

impl GroupChanges for PgStore {
    fn set_group_grants(
        &self,
        domain: &str,
        group_key: &str,
        grants: &[Grant],
    ) -> StoreResult<bool> {
        Ok(self.execute(
            "UPDATE auth_groups SET grants = $3 WHERE domain = $1 AND key = $2",
            &[&domain, &group_key, &serde_json::to_string(grants)?],
        )? > 0)
    }

    fn remove_group_member(
        &self,
        domain: &str,
        group_key: &str,
        user_key: &str,
    ) -> StoreResult<bool> {
        Ok(self.execute(
            "DELETE FROM auth_group_members WHERE domain = $1 AND group_key = $2 \
             AND user_key = $3",
            &[&domain, &group_key, &user_key],
        )? > 0)
    }

    fn delete_group(&self, domain: &str, group_key: &str) -> StoreResult<bool> {
        self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            tx.execute(
                "DELETE FROM auth_group_members WHERE domain = $1 AND group_key = $2",
                &[&domain, &group_key],
            )
            .await?;
            let removed = tx
                .execute(
                    "DELETE FROM auth_groups WHERE domain = $1 AND key = $2",
                    &[&domain, &group_key],
                )
                .await?;
            tx.commit().await?;
            Ok(removed > 0)
        })
    }

    /// Adds the grants a group lacks, under a row lock so concurrent additions all land.
    fn add_group_grants(
        &self,
        domain: &str,
        group_key: &str,
        grants: &[Grant],
    ) -> StoreResult<bool> {
        self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            let Some(row) = tx
                .query_opt(
                    "SELECT grants FROM auth_groups WHERE domain = $1 AND key = $2 FOR UPDATE",
                    &[&domain, &group_key],
                )
                .await?
            else {
                return Ok(false);
            };
            let all = merged_grants(serde_json::from_str(row.get(0))?, grants);
            tx.execute(
                "UPDATE auth_groups SET grants = $3 WHERE domain = $1 AND key = $2",
                &[&domain, &group_key, &serde_json::to_string(&all)?],
            )
            .await?;
            tx.commit().await?;
            Ok(true)
        })
    }
}

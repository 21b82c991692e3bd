//! What the SDK shows around a user and a group: a user's profile, the groups it belongs to,
//! a group's members, what an administrator holds, and the keys of users.

use super::auth::{api_key_from_row, bare_api_key, API_KEY_COLUMNS};
use super::PgStore;
use crate::model::{ApiKeyInfo, NamedGrant, UserProfile};
use crate::store::interface::Profiles;
use crate::store::types::*;
use crate::store::StoreResult;

impl Profiles for PgStore {
    fn set_user_profile(&self, user_key: &str, profile: &UserProfile) -> StoreResult<()> {
        self.execute(
            "UPDATE auth_users SET profile = $2 WHERE key = $1",
            &[&user_key, &serde_json::to_string(profile)?],
        )?;
        Ok(())
    }

    fn user_profile(&self, user_key: &str) -> StoreResult<UserProfile> {
        let text: Option<String> = self
            .query_opt(
                "SELECT profile FROM auth_users WHERE key = $1",
                &[&user_key],
            )?
            .and_then(|row| row.get(0));
        Ok(text
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default())
    }

    fn user_group_ids(&self, user_key: &str, domain: Option<&str>) -> StoreResult<Vec<String>> {
        Ok(self
            .query(
                "SELECT domain, group_key FROM auth_group_members \
                 WHERE user_key = $1 AND ($2::text IS NULL OR domain = $2) \
                 ORDER BY domain, group_key",
                &[&user_key, &domain],
            )?
            .iter()
            .map(|row| group_id(row.get(0), row.get(1)))
            .collect())
    }

    fn group_member_ids(&self, domain: &str, group_key: &str) -> StoreResult<Vec<String>> {
        Ok(self
            .query(
                "SELECT user_key FROM auth_group_members WHERE domain = $1 AND group_key = $2 \
                 ORDER BY user_key",
                &[&domain, &group_key],
            )?
            .iter()
            .map(|row| user_id(row.get(0)))
            .collect())
    }

    fn admin_permissions(&self, domain: &str) -> StoreResult<Vec<NamedGrant>> {
        let custom: Vec<(String, String)> = self
            .query(
                "SELECT feature, action FROM auth_actions WHERE domain = $1 \
                 ORDER BY feature, action",
                &[&domain],
            )?
            .iter()
            .map(|row| (row.get(0), row.get(1)))
            .collect();
        Ok(admin_grants(&custom))
    }

    fn api_keys_of_users(&self, domain: Option<&str>) -> StoreResult<Vec<ApiKeyInfo>> {
        Ok(self
            .query(
                &format!(
                    "SELECT {API_KEY_COLUMNS}, user_key \
                     FROM auth_api_keys k WHERE $1::text IS NULL OR EXISTS \
                     (SELECT 1 FROM auth_group_members m WHERE m.user_key = k.user_key \
                      AND m.domain = $1) ORDER BY user_key, created_dt, key"
                ),
                &[&domain],
            )?
            .iter()
            .map(|row| ApiKeyInfo {
                user_id: Some(user_id(row.get(6))),
                ..api_key_from_row(row)
            })
            .collect())
    }

    fn api_key_user(&self, id: &str) -> StoreResult<Option<String>> {
        Ok(self
            .query_opt(
                "SELECT user_key FROM auth_api_keys WHERE key = $1",
                &[&bare_api_key(id)],
            )?
            .map(|row| row.get(0)))
    }

    fn group_exists(&self, domain: &str, group_key: &str) -> StoreResult<bool> {
        Ok(self
            .query_one(
                "SELECT EXISTS(SELECT 1 FROM auth_groups WHERE domain = $1 AND key = $2)",
                &[&domain, &group_key],
            )?
            .get(0))
    }
}

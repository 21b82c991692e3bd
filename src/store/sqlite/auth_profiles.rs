//! What the SDK shows around a user and a group: a user's profile (names, email, number,
//! image), the groups it belongs to, a group's members, and grants added to an existing group.

use super::auth::{api_key_from_row, API_KEY_COLUMNS};
use super::{SqliteStore, StoreResult};
use crate::model::{ApiKeyInfo, NamedGrant, UserProfile};
use crate::store::interface::Profiles;
use crate::store::types::*;
use rusqlite::{params, OptionalExtension};

impl Profiles for SqliteStore {
    fn set_user_profile(&self, user_key: &str, profile: &UserProfile) -> StoreResult<()> {
        self.conn()?.execute(
            "UPDATE auth_users SET profile = ?2 WHERE key = ?1",
            params![user_key, serde_json::to_string(profile)?],
        )?;
        Ok(())
    }

    fn user_profile(&self, user_key: &str) -> StoreResult<UserProfile> {
        let text: Option<String> = self
            .conn()?
            .query_row(
                "SELECT profile FROM auth_users WHERE key = ?1",
                [user_key],
                |r| r.get(0),
            )
            .optional()?;
        Ok(text
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default())
    }

    /// RecordIDs of the groups a user belongs to; only those of `domain` when given.
    fn user_group_ids(&self, user_key: &str, domain: Option<&str>) -> StoreResult<Vec<String>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT domain, group_key FROM auth_group_members \
             WHERE user_key = ?1 AND (?2 IS NULL OR domain = ?2) ORDER BY domain, group_key",
        )?;
        let rows = stmt.query_map(params![user_key, domain], |r| {
            Ok(group_id(&r.get::<_, String>(0)?, &r.get::<_, String>(1)?))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// User RecordIDs of a group's members.
    fn group_member_ids(&self, domain: &str, group_key: &str) -> StoreResult<Vec<String>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT user_key FROM auth_group_members WHERE domain = ?1 AND group_key = ?2 \
             ORDER BY user_key",
        )?;
        let rows = stmt.query_map(params![domain, group_key], |r| {
            Ok(user_id(&r.get::<_, String>(0)?))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// What an administrator holds in a domain: `read` and `read-write` on the platform's own
    /// features and every feature with custom actions, plus those actions, at scope `*`.
    fn admin_permissions(&self, domain: &str) -> StoreResult<Vec<NamedGrant>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT feature, action FROM auth_actions WHERE domain = ?1 ORDER BY feature, action",
        )?;
        let custom: Vec<(String, String)> = stmt
            .query_map([domain], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        Ok(admin_grants(&custom))
    }

    /// Every user's API keys with their owner; only those of users in a group of `domain` when
    /// given.
    fn api_keys_of_users(&self, domain: Option<&str>) -> StoreResult<Vec<ApiKeyInfo>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {API_KEY_COLUMNS}, user_key FROM auth_api_keys k \
             WHERE ?1 IS NULL OR EXISTS (SELECT 1 FROM auth_group_members m \
                 WHERE m.user_key = k.user_key AND m.domain = ?1) \
             ORDER BY user_key, created_dt, key"
        ))?;
        let rows = stmt.query_map([domain], |row| {
            let mut info = api_key_from_row(row)?;
            info.user_id = Some(user_id(&row.get::<_, String>(6)?));
            Ok(info)
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The user key owning an API key (by id or bare key).
    fn api_key_user(&self, id: &str) -> StoreResult<Option<String>> {
        let key = id.strip_prefix(&api_key_id("")).unwrap_or(id);
        Ok(self
            .conn()?
            .query_row(
                "SELECT user_key FROM auth_api_keys WHERE key = ?1",
                [key],
                |r| r.get(0),
            )
            .optional()?)
    }

    fn group_exists(&self, domain: &str, group_key: &str) -> StoreResult<bool> {
        Ok(self.conn()?.query_row(
            "SELECT EXISTS(SELECT 1 FROM auth_groups WHERE domain = ?1 AND key = ?2)",
            params![domain, group_key],
            |r| r.get(0),
        )?)
    }
}

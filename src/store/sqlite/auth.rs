//! Identity tables of the built-in `svc_admin` domain: domains, users, groups with their grants,
//! per-domain custom actions, and API keys (stored only as hashes).

use super::{SqliteStore, StoreError, StoreResult};
use crate::ids::new_key;
use crate::model::{ApiKeyInfo, Domain, Grant, Group};
use crate::store::interface::Identity;
use crate::store::types::*;
use crate::time::now_rfc3339;
use rusqlite::{params, OptionalExtension, Row, TransactionBehavior};

fn user_from_row(row: &Row) -> rusqlite::Result<AuthUser> {
    Ok(AuthUser {
        key: row.get(0)?,
        username: row.get(1)?,
        admin: row.get(2)?,
        created_dt: row.get(3)?,
    })
}

const USER_COLUMNS: &str = "key, username, admin, created_dt";

fn group_from_row(row: &Row) -> rusqlite::Result<Group> {
    let domain: String = row.get(0)?;
    let key: String = row.get(1)?;
    let grants: String = row.get(3)?;
    Ok(group_model(
        &domain,
        &key,
        row.get(2)?,
        serde_json::from_str(&grants).unwrap_or_default(),
    ))
}

/// The columns [`api_key_from_row`] reads, in its order.
pub(super) const API_KEY_COLUMNS: &str = "key, name, prefix, created_dt, last_used_dt, domain";

pub(super) fn api_key_from_row(row: &Row) -> rusqlite::Result<ApiKeyInfo> {
    let key: String = row.get(0)?;
    Ok(api_key_model(
        &key,
        row.get(1)?,
        row.get(2)?,
        row.get(3)?,
        row.get(4)?,
        row.get(5)?,
    ))
}

impl Identity for SqliteStore {
    fn user_count(&self) -> StoreResult<u64> {
        let n: i64 = self
            .conn()?
            .query_row("SELECT COUNT(*) FROM auth_users", [], |r| r.get(0))?;
        Ok(n.max(0) as u64)
    }

    fn create_user(
        &self,
        username: &str,
        password_hash: &str,
        admin: bool,
    ) -> StoreResult<AuthUser> {
        let user = AuthUser::fresh(username, admin);
        self.conn()?
            .execute(
                "INSERT INTO auth_users (key, username, password_hash, admin, created_dt) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    user.key,
                    user.username,
                    password_hash,
                    user.admin,
                    user.created_dt
                ],
            )
            .map_err(|e| match StoreError::from(e) {
                StoreError::Conflict(_) => {
                    StoreError::Conflict(format!("user `{username}` already exists"))
                }
                other => other,
            })?;
        Ok(user)
    }

    fn user_by_key(&self, key: &str) -> StoreResult<Option<AuthUser>> {
        Ok(self
            .conn()?
            .prepare_cached(&format!(
                "SELECT {USER_COLUMNS} FROM auth_users WHERE key = ?1"
            ))?
            .query_row([key], user_from_row)
            .optional()?)
    }

    /// The user and its password hash, for a login attempt.
    fn user_with_password(&self, username: &str) -> StoreResult<Option<(AuthUser, String)>> {
        Ok(self
            .conn()?
            .query_row(
                &format!(
                    "SELECT {USER_COLUMNS}, password_hash FROM auth_users WHERE username = ?1"
                ),
                [username],
                |row| Ok((user_from_row(row)?, row.get(4)?)),
            )
            .optional()?)
    }

    fn list_users(&self) -> StoreResult<Vec<AuthUser>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare(&format!(
            "SELECT {USER_COLUMNS} FROM auth_users ORDER BY username"
        ))?;
        let users = stmt.query_map([], user_from_row)?;
        Ok(users.collect::<Result<_, _>>()?)
    }

    /// Deletes a user with its memberships and API keys.
    fn delete_user(&self, key: &str) -> StoreResult<bool> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute("DELETE FROM auth_group_members WHERE user_key = ?1", [key])?;
        tx.execute("DELETE FROM auth_api_keys WHERE user_key = ?1", [key])?;
        let removed = tx.execute("DELETE FROM auth_users WHERE key = ?1", [key])? > 0;
        tx.commit()?;
        Ok(removed)
    }

    fn create_domain(&self, name: &str) -> StoreResult<Domain> {
        let created_dt = now_rfc3339();
        self.conn()?
            .execute(
                "INSERT INTO auth_domains (name, created_dt) VALUES (?1, ?2)",
                params![name, created_dt],
            )
            .map_err(|e| match StoreError::from(e) {
                StoreError::Conflict(_) => {
                    StoreError::Conflict(format!("domain `{name}` already exists"))
                }
                other => other,
            })?;
        Ok(domain_model(name.to_string(), created_dt))
    }

    fn list_domains(&self) -> StoreResult<Vec<Domain>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare("SELECT name, created_dt FROM auth_domains ORDER BY name")?;
        let rows = stmt.query_map([], |row| Ok(domain_model(row.get(0)?, row.get(1)?)))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn create_group(&self, domain: &str, name: &str, grants: &[Grant]) -> StoreResult<Group> {
        let key = new_key();
        self.conn()?
            .execute(
                "INSERT INTO auth_groups (domain, key, name, grants, created_dt) \
                 VALUES (?1, ?2, ?3, ?4, ?5)",
                params![
                    domain,
                    key,
                    name,
                    serde_json::to_string(grants)?,
                    now_rfc3339()
                ],
            )
            .map_err(|e| match StoreError::from(e) {
                StoreError::Conflict(_) => StoreError::Conflict(format!(
                    "group `{name}` already exists in domain `{domain}`"
                )),
                other => other,
            })?;
        Ok(group_model(domain, &key, name.to_string(), grants.to_vec()))
    }

    fn list_groups(&self, domain: &str) -> StoreResult<Vec<Group>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare(
            "SELECT domain, key, name, grants FROM auth_groups WHERE domain = ?1 ORDER BY name",
        )?;
        let rows = stmt.query_map([domain], group_from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Adds a user to a group of the domain; false when the group or the user does not exist.
    fn add_group_member(&self, domain: &str, group_key: &str, user_key: &str) -> StoreResult<bool> {
        let conn = self.conn()?;
        let exists: bool = conn.query_row(
            "SELECT EXISTS(SELECT 1 FROM auth_groups WHERE domain = ?1 AND key = ?2) \
             AND EXISTS(SELECT 1 FROM auth_users WHERE key = ?3)",
            params![domain, group_key, user_key],
            |r| r.get(0),
        )?;
        if exists {
            conn.execute(
                "INSERT OR IGNORE INTO auth_group_members (domain, group_key, user_key) \
                 VALUES (?1, ?2, ?3)",
                params![domain, group_key, user_key],
            )?;
        }
        Ok(exists)
    }

    /// Every grant a user holds in a domain.
    fn grants_of(&self, user_key: &str, domain: &str) -> StoreResult<GrantSet> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT g.grants FROM auth_groups g JOIN auth_group_members m \
             ON m.domain = g.domain AND m.group_key = g.key \
             WHERE m.user_key = ?1 AND m.domain = ?2",
        )?;
        let mut grants = Vec::new();
        for text in stmt.query_map(params![user_key, domain], |r| r.get::<_, String>(0))? {
            grants.extend(serde_json::from_str::<Vec<Grant>>(&text?)?);
        }
        Ok(GrantSet(grants))
    }

    /// Adds custom actions per feature, and known scopes, to a domain.
    fn add_permissions(
        &self,
        domain: &str,
        actions: &[(String, String)],
        scopes: &[String],
    ) -> StoreResult<()> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        for (feature, action) in actions {
            tx.execute(
                "INSERT OR IGNORE INTO auth_actions (domain, feature, action) VALUES (?1, ?2, ?3)",
                params![domain, feature, action],
            )?;
        }
        for scope in scopes {
            tx.execute(
                "INSERT OR IGNORE INTO auth_scopes (domain, scope) VALUES (?1, ?2)",
                params![domain, scope],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// The custom actions configured for a feature in a domain.
    fn custom_actions(&self, domain: &str, feature: &str) -> StoreResult<Vec<String>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare_cached(
            "SELECT action FROM auth_actions WHERE domain = ?1 AND feature = ?2 ORDER BY action",
        )?;
        let rows = stmt.query_map(params![domain, feature], |r| r.get(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn create_api_key(
        &self,
        user_key: &str,
        name: &str,
        prefix: &str,
        secret_hash: &str,
        domain: Option<&str>,
    ) -> StoreResult<ApiKeyInfo> {
        let key = new_key();
        let created_dt = now_rfc3339();
        self.conn()?.execute(
            "INSERT INTO auth_api_keys \
             (key, user_key, name, prefix, secret_hash, created_dt, domain) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![key, user_key, name, prefix, secret_hash, created_dt, domain],
        )?;
        Ok(api_key_model(
            &key,
            name.to_string(),
            prefix.to_string(),
            created_dt,
            None,
            domain.map(str::to_string),
        ))
    }

    fn list_api_keys(&self, user_key: &str) -> StoreResult<Vec<ApiKeyInfo>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare(&format!(
            "SELECT {API_KEY_COLUMNS} FROM auth_api_keys \
             WHERE user_key = ?1 ORDER BY created_dt, key"
        ))?;
        let rows = stmt.query_map([user_key], api_key_from_row)?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Revokes one of the user's keys, given its id; false when the user has no such key.
    fn delete_api_key(&self, user_key: &str, id: &str) -> StoreResult<bool> {
        let key = id.strip_prefix(&api_key_id("")).unwrap_or(id);
        Ok(self.conn()?.execute(
            "DELETE FROM auth_api_keys WHERE key = ?1 AND user_key = ?2",
            params![key, user_key],
        )? > 0)
    }

    /// The key with this secret hash: its id, owner and domain.
    fn api_key_owner(&self, secret_hash: &str) -> StoreResult<Option<ApiKeyOwner>> {
        Ok(self
            .conn()?
            .prepare_cached(
                "SELECT key, user_key, domain FROM auth_api_keys WHERE secret_hash = ?1",
            )?
            .query_row([secret_hash], |r| {
                Ok(ApiKeyOwner {
                    key: r.get(0)?,
                    user_key: r.get(1)?,
                    domain: r.get(2)?,
                })
            })
            .optional()?)
    }

    fn touch_api_key(&self, key: &str, when: &str) -> StoreResult<()> {
        self.conn()?.execute(
            "UPDATE auth_api_keys SET last_used_dt = ?1 WHERE key = ?2",
            params![when, key],
        )?;
        Ok(())
    }
}

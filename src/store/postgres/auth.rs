//! Identity on PostgreSQL: domains, users with their profiles, groups with their grants and
//! members, custom actions and scopes, and API keys (stored only as hashes). The same tables
//! as SQLite's (`migrations/0001_identity.sql`); several instances share them.

use super::{conflict_as, PgStore};
use crate::ids::new_key;
use crate::model::{ApiKeyInfo, Domain, Grant, Group};
use crate::store::interface::Identity;
use crate::store::types::*;
use crate::store::StoreResult;
use crate::time::now_rfc3339;
use tokio_postgres::Row;

const USER_COLUMNS: &str = "key, username, admin, created_dt";

fn user_from_row(row: &Row) -> AuthUser {
    AuthUser {
        key: row.get(0),
        username: row.get(1),
        admin: row.get(2),
        created_dt: row.get(3),
    }
}

/// The identity reads the server makes on every request whose credentials it has not cached,
/// as futures: awaited on the server's workers
/// ([`AsyncReads`](crate::store::interface::AsyncReads)), and blocked on by the synchronous
/// [`Identity`] calls below.
impl PgStore {
    pub(super) async fn user_by_key_async(&self, key: &str) -> StoreResult<Option<AuthUser>> {
        Ok(self
            .query_opt_async(
                &format!("SELECT {USER_COLUMNS} FROM auth_users WHERE key = $1"),
                &[&key],
            )
            .await?
            .map(|row| user_from_row(&row)))
    }

    pub(super) async fn list_domains_async(&self) -> StoreResult<Vec<Domain>> {
        Ok(self
            .query_async(
                "SELECT name, created_dt FROM auth_domains ORDER BY name",
                &[],
            )
            .await?
            .iter()
            .map(|row| domain_model(row.get(0), row.get(1)))
            .collect())
    }

    pub(super) async fn grants_of_async(
        &self,
        user_key: &str,
        domain: &str,
    ) -> StoreResult<GrantSet> {
        let mut grants = Vec::new();
        for row in self
            .query_async(
                "SELECT g.grants FROM auth_groups g JOIN auth_group_members m \
                 ON m.domain = g.domain AND m.group_key = g.key \
                 WHERE m.user_key = $1 AND m.domain = $2",
                &[&user_key, &domain],
            )
            .await?
        {
            grants.extend(serde_json::from_str::<Vec<Grant>>(row.get(0))?);
        }
        Ok(GrantSet(grants))
    }

    pub(super) async fn api_key_owner_async(
        &self,
        secret_hash: &str,
    ) -> StoreResult<Option<ApiKeyOwner>> {
        Ok(self
            .query_opt_async(
                "SELECT key, user_key, domain FROM auth_api_keys WHERE secret_hash = $1",
                &[&secret_hash],
            )
            .await?
            .map(|row| ApiKeyOwner {
                key: row.get(0),
                user_key: row.get(1),
                domain: row.get(2),
            }))
    }
}

fn group_from_row(row: &Row) -> Group {
    let domain: String = row.get(0);
    let key: String = row.get(1);
    let grants: String = row.get(3);
    group_model(
        &domain,
        &key,
        row.get(2),
        serde_json::from_str(&grants).unwrap_or_default(),
    )
}

/// The columns [`api_key_from_row`] reads, in its order.
pub(super) const API_KEY_COLUMNS: &str = "key, name, prefix, created_dt, last_used_dt, domain";

pub(super) fn api_key_from_row(row: &Row) -> ApiKeyInfo {
    let key: String = row.get(0);
    api_key_model(
        &key,
        row.get(1),
        row.get(2),
        row.get(3),
        row.get(4),
        row.get(5),
    )
}

/// The bare key of an API key given by id or bare key.
pub(super) fn bare_api_key(id: &str) -> String {
    id.strip_prefix(&api_key_id("")).unwrap_or(id).to_string()
}

impl Identity for PgStore {
    fn user_count(&self) -> StoreResult<u64> {
        let n: i64 = self
            .query_one("SELECT COUNT(*) FROM auth_users", &[])?
            .get(0);
        Ok(n.max(0) as u64)
    }

    fn create_user(
        &self,
        username: &str,
        password_hash: &str,
        admin: bool,
    ) -> StoreResult<AuthUser> {
        let user = AuthUser::fresh(username, admin);
        self.execute(
            "INSERT INTO auth_users (key, username, password_hash, admin, created_dt, profile) \
             VALUES ($1, $2, $3, $4, $5, '{}')",
            &[
                &user.key,
                &user.username,
                &password_hash,
                &user.admin,
                &user.created_dt,
            ],
        )
        .map_err(|e| conflict_as(e, || format!("user `{username}` already exists")))?;
        Ok(user)
    }

    fn user_by_key(&self, key: &str) -> StoreResult<Option<AuthUser>> {
        self.block(self.user_by_key_async(key))
    }

    fn user_with_password(&self, username: &str) -> StoreResult<Option<(AuthUser, String)>> {
        Ok(self
            .query_opt(
                &format!(
                    "SELECT {USER_COLUMNS}, password_hash FROM auth_users WHERE username = $1"
                ),
                &[&username],
            )?
            .map(|row| (user_from_row(&row), row.get(4))))
    }

    fn list_users(&self) -> StoreResult<Vec<AuthUser>> {
        Ok(self
            .query(
                &format!("SELECT {USER_COLUMNS} FROM auth_users ORDER BY username"),
                &[],
            )?
            .iter()
            .map(user_from_row)
            .collect())
    }

    /// Deletes a user with its memberships and API keys, in one transaction.
    fn delete_user(&self, key: &str) -> StoreResult<bool> {
        self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            tx.execute(
                "DELETE FROM auth_group_members WHERE user_key = $1",
                &[&key],
            )
            .await?;
            tx.execute("DELETE FROM auth_api_keys WHERE user_key = $1", &[&key])
                .await?;
            let removed = tx
                .execute("DELETE FROM auth_users WHERE key = $1", &[&key])
                .await?;
            tx.commit().await?;
            Ok(removed > 0)
        })
    }

    fn create_domain(&self, name: &str) -> StoreResult<Domain> {
        let created_dt = now_rfc3339();
        self.execute(
            "INSERT INTO auth_domains (name, created_dt) VALUES ($1, $2)",
            &[&name, &created_dt],
        )
        .map_err(|e| conflict_as(e, || format!("domain `{name}` already exists")))?;
        Ok(domain_model(name.to_string(), created_dt))
    }

    fn list_domains(&self) -> StoreResult<Vec<Domain>> {
        self.block(self.list_domains_async())
    }

    fn create_group(&self, domain: &str, name: &str, grants: &[Grant]) -> StoreResult<Group> {
        let key = new_key();
        self.execute(
            "INSERT INTO auth_groups (domain, key, name, grants, created_dt) \
             VALUES ($1, $2, $3, $4, $5)",
            &[
                &domain,
                &key,
                &name,
                &serde_json::to_string(grants)?,
                &now_rfc3339(),
            ],
        )
        .map_err(|e| {
            conflict_as(e, || {
                format!("group `{name}` already exists in domain `{domain}`")
            })
        })?;
        Ok(group_model(domain, &key, name.to_string(), grants.to_vec()))
    }

    fn list_groups(&self, domain: &str) -> StoreResult<Vec<Group>> {
        Ok(self
            .query(
                "SELECT domain, key, name, grants FROM auth_groups WHERE domain = $1 \
                 ORDER BY name",
                &[&domain],
            )?
            .iter()
            .map(group_from_row)
            .collect())
    }

    /// Adds a user to a group of the domain; false when the group or the user does not exist.
    fn add_group_member(&self, domain: &str, group_key: &str, user_key: &str) -> StoreResult<bool> {
        // One statement: the existence checks and the insert see the same snapshot.
        let row = self.query_one(
            "WITH ok AS (SELECT EXISTS(SELECT 1 FROM auth_groups WHERE domain = $1 AND key = $2) \
                 AND EXISTS(SELECT 1 FROM auth_users WHERE key = $3) AS ok), \
             ins AS (INSERT INTO auth_group_members (domain, group_key, user_key) \
                 SELECT $1, $2, $3 FROM ok WHERE ok.ok ON CONFLICT DO NOTHING) \
             SELECT ok FROM ok",
            &[&domain, &group_key, &user_key],
        )?;
        Ok(row.get(0))
    }

    fn grants_of(&self, user_key: &str, domain: &str) -> StoreResult<GrantSet> {
        self.block(self.grants_of_async(user_key, domain))
    }

    fn add_permissions(
        &self,
        domain: &str,
        actions: &[(String, String)],
        scopes: &[String],
    ) -> StoreResult<()> {
        self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            for (feature, action) in actions {
                tx.execute(
                    "INSERT INTO auth_actions (domain, feature, action) VALUES ($1, $2, $3) \
                     ON CONFLICT DO NOTHING",
                    &[&domain, feature, action],
                )
                .await?;
            }
            for scope in scopes {
                tx.execute(
                    "INSERT INTO auth_scopes (domain, scope) VALUES ($1, $2) \
                     ON CONFLICT DO NOTHING",
                    &[&domain, scope],
                )
                .await?;
            }
            tx.commit().await?;
            Ok(())
        })
    }

    fn custom_actions(&self, domain: &str, feature: &str) -> StoreResult<Vec<String>> {
        Ok(self
            .query(
                "SELECT action FROM auth_actions WHERE domain = $1 AND feature = $2 \
                 ORDER BY action",
                &[&domain, &feature],
            )?
            .iter()
            .map(|row| row.get(0))
            .collect())
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
        self.execute(
            "INSERT INTO auth_api_keys \
             (key, user_key, name, prefix, secret_hash, created_dt, domain) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
            &[
                &key,
                &user_key,
                &name,
                &prefix,
                &secret_hash,
                &created_dt,
                &domain,
            ],
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
        Ok(self
            .query(
                &format!(
                    "SELECT {API_KEY_COLUMNS} FROM auth_api_keys \
                     WHERE user_key = $1 ORDER BY created_dt, key"
                ),
                &[&user_key],
            )?
            .iter()
            .map(api_key_from_row)
            .collect())
    }

    fn delete_api_key(&self, user_key: &str, id: &str) -> StoreResult<bool> {
        Ok(self.execute(
            "DELETE FROM auth_api_keys WHERE key = $1 AND user_key = $2",
            &[&bare_api_key(id), &user_key],
        )? > 0)
    }

    fn api_key_owner(&self, secret_hash: &str) -> StoreResult<Option<ApiKeyOwner>> {
        self.block(self.api_key_owner_async(secret_hash))
    }

    fn touch_api_key(&self, key: &str, when: &str) -> StoreResult<()> {
        self.execute(
            "UPDATE auth_api_keys SET last_used_dt = $1 WHERE key = $2",
            &[&when, &key],
        )?;
        Ok(())
    }
}

//! Upstream passwords, kept out of the upstream records: a record says only `password_set`,
//! so no record route, filter or export can show or probe a password. Also the read the
//! upstream supervisor needs: every upstream of a domain with its password.

use super::{prepare_on_table, quoted, SqliteStore, StoreResult};
use crate::ids::TableRef;
use crate::store::interface::UpstreamSecrets;
use crate::store::types::*;
use rusqlite::{params, OptionalExtension};

impl UpstreamSecrets for SqliteStore {
    /// Sets (or with `None` clears) the password of the upstream record `key` of `domain`.
    fn set_upstream_password(
        &self,
        domain: &str,
        key: &str,
        password: Option<&str>,
    ) -> StoreResult<()> {
        self.set_secret("upstream_secrets", "upstream", domain, key, password)
    }

    /// Every upstream record of `domain` (its fields, without id and times) by key, with its
    /// password.
    fn upstreams_of(&self, domain: &str) -> StoreResult<Vec<StoredUpstream>> {
        self.records_with_secret(
            domain,
            crate::store::UPSTREAMS,
            "upstream_secrets",
            "upstream",
        )
    }

    /// The password of the upstream record `key` of `domain`, if one is set.
    fn upstream_password(&self, domain: &str, key: &str) -> StoreResult<Option<String>> {
        Ok(self
            .conn()?
            .query_row(
                "SELECT password FROM upstream_secrets WHERE domain = ?1 AND upstream = ?2",
                params![domain, key],
                |r| r.get(0),
            )
            .optional()?)
    }
}

impl SqliteStore {
    /// Sets (or with `None` clears) the password `secrets` keeps for record `key` of `domain`
    /// (in its column `password`, keyed by `domain` and `key_column`).
    pub(super) fn set_secret(
        &self,
        secrets: &str,
        key_column: &str,
        domain: &str,
        key: &str,
        password: Option<&str>,
    ) -> StoreResult<()> {
        let conn = self.conn()?;
        match password {
            Some(password) => conn.execute(
                &format!(
                    "INSERT INTO {secrets} (domain, {key_column}, password) VALUES (?1, ?2, ?3) \
                     ON CONFLICT (domain, {key_column}) DO UPDATE SET password = excluded.password"
                ),
                params![domain, key, password],
            )?,
            None => conn.execute(
                &format!("DELETE FROM {secrets} WHERE domain = ?1 AND {key_column} = ?2"),
                params![domain, key],
            )?,
        };
        Ok(())
    }

    /// Every record of the system table `table` of `domain` by key, with the password
    /// `secrets` keeps for it (in its column `password`, keyed by `domain` and `key_column`).
    pub(super) fn records_with_secret(
        &self,
        domain: &str,
        table: &str,
        secrets: &str,
        key_column: &str,
    ) -> StoreResult<Vec<StoredUpstream>> {
        let Ok(table) = TableRef::new(domain, table) else {
            return Ok(Vec::new());
        };
        let conn = self.conn()?;
        let sql = format!(
            "SELECT r.key, r.data, s.password FROM {} AS r LEFT JOIN {secrets} AS s \
             ON s.domain = ?1 AND s.{key_column} = r.key ORDER BY r.key",
            quoted(&table.qualified())
        );
        let Some(mut stmt) = prepare_on_table(&conn, &sql)? else {
            return Ok(Vec::new());
        };
        let rows = stmt.query_map(params![domain], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
            ))
        })?;
        let mut records = Vec::new();
        for row in rows {
            let (key, data, password) = row?;
            let fields = serde_json::from_str(&data)?;
            records.push((key, fields, password));
        }
        Ok(records)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_set_replaced_and_cleared_per_domain() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("svc.db")).unwrap();
        store
            .set_upstream_password("acme", "k1", Some("one"))
            .unwrap();
        store
            .set_upstream_password("beta", "k1", Some("other"))
            .unwrap();
        store
            .set_upstream_password("acme", "k1", Some("two"))
            .unwrap();
        assert_eq!(
            store.upstream_password("acme", "k1").unwrap().as_deref(),
            Some("two")
        );
        assert_eq!(
            store.upstream_password("beta", "k1").unwrap().as_deref(),
            Some("other")
        );
        store.set_upstream_password("acme", "k1", None).unwrap();
        assert_eq!(store.upstream_password("acme", "k1").unwrap(), None);
    }
}

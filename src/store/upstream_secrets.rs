//! Upstream passwords, kept out of the upstream records: a record says only `password_set`,
//! so no record route, filter or export can show or probe a password.

use super::{Store, StoreResult};
use rusqlite::params;
#[cfg(test)]
use rusqlite::OptionalExtension;

/// Creates the table; idempotent. The name holds no `.`, so it is never taken for a domain's
/// record table (`<domain>.<table>`).
pub(super) const UPSTREAM_SECRETS_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS upstream_secrets (
    domain TEXT NOT NULL, upstream TEXT NOT NULL, password TEXT NOT NULL,
    PRIMARY KEY (domain, upstream));";

impl Store {
    /// Sets (or with `None` clears) the password of the upstream record `key` of `domain`.
    pub fn set_upstream_password(
        &self,
        domain: &str,
        key: &str,
        password: Option<&str>,
    ) -> StoreResult<()> {
        let conn = self.conn()?;
        match password {
            Some(password) => conn.execute(
                "INSERT INTO upstream_secrets (domain, upstream, password) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (domain, upstream) DO UPDATE SET password = excluded.password",
                params![domain, key, password],
            )?,
            None => conn.execute(
                "DELETE FROM upstream_secrets WHERE domain = ?1 AND upstream = ?2",
                params![domain, key],
            )?,
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn password(store: &Store, domain: &str, key: &str) -> Option<String> {
        store
            .conn()
            .unwrap()
            .query_row(
                "SELECT password FROM upstream_secrets WHERE domain = ?1 AND upstream = ?2",
                params![domain, key],
                |r| r.get(0),
            )
            .optional()
            .unwrap()
    }

    #[test]
    fn a_password_is_set_replaced_and_cleared_per_domain() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("svc.db")).unwrap();
        store
            .set_upstream_password("acme", "k1", Some("one"))
            .unwrap();
        store
            .set_upstream_password("beta", "k1", Some("other"))
            .unwrap();
        store
            .set_upstream_password("acme", "k1", Some("two"))
            .unwrap();
        assert_eq!(password(&store, "acme", "k1").as_deref(), Some("two"));
        assert_eq!(password(&store, "beta", "k1").as_deref(), Some("other"));
        store.set_upstream_password("acme", "k1", None).unwrap();
        assert_eq!(password(&store, "acme", "k1"), None);
    }
}

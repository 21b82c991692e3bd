//! Upstream passwords, kept out of the upstream records (write-only), and the read the
//! upstream supervisor needs: every upstream of a domain with its password.

use super::PgStore;
use crate::store::interface::UpstreamSecrets;
use crate::store::types::*;
use crate::store::StoreResult;
use serde_json::{Map, Value};

impl UpstreamSecrets for PgStore {
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

    fn upstream_password(&self, domain: &str, key: &str) -> StoreResult<Option<String>> {
        Ok(self
            .query_opt(
                "SELECT password FROM upstream_secrets WHERE domain = $1 AND upstream = $2",
                &[&domain, &key],
            )?
            .map(|r| r.get(0)))
    }
}

impl PgStore {
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
        match password {
            Some(password) => self.execute(
                &format!(
                    "INSERT INTO {secrets} (domain, {key_column}, password) VALUES ($1, $2, $3) \
                     ON CONFLICT (domain, {key_column}) DO UPDATE SET password = excluded.password"
                ),
                &[&domain, &key, &password],
            )?,
            None => self.execute(
                &format!("DELETE FROM {secrets} WHERE domain = $1 AND {key_column} = $2"),
                &[&domain, &key],
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
        let rows = self.system_rows(
            domain,
            table,
            |t| {
                format!(
                    "SELECT r.key, r.data, s.password FROM {t} AS r \
                     LEFT JOIN {secrets} AS s ON s.domain = $1 AND s.{key_column} = r.key \
                     ORDER BY r.key COLLATE \"C\""
                )
            },
            &[&domain],
        )?;
        rows.iter()
            .map(|r| {
                let fields: Map<String, Value> = match r.get::<_, Value>(1) {
                    Value::Object(fields) => fields,
                    _ => Map::new(),
                };
                Ok((r.get(0), fields, r.get(2)))
            })
            .collect()
    }
}

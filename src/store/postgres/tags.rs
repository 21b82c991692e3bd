//! Reads of a domain's system tables that the server needs whole (tags, namespaces, upstreams
//! with their passwords), and the upstream passwords kept out of the upstream records.

use super::records::rows_of;
use super::{names, PgStore};
use crate::ids::TableRef;
use crate::store::types::*;
use crate::store::StoreResult;
use serde_json::{Map, Value};
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

impl PgStore {
    /// Rows of a read over `domain`'s system table `name`; none when it was never written.
    fn system_rows(
        &self,
        domain: &str,
        name: &str,
        select: impl FnOnce(&str) -> String,
        params: &[&(dyn ToSql + Sync)],
    ) -> StoreResult<Vec<Row>> {
        let Ok(table) = TableRef::new(domain, name) else {
            return Ok(Vec::new());
        };
        let sql = select(&names::table(&table));
        self.block(async {
            let client = self.client().await?;
            rows_of(&client, &sql, params).await
        })
    }

    /// Every tag of a domain, ordered by path.
    pub fn tags_of(&self, domain: &str) -> StoreResult<Vec<TagRow>> {
        let rows = self.system_rows(
            domain,
            TAGS,
            |t| {
                format!(
                    "SELECT data->>'path', coalesce(svc_num(data->'historize'), 0) <> 0, \
                     CASE WHEN jsonb_typeof(data->'retention') = 'string' \
                         THEN data->>'retention' END, created_dt, \
                     CASE WHEN jsonb_typeof(data->'unit') = 'string' THEN data->>'unit' END, \
                     CASE WHEN jsonb_typeof(data->'compression') = 'object' \
                         THEN data->'compression' END \
                     FROM {t} WHERE jsonb_typeof(data->'path') = 'string' \
                     ORDER BY data->>'path' COLLATE \"C\""
                )
            },
            &[],
        )?;
        Ok(rows
            .iter()
            .map(|r| TagRow {
                path: r.get(0),
                historize: r.get(1),
                retention: r.get(2),
                created: r.get(3),
                unit: r.get(4),
                compression: r.get(5),
            })
            .collect())
    }

    /// The namespace paths of a domain, ordered.
    pub fn namespaces_of(&self, domain: &str) -> StoreResult<Vec<String>> {
        let rows = self.system_rows(
            domain,
            NAMESPACES,
            |t| {
                format!(
                    "SELECT data->>'path' FROM {t} WHERE jsonb_typeof(data->'path') = 'string' \
                     ORDER BY data->>'path' COLLATE \"C\""
                )
            },
            &[],
        )?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    pub fn set_upstream_password(
        &self,
        domain: &str,
        key: &str,
        password: Option<&str>,
    ) -> StoreResult<()> {
        match password {
            Some(password) => self.execute(
                "INSERT INTO upstream_secrets (domain, upstream, password) VALUES ($1, $2, $3) \
                 ON CONFLICT (domain, upstream) DO UPDATE SET password = excluded.password",
                &[&domain, &key, &password],
            )?,
            None => self.execute(
                "DELETE FROM upstream_secrets WHERE domain = $1 AND upstream = $2",
                &[&domain, &key],
            )?,
        };
        Ok(())
    }

    /// Every upstream record of `domain` (its fields, without id and times) by key, with its
    /// password.
    pub fn upstreams_of(&self, domain: &str) -> StoreResult<Vec<StoredUpstream>> {
        let rows = self.system_rows(
            domain,
            crate::store::UPSTREAMS,
            |t| {
                format!(
                    "SELECT u.key, u.data, s.password FROM {t} AS u \
                     LEFT JOIN upstream_secrets AS s ON s.domain = $1 AND s.upstream = u.key \
                     ORDER BY u.key COLLATE \"C\""
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

    pub fn upstream_password(&self, domain: &str, key: &str) -> StoreResult<Option<String>> {
        Ok(self
            .query_opt(
                "SELECT password FROM upstream_secrets WHERE domain = $1 AND upstream = $2",
                &[&domain, &key],
            )?
            .map(|r| r.get(0)))
    }
}

//! Reads of a domain's system tables that the server needs whole (tags, namespaces, upstreams
//! with their passwords), and the upstream passwords kept out of the upstream records.

use super::records::rows_of;
use super::{names, PgStore};
use crate::ids::TableRef;
use crate::store::interface::Tags;
use crate::store::types::*;
use crate::store::StoreResult;
use tokio_postgres::types::ToSql;
use tokio_postgres::Row;

impl PgStore {
    /// Rows of a read over `domain`'s system table `name`; none when it was never written.
    pub(super) fn system_rows(
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
}

impl Tags for PgStore {
    /// Every tag of a domain, ordered by path.
    fn tags_of(&self, domain: &str) -> StoreResult<Vec<TagRow>> {
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
    fn namespaces_of(&self, domain: &str) -> StoreResult<Vec<String>> {
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
}

//! Reads of the per-domain `tags` and `namespaces` system tables that the tag registry needs.

use super::{prepare_on_table, quoted, SqliteStore, StoreResult};
use crate::ids::TableRef;
use crate::store::interface::Tags;
use crate::store::types::*;

impl Tags for SqliteStore {
    /// Every tag of a domain, ordered by path.
    fn tags_of(&self, domain: &str) -> StoreResult<Vec<TagRow>> {
        let Ok(table) = TableRef::new(domain, TAGS) else {
            return Ok(Vec::new());
        };
        let conn = self.conn()?;
        let sql = format!(
            "SELECT json_extract(data, '$.path'), coalesce(json_extract(data, '$.historize'), 0), \
             json_extract(data, '$.retention'), created_dt, json_extract(data, '$.unit'), \
             CASE WHEN json_type(data, '$.compression') = 'object' \
                 THEN json_extract(data, '$.compression') END \
             FROM {} WHERE json_type(data, '$.path') = 'text' ORDER BY 1",
            quoted(&table.qualified())
        );
        let Some(mut stmt) = prepare_on_table(&conn, &sql)? else {
            return Ok(Vec::new());
        };
        let rows = stmt.query_map([], |r| {
            Ok(TagRow {
                path: r.get(0)?,
                historize: r.get::<_, i64>(1)? != 0,
                retention: r.get::<_, Option<String>>(2).unwrap_or(None),
                created: r.get::<_, Option<String>>(3)?.unwrap_or_default(),
                unit: r.get::<_, Option<String>>(4).unwrap_or(None),
                compression: r
                    .get::<_, Option<String>>(5)?
                    .and_then(|text| serde_json::from_str(&text).ok()),
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The namespace paths of a domain, ordered.
    fn namespaces_of(&self, domain: &str) -> StoreResult<Vec<String>> {
        let Ok(table) = TableRef::new(domain, NAMESPACES) else {
            return Ok(Vec::new());
        };
        let conn = self.conn()?;
        let sql = format!(
            "SELECT json_extract(data, '$.path') FROM {} \
             WHERE json_type(data, '$.path') = 'text' ORDER BY 1",
            quoted(&table.qualified())
        );
        let Some(mut stmt) = prepare_on_table(&conn, &sql)? else {
            return Ok(Vec::new());
        };
        let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

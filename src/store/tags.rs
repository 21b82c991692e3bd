//! Reads of the per-domain `tags` system table that the tag registry needs.

use super::{is_missing_table, quoted, Store, StoreResult};
use crate::ids::TableRef;

/// Name of the system table holding a domain's tags.
pub const TAGS: &str = "tags";

impl Store {
    /// Every tag of a domain as (path, historize), ordered by path.
    pub fn tag_paths(&self, domain: &str) -> StoreResult<Vec<(String, bool)>> {
        let Ok(table) = TableRef::new(domain, TAGS) else {
            return Ok(Vec::new());
        };
        let conn = self.conn()?;
        let sql = format!(
            "SELECT json_extract(data, '$.path'), coalesce(json_extract(data, '$.historize'), 0) \
             FROM {} WHERE json_type(data, '$.path') = 'text' ORDER BY 1",
            quoted(&table.qualified())
        );
        let mut stmt = match conn.prepare(&sql) {
            Ok(stmt) => stmt,
            Err(e) if is_missing_table(&e) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let rows = stmt.query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? != 0))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

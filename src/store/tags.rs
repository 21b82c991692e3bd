//! Reads of the per-domain `tags` system table that the tag registry needs.

use super::{prepare_on_table, quoted, Store, StoreResult};
use crate::ids::TableRef;

/// Name of the system table holding a domain's tags.
pub const TAGS: &str = "tags";

/// What the registry keeps of a tag record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TagRow {
    pub path: String,
    pub historize: bool,
    /// The tag's own historian retention (a duration such as `30d`), if it has one.
    pub retention: Option<String>,
    /// When the tag was declared (RFC 3339), which decides ownership between old duplicates.
    pub created: String,
}

impl Store {
    /// Every tag of a domain, ordered by path.
    pub fn tags_of(&self, domain: &str) -> StoreResult<Vec<TagRow>> {
        let Ok(table) = TableRef::new(domain, TAGS) else {
            return Ok(Vec::new());
        };
        let conn = self.conn()?;
        let sql = format!(
            "SELECT json_extract(data, '$.path'), coalesce(json_extract(data, '$.historize'), 0), \
             json_extract(data, '$.retention'), created_dt \
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
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

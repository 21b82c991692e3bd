//! Record reads on PostgreSQL, written once as futures: the server awaits them on its own
//! workers ([`AsyncReads`](crate::store::interface::AsyncReads)), and the synchronous
//! [`Records`](crate::store::interface::Records) calls block on the same futures
//! (`records.rs`). The SQL and the row decoding are `records.rs`' and `filter_sql.rs`'.

use super::filter_sql::{as_params, build_order, build_where};
use super::records::{
    cache_key, row_to_record, row_to_text, rows_of, ROW_COLUMNS, ROW_TEXT_COLUMNS,
};
use super::{names, PgStore};
use crate::ids::TableRef;
use crate::query::{Filter, ListQuery};
use crate::store::StoreResult;
use serde_json::Value;
use tokio_postgres::Row;

impl PgStore {
    /// The record `key` of `table`, with its server-owned fields.
    pub(super) async fn record_async(
        &self,
        table: &TableRef,
        key: &str,
    ) -> StoreResult<Option<Value>> {
        self.row_async(table, key, ROW_COLUMNS, row_to_record).await
    }

    /// A record as JSON text, read from the database and kept in memory for the next read. The
    /// cache's read ticket is taken before the query, so a write that commits meanwhile (and
    /// invalidates the table) keeps the older text out of the cache.
    pub(super) async fn record_text_async(
        &self,
        table: &TableRef,
        key: &str,
    ) -> StoreResult<Option<String>> {
        let cached_as = cache_key(table);
        let read = self
            .cache_listening()
            .then(|| self.record_cache.begin_read(&cached_as, key))
            .flatten();
        let text = self
            .row_async(table, key, ROW_TEXT_COLUMNS, row_to_text)
            .await?;
        if let (Some(read), Some(text)) = (read, &text) {
            self.record_cache.finish_read(read, &cached_as, key, text);
        }
        Ok(text)
    }

    /// Records matching the query's filters, sorted and paged.
    pub(super) async fn records_async(
        &self,
        table: &TableRef,
        query: &ListQuery,
    ) -> StoreResult<Vec<Value>> {
        self.list_rows_async(table, query, ROW_COLUMNS)
            .await?
            .iter()
            .map(|row| row_to_record(table, row))
            .collect()
    }

    /// As [`PgStore::records_async`], as JSON texts ready to send.
    pub(super) async fn records_text_async(
        &self,
        table: &TableRef,
        query: &ListQuery,
    ) -> StoreResult<Vec<String>> {
        self.list_rows_async(table, query, ROW_TEXT_COLUMNS)
            .await?
            .iter()
            .map(|row| row_to_text(table, row))
            .collect()
    }

    /// How many records match every filter of `filters` and, when given, any of `or_filters`.
    pub(super) async fn count_async(
        &self,
        table: &TableRef,
        filters: &[Filter],
        or_filters: &[Filter],
    ) -> StoreResult<u64> {
        let filter = build_where(table, filters, or_filters);
        let sql = format!(
            "SELECT COUNT(*) FROM {} WHERE {}",
            names::table(table),
            filter.sql
        );
        let client = self.client().await?;
        let rows = rows_of(&client, &sql, &as_params(&filter.params)).await?;
        Ok(rows
            .first()
            .map_or(0, |row| row.get::<_, i64>(0).max(0) as u64))
    }

    /// The record `key` of `table` as `columns` of it, decoded by `decode`.
    async fn row_async<T>(
        &self,
        table: &TableRef,
        key: &str,
        columns: &str,
        decode: fn(&TableRef, &Row) -> StoreResult<T>,
    ) -> StoreResult<Option<T>> {
        let sql = format!(
            "SELECT {columns} FROM {} WHERE key = $1",
            names::table(table)
        );
        let client = self.client().await?;
        let rows = rows_of(&client, &sql, &[&key]).await?;
        rows.first().map(|row| decode(table, row)).transpose()
    }

    /// The rows of a list query, as `columns`.
    async fn list_rows_async(
        &self,
        table: &TableRef,
        query: &ListQuery,
        columns: &str,
    ) -> StoreResult<Vec<Row>> {
        let filter = build_where(table, &query.filters, &query.or_filters);
        let sql = format!(
            "SELECT {columns} FROM {} WHERE {} ORDER BY {} LIMIT {} OFFSET {}",
            names::table(table),
            filter.sql,
            build_order(table, &query.sort),
            query.limit,
            query.offset
        );
        let client = self.client().await?;
        rows_of(&client, &sql, &as_params(&filter.params)).await
    }
}

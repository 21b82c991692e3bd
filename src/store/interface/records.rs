//! Record tables and collections: one table of JSON documents per table of a domain, and the
//! collections (schemas) that own a table's indexes.

use crate::ids::TableRef;
use crate::query::{Filter, ListQuery};
use crate::schema::Collection;
use crate::store::StoreResult;
use serde_json::{Map, Value};
use std::sync::Arc;

/// Reads of records, single inserts, and collections.
pub trait Records {
    /// Inserts a new record; a taken key or unique field is a conflict.
    fn insert_record(
        &self,
        table: &TableRef,
        key: &str,
        fields: &Map<String, Value>,
    ) -> StoreResult<Value>;
    /// The record `key` of `table`, with its server-owned fields.
    fn get_record(&self, table: &TableRef, key: &str) -> StoreResult<Option<Value>>;
    /// A record as JSON text, ready to send, read from the database and kept in memory for the
    /// next read; callers look in [`Records::cached_record_text`] first.
    fn get_record_text(&self, table: &TableRef, key: &str) -> StoreResult<Option<String>>;
    /// The record's JSON text if memory holds it; never reads the database.
    fn cached_record_text(&self, table: &TableRef, key: &str) -> Option<String>;
    /// The first record (by key) whose top-level `field` equals `value`; `field` must be an
    /// identifier.
    fn record_by_field(
        &self,
        table: &TableRef,
        field: &str,
        value: &Value,
    ) -> StoreResult<Option<Value>>;
    /// Records matching the query's filters, sorted and paged (projection and expansion are
    /// the caller's).
    fn list_records(&self, table: &TableRef, query: &ListQuery) -> StoreResult<Vec<Value>>;
    /// As [`Records::list_records`], as JSON texts ready to send.
    fn list_records_text(&self, table: &TableRef, query: &ListQuery) -> StoreResult<Vec<String>>;
    /// How many records match every filter of `filters` and, when given, any of `or_filters`.
    fn count_records(
        &self,
        table: &TableRef,
        filters: &[Filter],
        or_filters: &[Filter],
    ) -> StoreResult<u64>;
    /// Stores a collection definition and builds its indexes in one transaction: a taken name,
    /// or existing records that break a unique index, is a conflict and changes nothing.
    fn create_collection(&self, domain: &str, collection: &Collection) -> StoreResult<Value>;
    /// Replaces a collection's definition and rebuilds its indexes in one transaction; the
    /// records stay and are not checked again. `Ok(None)` when no such collection exists; a
    /// new unique index that existing records break is a conflict and changes nothing.
    fn replace_collection(
        &self,
        domain: &str,
        collection: &Collection,
    ) -> StoreResult<Option<Value>>;
    /// Removes a collection definition and the indexes it built; the records stay.
    fn delete_collection(&self, domain: &str, name: &str) -> StoreResult<bool>;
    /// The collection defined for a table, if any (remembered until a collection is written).
    fn collection(&self, table: &TableRef) -> StoreResult<Option<Arc<Collection>>>;
}

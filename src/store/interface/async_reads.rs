//! The hot reads an engine can answer without blocking a thread (issue 34): an engine whose
//! queries are futures anyway (PostgreSQL's tokio-postgres) awaits them on the server's own
//! workers instead of hopping to the blocking pool and blocking there on its own runtime. An
//! engine offers them through [`Maintenance::async_reads`](super::Maintenance::async_reads);
//! SQLite does not (its calls block on a file), and callers then use the synchronous traits as
//! before, through [`Store::reads`](crate::store::Store::reads). Each method answers exactly as
//! the synchronous call of the same name; the engine implements the synchronous one by
//! blocking on this one, so there is one implementation of each.

use crate::ids::TableRef;
use crate::model::Domain;
use crate::query::{Filter, ListQuery};
use crate::store::types::{ApiKeyOwner, AuthUser, GrantSet, HistoryPoint};
use crate::store::StoreResult;
use futures::future::BoxFuture;
use serde_json::Value;

/// Reads of records, identity and raw historian values, as futures that need no thread of their own. Object safe,
/// so a [`Store`](crate::store::Store) reaches them through its `dyn Engine`.
pub trait AsyncReads: Send + Sync {
    /// As [`Records::get_record`](super::Records::get_record): the record `key` of `table`.
    fn get_record<'a>(
        &'a self,
        table: &'a TableRef,
        key: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<Value>>>;
    /// As [`Records::get_record_text`](super::Records::get_record_text): the record as JSON
    /// text, kept in the record cache for the next read; callers look in
    /// [`Records::cached_record_text`](super::Records::cached_record_text) first.
    fn get_record_text<'a>(
        &'a self,
        table: &'a TableRef,
        key: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<String>>>;
    /// As [`Records::list_records`](super::Records::list_records): records matching the
    /// query's filters, sorted and paged.
    fn list_records<'a>(
        &'a self,
        table: &'a TableRef,
        query: &'a ListQuery,
    ) -> BoxFuture<'a, StoreResult<Vec<Value>>>;
    /// As [`Records::list_records_text`](super::Records::list_records_text): the same as JSON
    /// texts ready to send.
    fn list_records_text<'a>(
        &'a self,
        table: &'a TableRef,
        query: &'a ListQuery,
    ) -> BoxFuture<'a, StoreResult<Vec<String>>>;
    /// As [`Records::count_records`](super::Records::count_records): how many records match
    /// every filter of `filters` and, when given, any of `or_filters`.
    fn count_records<'a>(
        &'a self,
        table: &'a TableRef,
        filters: &'a [Filter],
        or_filters: &'a [Filter],
    ) -> BoxFuture<'a, StoreResult<u64>>;
    /// As [`Identity::user_by_key`](super::Identity::user_by_key): the user with this key.
    fn user_by_key<'a>(&'a self, key: &'a str) -> BoxFuture<'a, StoreResult<Option<AuthUser>>>;
    /// As [`Identity::api_key_owner`](super::Identity::api_key_owner): the key with this
    /// secret hash, its id, owner and domain.
    fn api_key_owner<'a>(
        &'a self,
        secret_hash: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<ApiKeyOwner>>>;
    /// As [`Identity::grants_of`](super::Identity::grants_of): every grant a user holds in a
    /// domain.
    fn grants_of<'a>(
        &'a self,
        user_key: &'a str,
        domain: &'a str,
    ) -> BoxFuture<'a, StoreResult<GrantSet>>;
    /// As [`Identity::list_domains`](super::Identity::list_domains): every domain.
    fn list_domains(&self) -> BoxFuture<'_, StoreResult<Vec<Domain>>>;
    /// As [`HistorianReads::history_range`](super::HistorianReads::history_range): values
    /// with `start_ms <= ts < end_ms`, oldest first, at most `limit`.
    fn history_range<'a>(
        &'a self,
        domain: &'a str,
        topic: &'a str,
        start_ms: i64,
        end_ms: i64,
        limit: Option<u64>,
    ) -> BoxFuture<'a, StoreResult<Vec<HistoryPoint>>>;
    /// As [`HistorianReads::history_last`](super::HistorianReads::history_last): the newest
    /// `n` values, newest first.
    fn history_last<'a>(
        &'a self,
        domain: &'a str,
        topic: &'a str,
        n: u64,
    ) -> BoxFuture<'a, StoreResult<Vec<HistoryPoint>>>;
}

//! PostgreSQL's [`AsyncReads`]: the hot reads as the futures the synchronous interface blocks
//! on (`record_reads.rs`, `auth.rs`, `hist_reads.rs`), handed to the server to await on its own workers. The
//! connections they use stay on the engine's runtime (`connect.rs`); a read only sends its
//! statement there and awaits the answer.

use super::PgStore;
use crate::ids::TableRef;
use crate::model::Domain;
use crate::query::{Filter, ListQuery};
use crate::store::interface::AsyncReads;
use crate::store::types::{ApiKeyOwner, AuthUser, GrantSet, HistoryPoint};
use crate::store::{StoreError, StoreResult};
use futures::future::BoxFuture;
use serde_json::Value;
use std::future::Future;

impl PgStore {
    /// Runs `read` once one of the read slots is free (see `read_slots` in `mod.rs`).
    async fn slotted<T>(&self, read: impl Future<Output = StoreResult<T>>) -> StoreResult<T> {
        let _slot = self
            .read_slots
            .acquire()
            .await
            .map_err(|_| StoreError::Unavailable("the store is closed".into()))?;
        read.await
    }
}

impl AsyncReads for PgStore {
    fn get_record<'a>(
        &'a self,
        table: &'a TableRef,
        key: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<Value>>> {
        Box::pin(self.slotted(self.record_async(table, key)))
    }

    fn get_record_text<'a>(
        &'a self,
        table: &'a TableRef,
        key: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<String>>> {
        Box::pin(self.slotted(self.record_text_async(table, key)))
    }

    fn list_records<'a>(
        &'a self,
        table: &'a TableRef,
        query: &'a ListQuery,
    ) -> BoxFuture<'a, StoreResult<Vec<Value>>> {
        Box::pin(self.slotted(self.records_async(table, query)))
    }

    fn list_records_text<'a>(
        &'a self,
        table: &'a TableRef,
        query: &'a ListQuery,
    ) -> BoxFuture<'a, StoreResult<Vec<String>>> {
        Box::pin(self.slotted(self.records_text_async(table, query)))
    }

    fn count_records<'a>(
        &'a self,
        table: &'a TableRef,
        filters: &'a [Filter],
        or_filters: &'a [Filter],
    ) -> BoxFuture<'a, StoreResult<u64>> {
        Box::pin(self.slotted(self.count_async(table, filters, or_filters)))
    }

    fn user_by_key<'a>(&'a self, key: &'a str) -> BoxFuture<'a, StoreResult<Option<AuthUser>>> {
        Box::pin(self.slotted(self.user_by_key_async(key)))
    }

    fn api_key_owner<'a>(
        &'a self,
        secret_hash: &'a str,
    ) -> BoxFuture<'a, StoreResult<Option<ApiKeyOwner>>> {
        Box::pin(self.slotted(self.api_key_owner_async(secret_hash)))
    }

    fn grants_of<'a>(
        &'a self,
        user_key: &'a str,
        domain: &'a str,
    ) -> BoxFuture<'a, StoreResult<GrantSet>> {
        Box::pin(self.slotted(self.grants_of_async(user_key, domain)))
    }

    fn list_domains(&self) -> BoxFuture<'_, StoreResult<Vec<Domain>>> {
        Box::pin(self.slotted(self.list_domains_async()))
    }

    fn history_range<'a>(
        &'a self,
        domain: &'a str,
        topic: &'a str,
        start_ms: i64,
        end_ms: i64,
        limit: Option<u64>,
    ) -> BoxFuture<'a, StoreResult<Vec<HistoryPoint>>> {
        Box::pin(self.slotted(self.history_range_async(domain, topic, start_ms, end_ms, limit)))
    }

    fn history_last<'a>(
        &'a self,
        domain: &'a str,
        topic: &'a str,
        n: u64,
    ) -> BoxFuture<'a, StoreResult<Vec<HistoryPoint>>> {
        Box::pin(self.slotted(self.history_last_async(domain, topic, n)))
    }
}

//! The hot reads as the server makes them ([`Store::reads`]): awaited on the server's own
//! workers when the engine has them as futures ([`AsyncReads`], PostgreSQL), otherwise exactly
//! as before, through [`Store::read`] (a lookup by key, inline on an idle SQLite connection) or
//! [`Store::run`] (the blocking pool), so SQLite keeps its measured behaviour.

use super::interface::AsyncReads;
use super::types::{ApiKeyOwner, AuthUser, GrantSet, HistoryPoint};
use super::{Store, StoreResult};
use crate::ids::TableRef;
use crate::model::Domain;
use crate::query::{Filter, ListQuery};
use serde_json::Value;
use std::future::Future;
use std::time::Instant;

/// Points from which an answer is written on the blocking pool rather than on a server worker
/// (a few milliseconds of JSON).
const LARGE_ANSWER: usize = 10_000;

/// The hot reads of one [`Store`]; see the module's documentation.
pub struct Reads<'s> {
    store: &'s Store,
}

impl Store {
    /// The hot reads (records, identity, raw historian values), each on the cheapest path the engine offers.
    pub fn reads(&self) -> Reads<'_> {
        Reads { store: self }
    }
}

/// Awaits an engine's future, timed as the store's calls are (`op="async"`).
async fn timed<T>(read: impl Future<Output = StoreResult<T>>) -> StoreResult<T> {
    let started = Instant::now();
    let done = read.await;
    crate::telemetry::get().store_call("async", started.elapsed());
    done
}

impl Reads<'_> {
    fn engine(&self) -> Option<&dyn AsyncReads> {
        self.store.engine.async_reads()
    }

    /// The record `key` of `table` (else on the blocking pool).
    pub async fn get_record(&self, table: &TableRef, key: &str) -> StoreResult<Option<Value>> {
        if let Some(engine) = self.engine() {
            return timed(engine.get_record(table, key)).await;
        }
        let (table, key) = (table.clone(), key.to_string());
        self.store.run(move |s| s.get_record(&table, &key)).await
    }

    /// The record as JSON text, kept in the record cache (else as a short read).
    pub async fn get_record_text(
        &self,
        table: &TableRef,
        key: &str,
    ) -> StoreResult<Option<String>> {
        if let Some(engine) = self.engine() {
            return timed(engine.get_record_text(table, key)).await;
        }
        let (table, key) = (table.clone(), key.to_string());
        self.store
            .read(move |s| s.get_record_text(&table, &key))
            .await
    }

    /// Records matching the query (else on the blocking pool).
    pub async fn list_records(
        &self,
        table: &TableRef,
        query: &ListQuery,
    ) -> StoreResult<Vec<Value>> {
        if let Some(engine) = self.engine() {
            return timed(engine.list_records(table, query)).await;
        }
        let (table, query) = (table.clone(), query.clone());
        self.store
            .run(move |s| s.list_records(&table, &query))
            .await
    }

    /// Records matching the query as JSON texts (else on the blocking pool).
    pub async fn list_records_text(
        &self,
        table: &TableRef,
        query: &ListQuery,
    ) -> StoreResult<Vec<String>> {
        if let Some(engine) = self.engine() {
            return timed(engine.list_records_text(table, query)).await;
        }
        let (table, query) = (table.clone(), query.clone());
        self.store
            .run(move |s| s.list_records_text(&table, &query))
            .await
    }

    /// How many records match (else on the blocking pool).
    pub async fn count_records(
        &self,
        table: &TableRef,
        filters: &[Filter],
        or_filters: &[Filter],
    ) -> StoreResult<u64> {
        if let Some(engine) = self.engine() {
            return timed(engine.count_records(table, filters, or_filters)).await;
        }
        let (table, filters, or_filters) = (table.clone(), filters.to_vec(), or_filters.to_vec());
        self.store
            .run(move |s| s.count_records(&table, &filters, &or_filters))
            .await
    }

    /// The user with this key (else as a short read).
    pub async fn user_by_key(&self, key: &str) -> StoreResult<Option<AuthUser>> {
        if let Some(engine) = self.engine() {
            return timed(engine.user_by_key(key)).await;
        }
        let key = key.to_string();
        self.store.read(move |s| s.user_by_key(&key)).await
    }

    /// The API key with this secret hash (else as a short read).
    pub async fn api_key_owner(&self, secret_hash: &str) -> StoreResult<Option<ApiKeyOwner>> {
        if let Some(engine) = self.engine() {
            return timed(engine.api_key_owner(secret_hash)).await;
        }
        let hash = secret_hash.to_string();
        self.store.read(move |s| s.api_key_owner(&hash)).await
    }

    /// Every grant a user holds in a domain (else on the blocking pool).
    pub async fn grants_of(&self, user_key: &str, domain: &str) -> StoreResult<GrantSet> {
        if let Some(engine) = self.engine() {
            return timed(engine.grants_of(user_key, domain)).await;
        }
        let (user, domain) = (user_key.to_string(), domain.to_string());
        self.store.run(move |s| s.grants_of(&user, &domain)).await
    }

    /// Every domain (else as a short read).
    pub async fn list_domains(&self) -> StoreResult<Vec<Domain>> {
        if let Some(engine) = self.engine() {
            return timed(engine.list_domains()).await;
        }
        self.store.read(|s| s.list_domains()).await
    }

    /// The values of `[start_ms, end_ms)`, at most `limit`, made into `finish`'s answer. Without
    /// async reads the read and `finish` run together on the blocking pool, as before. With
    /// them the read is awaited here, and a large answer is still made on the blocking pool: it
    /// takes longer to write than to read, and would hold a server worker that long.
    #[allow(clippy::too_many_arguments)]
    pub async fn history_range_with<R: Send + 'static>(
        &self,
        domain: &str,
        topic: &str,
        start_ms: i64,
        end_ms: i64,
        limit: Option<u64>,
        finish: impl FnOnce(Vec<HistoryPoint>) -> R + Send + 'static,
    ) -> StoreResult<R> {
        if let Some(engine) = self.engine() {
            let points =
                timed(engine.history_range(domain, topic, start_ms, end_ms, limit)).await?;
            if points.len() < LARGE_ANSWER {
                return Ok(finish(points));
            }
            return super::on_blocking_pool(move || finish(points)).await;
        }
        let (domain, topic) = (domain.to_string(), topic.to_string());
        self.store
            .run(move |s| {
                Ok(finish(
                    s.history_range(&domain, &topic, start_ms, end_ms, limit)?,
                ))
            })
            .await
    }

    /// The newest `n` values, newest first (else on the blocking pool).
    pub async fn history_last(
        &self,
        domain: &str,
        topic: &str,
        n: u64,
    ) -> StoreResult<Vec<HistoryPoint>> {
        if let Some(engine) = self.engine() {
            return timed(engine.history_last(domain, topic, n)).await;
        }
        let (domain, topic) = (domain.to_string(), topic.to_string());
        self.store
            .run(move |s| s.history_last(&domain, &topic, n))
            .await
    }
}

//! The hot reads as the server makes them ([`Store::reads`]): awaited on the server's own
//! workers when the engine has them as futures ([`AsyncReads`], PostgreSQL), otherwise exactly
//! as before, through [`Store::read`] (a lookup by key, inline on an idle SQLite connection) or
//! [`Store::run`] (the blocking pool), so SQLite keeps its measured behaviour.

use super::interface::AsyncReads;
use super::types::{ApiKeyOwner, AuthUser, GrantSet};
use super::{Store, StoreResult};
use crate::ids::TableRef;
use crate::model::Domain;
use crate::query::{Filter, ListQuery};
use serde_json::Value;
use std::future::Future;
use std::time::Instant;

/// The hot reads of one [`Store`]; see the module's documentation.
pub struct Reads<'s> {
    store: &'s Store,
}

impl Store {
    /// The hot reads (records, identity), each on the cheapest path the engine offers.
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
}

//! Record writes with their table's rules, for routes and automation alike: the collection
//! schema, a system table's rules and write lock, its write-only secret, and the refresh of
//! what the server derives from the table after the write.

use crate::ids::TableRef;
use crate::schema::Collection;
use crate::server::error::{ApiError, ApiResult};
use crate::server::services::system_tables::{self, SystemTable};
use crate::server::AppState;
use serde_json::{Map, Value};

/// Inserts a record after checking it against its table's collection schema, if any, then
/// refreshes derived state (a system table's record must have been readied with
/// [`SystemTable::prepare_new`]).
pub(in crate::server) async fn insert_checked(
    state: &AppState,
    table: &TableRef,
    key: String,
    fields: Map<String, Value>,
) -> ApiResult<Value> {
    insert_with_secret(state, table, key, fields, None).await
}

/// [`insert_checked`] that also keeps the secret [`SystemTable::take_secret`] took from the
/// body, before derived state is refreshed (an upstream connects with its password).
pub(in crate::server) async fn insert_with_secret(
    state: &AppState,
    table: &TableRef,
    key: String,
    fields: Map<String, Value>,
    secret: Option<Option<String>>,
) -> ApiResult<Value> {
    if let Some(schema) = collection_of(state, table).await? {
        schema
            .check_record(&fields)
            .map_err(ApiError::bad_request)?;
    }
    let record = state.records.insert(table, &key, fields).await?;
    if let Some(system) = system_tables::of(table) {
        if let Some(secret) = secret {
            system.keep_secret(state, table, &key, secret).await?;
        }
        system.after_write(state, &table.domain, &record).await?;
    }
    Ok(record)
}

/// The write lock of a system table, if it has one ([`SystemTable::write_lock`]).
pub(in crate::server) async fn write_lock<'a>(
    state: &'a AppState,
    system: Option<&'static dyn SystemTable>,
) -> Option<tokio::sync::MutexGuard<'a, ()>> {
    match system {
        Some(system) => system.write_lock(state).await,
        None => None,
    }
}

/// Merges `patch` into a record after the system-table rules and the collection schema
/// accept the result, then refreshes derived state; `None` when the record does not exist.
pub(in crate::server) async fn update_checked(
    state: &AppState,
    table: &TableRef,
    key: &str,
    mut patch: Map<String, Value>,
) -> ApiResult<Option<Value>> {
    let schema = collection_of(state, table).await?;
    let system = system_tables::of(table);
    let _declaring = write_lock(state, system).await;
    let mut secret = None;
    if let Some(system) = system {
        secret = system.take_secret(&mut patch)?;
        system.check_owner(state, &table.domain, &patch)?;
    }
    let check: crate::store::UpdateCheck = Box::new(move |stored, merged| {
        if let Some(system) = system {
            system.prepare_update(stored, merged)?;
        }
        if let Some(schema) = &schema {
            schema.check_record(merged)?;
        }
        Ok(())
    });
    let updated = state.records.update(table, key, patch, check).await?;
    if let (Some(system), Some(updated)) = (system, &updated) {
        if let Some(secret) = secret {
            system.keep_secret(state, table, key, secret).await?;
        }
        system.after_write(state, &table.domain, updated).await?;
    }
    Ok(updated)
}

pub(in crate::server) async fn collection_of(
    state: &AppState,
    table: &TableRef,
) -> ApiResult<Option<std::sync::Arc<Collection>>> {
    let table = table.clone();
    Ok(state.store.read(move |s| s.collection(&table)).await?)
}

//! The built-in tables that live among a domain's records and are written through the generic
//! record routes: `tags`, `namespaces`, `upstreams`, `processes` (functions), `flows` and
//! `connectors`, `sparkplug`, `alarms` and `alarm_notifications`. Each
//! is one implementation of [`SystemTable`] in a file of its own: its permission feature, the
//! schema svc creates on first use, the rules checked on every write, and the derived state
//! (tag registry, bridges, deployed functions and flows) refreshed after every write. A new
//! system table is a new file here and one line in [`ALL`].

mod alarm_notifications;
mod alarms;
mod connectors;
mod flows;
mod namespaces;
mod processes;
mod sparkplug;
pub mod tags;
mod upstreams;

pub use flows::FLOWS;
pub use tags::TAGS_FEATURE;

use crate::ids::{RecordId, TableRef};
use crate::schema::Collection;
use crate::server::error::{ApiError, ApiResult};
use crate::server::AppState;
use crate::store::{Store, StoreError, StoreResult};
use async_trait::async_trait;
use serde_json::{Map, Value};

pub const TAGS_TABLE: &dyn SystemTable = &tags::TagsTable;
pub const NAMESPACES_TABLE: &dyn SystemTable = &namespaces::NamespacesTable;
pub const UPSTREAMS_TABLE: &dyn SystemTable = &upstreams::UpstreamsTable;
pub const PROCESSES_TABLE: &dyn SystemTable = &processes::ProcessesTable;
pub const FLOWS_TABLE: &dyn SystemTable = &flows::FlowsTable;
pub const CONNECTORS_TABLE: &dyn SystemTable = &connectors::ConnectorsTable;
pub const SPARKPLUG_TABLE: &dyn SystemTable = &sparkplug::SparkplugTable;
pub const ALARMS_TABLE: &dyn SystemTable = &alarms::AlarmsTable;
pub const ALARM_NOTIFICATIONS_TABLE: &dyn SystemTable =
    &alarm_notifications::AlarmNotificationsTable;

/// Every system table, in the order peers reload them.
pub const ALL: [&dyn SystemTable; 9] = [
    TAGS_TABLE,
    NAMESPACES_TABLE,
    UPSTREAMS_TABLE,
    PROCESSES_TABLE,
    FLOWS_TABLE,
    CONNECTORS_TABLE,
    SPARKPLUG_TABLE,
    ALARMS_TABLE,
    ALARM_NOTIFICATIONS_TABLE,
];

/// The system table `table` is, if it is one.
pub fn of(table: &TableRef) -> Option<&'static dyn SystemTable> {
    named(&table.table)
}

/// The system table called `name`.
pub fn named(name: &str) -> Option<&'static dyn SystemTable> {
    ALL.into_iter().find(|table| table.name() == name)
}

/// One kind of system table. The provided methods are the rules most tables share; the
/// engine-neutral sequence (schema on first use, lock, prepare, write, refresh) lives in
/// `impl dyn SystemTable` below and in `checked_writes`, so a table says only what is its own.
#[async_trait]
pub trait SystemTable: Send + Sync {
    /// The table's name, the same in every domain.
    fn name(&self) -> &'static str;

    /// The permission feature its records fall under (scope `*`).
    fn feature(&self) -> &'static str;

    /// The collection (schema) svc gives the table in a domain on its first write, as the
    /// record routes take a collection.
    fn definition(&self) -> Value;

    /// Whether a write must hold the tag registry's declaring lock until the registry is
    /// reloaded: tables whose rules check who owns which topics.
    fn claims_topics(&self) -> bool {
        false
    }

    /// Checks a record against what other domains own, under the declaring lock (409 or 400
    /// naming the field).
    fn check_owner(
        &self,
        _state: &AppState,
        _domain: &str,
        _fields: &Map<String, Value>,
    ) -> ApiResult<()> {
        Ok(())
    }

    /// Fills defaults into a new record of `domain` on device `device`, created by the user
    /// whose RecordID is `creator`, and checks it (the sentence of a 400 otherwise).
    fn prepare_create(
        &self,
        fields: &mut Map<String, Value>,
        device: &str,
        domain: &str,
        creator: &str,
    ) -> Result<(), String>;

    /// Checks a merged update (`stored` is the record before it) and normalises it.
    fn prepare_update(
        &self,
        stored: &Map<String, Value>,
        merged: &mut Map<String, Value>,
    ) -> Result<(), String>;

    /// Takes a write-only secret out of a record body before it is checked and stored, and
    /// sets what the record may say of it: `Some` when the body set or cleared it, to be kept
    /// with [`SystemTable::keep_secret`] once the record is written.
    fn take_secret(&self, _fields: &mut Map<String, Value>) -> ApiResult<Option<Option<String>>> {
        Ok(None)
    }

    /// Stores (or clears) the secret [`SystemTable::take_secret`] took from record `key`.
    async fn keep_secret(
        &self,
        _state: &AppState,
        _table: &TableRef,
        _key: &str,
        _secret: Option<String>,
    ) -> ApiResult<()> {
        Ok(())
    }

    /// What the table keeps beside a record just written (before derived state is reloaded).
    async fn written(&self, _state: &AppState, _domain: &str, _record: &Value) -> ApiResult<()> {
        Ok(())
    }

    /// What the table forgets of a record just deleted (before derived state is reloaded).
    async fn deleted(&self, _state: &AppState, _domain: &str, _record: &Value) -> ApiResult<()> {
        Ok(())
    }

    /// Re-reads what the server derives from this table of `domain`.
    async fn reload(&self, state: &AppState, domain: &str) -> ApiResult<()>;

    /// Brings what the server derives from this table of `domain` in step after `record` was
    /// written or deleted. By default the whole table is read again; a table whose records
    /// can be applied one at a time says so here (a domain may hold 10,000 alarms).
    async fn refresh(&self, state: &AppState, domain: &str, _record: &Value) -> ApiResult<()> {
        self.reload(state, domain).await
    }
}

impl dyn SystemTable {
    /// Makes sure the domain's table has its schema (its first write).
    pub fn ensure_collection(&self, store: &Store, domain: &str) -> StoreResult<()> {
        let table = TableRef::new(domain, self.name()).map_err(StoreError::Invalid)?;
        if store.collection(&table)?.is_some() {
            return Ok(());
        }
        let collection: Collection = serde_json::from_value(self.definition())
            .unwrap_or_else(|_| unreachable!("the built-in collections are valid"));
        match store.create_collection(domain, &collection) {
            Ok(_) | Err(StoreError::Conflict(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The declaring lock when the table [`claims_topics`](SystemTable::claims_topics): the
    /// owner check and the write relying on it cannot interleave with another domain's.
    pub async fn write_lock<'a>(
        &self,
        state: &'a AppState,
    ) -> Option<tokio::sync::MutexGuard<'a, ()>> {
        if self.claims_topics() {
            Some(state.uns.tags.declaring().await)
        } else {
            None
        }
    }

    /// Readies a new record of this table in `domain`, created by the user whose RecordID is
    /// `creator`: the table has its schema, and the record its defaults and the table's rules
    /// (400 otherwise). Call under [`write_lock`](Self::write_lock).
    pub async fn prepare_new(
        &'static self,
        state: &AppState,
        domain: &str,
        creator: &str,
        fields: &mut Map<String, Value>,
    ) -> ApiResult<()> {
        let owned = domain.to_string();
        state
            .store
            .run(move |s| self.ensure_collection(s, &owned))
            .await?;
        self.prepare_create(fields, &state.settings.device_name, domain, creator)
            .map_err(ApiError::bad_request)?;
        self.check_owner(state, domain, fields)
    }

    /// Brings derived state in step after `written` was stored, here and on the other
    /// instances sharing the store.
    pub async fn after_write(
        &'static self,
        state: &AppState,
        domain: &str,
        written: &Value,
    ) -> ApiResult<()> {
        self.written(state, domain, written).await?;
        self.refresh(state, domain, written).await?;
        state.peers.changed(domain, self).await;
        Ok(())
    }

    /// Cleans up after a record of this table was deleted.
    pub async fn after_delete(
        &'static self,
        state: &AppState,
        domain: &str,
        deleted: &Value,
    ) -> ApiResult<()> {
        self.deleted(state, domain, deleted).await?;
        if let Some(id) = deleted
            .get("id")
            .and_then(Value::as_str)
            .and_then(|id| RecordId::parse(id).ok())
        {
            self.keep_secret(state, &id.table, &id.key, None).await?;
        }
        self.refresh(state, domain, deleted).await?;
        state.peers.changed(domain, self).await;
        Ok(())
    }
}

/// The ownership rule of tables whose records name topics of their domain (an upstream's
/// bindings, a connector's points): each `(field, topic)` lies inside one of `domain`'s
/// namespaces (400 naming the field otherwise).
pub fn require_own_namespaces(
    state: &AppState,
    domain: &str,
    topics: impl IntoIterator<Item = (String, String)>,
) -> ApiResult<()> {
    for (field, topic) in topics {
        if state.uns.tags.namespace_owner(&topic).as_deref() != Some(domain) {
            return Err(ApiError::bad_request(format!(
                "field `{field}`: `{topic}` is not inside a namespace of this domain"
            )));
        }
    }
    Ok(())
}

/// The update rule of tables whose stored records hold every default: a field the update sets
/// to null takes the stored value again rather than a default the update cannot make.
pub fn keep_stored_on_null(stored: &Map<String, Value>, merged: &mut Map<String, Value>) {
    for (name, value) in merged.iter_mut() {
        if value.is_null() {
            if let Some(kept) = stored.get(name) {
                *value = kept.clone();
            }
        }
    }
}

/// [`SystemTable::take_secret`] of tables with a write-only `password`: the record says only
/// `password_set`, which a body can never set itself.
pub fn take_password_secret(fields: &mut Map<String, Value>) -> ApiResult<Option<Option<String>>> {
    fields.remove("password_set");
    let secret = crate::fields::take_password(fields).map_err(ApiError::bad_request)?;
    if let Some(password) = &secret {
        fields.insert("password_set".into(), Value::Bool(password.is_some()));
    }
    Ok(secret)
}

/// A system table's record by name (functions and flows are addressed by name in routes).
pub async fn record_by_name(
    state: &AppState,
    table: &dyn SystemTable,
    domain: &str,
    name: &str,
) -> ApiResult<Option<Value>> {
    let table_ref = TableRef::new(domain, table.name()).map_err(ApiError::bad_request)?;
    let name = name.to_string();
    let found = state
        .store
        .run(move |s| s.record_by_field(&table_ref, "name", &Value::String(name)))
        .await?;
    Ok(found)
}

/// Every record of a domain's system table (none when it was never written).
pub async fn records_of(state: &AppState, domain: &str, table: &str) -> ApiResult<Vec<Value>> {
    let table = TableRef::new(domain, table).map_err(ApiError::bad_request)?;
    let mut records = Vec::new();
    // Page by page: a domain may hold more records than one list answers (10,000 alarms).
    loop {
        let query = crate::query::parse(&[
            ("limit".into(), crate::query::MAX_LIMIT.to_string()),
            ("offset".into(), records.len().to_string()),
            ("sort".into(), "id".into()),
        ])
        .map_err(|e| ApiError::internal(e.to_string()))?;
        let page_table = table.clone();
        let page = state
            .store
            .run(move |s| s.list_records(&page_table, &query))
            .await?;
        let full = page.len() as u64 == crate::query::MAX_LIMIT;
        records.extend(page);
        if !full {
            return Ok(records);
        }
    }
}

/// The key of a stored record (the part of its `id` after the table).
pub fn record_key(record: &Value) -> ApiResult<String> {
    let id = record
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::internal("a stored record has no id"))?;
    Ok(RecordId::parse(id).map_err(ApiError::internal)?.key)
}

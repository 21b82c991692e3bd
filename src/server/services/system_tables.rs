//! The built-in tables that live among a domain's records and are written through the generic
//! record routes: `tags`, `namespaces`, `upstreams`, `processes` (functions) and `flows`. Each has its own permission
//! feature, a schema svc creates on first use, rules checked on every write, and derived state
//! (tag registry, deployed functions and flows) refreshed after every write.

use crate::flows::graph;
use crate::functions::{engine, FunctionDef, CREATED_BY, PROCESSES};
use crate::ids::{RecordId, TableRef};
use crate::schema::Collection;
use crate::server::error::{ApiError, ApiResult};
use crate::server::routes::tags::{self, check_tag, with_tag_defaults};
use crate::server::services::namespace_index::check_path;
use crate::server::AppState;
use crate::store::{Store, StoreError, StoreResult, NAMESPACES, TAGS};
use crate::upstream::config::{self as upstream, UPSTREAMS};
use serde_json::{json, Map, Value};

/// Name of the per-domain system table holding flows.
pub const FLOWS: &str = "flows";
/// The permission feature of namespaces (domain scope `*`).
pub const NAMESPACE_FEATURE: &str = "namespace";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SystemTable {
    Tags,
    Namespaces,
    Upstreams,
    Processes,
    Flows,
}

impl SystemTable {
    pub const ALL: [SystemTable; 5] = [
        SystemTable::Tags,
        SystemTable::Namespaces,
        SystemTable::Upstreams,
        SystemTable::Processes,
        SystemTable::Flows,
    ];

    pub fn of(table: &TableRef) -> Option<SystemTable> {
        SystemTable::named(&table.table)
    }

    /// The system table called `name`.
    pub fn named(name: &str) -> Option<SystemTable> {
        match name {
            TAGS => Some(SystemTable::Tags),
            NAMESPACES => Some(SystemTable::Namespaces),
            UPSTREAMS => Some(SystemTable::Upstreams),
            PROCESSES => Some(SystemTable::Processes),
            FLOWS => Some(SystemTable::Flows),
            _ => None,
        }
    }

    /// The permission feature its records fall under (scope `*`).
    pub fn feature(self) -> &'static str {
        match self {
            SystemTable::Tags => tags::FEATURE,
            SystemTable::Namespaces => NAMESPACE_FEATURE,
            SystemTable::Upstreams => upstream::FEATURE,
            SystemTable::Processes => PROCESSES,
            SystemTable::Flows => FLOWS,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SystemTable::Tags => TAGS,
            SystemTable::Namespaces => NAMESPACES,
            SystemTable::Upstreams => UPSTREAMS,
            SystemTable::Processes => PROCESSES,
            SystemTable::Flows => FLOWS,
        }
    }

    fn collection(self) -> Collection {
        let definition = match self {
            SystemTable::Tags => tags::collection_definition(),
            SystemTable::Namespaces => json!({
                "name": NAMESPACES,
                "description": "namespaces of the domain: its branches of the Unified Namespace",
                "fields": [
                    {"name": "name", "type": "string", "required": true},
                    {"name": "path", "type": "string", "required": true},
                    {"name": "description", "type": "string"}
                ],
                "indexDetails": [
                    {"fields": ["name"], "isUnique": true},
                    {"fields": ["path"], "isUnique": true}
                ]
            }),
            SystemTable::Upstreams => json!({
                "name": UPSTREAMS,
                "description": "upstream brokers the domain's namespaces are bridged to",
                "fields": [
                    {"name": "name", "type": "string", "required": true},
                    {"name": "description", "type": "string"},
                    {"name": "enabled", "type": "boolean"},
                    {"name": "protocol", "type": "string"},
                    {"name": "host", "type": "string", "required": true},
                    {"name": "port", "type": "number"},
                    {"name": "path", "type": "string"},
                    {"name": "client_id", "type": "string"},
                    {"name": "mqtt_version", "type": "string"},
                    {"name": "keep_alive", "type": "number"},
                    {"name": "clean_start", "type": "boolean"},
                    {"name": "session_expiry", "type": "number"},
                    {"name": "username", "type": "string"},
                    {"name": "password_set", "type": "boolean"},
                    {"name": "tls", "type": "json"},
                    {"name": "reconnect", "type": "json"},
                    {"name": "buffer", "type": "json"},
                    {"name": "bindings", "type": "json"}
                ],
                "indexDetails": [{"fields": ["name"], "isUnique": true}]
            }),
            SystemTable::Processes => json!({
                "name": PROCESSES,
                "description": "functions of the domain: sandboxed code and its triggers",
                "fields": [
                    {"name": "name", "type": "string", "required": true},
                    {"name": "language", "type": "string"},
                    {"name": "code", "type": "string", "required": true},
                    {"name": "enabled", "type": "boolean"},
                    {"name": "version", "type": "number"},
                    {"name": "triggers", "type": "json"},
                    {"name": "timeout_ms", "type": "number"},
                    {"name": "memory_mb", "type": "number"}
                ],
                "indexDetails": [{"fields": ["name"], "isUnique": true}]
            }),
            SystemTable::Flows => json!({
                "name": FLOWS,
                "description": "flows of the domain: graphs of nodes run by svc",
                "fields": [
                    {"name": "name", "type": "string", "required": true},
                    {"name": "description", "type": "string"},
                    {"name": "nodes", "type": "json", "required": true},
                    {"name": "running", "type": "boolean"}
                ],
                "indexDetails": [{"fields": ["name"], "isUnique": true}]
            }),
        };
        serde_json::from_value(definition)
            .unwrap_or_else(|_| unreachable!("the built-in collections are valid"))
    }

    /// Makes sure the domain's table has its schema (its first write).
    pub fn ensure_collection(self, store: &Store, domain: &str) -> StoreResult<()> {
        let table = TableRef::new(domain, self.name()).map_err(StoreError::Invalid)?;
        if store.collection(&table)?.is_some() {
            return Ok(());
        }
        match store.create_collection(domain, &self.collection()) {
            Ok(_) | Err(StoreError::Conflict(_)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Tag and namespace writes take this lock and hold it until the tag registry is
    /// reloaded, so that the owner check and the write relying on it cannot interleave with
    /// another domain's; upstream writes too, as their bindings are checked against the
    /// namespaces.
    pub async fn write_lock(self, state: &AppState) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        match self {
            SystemTable::Tags | SystemTable::Namespaces | SystemTable::Upstreams => {
                Some(state.tags.declaring().await)
            }
            SystemTable::Processes | SystemTable::Flows => None,
        }
    }

    /// A tag record may not take a path another domain owns (409, without naming it), nor a
    /// namespace one that overlaps another domain's namespace or tags (409 naming the owner).
    /// Call under [`SystemTable::write_lock`].
    pub fn check_owner(
        self,
        state: &AppState,
        domain: &str,
        fields: &Map<String, Value>,
    ) -> ApiResult<()> {
        match (self, fields.get("path").and_then(Value::as_str)) {
            (SystemTable::Tags, Some(path)) => state
                .tags
                .may_declare(domain, path)
                .map_err(ApiError::conflict),
            (SystemTable::Namespaces, Some(path)) => state
                .tags
                .may_claim_namespace(domain, path)
                .map_err(ApiError::conflict),
            (SystemTable::Upstreams, _) => check_binding_locals(state, domain, fields),
            (SystemTable::Processes, _) => check_endpoints(state, domain, fields),
            _ => Ok(()),
        }
    }

    /// Readies a new record of this table in `domain`, created by the user whose RecordID is
    /// `creator`: the table has its schema, and the record its defaults and the table's rules
    /// (400 otherwise).
    pub async fn prepare_new(
        self,
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
        self.prepare_create(fields, &state.settings.device_name, domain)
            .map_err(ApiError::bad_request)?;
        if self == SystemTable::Processes {
            fields.insert(CREATED_BY.into(), Value::String(creator.to_string()));
        }
        self.check_owner(state, domain, fields)
    }

    /// Takes a write-only secret (an upstream's `password`) out of a record body before it is
    /// checked and stored, and sets what the record may say of it (`password_set`): `Some`
    /// when the body set or cleared it, to be kept with [`SystemTable::keep_secret`] once the
    /// record is written. A `password_set` in the body is never taken as it is.
    pub fn take_secret(self, fields: &mut Map<String, Value>) -> ApiResult<Option<Option<String>>> {
        if self != SystemTable::Upstreams {
            return Ok(None);
        }
        fields.remove("password_set");
        let secret = upstream::take_password(fields).map_err(ApiError::bad_request)?;
        if let Some(password) = &secret {
            fields.insert("password_set".into(), Value::Bool(password.is_some()));
        }
        Ok(secret)
    }

    /// Stores (or clears) the secret [`SystemTable::take_secret`] took from record `key`.
    pub async fn keep_secret(
        self,
        state: &AppState,
        table: &TableRef,
        key: &str,
        secret: Option<String>,
    ) -> ApiResult<()> {
        if self != SystemTable::Upstreams {
            return Ok(());
        }
        let (domain, key) = (table.domain.clone(), key.to_string());
        state
            .store
            .run(move |s| s.set_upstream_password(&domain, &key, secret.as_deref()))
            .await?;
        Ok(())
    }

    /// Fills defaults into a new record of `domain` on `device` and checks it.
    fn prepare_create(
        self,
        fields: &mut Map<String, Value>,
        device: &str,
        domain: &str,
    ) -> Result<(), String> {
        match self {
            SystemTable::Tags => {
                with_tag_defaults(fields);
                check_tag(fields)
            }
            SystemTable::Namespaces => check_namespace(fields),
            SystemTable::Upstreams => upstream::normalise(fields, device, domain),
            SystemTable::Processes => {
                let mut def = checked_function(fields)?;
                def.version = 1;
                *fields = def.to_fields();
                Ok(())
            }
            SystemTable::Flows => check_flow(fields),
        }
    }

    /// Checks a merged update (`stored` is the record before it) and normalises it.
    pub fn prepare_update(
        self,
        stored: &Map<String, Value>,
        merged: &mut Map<String, Value>,
    ) -> Result<(), String> {
        match self {
            SystemTable::Tags => check_tag(merged),
            SystemTable::Namespaces => check_namespace(merged),
            SystemTable::Upstreams => {
                // The stored record has every default; a field the update sets to null takes
                // the stored value again rather than a default this call cannot make.
                for (name, value) in merged.iter_mut() {
                    if value.is_null() {
                        if let Some(kept) = stored.get(name) {
                            *value = kept.clone();
                        }
                    }
                }
                upstream::normalise(merged, "", "")
            }
            SystemTable::Processes => {
                let mut def = checked_function(merged)?;
                if let Ok(before) = FunctionDef::from_fields(stored) {
                    if before.name != def.name {
                        return Err("a function cannot be renamed; create a new one".into());
                    }
                    def.version = if before.code_differs(&def) {
                        before.version + 1
                    } else {
                        before.version
                    };
                }
                *merged = def.to_fields();
                // Who created it stays what svc recorded, whatever the update says.
                if let Some(creator) = stored.get(CREATED_BY) {
                    merged.insert(CREATED_BY.into(), creator.clone());
                }
                Ok(())
            }
            SystemTable::Flows => {
                if stored.get("name") != merged.get("name") {
                    return Err("a flow cannot be renamed; create a new one".into());
                }
                check_flow(merged)
            }
        }
    }

    /// Brings derived state in step after `record` was written (or, with `None`, deleted),
    /// here and on the other instances sharing the store.
    pub async fn after_write(
        self,
        state: &AppState,
        domain: &str,
        written: Option<&Value>,
    ) -> ApiResult<()> {
        if let (SystemTable::Processes, Some(def)) = (
            self,
            written
                .and_then(Value::as_object)
                .and_then(|f| FunctionDef::from_fields(f).ok()),
        ) {
            let version = def.version_now();
            let domain = domain.to_string();
            state
                .store
                .run(move |s| s.keep_code_version(&domain, &def.name, &version))
                .await?;
        }
        self.reload(state, domain).await?;
        state.peers.changed(domain, self).await;
        Ok(())
    }

    /// Re-reads what the server derives from this table of `domain` (the tag index, the
    /// upstream bridges, the deployed functions and flows).
    pub async fn reload(self, state: &AppState, domain: &str) -> ApiResult<()> {
        match self {
            SystemTable::Tags => {
                state.tags.reload(&state.store, domain).await?;
                crate::server::services::historize::prune(state).await;
            }
            SystemTable::Namespaces => state.tags.reload_namespaces(&state.store, domain).await?,
            SystemTable::Upstreams => state.upstreams.reload_domain(domain).await,
            SystemTable::Processes | SystemTable::Flows => {
                state.automation.reload(state, domain).await?
            }
        }
        Ok(())
    }

    /// Cleans up after a record of this table was deleted.
    pub async fn after_delete(
        self,
        state: &AppState,
        domain: &str,
        deleted: &Value,
    ) -> ApiResult<()> {
        if let (SystemTable::Processes, Some(name)) =
            (self, deleted.get("name").and_then(Value::as_str))
        {
            let (domain, name) = (domain.to_string(), name.to_string());
            state
                .store
                .run(move |s| s.forget_function(&domain, &name))
                .await?;
        }
        if let Some(id) = deleted
            .get("id")
            .and_then(Value::as_str)
            .and_then(|id| RecordId::parse(id).ok())
        {
            self.keep_secret(state, &id.table, &id.key, None).await?;
        }
        self.after_write(state, domain, None).await
    }
}

/// Every binding's `local` lies inside one of the domain's namespaces (400 naming the field).
fn check_binding_locals(
    state: &AppState,
    domain: &str,
    fields: &Map<String, Value>,
) -> ApiResult<()> {
    for (i, local) in upstream::binding_locals(fields) {
        if state.tags.namespace_owner(&local).as_deref() != Some(domain) {
            return Err(ApiError::bad_request(format!(
                "field `bindings[{i}].local`: `{local}` is not inside a namespace of this domain"
            )));
        }
    }
    Ok(())
}

/// A namespace record: a name and a path that is a topic prefix (no wildcards).
fn check_namespace(fields: &Map<String, Value>) -> Result<(), String> {
    match fields.get("name") {
        Some(Value::String(name)) if !name.trim().is_empty() => {}
        _ => return Err("field `name` is required and must be a non-empty string".into()),
    }
    match fields.get("path") {
        Some(Value::String(path)) => check_path(path),
        _ => {
            Err("field `path` is required and must be a topic prefix such as `acme/plant1`".into())
        }
    }
}

/// The HTTP endpoints of a function's triggers are its own in the domain (409 naming the
/// function that serves one already). `fields` holds the function's `name`.
fn check_endpoints(state: &AppState, domain: &str, fields: &Map<String, Value>) -> ApiResult<()> {
    let Some(triggers) = fields.get("triggers") else {
        return Ok(());
    };
    let name = fields
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let triggers =
        crate::functions::parse_triggers(triggers.clone()).map_err(ApiError::bad_request)?;
    for trigger in triggers {
        let crate::functions::Trigger::Http {
            endpoint: Some(endpoint),
        } = trigger
        else {
            continue;
        };
        if let Some(other) = state.automation.function_at_endpoint(domain, &endpoint) {
            if other.def.name != name {
                return Err(ApiError::conflict(format!(
                    "the endpoint `{endpoint}` is served by function `{}` already",
                    other.def.name
                )));
            }
        }
    }
    Ok(())
}

/// A function record's definition, checked, code included.
fn checked_function(fields: &Map<String, Value>) -> Result<FunctionDef, String> {
    let def = FunctionDef::from_fields(fields)?;
    def.check_code()?;
    Ok(def)
}

/// A flow record: a valid graph (whose function nodes compile), plus `running`.
fn check_flow(fields: &mut Map<String, Value>) -> Result<(), String> {
    let running = match fields.remove("running") {
        None => false,
        Some(Value::Bool(b)) => b,
        Some(_) => return Err("field `running` must be a boolean".into()),
    };
    for system in ["id", "created_dt", "updated_dt"] {
        fields.remove(system);
    }
    let flow =
        graph::parse(&Value::Object(fields.clone()), &check_js).map_err(|e| e.to_string())?;
    let Value::Object(mut normalised) = flow.to_json() else {
        return Err("the flow cannot be encoded".into());
    };
    normalised.insert("running".into(), Value::Bool(running));
    *fields = normalised;
    Ok(())
}

/// Syntax check of a flow's function node.
fn check_js(code: &str) -> Result<(), String> {
    engine::check(&engine::Source {
        code,
        modules: &Default::default(),
        module: false,
    })
}

/// A system table's record by name (functions and flows are addressed by name in routes).
pub async fn record_by_name(
    state: &AppState,
    table: SystemTable,
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

/// The key of a stored record (the part of its `id` after the table).
pub fn record_key(record: &Value) -> ApiResult<String> {
    let id = record
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::internal("a stored record has no id"))?;
    Ok(RecordId::parse(id).map_err(ApiError::internal)?.key)
}

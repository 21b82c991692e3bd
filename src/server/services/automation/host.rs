//! The host API of functions, backed by the server: tag reads from the last-value store, tag
//! writes published through the broker (so subscribers and the historian see them), and record
//! create/get/list in the function's own domain. Runs outside async code (see
//! `run_blocking`); async server calls are driven with the runtime handle.

use crate::functions::engine::Host;
use crate::ids::{RecordId, TableRef, ADMIN_DOMAIN};
use crate::query;
use crate::schema::RESERVED_TABLES;
use crate::server::services::checked_writes::insert_checked;
use crate::server::services::system_tables;
use crate::server::AppState;
use crate::topic::validate_topic_name;
use serde_json::{Map, Value};
use std::sync::Arc;
use tokio::runtime::Handle;

pub struct ServerHost {
    state: AppState,
    domain: String,
    /// Stamped on published messages so the writer is not re-triggered by its own writes.
    origin: Arc<str>,
    runtime: Handle,
}

impl ServerHost {
    pub fn new(state: AppState, domain: &str, origin: Arc<str>, runtime: Handle) -> ServerHost {
        ServerHost {
            state,
            domain: domain.to_string(),
            origin,
            runtime,
        }
    }

    fn table(&self, table: &str) -> Result<TableRef, String> {
        user_table(&self.domain, table)
    }

    /// Updates the record `id` (its key, or a record id of this table) of a user table of the
    /// function's domain with `fields`, checked as the REST update is; a process's `sql`
    /// output `UPDATE … WHERE id = …`.
    pub async fn update_record(
        &self,
        table: &str,
        id: &Value,
        fields: Map<String, Value>,
    ) -> Result<Value, String> {
        let table = self.table(table)?;
        let id = match id {
            Value::String(id) => id.clone(),
            Value::Number(n) => n.to_string(),
            _ => return Err("the `id` of an update must be a record key".into()),
        };
        let key = match RecordId::parse(&id) {
            Ok(record) if record.table == table => record.key,
            Ok(record) => return Err(format!("`{record}` is not a record of `{}`", table.table)),
            Err(_) if crate::ids::is_record_key(&id) => id,
            Err(e) => return Err(e),
        };
        crate::server::services::checked_writes::update_checked(&self.state, &table, &key, fields)
            .await
            .map_err(|e| e.message)?
            .ok_or_else(|| format!("no record `{key}` in `{}`", table.table))
    }

    /// Publishes `value` as JSON on the tag `topic` (QoS 1), as the function's writer.
    pub async fn write_tag(&self, topic: &str, value: &Value) -> Result<(), String> {
        let origin = Arc::clone(&self.origin);
        publish_value(&self.state, &self.domain, origin, topic, value, 1, false).await
    }

    /// Creates a record in a user table of the function's domain, checked as the REST create
    /// is; its `id`, if given, is the record's key.
    pub async fn create_record(&self, table: &str, record: &Value) -> Result<Value, String> {
        let table = self.table(table)?;
        let Value::Object(mut fields) = record.clone() else {
            return Err("a record must be an object".into());
        };
        let key = match fields.remove("id") {
            Some(Value::String(key)) if crate::ids::is_record_key(&key) => key,
            Some(_) => return Err("`id` must be a record key ([A-Za-z0-9_-]{1,128})".into()),
            None => crate::ids::new_key(),
        };
        insert_checked(&self.state, &table, key, fields)
            .await
            .map_err(|e| e.message)
    }

    /// The rows of a read-only SQL query over the function's domain (as
    /// `POST /svc/historian/query` runs it), for a process's `sql` inputs.
    pub fn sql_rows(&self, query: &str) -> Result<Value, String> {
        let checked = crate::report_sql::check(query)?;
        let (store, domain) = (self.state.store.clone(), self.domain.clone());
        let rows = self
            .runtime
            .block_on(store.run(move |s| {
                let relations = s.report_relations(&domain, &checked)?;
                s.run_report(
                    &domain,
                    checked,
                    &relations,
                    crate::store::ReportLimits::API,
                )
            }))
            .map_err(|e| e.to_string())?;
        Ok(Value::Array(rows.into_iter().map(Value::Object).collect()))
    }
}

/// A user table of `domain`; system tables are not reachable from functions and flows.
pub fn user_table(domain: &str, table: &str) -> Result<TableRef, String> {
    let table = TableRef::new(domain, table)?;
    if RESERVED_TABLES.contains(&table.table.as_str())
        || system_tables::of(&table).is_some()
        || table.table == "collections"
    {
        return Err(format!("`{}` is a system table", table.table));
    }
    Ok(table)
}

/// `topic` is a topic name that `domain` may read or write: a tag it declares, or anything
/// for `svc_admin`.
fn check_topic(state: &AppState, domain: &str, topic: &str) -> Result<(), String> {
    validate_topic_name(topic)?;
    let owned = domain == ADMIN_DOMAIN || state.uns.tags.is_owner(topic, domain);
    if owned {
        Ok(())
    } else {
        Err(format!("`{topic}` is not a tag of domain `{domain}`"))
    }
}

/// Publishes a value as JSON on behalf of an in-process writer.
pub async fn publish_value(
    state: &AppState,
    domain: &str,
    origin: Arc<str>,
    topic: &str,
    value: &Value,
    qos: u8,
    retain: bool,
) -> Result<(), String> {
    check_topic(state, domain, topic)?;
    let payload = serde_json::to_vec(value).map_err(|e| e.to_string())?;
    let broker = state.broker().map_err(|e| e.message)?;
    broker
        .publish_from(Some(origin), topic, payload.into(), qos, retain)
        .await
        .map_err(|e| e.to_string())
}

impl Host for ServerHost {
    fn tag_read(&self, topic: &str) -> Result<Option<Value>, String> {
        check_topic(&self.state, &self.domain, topic)?;
        Ok(self
            .state
            .uns
            .last_values
            .get(topic)
            .map(|(_, value)| value))
    }

    fn tag_write(&self, topic: &str, value: &Value) -> Result<(), String> {
        self.runtime.block_on(self.write_tag(topic, value))
    }

    fn record_create(&self, table: &str, record: &Value) -> Result<Value, String> {
        self.runtime.block_on(self.create_record(table, record))
    }

    fn record_get(&self, id: &str) -> Result<Option<Value>, String> {
        let id = RecordId::parse(id)?;
        if id.table.domain != self.domain {
            // Another domain's records do not exist from here.
            return Ok(None);
        }
        let table = self.table(&id.table.table)?;
        self.state
            .store
            .get_record(&table, &id.key)
            .map_err(|e| e.to_string())
    }

    fn record_list(&self, table: &str, params: &Value) -> Result<Value, String> {
        let table = self.table(table)?;
        let pairs = query_pairs(params)?;
        let query = query::parse(&pairs).map_err(|e| e.to_string())?;
        let records = self
            .state
            .store
            .list_records(&table, &query)
            .map_err(|e| e.to_string())?;
        Ok(Value::Array(records))
    }
}

/// A JSON object of list parameters as (key, value) pairs; arrays repeat the key.
fn query_pairs(params: &Value) -> Result<Vec<(String, String)>, String> {
    let empty = Map::new();
    let object = match params {
        Value::Null => &empty,
        Value::Object(object) => object,
        _ => return Err("list parameters must be an object".into()),
    };
    let mut pairs = Vec::new();
    for (key, value) in object {
        let values = match value {
            Value::Array(items) => items.iter().collect(),
            other => vec![other],
        };
        for value in values {
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Number(_) | Value::Bool(_) => value.to_string(),
                _ => return Err(format!("list parameter `{key}` must be a string or number")),
            };
            pairs.push((key.clone(), text));
        }
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn list_parameters() {
        let pairs = query_pairs(&json!({"limit": 5, "sort": ["a", "b"]})).unwrap();
        assert_eq!(
            pairs,
            [
                ("limit".to_string(), "5".to_string()),
                ("sort".into(), "a".into()),
                ("sort".into(), "b".into())
            ]
        );
        assert!(query_pairs(&json!([1])).is_err());
        assert!(query_pairs(&json!({"a": {"b": 1}})).is_err());
        assert!(query_pairs(&Value::Null).unwrap().is_empty());
    }
}

//! The `alarm_notifications` system table: a domain's notification pipelines, under the
//! `alarms` feature. The record's rules are `alarms::notify::config`; the SMTP `password` is
//! write-only (kept apart in the store, the record says only `password_set`); a write reloads
//! the domain's pipelines here and on the other instances.

use super::{keep_stored_on_null, take_password_secret, SystemTable};
use crate::alarms::notify::config::{normalise, TABLE};
use crate::alarms::FEATURE;
use crate::ids::TableRef;
use crate::server::error::ApiResult;
use crate::server::services::notifications::reload_domain;
use crate::server::AppState;
use async_trait::async_trait;
use serde_json::{json, Map, Value};

pub struct AlarmNotificationsTable;

#[async_trait]
impl SystemTable for AlarmNotificationsTable {
    fn name(&self) -> &'static str {
        TABLE
    }

    fn feature(&self) -> &'static str {
        FEATURE
    }

    fn definition(&self) -> Value {
        json!({
            "name": TABLE,
            "description": "alarm notification pipelines: webhooks and e-mail, with digests, rate limits and escalation",
            "fields": [
                {"name": "name", "type": "string", "required": true},
                {"name": "description", "type": "string"},
                {"name": "enabled", "type": "boolean"},
                {"name": "priorities", "type": "json"},
                {"name": "states", "type": "json"},
                {"name": "webhook", "type": "json"},
                {"name": "email", "type": "json"},
                {"name": "password_set", "type": "boolean"},
                {"name": "rate_limit", "type": "json"},
                {"name": "digest", "type": "json"},
                {"name": "escalation", "type": "json"}
            ],
            "indexDetails": [{"fields": ["name"], "isUnique": true}]
        })
    }

    fn prepare_create(
        &self,
        fields: &mut Map<String, Value>,
        _device: &str,
        _domain: &str,
        _creator: &str,
    ) -> Result<(), String> {
        normalise(fields)
    }

    /// A field the update sets to null keeps its stored value, except the optional parts of a
    /// pipeline (`webhook`, `email`, `rate_limit`, `digest`, `escalation`), which null removes.
    fn prepare_update(
        &self,
        stored: &Map<String, Value>,
        merged: &mut Map<String, Value>,
    ) -> Result<(), String> {
        let removed: Vec<String> = ["webhook", "email", "rate_limit", "digest", "escalation"]
            .into_iter()
            .filter(|name| merged.get(*name).is_some_and(Value::is_null))
            .map(str::to_string)
            .collect();
        keep_stored_on_null(stored, merged);
        for name in removed {
            merged.remove(&name);
        }
        normalise(merged)
    }

    /// The `password`; a `password_set` in the body is never taken as it is.
    fn take_secret(&self, fields: &mut Map<String, Value>) -> ApiResult<Option<Option<String>>> {
        take_password_secret(fields)
    }

    async fn keep_secret(
        &self,
        state: &AppState,
        table: &TableRef,
        key: &str,
        secret: Option<String>,
    ) -> ApiResult<()> {
        let (domain, key) = (table.domain.clone(), key.to_string());
        state
            .store
            .run(move |s| match secret {
                Some(password) => s.notification_password_set(&domain, &key, &password),
                None => s.notification_password_clear(&domain, &key),
            })
            .await?;
        Ok(())
    }

    async fn reload(&self, state: &AppState, domain: &str) -> ApiResult<()> {
        reload_domain(state, domain).await
    }
}

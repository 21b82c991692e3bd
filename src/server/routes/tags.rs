//! Tags: the per-domain `tags` system table (path, historize, description, unit, retention,
//! compression), its rules, and the tag routes: list, latest values, and write through the broker.

use crate::duration::parse_duration;
use crate::historian::compression::Compression;
use crate::ids::ADMIN_DOMAIN;
use crate::model::{Success, TagValue};
use crate::server::error::{ApiError, ApiResult};
use crate::server::http::caller::{Access, Caller};
use crate::server::http::json::JsonBody;
use crate::server::AppState;
use crate::store::TAGS;
use crate::topic::validate_topic_name;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use serde_json::{json, Map, Value};
use utoipa_axum::{router::OpenApiRouter, routes};

pub const FEATURE: &str = "tags";

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(values))
        .routes(routes!(write))
}

#[utoipa::path(get, path = "/svc/tag/list", tag = "tags",
    responses((status = 200, description = "The tags the caller may read", body = Vec<String>)))]
async fn list(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<Vec<String>>> {
    caller.require(&state, FEATURE, "*", Access::Read).await?;
    Ok(Json(state.tags.paths(&caller.domain, false)))
}

/// The latest value of each tag of the domain that has had one since the server started.
#[utoipa::path(get, path = "/svc/tag/values", tag = "tags",
    responses((status = 200, description = "The newest value of each tag", body = Vec<TagValue>)))]
async fn values(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<Vec<TagValue>>> {
    caller.require(&state, FEATURE, "*", Access::Read).await?;
    let values = state
        .tags
        .paths(&caller.domain, false)
        .into_iter()
        .filter_map(|topic| {
            state
                .last_values
                .get(&topic)
                .map(|(ts_ms, value)| TagValue {
                    timestamp: crate::historian::format_ms(ts_ms),
                    topic,
                    value,
                })
        })
        .collect();
    Ok(Json(values))
}

#[derive(Deserialize, utoipa::ToSchema)]
struct WriteRequest {
    #[schema(min_length = 1)]
    topic: String,
    value: Value,
    #[serde(default = "default_qos")]
    #[schema(maximum = 2)]
    qos: u8,
    #[serde(default)]
    retain: bool,
}

fn default_qos() -> u8 {
    1
}

/// Publishes a value through the broker, as a device would: subscribers, the last-value store
/// and the historian all see it.
#[utoipa::path(post, path = "/svc/tag/write", tag = "tags", request_body = WriteRequest,
    responses((status = 404, description = "The body names a tag, flow, process, group or record that does not exist"),
        (status = 200, description = "The value is published", body = Success),
        (status = 503, description = "The MQTT broker is not running")))]
async fn write(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(request): JsonBody<WriteRequest>,
) -> ApiResult<Json<Success>> {
    caller.require(&state, FEATURE, "*", Access::Write).await?;
    validate_topic_name(&request.topic).map_err(ApiError::bad_request)?;
    if request.qos > 2 {
        return Err(ApiError::bad_request("`qos` must be 0, 1 or 2"));
    }
    // Its tag, or a topic under its namespace (registered on first publish).
    let belongs = state
        .tags
        .domain_of(&request.topic)
        .is_some_and(|domain| *domain == *caller.domain);
    if !belongs && caller.domain != ADMIN_DOMAIN {
        return Err(ApiError::not_found(format!(
            "`{}` is not a tag of domain `{}`",
            request.topic, caller.domain
        )));
    }
    let payload = serde_json::to_vec(&request.value)
        .map_err(|_| ApiError::bad_request("`value` cannot be encoded"))?;
    state
        .broker()?
        .publish(&request.topic, payload.into(), request.qos, request.retain)
        .await
        .map_err(|e| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, e.to_string()))?;
    Ok(Json(Success::yes()))
}

/// The schema every domain's `tags` table gets: typed fields and a unique path.
pub fn collection_definition() -> Value {
    json!({
        "name": TAGS,
        "description": "tags of the domain: MQTT topics, optionally historized",
        "fields": [
            {"name": "path", "type": "string", "required": true},
            {"name": "historize", "type": "boolean"},
            {"name": "description", "type": "string"},
            {"name": "unit", "type": "string"},
            {"name": "retention", "type": "string"},
            {"name": "compression", "type": "json"}
        ],
        "indexDetails": [{"fields": ["path"], "isUnique": true}]
    })
}

/// Rules of a tag record beyond its schema: the path is a topic name; historize defaults off;
/// `compression` is off, or settings the historian can apply.
pub fn check_tag(fields: &Map<String, Value>) -> Result<(), String> {
    match fields.get("path") {
        Some(Value::String(path)) => validate_topic_name(path)?,
        _ => return Err("field `path` is required and must be a topic name".into()),
    }
    if let Some(Value::String(text)) = fields.get("retention") {
        parse_duration(text).map_err(|e| format!("field `retention`: {e}"))?;
    }
    Compression::from_member(fields.get("compression")).map(|_| ())
}

pub fn with_tag_defaults(fields: &mut Map<String, Value>) {
    fields.entry("historize").or_insert(Value::Bool(false));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_rules() {
        let ok: Map<String, Value> = serde_json::from_value(json!({"path": "a/b"})).unwrap();
        assert!(check_tag(&ok).is_ok());
        let wild: Map<String, Value> = serde_json::from_value(json!({"path": "a/+"})).unwrap();
        assert!(check_tag(&wild).is_err());
        assert!(check_tag(&Map::new()).is_err());
        let compressed: Map<String, Value> =
            serde_json::from_value(json!({"path": "a/b", "compression": {"deviation": 0.1}}))
                .unwrap();
        assert!(check_tag(&compressed).is_ok());
        let bad: Map<String, Value> =
            serde_json::from_value(json!({"path": "a/b", "compression": {"deviation": -1}}))
                .unwrap();
        let err = check_tag(&bad).unwrap_err();
        assert!(err.contains("`compression.deviation`"), "{err}");
        assert_eq!(collection_definition()["name"], TAGS);
    }
}

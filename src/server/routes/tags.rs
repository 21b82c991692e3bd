//! The tag routes: list a domain's tags, their latest values, and write one through the broker.
//! The `tags` table itself (its schema and rules) is `services::system_tables::tags`.

use crate::ids::ADMIN_DOMAIN;
use crate::model::{Success, TagValue};
use crate::server::error::{ApiError, ApiResult};
use crate::server::http::caller::{Access, Caller};
use crate::server::http::json::JsonBody;
use crate::server::services::device_links;
use crate::server::services::system_tables::TAGS_FEATURE;
use crate::server::AppState;
use crate::topic::validate_topic_name;
use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use serde_json::Value;
use utoipa_axum::{router::OpenApiRouter, routes};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(values))
        .routes(routes!(write))
}

#[utoipa::path(get, path = "/svc/tag/list", tag = "tags",
    responses((status = 200, description = "The tags the caller may read", body = Vec<String>)))]
async fn list(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<Vec<String>>> {
    caller
        .require(&state, TAGS_FEATURE, "*", Access::Read)
        .await?;
    Ok(Json(state.uns.tags.paths(&caller.domain, false)))
}

/// The latest value of each tag of the domain that has had one since the server started.
#[utoipa::path(get, path = "/svc/tag/values", tag = "tags",
    responses((status = 200, description = "The newest value of each tag", body = Vec<TagValue>)))]
async fn values(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<Vec<TagValue>>> {
    caller
        .require(&state, TAGS_FEATURE, "*", Access::Read)
        .await?;
    let values = state
        .uns
        .tags
        .paths(&caller.domain, false)
        .into_iter()
        .filter_map(|topic| {
            state
                .uns
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
/// and the historian all see it. A tag a connector reads is written to the device instead:
/// 200 once the device accepted it (the tag then follows what the device reports), 422 with
/// the device's refusal, 503 when the device cannot be reached.
#[utoipa::path(post, path = "/svc/tag/write", tag = "tags", request_body = WriteRequest,
    responses((status = 404, description = "The body names a tag, flow, process, group or record that does not exist"),
        (status = 200, description = "The value is published (or the device accepted it)", body = Success),
        (status = 422, description = "The device refused the write"),
        (status = 503, description = "The MQTT broker is not running")))]
async fn write(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(request): JsonBody<WriteRequest>,
) -> ApiResult<Json<Success>> {
    caller
        .require(&state, TAGS_FEATURE, "*", Access::Write)
        .await?;
    validate_topic_name(&request.topic).map_err(ApiError::bad_request)?;
    if request.qos > 2 {
        return Err(ApiError::bad_request("`qos` must be 0, 1 or 2"));
    }
    // Its tag, or a topic under its namespace (registered on first publish).
    let belongs = state
        .uns
        .tags
        .domain_of(&request.topic)
        .is_some_and(|domain| *domain == *caller.domain);
    if !belongs && caller.domain != ADMIN_DOMAIN {
        return Err(ApiError::not_found(format!(
            "`{}` is not a tag of domain `{}`",
            request.topic, caller.domain
        )));
    }
    // A tag a connector reads is written to its device (the answer waits for the device); a
    // Sparkplug metric's becomes a command to its edge node.
    if let Some(domain) = state.uns.tags.domain_of(&request.topic) {
        let written =
            device_links::write_to_source(&state, &domain, &request.topic, request.value.clone());
        if let Some(result) = written.await {
            return result.map(|()| Json(Success::yes()));
        }
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

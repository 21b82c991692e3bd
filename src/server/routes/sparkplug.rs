//! Sparkplug beyond its record routes (the `sparkplug` system table is written through
//! `/svc/sparkplug` like any table): the edge nodes the domain's hosts know, with their
//! devices, online or not, their last BIRTH, sequence number and the rebirths asked of them.

use crate::server::error::ApiResult;
use crate::server::http::caller::{Access, Caller};
use crate::server::AppState;
use crate::sparkplug::session::NodeStatus;
use crate::sparkplug::FEATURE;
use axum::extract::State;
use axum::Json;
use utoipa_axum::{router::OpenApiRouter, routes};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(nodes))
}

/// The domain's Sparkplug edge nodes as this instance's hosts know them (a node is known
/// once a message of it arrived), sorted by group and node.
#[utoipa::path(get, path = "/svc/sparkplug/nodes", tag = "sparkplug",
    responses((status = 200, description = "Each edge node with its devices and state", body = Vec<Object>)))]
async fn nodes(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<Vec<NodeStatus>>> {
    caller.require(&state, FEATURE, "*", Access::Read).await?;
    Ok(Json(state.sparkplug.host.statuses(&caller.domain)))
}

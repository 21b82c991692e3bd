//! The REST routes, one file per resource: each file builds its `OpenApiRouter` and holds
//! thin handlers that check the caller, call the services and the store, and shape the answer.

pub(crate) mod admin;
pub(crate) mod alarms;
pub(crate) mod api_keys;
pub(crate) mod audit;
pub(crate) mod auth;
pub(crate) mod backup;
pub(crate) mod broker_clients;
pub(crate) mod code;
pub(crate) mod connectors;
pub(crate) mod console;
pub(crate) mod files;
pub(crate) mod flows;
pub(crate) mod groups;
pub(crate) mod historian;
pub(crate) mod info;
pub(crate) mod logs;
pub(crate) mod metrics;
pub(crate) mod namespaces;
pub(crate) mod openapi;
pub(crate) mod processes;
pub(crate) mod records;
pub(crate) mod reports;
pub(crate) mod sparkplug;
pub(crate) mod tag_stream;
pub(crate) mod tags;
pub(crate) mod upstreams;
pub(crate) mod users;

use crate::server::AppState;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use std::net::SocketAddr;

/// Every route of the REST API; each handler's annotation documents it (see [`openapi`]).
fn api_routes() -> utoipa_axum::router::OpenApiRouter<AppState> {
    let auth_routes = auth::routes()
        .merge(admin::routes())
        .merge(api_keys::routes())
        .merge(users::routes())
        .merge(groups::routes());
    openapi::router()
        .nest("/auth", auth_routes.clone())
        .nest("/svc/auth", auth_routes)
        .merge(info::routes())
        .merge(files::routes())
        .merge(tags::routes())
        .merge(tag_stream::routes())
        .merge(namespaces::routes())
        .merge(upstreams::routes())
        .merge(connectors::routes())
        .merge(sparkplug::routes())
        .merge(alarms::routes())
        .merge(broker_clients::routes())
        .merge(historian::routes())
        .merge(processes::routes())
        .merge(flows::routes())
        .merge(code::routes())
        .merge(reports::routes())
        .merge(logs::routes())
        .merge(audit::routes())
        .merge(backup::routes())
        .merge(records::routes())
        .merge(metrics::routes())
}

/// The whole HTTP application over `state`: the REST API, the console, MQTT over WebSocket,
/// and the layers every request passes (correlation and request log, body limits, panics as
/// 500s). Tests and `serve` build it the same way.
pub fn router(state: AppState) -> Router {
    let max_body = state.settings.max_body;
    let (api, document) = api_routes().split_for_parts();
    openapi::finish(document);
    // Not REST resources: the console's files and MQTT over WebSocket.
    api.merge(console::routes())
        .route("/mqtt", get(mqtt_bridge))
        .fallback(|| async { crate::server::error::ApiError::not_found("no such route") })
        .method_not_allowed_fallback(|| async {
            crate::server::error::ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method not allowed on this route",
            )
        })
        .layer(DefaultBodyLimit::max(max_body))
        .layer(tower_http::limit::RequestBodyLimitLayer::new(max_body))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(
            |panic: Box<dyn std::any::Any + Send>| {
                use axum::response::IntoResponse;
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                crate::server::error::ApiError {
                    detail: Some(format!("handler panicked: {what}")),
                    ..crate::server::error::ApiError::internal("internal server error")
                }
                .into_response()
            },
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::server::http::middleware::correlate,
        ))
        .with_state(state)
}

/// MQTT over WebSocket on the HTTP port, served by the broker like any other client.
async fn mqtt_bridge(
    axum::extract::State(state): axum::extract::State<AppState>,
    axum::extract::ConnectInfo(peer): axum::extract::ConnectInfo<SocketAddr>,
    upgrade: axum::extract::ws::WebSocketUpgrade,
) -> crate::server::error::ApiResult<axum::response::Response> {
    Ok(state.broker()?.websocket(upgrade, peer))
}

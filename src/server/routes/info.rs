//! Device info (`GET /svc/`, `GET /svc/info`): device name, broker listeners, storage, version.

use crate::model::{Bind, Binds, DeviceInfo, StorageInfo, Uns};
use crate::server::http::caller::Identity;
use crate::server::AppState;
use axum::extract::State;
use axum::Json;
use std::net::SocketAddr;
use utoipa_axum::{router::OpenApiRouter, routes};

/// `GET /svc/info`, and the same under `/svc/` and `/svc`.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(device_info))
        .routes(routes!(device_info_at_root))
        .routes(routes!(device_info_at_base))
}

/// The device info under `/svc/` (the SDK's path).
#[utoipa::path(get, path = "/svc/", tag = "info",
    responses((status = 200, description = "The device info", body = DeviceInfo)))]
async fn device_info_at_root(state: State<AppState>, who: Identity) -> Json<DeviceInfo> {
    device_info(state, who).await
}

/// The device info under `/svc`.
#[utoipa::path(get, path = "/svc", tag = "info",
    responses((status = 200, description = "The device info", body = DeviceInfo)))]
async fn device_info_at_base(state: State<AppState>, who: Identity) -> Json<DeviceInfo> {
    device_info(state, who).await
}

#[utoipa::path(get, path = "/svc/info", tag = "info",
    responses((status = 200, description = "Device name, broker listeners, storage, version", body = DeviceInfo)))]
pub async fn device_info(State(state): State<AppState>, _who: Identity) -> Json<DeviceInfo> {
    let settings = &state.settings;
    let host = settings.bind.to_string();
    let addrs = state.broker.get().map(|b| b.addrs);
    let tls = addrs.is_some_and(|a| a.mqtts.is_some());
    let listener = |bound: Option<SocketAddr>, configured: u16, enabled: bool| Bind {
        host: host.clone(),
        port: bound.map_or(configured, |a| a.port()),
        enabled,
    };
    let store = state.store.clone();
    let size_bytes = tokio::task::spawn_blocking(move || store.size_bytes())
        .await
        .unwrap_or(0);
    Json(DeviceInfo {
        device_name: settings.device_name.clone(),
        uns: Uns {
            base_path: String::new(),
            bind: Binds {
                mqtt: listener(addrs.map(|a| a.mqtt), settings.mqtt_port, addrs.is_some()),
                mqtts: listener(addrs.and_then(|a| a.mqtts), settings.mqtts_port, tls),
                ws: listener(addrs.map(|a| a.ws), settings.ws_port, addrs.is_some()),
                wss: listener(addrs.and_then(|a| a.wss), settings.wss_port, tls),
            },
        },
        storage: {
            let described = state.store.describe();
            StorageInfo {
                engine: described.engine.into(),
                path: described.path,
                size_bytes,
                host: described.host,
                database: described.database,
                server_version: described.server_version,
            }
        },
        version: env!("CARGO_PKG_VERSION").to_string(),
        python: Some(crate::functions::python::report()),
        last_backup: state.backups.last(),
    })
}

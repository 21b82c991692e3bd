//! Device info (`GET /svc/`, `GET /svc/info`): device name, broker listeners, storage, version.

use super::caller::Identity;
use super::AppState;
use crate::model::{Bind, Binds, DeviceInfo, StorageInfo, Uns};
use axum::extract::State;
use axum::Json;
use std::net::SocketAddr;

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
        storage: StorageInfo {
            engine: "sqlite".into(),
            path: state.store.path().display().to_string(),
            size_bytes,
        },
        version: env!("CARGO_PKG_VERSION").to_string(),
        python: Some(crate::functions::python::report()),
    })
}

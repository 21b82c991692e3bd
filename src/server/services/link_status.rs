//! Publishes every status change of a supervised link (an upstream, a connector) retained on
//! `$SYS/svc/<what>/<domain>/<name>/state` (cleared when the link is gone), for dashboards,
//! the TUI and other brokers' bridges; only administrators may read `$SYS` topics. One task
//! publishes them in the order they happened, so the retained value is always the latest.

use crate::broker::Broker;
use serde::Serialize;
use std::sync::{Arc, OnceLock};

/// Told of a link's status change: its domain, name, and status (`None` when it is gone).
pub type OnStatus<S> = Arc<dyn Fn(&str, &str, Option<&S>) + Send + Sync>;

/// A status callback for links of kind `what` (`upstreams`, `connectors`).
pub fn status_publisher<S: Serialize>(
    broker: Arc<OnceLock<Broker>>,
    what: &'static str,
) -> OnStatus<S> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(String, Vec<u8>)>();
    tokio::spawn(async move {
        while let Some((topic, payload)) = rx.recv().await {
            let Some(broker) = broker.get() else { continue };
            if let Err(e) = broker.publish(&topic, payload.into(), 1, true).await {
                tracing::debug!(topic, error = %e, "cannot publish a link status");
            }
        }
    });
    Arc::new(move |domain: &str, name: &str, status: Option<&S>| {
        let topic = format!("$SYS/svc/{what}/{domain}/{name}/state");
        let payload = status
            .and_then(|s| serde_json::to_vec(s).ok())
            .unwrap_or_default();
        let _ = tx.send((topic, payload));
    })
}

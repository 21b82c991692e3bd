//! Operations endpoints: `GET /metrics` (Prometheus text format; an administrator's credential
//! unless `metrics_public`), `GET /healthz` (the process answers) and `GET /readyz` (the store
//! answers a query and the broker is listening).
//!
//! The instruments bumped as svc works live in [`crate::telemetry`] and the broker's counters in
//! [`crate::broker::stats`]; what can be counted when asked (connections, sessions,
//! subscriptions, the historian's queue, upstream states) is counted here, per scrape, into a
//! registry built for that scrape.

use crate::server::error::{ApiError, ApiResult};
use crate::server::http::caller::{authenticate, Identity};
use crate::server::http::errors::text_response;
use crate::server::AppState;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::{prometheus_text, EncodeLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::time::Duration;
use utoipa_axum::{router::OpenApiRouter, routes};

/// How long `/readyz` waits for the store.
const STORE_PROBE_TIMEOUT: Duration = Duration::from_secs(2);

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(metrics))
        .routes(routes!(healthz))
        .routes(routes!(readyz))
}

#[utoipa::path(get, path = "/metrics", tag = "observability",
    responses((status = 200, description = "Prometheus text exposition (no credential needed with `metrics_public`)", content_type = "text/plain; version=0.0.4; charset=utf-8", body = String)))]
async fn metrics(State(state): State<AppState>, headers: HeaderMap) -> ApiResult<Response> {
    if !state.settings.metrics_public {
        let user = authenticate(&state, &headers).await?;
        Identity(user).require_admin()?;
    }
    let mut registry = Registry::with_prefix("svc");
    crate::telemetry::get().register(&mut registry);
    scrape_broker(&state, &mut registry);
    scrape_historian(&state, &mut registry);
    scrape_upstreams(&state, &mut registry);
    scrape_connectors(&state, &mut registry);
    scrape_sparkplug(&state, &mut registry);
    scrape_alarms(&state, &mut registry);
    scrape_notifications(&state, &mut registry);
    let mut body = String::with_capacity(16 * 1024);
    prometheus_text::encode(&mut body, &registry)
        .map_err(|_| ApiError::internal("cannot encode the metrics"))?;
    let mut response = (StatusCode::OK, body).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(prometheus_text::CONTENT_TYPE),
    );
    Ok(response)
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QosLabels {
    qos: u8,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CauseLabels {
    cause: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: &'static str,
}

fn gauge(registry: &mut Registry, name: &str, help: &str, value: u64) {
    let gauge: Gauge = Gauge::default();
    gauge.set(i64::try_from(value).unwrap_or(i64::MAX));
    registry.register(name, help, gauge);
}

fn counter(registry: &mut Registry, name: &str, help: &str, value: u64) {
    let counter: Counter = Counter::default();
    counter.inc_by(value);
    registry.register(name, help, counter);
}

fn by_qos(registry: &mut Registry, name: &str, help: &str, values: [u64; 3]) {
    let family = Family::<QosLabels, Counter>::default();
    for (qos, value) in (0u8..).zip(values) {
        family.get_or_create(&QosLabels { qos }).inc_by(value);
    }
    registry.register(name, help, family);
}

fn scrape_broker(state: &AppState, registry: &mut Registry) {
    let Some(broker) = state.broker.get() else {
        return;
    };
    let census = broker.census();
    gauge(
        registry,
        "mqtt_connections",
        "MQTT clients connected now",
        census.online as u64,
    );
    gauge(
        registry,
        "mqtt_connections_parked",
        "MQTT clients connected now whose quiet plain-TCP connection is parked (no task, no reactor slot)",
        crate::broker::parking::parked() as u64,
    );
    counter(
        registry,
        "mqtt_connections_resumed",
        "Parked MQTT connections brought back (by bytes from the client, a delivery or a kick)",
        crate::broker::parking::resumed(),
    );
    gauge(
        registry,
        "mqtt_sessions",
        "MQTT sessions, connected or kept for a disconnected client",
        census.sessions as u64,
    );
    gauge(
        registry,
        "mqtt_subscriptions",
        "MQTT subscriptions of every session",
        census.subscriptions as u64,
    );
    let stats = crate::broker::stats::snapshot();
    counter(
        registry,
        "mqtt_connects",
        "MQTT CONNECTs accepted",
        stats.connects,
    );
    counter(
        registry,
        "mqtt_connects_refused",
        "MQTT CONNECTs refused for their credential",
        stats.refused,
    );
    by_qos(
        registry,
        "mqtt_messages_received",
        "PUBLISH packets accepted from MQTT clients, by QoS",
        stats.received,
    );
    by_qos(
        registry,
        "mqtt_messages_sent",
        "PUBLISH packets written to MQTT clients, by QoS",
        stats.sent,
    );
    counter(
        registry,
        "mqtt_received_bytes",
        "Bytes read from MQTT connections after their CONNECT",
        stats.bytes_in,
    );
    counter(
        registry,
        "mqtt_sent_bytes",
        "Bytes written to MQTT connections",
        stats.bytes_out,
    );
    let drops = Family::<CauseLabels, Counter>::default();
    for (cause, value) in stats.drops {
        drops.get_or_create(&CauseLabels { cause }).inc_by(value);
    }
    registry.register(
        "mqtt_messages_dropped",
        "MQTT messages not delivered or not accepted, by cause",
        drops,
    );
}

fn scrape_historian(state: &AppState, registry: &mut Registry) {
    gauge(
        registry,
        "historian_queue_values",
        "Historian values waiting to be written into their series",
        state.uns.historian.queue_depth() as u64,
    );
}

fn scrape_upstreams(state: &AppState, registry: &mut Registry) {
    link_states(
        registry,
        "upstreams",
        "Upstream connections by state (connected, connecting, backoff, error, disabled)",
        state.upstreams.state_counts(),
    );
}

fn scrape_connectors(state: &AppState, registry: &mut Registry) {
    link_states(
        registry,
        "connectors",
        "Device connectors by state (connected, connecting, backoff, error, disabled)",
        state.connectors.state_counts(),
    );
}

fn scrape_sparkplug(state: &AppState, registry: &mut Registry) {
    let counts = state.sparkplug.host.counts();
    link_states(
        registry,
        "sparkplug_nodes",
        "Sparkplug edge nodes the hosts know, by state (online, offline)",
        vec![
            ("online", counts.nodes_online as usize),
            ("offline", counts.nodes_offline as usize),
        ],
    );
    counter(
        registry,
        "sparkplug_messages",
        "Sparkplug messages applied to an edge node's session",
        counts.messages,
    );
    counter(
        registry,
        "sparkplug_problems",
        "Sparkplug payloads and metrics the hosts could not read",
        counts.problems,
    );
    counter(
        registry,
        "sparkplug_rebirth_requests",
        "Rebirths the hosts asked of edge nodes (sequence gaps, nodes never seen born)",
        counts.rebirths_requested,
    );
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DomainLabels {
    domain: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DomainStateLabels {
    domain: String,
    state: &'static str,
}

/// Alarm health by domain (ISA-18.2, EEMUA 191), as `GET /svc/alarms/health` reports it.
fn scrape_alarms(state: &AppState, registry: &mut Registry) {
    let by_state = Family::<DomainStateLabels, Gauge>::default();
    let rate = Family::<DomainLabels, Gauge>::default();
    let flood = Family::<DomainLabels, Gauge>::default();
    let chattering = Family::<DomainLabels, Gauge>::default();
    let stale = Family::<DomainLabels, Gauge>::default();
    for (domain, health) in state.alarms.all_health() {
        let c = &health.counts;
        for (name, count) in [
            ("active", c.active),
            ("unacknowledged", c.unacknowledged),
            ("latched", c.latched),
            ("shelved", c.shelved),
            ("suppressed", c.suppressed),
            ("out_of_service", c.out_of_service),
        ] {
            let labels = DomainStateLabels {
                domain: domain.clone(),
                state: name,
            };
            by_state.get_or_create(&labels).set(count as i64);
        }
        let labels = DomainLabels { domain };
        rate.get_or_create(&labels).set(health.rate_10min as i64);
        flood.get_or_create(&labels).set(i64::from(health.flood));
        chattering
            .get_or_create(&labels)
            .set(health.chattering.len() as i64);
        stale.get_or_create(&labels).set(health.stale.len() as i64);
    }
    registry.register(
        "alarms",
        "Alarms by domain and state (an unacknowledged alarm may also be active)",
        by_state,
    );
    registry.register(
        "alarm_rate_10min",
        "New alarms in the last 10 minutes, by domain",
        rate,
    );
    registry.register(
        "alarm_flood",
        "1 while a domain's last 10 minutes hold more than 10 new alarms",
        flood,
    );
    registry.register(
        "alarms_chattering",
        "Alarms raised again and again within the chatter window, by domain",
        chattering,
    );
    registry.register(
        "alarms_stale",
        "Alarms standing longer than the stale limit, by domain",
        stale,
    );
}

fn scrape_notifications(state: &AppState, registry: &mut Registry) {
    let counts = state.notifier.counts();
    counter(
        registry,
        "alarm_notifications_sent",
        "Alarm notifications delivered (webhook calls answered 2xx, mails the server accepted)",
        counts.sent,
    );
    counter(
        registry,
        "alarm_notifications_failed",
        "Alarm notification delivery attempts that failed (each is retried)",
        counts.failed,
    );
    gauge(
        registry,
        "alarm_notifications_queued",
        "Alarm notifications waiting in the durable queue to be delivered or retried",
        counts.queued,
    );
    gauge(
        registry,
        "alarm_notifications_held",
        "Alarm events held for a pipeline's digest or a recipient's rate limit",
        counts.held,
    );
}

/// A gauge family of supervised links by state.
fn link_states(
    registry: &mut Registry,
    name: &str,
    help: &str,
    counts: Vec<(&'static str, usize)>,
) {
    let family = Family::<StateLabels, Gauge>::default();
    for (link_state, count) in counts {
        family
            .get_or_create(&StateLabels { state: link_state })
            .set(count as i64);
    }
    registry.register(name, help, family);
}

/// The process is up and serving HTTP.
#[utoipa::path(get, path = "/healthz", tag = "observability", security(()),
    responses((status = 200, description = "The process answers", content_type = "text/plain; charset=utf-8", body = String)))]
async fn healthz() -> Response {
    text_response(StatusCode::OK, "ok")
}

/// Ready for traffic: the store answers a query and the broker is listening.
#[utoipa::path(get, path = "/readyz", tag = "observability", security(()),
    responses((status = 200, description = "The store answers and the broker listens", content_type = "text/plain; charset=utf-8", body = String),
        (status = 503, description = "The store or the broker is not ready")))]
async fn readyz(State(state): State<AppState>) -> Response {
    let probe = tokio::time::timeout(STORE_PROBE_TIMEOUT, state.store.run(|s| s.ping())).await;
    match probe {
        Err(_) => {
            return text_response(
                StatusCode::SERVICE_UNAVAILABLE,
                format!(
                    "the store did not answer within {} seconds",
                    STORE_PROBE_TIMEOUT.as_secs()
                ),
            )
        }
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "readiness: the store failed a trivial query");
            return text_response(
                StatusCode::SERVICE_UNAVAILABLE,
                "the store cannot answer a query",
            );
        }
        Ok(Ok(())) => {}
    }
    match state.broker.get() {
        Some(broker) if broker.is_listening() => text_response(StatusCode::OK, "ready"),
        Some(_) => text_response(
            StatusCode::SERVICE_UNAVAILABLE,
            "the MQTT broker is not listening",
        ),
        None => text_response(
            StatusCode::SERVICE_UNAVAILABLE,
            "the MQTT broker has not started yet",
        ),
    }
}

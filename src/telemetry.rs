//! Process-wide instruments that the parts of svc outside the broker bump as they work (HTTP
//! requests, store calls, historian folds, function and flow runs, login refusals), read by
//! `GET /metrics` (src/server/metrics.rs). The broker keeps plain atomics of its own
//! (src/broker/stats.rs) so that its hot path does not depend on this crate.
//!
//! Every label here takes values from a small fixed set (route templates, not paths; known
//! methods; a handful of outcomes), so the number of series stays bounded whatever clients send.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::sync::LazyLock;
use std::time::Duration;

/// Latency buckets in seconds, 0.5 ms to 10 s: REST calls and store calls sit at the low end,
/// function runs and historian folds further up.
const LATENCY_BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
/// Values per historian fold.
const BATCH_BUCKETS: [f64; 10] = [
    1.0,
    10.0,
    100.0,
    1_000.0,
    5_000.0,
    10_000.0,
    50_000.0,
    100_000.0,
    500_000.0,
    1_000_000.0,
];

fn latency() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HttpLabels {
    /// The route template (`/svc/records/{table}`), `unmatched` for requests no route took.
    pub route: String,
    pub method: &'static str,
    pub status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabels {
    pub route: String,
    pub method: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OpLabels {
    /// `run` (the blocking pool) or `read` (inline when a connection is idle).
    pub op: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RunLabels {
    /// `function` or `flow`.
    pub kind: &'static str,
    /// `success` or `failure`.
    pub outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabels {
    pub kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LoginLabels {
    /// `http` (POST /auth/login) or `mqtt` (CONNECT with a user name and password).
    pub surface: &'static str,
    /// `failure` (wrong credential) or `throttled` (refused unchecked, too many failures).
    pub outcome: &'static str,
}

type LatencyFamily<L> = Family<L, Histogram, fn() -> Histogram>;

pub struct Instruments {
    pub http_requests: Family<HttpLabels, Counter>,
    pub http_duration: LatencyFamily<RouteLabels>,
    pub store_duration: LatencyFamily<OpLabels>,
    pub historian_batch: Histogram,
    pub historian_commit: Histogram,
    pub runs: Family<RunLabels, Counter>,
    pub run_duration: LatencyFamily<KindLabels>,
    pub logins_refused: Family<LoginLabels, Counter>,
}

static INSTRUMENTS: LazyLock<Instruments> = LazyLock::new(|| Instruments {
    http_requests: Family::default(),
    http_duration: Family::new_with_constructor(latency),
    store_duration: Family::new_with_constructor(latency),
    historian_batch: Histogram::new(BATCH_BUCKETS),
    historian_commit: latency(),
    runs: Family::default(),
    run_duration: Family::new_with_constructor(latency),
    logins_refused: Family::default(),
});

pub fn get() -> &'static Instruments {
    &INSTRUMENTS
}

/// The method as a label: the standard ones by name, anything else as `other` (hyper accepts
/// any token as a method, and each would be a series of its own).
pub fn method_label(method: &axum::http::Method) -> &'static str {
    use axum::http::Method;
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

impl Instruments {
    pub fn store_call(&self, op: &'static str, took: Duration) {
        self.store_duration
            .get_or_create(&OpLabels { op })
            .observe(took.as_secs_f64());
    }

    pub fn historian_fold(&self, values: usize, took: Duration) {
        self.historian_batch.observe(values as f64);
        self.historian_commit.observe(took.as_secs_f64());
    }

    /// One run of a function or flow ended.
    pub fn run(&self, kind: &'static str, success: bool, took: Duration) {
        let outcome = if success { "success" } else { "failure" };
        self.runs.get_or_create(&RunLabels { kind, outcome }).inc();
        self.run_duration
            .get_or_create(&KindLabels { kind })
            .observe(took.as_secs_f64());
    }

    pub fn login_refused(&self, surface: &'static str, outcome: &'static str) {
        self.logins_refused
            .get_or_create(&LoginLabels { surface, outcome })
            .inc();
    }

    /// Adds every instrument to `registry` (handles: the registry reads the live values).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "http_requests",
            "HTTP requests by route template, method and status",
            self.http_requests.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "HTTP request latency by route template and method",
            self.http_duration.clone(),
        );
        registry.register(
            "store_operation_duration_seconds",
            "Store calls, queueing for a connection included",
            self.store_duration.clone(),
        );
        registry.register(
            "historian_batch_values",
            "Values written to the series per historian fold",
            self.historian_batch.clone(),
        );
        registry.register(
            "historian_commit_duration_seconds",
            "Duration of one historian fold transaction",
            self.historian_commit.clone(),
        );
        registry.register(
            "runs",
            "Function and flow runs by outcome",
            self.runs.clone(),
        );
        registry.register(
            "run_duration_seconds",
            "Function and flow run durations",
            self.run_duration.clone(),
        );
        registry.register(
            "logins_refused",
            "Refused password logins (wrong credential, or throttled) over HTTP and MQTT",
            self.logins_refused.clone(),
        );
    }
}

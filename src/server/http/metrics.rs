//! Counts every HTTP request by route template, method and status, and times it, for
//! `GET /metrics`. The route is axum's [`MatchedPath`] (`/svc/records/{table}`), never the
//! request's path, so clients cannot create series at will; requests no route took share
//! `unmatched`. Called by the request layer ([`crate::server::http::middleware::correlate`]), which times
//! the request once for its log line and for these.

use crate::telemetry::{self, HttpLabels, RouteLabels};
use axum::extract::{MatchedPath, Request};
use axum::http::Method;
use std::time::Duration;

const UNMATCHED: &str = "unmatched";

/// The route template that took `request`, or `unmatched`.
pub fn route_of(request: &Request) -> String {
    request
        .extensions()
        .get::<MatchedPath>()
        .map_or(UNMATCHED, MatchedPath::as_str)
        .to_string()
}

/// Counts one answered request and its duration.
pub fn count(route: String, method: &Method, status: u16, took: Duration) {
    let method = telemetry::method_label(method);
    let instruments = telemetry::get();
    instruments
        .http_duration
        .get_or_create(&RouteLabels {
            route: route.clone(),
            method,
        })
        .observe(took.as_secs_f64());
    instruments
        .http_requests
        .get_or_create(&HttpLabels {
            route,
            method,
            status,
        })
        .inc();
}

//! Counts every HTTP request by route template, method and status, and times it, for
//! `GET /metrics`. The route is axum's [`MatchedPath`] (`/svc/records/{table}`), never the
//! request's path, so clients cannot create series at will; requests no route took share
//! `unmatched`.

use crate::telemetry::{self, HttpLabels, RouteLabels};
use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;
use std::time::Instant;

const UNMATCHED: &str = "unmatched";

pub async fn record(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = telemetry::method_label(request.method());
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or(UNMATCHED, MatchedPath::as_str)
        .to_string();
    let response = next.run(request).await;
    let instruments = telemetry::get();
    instruments
        .http_duration
        .get_or_create(&RouteLabels {
            route: route.clone(),
            method,
        })
        .observe(started.elapsed().as_secs_f64());
    instruments
        .http_requests
        .get_or_create(&HttpLabels {
            route,
            method,
            status: response.status().as_u16(),
        })
        .inc();
    response
}

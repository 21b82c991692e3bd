//! Historian routes: the domain's historized tags, window queries with optional buckets,
//! last-N values, and gzipped CSV exports (UTC, and the SDK's aggregated one in a time zone).
//! Only tags of the caller's domain can be read.

use crate::historian::{
    resolve_aggregated_export, resolve_export, resolve_last_limit, resolve_window, run_query,
    write_export, AggregatedExportRequest, ExportPlan, ExportRequest, PointsJson, QueryRequest,
};
use crate::server::error::{ApiError, ApiResult};
use crate::server::http::caller::{Access, Caller};
use crate::server::http::json::JsonBody;
use crate::server::AppState;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;
use utoipa_axum::{router::OpenApiRouter, routes};

const FEATURE: &str = "historian";

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(query))
        .routes(routes!(last))
        .routes(routes!(export))
        .routes(routes!(export_aggregated))
}

#[utoipa::path(get, path = "/svc/historian/list", tag = "historian",
    responses((status = 200, description = "The historized topics", body = Vec<String>)))]
async fn list(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<Vec<String>>> {
    caller.require(&state, FEATURE, "*", Access::Read).await?;
    Ok(Json(state.uns.tags.paths(&caller.domain, true)))
}

/// Fails with 404 unless the topic is a tag of the caller's domain; else tells whether the tag
/// is historized. A tag that is not has an empty history, even if values were stored while it
/// was: the SDK reads "not historized" as "no history".
fn require_tag(state: &AppState, caller: &Caller, topic: &str) -> ApiResult<bool> {
    state
        .uns
        .tags
        .historizes(topic, &caller.domain)
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "`{topic}` is not a tag of domain `{}`",
                caller.domain
            ))
        })
}

/// Waits until every acknowledged value is readable from its series.
pub(in crate::server) async fn settled(state: &AppState) -> ApiResult<()> {
    state
        .uns
        .historian
        .settle()
        .await
        .map_err(|e| ApiError::internal(e.to_string()))
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

#[utoipa::path(patch, path = "/svc/historian", tag = "historian", request_body = crate::model::HistorianQuery,
    responses((status = 404, description = "The body names a tag, flow, process, group or record that does not exist"),
        (status = 200, description = "The topic's values in the window (raw points, or one per bucket when `bucket` is given)", body = Vec<crate::model::HistorianPoint>)))]
async fn query(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(request): JsonBody<QueryRequest>,
) -> ApiResult<Response> {
    caller.require(&state, FEATURE, "*", Access::Read).await?;
    let historized = require_tag(&state, &caller, &request.topic)?;
    let window = resolve_window(&request, now_ms()).map_err(ApiError::bad_request)?;
    if !historized {
        return Ok(points_response(PointsJson(Vec::new()).to_bytes()));
    }
    settled(&state).await?;
    let (domain, topic) = (caller.domain.clone(), request.topic);
    // The answer is written where it is read, on the blocking pool: a large one takes longer
    // to write than to read, and the points never cross back to the runtime. A raw window is
    // read through the store's hot reads (awaited here on PostgreSQL).
    let body = match window.bucket {
        None => {
            let (start, end, limit) = (window.start_ms, window.end_ms, window.limit);
            let finish = |points| PointsJson(points).to_bytes();
            let reads = state.store.reads();
            reads
                .history_range_with(&domain, &topic, start, end, limit, finish)
                .await?
        }
        Some(_) => {
            state
                .store
                .run(move |s| Ok(PointsJson(run_query(s, &domain, &topic, &window)?).to_bytes()))
                .await?
        }
    };
    Ok(points_response(body))
}

/// A JSON answer of points written by [`PointsJson::to_bytes`].
fn points_response(body: impl Into<axum::body::Body>) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body.into()).into_response()
}

#[derive(Deserialize)]
struct LastRequest {
    topic: String,
    limit: Option<u64>,
}

#[utoipa::path(patch, path = "/svc/historian/last", tag = "historian", request_body = crate::model::HistorianLastRequest,
    responses((status = 404, description = "The body names a tag, flow, process, group or record that does not exist"),
        (status = 200, description = "The topic's newest values", body = Vec<crate::model::HistorianPoint>)))]
async fn last(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(request): JsonBody<LastRequest>,
) -> ApiResult<Response> {
    caller.require(&state, FEATURE, "*", Access::Read).await?;
    let historized = require_tag(&state, &caller, &request.topic)?;
    let limit = resolve_last_limit(request.limit).map_err(ApiError::bad_request)?;
    if !historized {
        return Ok(points_response(PointsJson(Vec::new()).to_bytes()));
    }
    settled(&state).await?;
    let (domain, topic) = (caller.domain.clone(), request.topic);
    let points = state
        .store
        .reads()
        .history_last(&domain, &topic, limit)
        .await?;
    Ok(points_response(PointsJson(points).to_bytes()))
}

#[utoipa::path(post, path = "/svc/historian/export", tag = "historian", request_body = crate::model::HistorianExportRequest,
    responses((status = 404, description = "The body names a tag, flow, process, group or record that does not exist"),
        (status = 200, description = "The values as gzipped CSV", content_type = "application/gzip", body = Vec<u8>)))]
async fn export(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(request): JsonBody<ExportRequest>,
) -> ApiResult<Response> {
    export_with(&state, &caller, &request.topics, || {
        resolve_export(&request)
    })
    .await
}

/// The SDK's export: timestamps in a time zone, day buckets from its local midnights.
#[utoipa::path(post, path = "/svc/historian/export/aggregated", tag = "historian", request_body = Object,
    responses((status = 404, description = "The body names a tag, flow, process, group or record that does not exist"),
        (status = 200, description = "Aggregated values as gzipped CSV", content_type = "application/gzip", body = Vec<u8>)))]
async fn export_aggregated(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(request): JsonBody<AggregatedExportRequest>,
) -> ApiResult<Response> {
    export_with(&state, &caller, &request.export.topics, || {
        resolve_aggregated_export(&request)
    })
    .await
}

/// Both exports: historian read, every topic a tag of the domain (404), the request checked
/// by `resolve` (400), then the gzipped CSV of the settled history.
async fn export_with(
    state: &AppState,
    caller: &Caller,
    topics: &[String],
    resolve: impl FnOnce() -> Result<ExportPlan, String>,
) -> ApiResult<Response> {
    caller.require(state, FEATURE, "*", Access::Read).await?;
    let historized = topics
        .iter()
        .map(|topic| require_tag(state, caller, topic))
        .collect::<ApiResult<Vec<bool>>>()?;
    let mut plan = resolve().map_err(ApiError::bad_request)?;
    for (column, historized) in plan.columns.iter_mut().zip(historized) {
        column.historized = historized;
    }
    settled(state).await?;
    let domain = caller.domain.clone();
    let (chunks, body) = crate::server::http::export_stream::channel();
    let store = state.store.clone();
    tokio::task::spawn_blocking(move || {
        let mut sink = chunks;
        if let Err(e) = write_export(&store, &domain, &plan, &mut sink) {
            // The status is sent: cutting the body short is all that is left to say it.
            tracing::error!(error = %e, "historian export stopped");
            sink.fail(e.to_string());
        }
    });
    Ok((
        [
            (header::CONTENT_TYPE, "application/gzip"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"historian.csv.gz\"",
            ),
        ],
        body,
    )
        .into_response())
}

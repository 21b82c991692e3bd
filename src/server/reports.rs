//! `POST /svc/historian/query {"query"}`: a read-only SQL `SELECT` over the active domain's
//! historian and tables, answered as a JSON array of row objects. The text is checked by
//! [`crate::report_sql`] and run by the store under a time and a row limit; the caller needs
//! read access to the historian and to every table the query names.

use super::caller::{Access, Caller};
use super::error::{ApiError, ApiResult};
use super::json::JsonBody;
use super::AppState;
use crate::ids::TableRef;
use crate::report_sql::{self, HISTORIAN};
use crate::store::ReportLimits;
use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::time::Duration;

/// The limits every report runs under.
pub const LIMITS: ReportLimits = ReportLimits {
    timeout: Duration::from_secs(5),
    max_rows: 10_000,
};

pub fn routes() -> Router<AppState> {
    Router::new().route("/svc/historian/query", post(query))
}

#[derive(Deserialize)]
struct ReportRequest {
    query: String,
}

async fn query(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(request): JsonBody<ReportRequest>,
) -> ApiResult<Json<Vec<Map<String, Value>>>> {
    let checked = report_sql::check(&request.query).map_err(ApiError::bad_request)?;
    let domain = caller.domain.clone();
    let tables = state.store.run(move |s| s.domain_tables(&domain)).await?;
    for relation in &checked.relations {
        if relation == HISTORIAN {
            caller.require(&state, HISTORIAN, "*", Access::Read).await?;
        } else if let Some(table) = tables.iter().find(|t| t.to_lowercase() == *relation) {
            let table = TableRef::new(&caller.domain, table).map_err(ApiError::bad_request)?;
            caller.require_table(&state, &table, Access::Read).await?;
        }
    }
    if checked.relations.contains(HISTORIAN) {
        state
            .historian
            .settle()
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?;
    }
    let domain = caller.domain.clone();
    let rows = state
        .store
        .run(move |s| s.run_report(&domain, checked, LIMITS))
        .await?;
    Ok(Json(rows))
}

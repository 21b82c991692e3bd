//! `POST /svc/historian/query {"query"}`: a read-only SQL `SELECT` over the active domain's
//! historian and tables, answered as a JSON array of row objects. The text is checked by
//! [`crate::report_sql`] and run by the store under a time and a row limit; the caller needs
//! read access to the historian and to every table the query names.

use crate::report_sql::{self, HISTORIAN};
use crate::server::error::{ApiError, ApiResult};
use crate::server::http::caller::{Access, Caller};
use crate::server::http::json::JsonBody;
use crate::server::routes::historian::settled;
use crate::server::AppState;
use crate::store::{ReportLimits, ReportRelation};
use axum::extract::State;
use axum::Json;
use serde::Deserialize;
use serde_json::{Map, Value};
use utoipa_axum::{router::OpenApiRouter, routes};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(query))
}

#[derive(Deserialize, utoipa::ToSchema)]
struct ReportRequest {
    #[schema(min_length = 1)]
    query: String,
}

#[utoipa::path(post, path = "/svc/historian/query", tag = "historian", request_body = ReportRequest,
    responses((status = 200, description = "The rows of the SQL report", body = Vec<Object>)))]
async fn query(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(request): JsonBody<ReportRequest>,
) -> ApiResult<Json<Vec<Map<String, Value>>>> {
    let checked = report_sql::check(&request.query).map_err(ApiError::bad_request)?;
    let domain = caller.domain.clone();
    let (checked, relations) = state
        .store
        .run(move |s| {
            let relations = s.report_relations(&domain, &checked)?;
            Ok((checked, relations))
        })
        .await?;
    let mut names_historian = false;
    for (_, relation) in &relations {
        match relation {
            ReportRelation::Historian => {
                caller.require(&state, HISTORIAN, "*", Access::Read).await?;
                names_historian = true;
            }
            ReportRelation::Table(table) => {
                caller.require_table(&state, table, Access::Read).await?;
            }
        }
    }
    if names_historian {
        settled(&state).await?;
    }
    let domain = caller.domain.clone();
    let rows = state
        .store
        .run(move |s| s.run_report(&domain, checked, &relations, ReportLimits::API))
        .await?;
    Ok(Json(rows))
}

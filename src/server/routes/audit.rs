//! `GET /svc/audit`: the audit trail of administrative changes, with filters. What a request
//! records is `http::audit_trail`; the retention sweep is `services::audit_retention`.

use crate::server::error::{ApiError, ApiResult};
use crate::server::http::caller::{Access, Caller};
use crate::server::AppState;
use crate::store::{AuditEntry, AuditFilter};
use crate::time::{format_rfc3339, parse_rfc3339};
use axum::extract::{Query, State};
use axum::Json;
use std::collections::HashMap;
use utoipa_axum::{router::OpenApiRouter, routes};

/// The permission feature that lets a non-administrator read its domain's audit trail.
pub const FEATURE: &str = "audit";
const DEFAULT_LIMIT: u32 = 100;
const MAX_LIMIT: u32 = 10_000;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list))
}

/// An administrator reads every domain's entries (or one with `domain=`); a user with an
/// `audit` read grant reads those of the domain it acts in.
#[utoipa::path(get, path = "/svc/audit", tag = "observability",
    params(("since" = Option<String>, Query, format = DateTime, description = "Only entries at or after this RFC 3339 time"),
        ("until" = Option<String>, Query, format = DateTime, description = "Only entries before this RFC 3339 time"),
        ("domain" = Option<String>, Query, description = "Only this domain's changes"),
        ("user" = Option<String>, Query, description = "Only this user's changes"),
        ("resource_type" = Option<String>, Query, description = "Only changes of this kind of resource"),
        ("action" = Option<String>, Query, description = "Only this action"),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 10000, description = "At most this many entries (default 100)"),
        ("offset" = Option<u32>, Query, description = "Skip this many entries")),
    responses((status = 200, description = "Recorded administrative changes, newest first", body = Vec<Object>)))]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<HashMap<String, String>>,
) -> ApiResult<Json<Vec<AuditEntry>>> {
    caller.require(&state, FEATURE, "*", Access::Read).await?;
    let mut filter = parse_filter(&params)?;
    if !caller.user.admin {
        filter.domain = Some(caller.domain.clone());
    }
    Ok(Json(state.store.run(move |s| s.list_audit(&filter)).await?))
}

const KNOWN: [&str; 8] = [
    "since",
    "until",
    "user",
    "resource_type",
    "action",
    "domain",
    "limit",
    "offset",
];

fn parse_filter(params: &HashMap<String, String>) -> ApiResult<AuditFilter> {
    if let Some(unknown) = params.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        return Err(ApiError::bad_request(format!(
            "unknown filter `{unknown}`; use since, until, user, resource_type, action, domain, \
             limit or offset"
        )));
    }
    let time = |name: &str| -> ApiResult<Option<String>> {
        params
            .get(name)
            .map(|v| {
                parse_rfc3339(v).map(format_rfc3339).ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "`{name}` must be an RFC 3339 time such as 2026-01-31T12:00:00Z"
                    ))
                })
            })
            .transpose()
    };
    let number =
        |name: &str, default: u32, range: std::ops::RangeInclusive<u32>| match params.get(name) {
            None => Ok(default),
            Some(v) => v
                .parse::<u32>()
                .ok()
                .filter(|n| range.contains(n))
                .ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "`{name}` must be a whole number from {} to {}",
                        range.start(),
                        range.end()
                    ))
                }),
        };
    Ok(AuditFilter {
        domain: params.get("domain").cloned(),
        since: time("since")?,
        until: time("until")?,
        user: params.get("user").cloned(),
        resource_type: params.get("resource_type").cloned(),
        action: params.get("action").cloned(),
        limit: number("limit", DEFAULT_LIMIT, 1..=MAX_LIMIT)?,
        offset: number("offset", 0, 0..=u32::MAX)?,
    })
}

//! `GET /svc/logs`: the request log (`http::request_log`) with filters: a time range, a status
//! or class, method, route template, user and domain. Administrators read every domain's
//! requests; a `logs` read grant shows the caller's domain only.

use crate::server::error::{ApiError, ApiResult};
use crate::server::http::caller::{Access, Caller};
use crate::server::http::request_log::LogEntry;
use crate::server::AppState;
use crate::time::parse_rfc3339;
use axum::extract::{Query, State};
use axum::Json;
use std::collections::HashMap;
use utoipa_axum::{router::OpenApiRouter, routes};

/// The permission feature that lets a non-administrator read its domain's request log.
pub const FEATURE: &str = "logs";
/// Entries a list returns unless `limit` says otherwise, and the most it may ask for.
const DEFAULT_LIMIT: usize = 100;
const MAX_LIMIT: usize = 10_000;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(list))
}

/// Who reads the request log: an administrator (any domain, or one with `domain=`), or a user
/// with a `logs` read grant, who sees only the entries of the domain it acts in.
#[utoipa::path(get, path = "/svc/logs", tag = "observability",
    params(("since" = Option<String>, Query, format = DateTime, description = "Only entries at or after this RFC 3339 time"),
        ("until" = Option<String>, Query, format = DateTime, description = "Only entries before this RFC 3339 time"),
        ("status" = Option<String>, Query, pattern = "^[1-5]([0-9]{2}|xx)$", description = "A status (`404`) or class (`4xx`)"),
        ("limit" = Option<u32>, Query, minimum = 1, maximum = 10000, description = "At most this many entries (default 100)"),
        ("method" = Option<String>, Query, description = "Only this HTTP method"),
        ("route" = Option<String>, Query, description = "Only this route template"),
        ("user" = Option<String>, Query, description = "Only this user's requests"),
        ("domain" = Option<String>, Query, description = "Only this domain's requests")),
    responses((status = 200, description = "Recent requests, newest first", body = Vec<LogEntry>)))]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<HashMap<String, String>>,
) -> ApiResult<Json<Vec<LogEntry>>> {
    caller.require(&state, FEATURE, "*", Access::Read).await?;
    let mut filter = LogFilter::parse(&params)?;
    if !caller.user.admin {
        filter.domain = Some(caller.domain.clone());
    }
    Ok(Json(
        state
            .request_log
            .select(|entry| filter.matches(entry), filter.limit),
    ))
}

/// The query parameters of `GET /svc/logs`, checked.
#[derive(Debug, Default)]
struct LogFilter {
    since: Option<String>,
    until: Option<String>,
    /// An exact status (`404`) or a class (`4xx`): the lower and upper bound.
    status: Option<(u16, u16)>,
    method: Option<String>,
    route: Option<String>,
    /// A user id or a username.
    user: Option<String>,
    domain: Option<String>,
    limit: usize,
}

const KNOWN: [&str; 8] = [
    "since", "until", "status", "method", "route", "user", "domain", "limit",
];

impl LogFilter {
    fn parse(params: &HashMap<String, String>) -> ApiResult<LogFilter> {
        if let Some(unknown) = params.keys().find(|k| !KNOWN.contains(&k.as_str())) {
            return Err(ApiError::bad_request(format!(
                "unknown filter `{unknown}`; use since, until, status, method, route, user, \
                 domain or limit"
            )));
        }
        let time = |name: &str| -> ApiResult<Option<String>> {
            params
                .get(name)
                .map(|v| {
                    parse_rfc3339(v)
                        .map(crate::time::format_rfc3339)
                        .ok_or_else(|| {
                            ApiError::bad_request(format!(
                                "`{name}` must be an RFC 3339 time such as 2026-01-31T12:00:00Z"
                            ))
                        })
                })
                .transpose()
        };
        let status = params.get("status").map(|v| parse_status(v)).transpose()?;
        let limit = match params.get("limit") {
            None => DEFAULT_LIMIT,
            Some(v) => v
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=MAX_LIMIT).contains(n))
                .ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "`limit` must be a whole number from 1 to {MAX_LIMIT}"
                    ))
                })?,
        };
        Ok(LogFilter {
            since: time("since")?,
            until: time("until")?,
            status,
            method: params.get("method").map(|m| m.to_ascii_uppercase()),
            route: params.get("route").cloned(),
            user: params.get("user").cloned(),
            domain: params.get("domain").cloned(),
            limit,
        })
    }

    fn matches(&self, e: &LogEntry) -> bool {
        self.since.as_ref().is_none_or(|t| e.time >= *t)
            && self.until.as_ref().is_none_or(|t| e.time <= *t)
            && self
                .status
                .is_none_or(|(lo, hi)| (lo..=hi).contains(&e.status))
            && self.method.as_ref().is_none_or(|m| e.method == *m)
            && self
                .route
                .as_ref()
                .is_none_or(|r| e.route.as_deref() == Some(r.as_str()))
            && self.user.as_ref().is_none_or(|u| {
                e.user_id.as_deref() == Some(u.as_str()) || e.username.as_deref() == Some(u)
            })
            && self.domain.as_ref().is_none_or(|d| e.domain == *d)
    }
}

/// `404` → (404, 404); `4xx` → (400, 499).
fn parse_status(text: &str) -> ApiResult<(u16, u16)> {
    let bad = || {
        ApiError::bad_request(format!(
            "`status` must be a status such as 404 or a class such as 4xx, not `{text}`"
        ))
    };
    let lower = text.to_ascii_lowercase();
    if let Some(class) = lower.strip_suffix("xx") {
        let digit = class.parse::<u16>().ok().filter(|d| (1..=5).contains(d));
        return digit.map(|d| (d * 100, d * 100 + 99)).ok_or_else(bad);
    }
    let code = lower
        .parse::<u16>()
        .ok()
        .filter(|c| (100..=599).contains(c))
        .ok_or_else(bad)?;
    Ok((code, code))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_filters_take_codes_and_classes() {
        assert_eq!(parse_status("404").unwrap(), (404, 404));
        assert_eq!(parse_status("2xx").unwrap(), (200, 299));
        assert_eq!(parse_status("5XX").unwrap(), (500, 599));
        for bad in ["6xx", "xx", "99", "abc", "4x"] {
            assert!(parse_status(bad).is_err(), "{bad}");
        }
    }
}

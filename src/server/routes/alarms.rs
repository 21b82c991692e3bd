//! Alarms beyond their record routes (the `alarms` system table is written through
//! `/svc/alarms` like any table): the alarms standing now, the journal with filters, the
//! alarm system's health, the live stream of changes (Server-Sent Events), and the operator's
//! actions. Reading needs `alarms` read access; acting needs the `ack` action (a custom verb
//! an administrator grants to operators) or `read-write`, and the journal records who acted.

use crate::alarms::health::Health;
use crate::alarms::{AlarmStatus, StateName, ACK_ACTION, FEATURE};
use crate::historian::format_ms;
use crate::server::error::{ApiError, ApiResult};
use crate::server::http::caller::{Access, Caller};
use crate::server::http::json::JsonBody;
use crate::server::services::alarms::{ActRequest, ActionWire};
use crate::server::AppState;
use crate::store::{AlarmJournalEntry, JournalQuery};
use axum::extract::{Query, State};
use axum::Json;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa_axum::{router::OpenApiRouter, routes};

mod stream;

/// The longest an alarm may be shelved (ISA-18.2 wants shelving to end by itself).
const MAX_SHELVE_MS: i64 = 30 * 24 * 60 * 60 * 1000;
/// Journal entries listed when the query says nothing, and at most.
const DEFAULT_LIMIT: usize = 100;
const MAX_LIMIT: usize = 10_000;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(active))
        .routes(routes!(journal))
        .routes(routes!(health))
        .routes(routes!(stream::stream))
        .routes(routes!(acknowledge))
        .routes(routes!(shelve))
        .routes(routes!(unshelve))
        .routes(routes!(out_of_service))
        .routes(routes!(in_service))
}

#[derive(Deserialize)]
struct ActiveQuery {
    priority: Option<String>,
    state: Option<String>,
}

/// The domain's alarms that are not normal (unacknowledged, acknowledged, returned
/// unacknowledged, latched, shelved, suppressed, out of service), most urgent first, then
/// newest first.
#[utoipa::path(get, path = "/svc/alarms/active", tag = "alarms",
    params(("priority" = Option<String>, Query, description = "Only this priority (low, medium, high, critical)"),
        ("state" = Option<String>, Query, description = "Only this state, e.g. active_unacknowledged")),
    responses((status = 200, description = "The standing alarms", body = Vec<Object>),
        (status = 400, description = "An unknown priority or state")))]
async fn active(
    State(state): State<AppState>,
    caller: Caller,
    Query(query): Query<ActiveQuery>,
) -> ApiResult<Json<Vec<AlarmStatus>>> {
    caller.require(&state, FEATURE, "*", Access::Read).await?;
    let priority = query.priority.as_deref().map(priority_of).transpose()?;
    let wanted_state = query.state.as_deref().map(state_of).transpose()?;
    let list = state
        .alarms
        .standing(&caller.domain)
        .into_iter()
        .filter(|a| priority.is_none_or(|p| a.priority.name() == p))
        .filter(|a| wanted_state.is_none_or(|s| a.state == s))
        .collect();
    Ok(Json(list))
}

#[derive(Deserialize)]
struct JournalParams {
    alarm: Option<String>,
    state: Option<String>,
    priority: Option<String>,
    who: Option<String>,
    from: Option<String>,
    to: Option<String>,
    before: Option<i64>,
    limit: Option<usize>,
}

/// One journal entry as the API shows it.
#[derive(Serialize)]
struct JournalEntry {
    id: i64,
    alarm: String,
    state: String,
    previous: String,
    cause: String,
    priority: String,
    tag: String,
    value: Value,
    message: String,
    at: String,
    who: Option<String>,
    comment: Option<String>,
}

impl From<AlarmJournalEntry> for JournalEntry {
    fn from(e: AlarmJournalEntry) -> JournalEntry {
        JournalEntry {
            id: e.id,
            value: serde_json::from_str(&e.value).unwrap_or(Value::String(e.value)),
            alarm: e.alarm,
            state: e.state,
            previous: e.previous,
            cause: e.cause,
            priority: e.priority,
            tag: e.tag,
            message: e.message,
            at: format_ms(e.at_ms),
            who: e.who,
            comment: e.comment,
        }
    }
}

/// The domain's alarm journal, newest first: every state change and operator action, with
/// the value, the time and who acted. `before` (an entry's id) pages back.
#[utoipa::path(get, path = "/svc/alarms/journal", tag = "alarms",
    params(("alarm" = Option<String>, Query, description = "Only this alarm"),
        ("state" = Option<String>, Query, description = "Only entries into this state"),
        ("priority" = Option<String>, Query, description = "Only this priority"),
        ("who" = Option<String>, Query, description = "Only actions by this user"),
        ("from" = Option<String>, Query, description = "From this time (RFC 3339), inclusive"),
        ("to" = Option<String>, Query, description = "Until this time (RFC 3339), exclusive"),
        ("before" = Option<i64>, Query, description = "Only entries older than this id"),
        ("limit" = Option<usize>, Query, description = "At most this many entries (default 100, at most 10000)")),
    responses((status = 200, description = "Journal entries, newest first", body = Vec<Object>),
        (status = 400, description = "A bad filter, time or limit")))]
async fn journal(
    State(state): State<AppState>,
    caller: Caller,
    Query(params): Query<JournalParams>,
) -> ApiResult<Json<Vec<JournalEntry>>> {
    caller.require(&state, FEATURE, "*", Access::Read).await?;
    if let Some(s) = params.state.as_deref() {
        state_of(s)?;
    }
    if let Some(p) = params.priority.as_deref() {
        priority_of(p)?;
    }
    let limit = params.limit.unwrap_or(DEFAULT_LIMIT);
    if limit == 0 || limit > MAX_LIMIT {
        return Err(ApiError::bad_request(format!(
            "`limit` must be from 1 to {MAX_LIMIT}, not {limit}"
        )));
    }
    let query = JournalQuery {
        alarm: params.alarm,
        state: params.state,
        priority: params.priority,
        who: params.who,
        from_ms: params
            .from
            .as_deref()
            .map(|t| time_of("from", t))
            .transpose()?,
        to_ms: params.to.as_deref().map(|t| time_of("to", t)).transpose()?,
        before_id: params.before,
        limit,
    };
    let domain = caller.domain.clone();
    let entries = state
        .store
        .run(move |s| s.alarm_journal_list(&domain, &query))
        .await?;
    Ok(Json(entries.into_iter().map(JournalEntry::from).collect()))
}

/// The domain's alarm system performance (ISA-18.2, EEMUA 191): new alarms per 10 minutes
/// now, on average and at peak over 24 hours, floods, chattering and stale alarms, and how
/// many alarms stand in each state.
#[utoipa::path(get, path = "/svc/alarms/health", tag = "alarms",
    responses((status = 200, description = "The alarm system's health", body = Object)))]
async fn health(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<Health>> {
    caller.require(&state, FEATURE, "*", Access::Read).await?;
    Ok(Json(state.alarms.health(&caller.domain)))
}

/// What an operator's action names.
#[derive(Deserialize, utoipa::ToSchema)]
struct ActBody {
    /// The alarm's name.
    alarm: String,
    comment: Option<String>,
    /// Shelving: why (required), and for how long (`duration`, e.g. `2h`) or until when
    /// (`until`, RFC 3339).
    reason: Option<String>,
    duration: Option<String>,
    until: Option<String>,
}

/// Acknowledges an alarm (an unacknowledged, returned or latched one; a latched alarm whose
/// condition is gone returns to normal).
#[utoipa::path(post, path = "/svc/alarms/acknowledge", tag = "alarms", request_body = ActBody,
    responses((status = 200, description = "The alarm as it stands now", body = Object),
        (status = 400, description = "No alarm named"), (status = 401, description = "Without `ack` or `read-write`"),
        (status = 404, description = "No such alarm"), (status = 409, description = "Nothing to acknowledge")))]
async fn acknowledge(
    state: State<AppState>,
    caller: Caller,
    body: JsonBody<ActBody>,
) -> ApiResult<Json<AlarmStatus>> {
    act(state, caller, body, |_| Ok(ActionWire::Acknowledge)).await
}

/// Shelves an alarm for a while (`duration` or `until`, at most 30 days) with a reason: it
/// is not annunciated until it is unshelved or the shelve expires.
#[utoipa::path(post, path = "/svc/alarms/shelve", tag = "alarms", request_body = ActBody,
    responses((status = 200, description = "The alarm as it stands now", body = Object),
        (status = 400, description = "No reason, or no or a bad expiry"), (status = 401, description = "Without `ack` or `read-write`"),
        (status = 404, description = "No such alarm"), (status = 409, description = "The alarm is out of service")))]
async fn shelve(
    state: State<AppState>,
    caller: Caller,
    body: JsonBody<ActBody>,
) -> ApiResult<Json<AlarmStatus>> {
    act(state, caller, body, shelve_action).await
}

/// Ends an alarm's shelve; an alarm whose condition holds is raised again, unacknowledged.
#[utoipa::path(post, path = "/svc/alarms/unshelve", tag = "alarms", request_body = ActBody,
    responses((status = 200, description = "The alarm as it stands now", body = Object),
        (status = 400, description = "No alarm named"), (status = 401, description = "Without `ack` or `read-write`"),
        (status = 404, description = "No such alarm"), (status = 409, description = "The alarm is not shelved")))]
async fn unshelve(
    state: State<AppState>,
    caller: Caller,
    body: JsonBody<ActBody>,
) -> ApiResult<Json<AlarmStatus>> {
    act(state, caller, body, |_| Ok(ActionWire::Unshelve)).await
}

/// Takes an alarm out of service (maintenance): it is followed but never annunciated.
#[utoipa::path(post, path = "/svc/alarms/out-of-service", tag = "alarms", request_body = ActBody,
    responses((status = 200, description = "The alarm as it stands now", body = Object),
        (status = 400, description = "No alarm named"), (status = 401, description = "Without `ack` or `read-write`"),
        (status = 404, description = "No such alarm"), (status = 409, description = "Already out of service")))]
async fn out_of_service(
    state: State<AppState>,
    caller: Caller,
    body: JsonBody<ActBody>,
) -> ApiResult<Json<AlarmStatus>> {
    act(state, caller, body, |_| Ok(ActionWire::OutOfService)).await
}

/// Returns an alarm to service; one whose condition holds is raised again, unacknowledged.
#[utoipa::path(post, path = "/svc/alarms/in-service", tag = "alarms", request_body = ActBody,
    responses((status = 200, description = "The alarm as it stands now", body = Object),
        (status = 400, description = "No alarm named"), (status = 401, description = "Without `ack` or `read-write`"),
        (status = 404, description = "No such alarm"), (status = 409, description = "Not out of service")))]
async fn in_service(
    state: State<AppState>,
    caller: Caller,
    body: JsonBody<ActBody>,
) -> ApiResult<Json<AlarmStatus>> {
    act(state, caller, body, |_| Ok(ActionWire::InService)).await
}

/// Checks the caller's right to act and carries out the action `make` reads from the body.
async fn act(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<ActBody>,
    make: impl FnOnce(&ActBody) -> ApiResult<ActionWire>,
) -> ApiResult<Json<AlarmStatus>> {
    caller.require_action(&state, FEATURE, ACK_ACTION).await?;
    if body.alarm.trim().is_empty() {
        return Err(ApiError::bad_request("field `alarm` must name an alarm"));
    }
    let action = make(&body)?;
    let request = ActRequest {
        domain: caller.domain.clone(),
        alarm: body.alarm,
        action,
        who: caller.user.username.clone(),
        comment: body.comment.filter(|c| !c.trim().is_empty()),
    };
    Ok(Json(state.alarms.act(&state, request).await?))
}

fn shelve_action(body: &ActBody) -> ApiResult<ActionWire> {
    let reason = body
        .reason
        .as_deref()
        .map(str::trim)
        .filter(|r| !r.is_empty())
        .ok_or_else(|| ApiError::bad_request("field `reason` is required to shelve an alarm"))?;
    let now = crate::time::now_ms();
    let until_ms = match (&body.duration, &body.until) {
        (Some(d), None) => {
            let d = crate::duration::parse_duration(d)
                .map_err(|e| ApiError::bad_request(format!("field `duration`: {e}")))?;
            now.saturating_add(i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        }
        (None, Some(t)) => time_of("until", t)?,
        _ => {
            return Err(ApiError::bad_request(
                "give the shelve either a `duration` (such as 2h) or an `until` time, not both or neither",
            ))
        }
    };
    if until_ms <= now || until_ms - now > MAX_SHELVE_MS {
        return Err(ApiError::bad_request(
            "a shelve must end in the future and within 30 days",
        ));
    }
    Ok(ActionWire::Shelve {
        until_ms,
        reason: reason.to_string(),
    })
}

fn priority_of(text: &str) -> ApiResult<&'static str> {
    crate::alarms::Priority::parse(text)
        .map(|p| p.name())
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "`priority` must be low, medium, high or critical, not `{text}`"
            ))
        })
}

fn state_of(text: &str) -> ApiResult<StateName> {
    StateName::parse(text).ok_or_else(|| {
        let names: Vec<&str> = StateName::ALL.iter().map(|s| s.as_str()).collect();
        ApiError::bad_request(format!(
            "`state` must be one of {}, not `{text}`",
            names.join(", ")
        ))
    })
}

fn time_of(name: &str, text: &str) -> ApiResult<i64> {
    crate::time::parse_rfc3339(text)
        .map(|t| t.timestamp_millis())
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "`{name}` must be a time such as 2026-01-31T08:00:00Z, not `{text}`"
            ))
        })
}

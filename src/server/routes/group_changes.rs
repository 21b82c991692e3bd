//! Changing and removing groups (`/auth/group/{gid}…`): replacing a group's grants
//! (`PUT /auth/group/{gid} {"grants": […]}`, which is how a grant is revoked), taking a member
//! out (`DELETE /auth/group/{gid}/user/{uid}`) and deleting a group with its memberships
//! (`DELETE /auth/group/{gid}`). Same right as making them: `groups` read-write at `*` in the
//! active domain. Every change clears the cached grants, so the next request, MQTT packet or
//! stream check sees it.

use crate::model::{Grant, NamedGrant, Success};
use crate::server::error::{ApiError, ApiResult};
use crate::server::http::caller::{Access, Caller};
use crate::server::http::json::JsonBody;
use crate::server::routes::groups::{check_grants, FEATURE};
use crate::server::routes::users::{key_in, user_key};
use crate::server::AppState;
use axum::extract::{Path, State};
use axum::Json;
use serde::Deserialize;

/// The new grant list, in the interface's form (`grants`) or the SDK's (`features`).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupGrantsUpdate {
    #[serde(default)]
    grants: Vec<Grant>,
    #[serde(default)]
    features: Vec<NamedGrant>,
}

fn no_group(gid: &str, domain: &str) -> ApiError {
    ApiError::not_found(format!("no group `{gid}` in domain `{domain}`"))
}

/// Checks the right, finds the group's key in the caller's domain, runs `change` on the store
/// with (domain, group key) and clears the grant cache; `Ok(false)` when nothing matched.
async fn change_group(
    state: &AppState,
    caller: &Caller,
    gid: &str,
    change: impl FnOnce(&crate::store::Store, &str, &str) -> crate::store::StoreResult<bool>
        + Send
        + 'static,
) -> ApiResult<bool> {
    caller.require(state, FEATURE, "*", Access::Write).await?;
    let group = key_in(gid, &caller.domain, "groups")?;
    let domain = caller.domain.clone();
    let changed = state.store.run(move |s| change(s, &domain, &group)).await?;
    state.identities.clear();
    Ok(changed)
}

fn done(changed: bool, missing: impl FnOnce() -> ApiError) -> ApiResult<Json<Success>> {
    match changed {
        true => Ok(Json(Success::yes())),
        false => Err(missing()),
    }
}

#[utoipa::path(put, path = "/group/{gid}", tag = "groups", request_body = GroupGrantsUpdate,
    responses((status = 200, description = "The group's grants are replaced", body = Success)))]
pub(in crate::server) async fn set_grants(
    State(state): State<AppState>,
    caller: Caller,
    Path(gid): Path<String>,
    JsonBody(request): JsonBody<GroupGrantsUpdate>,
) -> ApiResult<Json<Success>> {
    let mut grants = request.grants;
    grants.extend(request.features.iter().map(|f| f.to_grant()));
    check_grants(&state, &caller.domain, &grants).await?;
    let changed = change_group(&state, &caller, &gid, move |s, domain, group| {
        s.set_group_grants(domain, group, &grants)
    })
    .await?;
    done(changed, || no_group(&gid, &caller.domain))
}

#[utoipa::path(delete, path = "/group/{gid}/user/{uid}", tag = "groups",
    responses((status = 200, description = "The user is no longer a member", body = Success)))]
pub(in crate::server) async fn remove_member(
    State(state): State<AppState>,
    caller: Caller,
    Path((gid, uid)): Path<(String, String)>,
) -> ApiResult<Json<Success>> {
    let user = user_key(&uid)?;
    let removed = change_group(&state, &caller, &gid, move |s, domain, group| {
        s.remove_group_member(domain, group, &user)
    })
    .await?;
    done(removed, || {
        ApiError::not_found(format!(
            "user `{uid}` is not a member of group `{gid}` in domain `{}`",
            caller.domain
        ))
    })
}

#[utoipa::path(delete, path = "/group/{gid}", tag = "groups",
    responses((status = 200, description = "The group is deleted", body = Success)))]
pub(in crate::server) async fn delete_group(
    State(state): State<AppState>,
    caller: Caller,
    Path(gid): Path<String>,
) -> ApiResult<Json<Success>> {
    let removed = change_group(&state, &caller, &gid, |s, domain, group| {
        s.delete_group(domain, group)
    })
    .await?;
    done(removed, || no_group(&gid, &caller.domain))
}

//! Groups and grants (`/auth/group…`, `/auth/permission`, also under `/svc/auth`). An
//! administrator, or anyone holding the `groups` feature at the domain scope (`*`) of the active
//! domain, manages that domain's groups: lists them with their members, creates them with
//! grants (the interface's `grants` or the SDK's `features`), adds members and adds grants
//! and change and remove them: replacing a group's grants (`PUT /auth/group/{gid}
//! {"grants": […]}`, which is how a grant is revoked), taking a member out and deleting a group
//! with its memberships. Every change clears the cached grants, so the next request, MQTT
//! packet or stream check sees it.
//! Importing custom actions and scopes stays an administrator's job.

use crate::model::{
    Grant, Group, GroupGrants, NamedGrant, NewGroupRequest, PermissionImport, PermissionList,
    Success,
};
use crate::server::error::{ApiError, ApiResult};
use crate::server::http::caller::{Access, Caller};
use crate::server::http::json::JsonBody;
use crate::server::routes::users::{key_in, user_key};
use crate::server::services::identity::{READ, READ_WRITE};
use crate::server::AppState;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use utoipa_axum::{router::OpenApiRouter, routes};

pub const FEATURE: &str = "groups";

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_groups, create_group))
        .routes(routes!(set_grants, delete_group))
        .routes(routes!(add_member, remove_member))
        .routes(routes!(effective_permissions, add_permissions))
}

#[utoipa::path(get, path = "/group", tag = "groups",
    responses((status = 200, description = "The domain's groups", body = Vec<Group>)))]
async fn list_groups(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<Vec<Group>>> {
    caller.require(&state, FEATURE, "*", Access::Read).await?;
    let domain = caller.domain;
    let groups = state
        .store
        .run(move |s| {
            let mut groups = s.list_groups(&domain)?;
            for group in &mut groups {
                let key = group.id.rsplit(':').next().unwrap_or_default().to_string();
                group.user_ids = s.group_member_ids(&domain, &key)?;
            }
            Ok(groups)
        })
        .await?;
    Ok(Json(groups))
}

/// Every grant names a feature and a scope, and an action the domain knows.
async fn check_grants(state: &AppState, domain: &str, grants: &[Grant]) -> ApiResult<()> {
    for grant in grants {
        if grant.feature.is_empty() || grant.scope.is_empty() || grant.action.is_empty() {
            return Err(ApiError::bad_request(
                "every grant needs a feature `name`, an `action` and a `scope`",
            ));
        }
        if grant.action == READ
            || grant.action == READ_WRITE
            || crate::store::built_in_actions(&grant.feature).any(|a| a == grant.action)
        {
            continue;
        }
        let (d, feature) = (domain.to_string(), grant.feature.clone());
        let custom = state
            .store
            .run(move |s| s.custom_actions(&d, &feature))
            .await?;
        if !custom.contains(&grant.action) {
            return Err(ApiError::bad_request(format!(
                "action `{}` is not configured for feature `{}` in domain `{domain}`",
                grant.action, grant.feature
            )));
        }
    }
    Ok(())
}

#[utoipa::path(post, path = "/group", tag = "groups", request_body = NewGroupRequest,
    responses((status = 201, description = "The new group", body = Group),
        (status = 409, description = "The group exists already")))]
async fn create_group(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(request): JsonBody<NewGroupRequest>,
) -> ApiResult<(StatusCode, Json<Group>)> {
    caller.require(&state, FEATURE, "*", Access::Write).await?;
    let name = request.name.trim().to_string();
    if name.is_empty() || name.len() > 128 {
        return Err(ApiError::bad_request("`name` must be 1 to 128 characters"));
    }
    let mut grants = request.grants;
    grants.extend(request.features.iter().map(|f| f.to_grant()));
    check_grants(&state, &caller.domain, &grants).await?;
    let domain = caller.domain.clone();
    let group = state
        .store
        .run(move |s| s.create_group(&domain, &name, &grants))
        .await?;
    state.identities.clear();
    Ok((StatusCode::CREATED, Json(group)))
}

#[utoipa::path(post, path = "/group/{gid}/user/{uid}", tag = "groups",
    responses((status = 200, description = "The user is a member", body = Success)))]
async fn add_member(
    State(state): State<AppState>,
    caller: Caller,
    Path((gid, uid)): Path<(String, String)>,
) -> ApiResult<Json<Success>> {
    caller.require(&state, FEATURE, "*", Access::Write).await?;
    let group = key_in(&gid, &caller.domain, "groups")?;
    let user = user_key(&uid)?;
    let domain = caller.domain.clone();
    let added = state
        .store
        .run(move |s| s.add_group_member(&domain, &group, &user))
        .await?;
    state.identities.clear();
    if added {
        Ok(Json(Success::yes()))
    } else {
        Err(ApiError::not_found(format!(
            "no group `{gid}` in domain `{}` or no user `{uid}`",
            caller.domain
        )))
    }
}

/// The caller's effective grants in the active domain; an administrator holds every action of
/// every feature the domain knows, at every scope.
#[utoipa::path(get, path = "/permission", tag = "groups",
    responses((status = 200, description = "The caller's effective permissions in the domain", body = PermissionList)))]
async fn effective_permissions(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<PermissionList>> {
    let (user, domain, admin) = (
        caller.user.key.clone(),
        caller.domain.clone(),
        caller.user.admin,
    );
    let permissions = state
        .store
        .run(move |s| {
            if admin {
                return s.admin_permissions(&domain);
            }
            Ok(s.grants_of(&user, &domain)?.named())
        })
        .await?;
    Ok(Json(PermissionList { permissions }))
}

/// The SDK's form (grants for a group) or the interface's (custom actions and scopes).
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
enum PermissionRequest {
    ToGroup(GroupGrants),
    Import(PermissionImport),
}

#[utoipa::path(post, path = "/permission", tag = "groups", request_body = PermissionRequest,
    responses((status = 404, description = "The body names a tag, flow, process, group or record that does not exist"),
        (status = 200, description = "The grants are added", body = Success)))]
async fn add_permissions(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(request): JsonBody<PermissionRequest>,
) -> ApiResult<Json<Success>> {
    match request {
        PermissionRequest::ToGroup(request) => grant_to_group(&state, &caller, request).await,
        PermissionRequest::Import(request) => import_permissions(&state, &caller, request).await,
    }
}

async fn grant_to_group(
    state: &AppState,
    caller: &Caller,
    request: GroupGrants,
) -> ApiResult<Json<Success>> {
    caller.require(state, FEATURE, "*", Access::Write).await?;
    let group = key_in(&request.group_id, &caller.domain, "groups")?;
    let grants: Vec<Grant> = request.permissions.iter().map(|p| p.to_grant()).collect();
    check_grants(state, &caller.domain, &grants).await?;
    let domain = caller.domain.clone();
    let added = state
        .store
        .run(move |s| s.add_group_grants(&domain, &group, &grants))
        .await?;
    state.identities.clear();
    if added {
        Ok(Json(Success::yes()))
    } else {
        Err(ApiError::not_found(format!(
            "no group `{}` in domain `{}`",
            request.group_id, caller.domain
        )))
    }
}

async fn import_permissions(
    state: &AppState,
    caller: &Caller,
    request: PermissionImport,
) -> ApiResult<Json<Success>> {
    caller.require_admin()?;
    let valid = |s: &str| !s.is_empty() && s.len() <= 64 && !s.chars().any(char::is_whitespace);
    let mut actions = Vec::new();
    for feature in &request.features {
        if !valid(&feature.name) {
            return Err(ApiError::bad_request(format!(
                "invalid feature name `{}`",
                feature.name
            )));
        }
        for action in &feature.actions {
            if !valid(action) {
                return Err(ApiError::bad_request(format!("invalid action `{action}`")));
            }
            if action != READ && action != READ_WRITE {
                actions.push((feature.name.clone(), action.clone()));
            }
        }
    }
    if let Some(bad) = request.scopes.iter().find(|s| !valid(s)) {
        return Err(ApiError::bad_request(format!("invalid scope `{bad}`")));
    }
    let (domain, scopes) = (caller.domain.clone(), request.scopes);
    state
        .store
        .run(move |s| s.add_permissions(&domain, &actions, &scopes))
        .await?;
    state.identities.clear();
    Ok(Json(Success::yes()))
}

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

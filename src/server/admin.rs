//! Administration routes (under `/auth` and `/svc/auth`, administrators only): domains, users,
//! groups with their grants and members, and per-domain custom actions.

use super::caller::{Caller, Identity, READ, READ_WRITE};
use super::credentials::hash_password;
use super::error::{ApiError, ApiResult};
use super::json::JsonBody;
use super::AppState;
use crate::ids::{is_domain_name, RecordId, ADMIN_DOMAIN};
use crate::model::{
    Domain, Group, NewDomainRequest, NewGroupRequest, NewUserRequest, PermissionImport, Success,
    User,
};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/domains", get(list_domains).post(create_domain))
        .route("/user", get(list_users).post(create_user))
        .route("/user/{id}", get(get_user).delete(delete_user))
        .route("/group", get(list_groups).post(create_group))
        .route("/group/{gid}/user/{uid}", post(add_member))
        .route("/permission", post(import_permissions))
}

impl Caller {
    fn require_admin(&self) -> ApiResult<()> {
        Identity(self.user.clone()).require_admin()
    }
}

async fn list_domains(
    State(state): State<AppState>,
    who: Identity,
) -> ApiResult<Json<Vec<Domain>>> {
    who.require_admin()?;
    Ok(Json(state.store.run(|s| s.list_domains()).await?))
}

async fn create_domain(
    State(state): State<AppState>,
    who: Identity,
    JsonBody(request): JsonBody<NewDomainRequest>,
) -> ApiResult<(StatusCode, Json<Domain>)> {
    who.require_admin()?;
    let name = request.name;
    if !is_domain_name(&name) {
        return Err(ApiError::bad_request(format!(
            "invalid domain name `{name}`: it must match [a-z][a-z0-9_]{{0,62}}"
        )));
    }
    let domain = state.store.run(move |s| s.create_domain(&name)).await?;
    state.auth_cache.clear();
    Ok((StatusCode::CREATED, Json(domain)))
}

async fn list_users(State(state): State<AppState>, who: Identity) -> ApiResult<Json<Vec<User>>> {
    who.require_admin()?;
    let users = state.store.run(|s| s.list_users()).await?;
    Ok(Json(users.iter().map(|u| u.to_model()).collect()))
}

async fn create_user(
    State(state): State<AppState>,
    who: Identity,
    JsonBody(request): JsonBody<NewUserRequest>,
) -> ApiResult<(StatusCode, Json<User>)> {
    who.require_admin()?;
    let username = request.username.trim().to_string();
    if username.is_empty() || username.len() > 128 || username.chars().any(char::is_control) {
        return Err(ApiError::bad_request(
            "`username` must be 1 to 128 printable characters",
        ));
    }
    if request.password.len() < 8 {
        return Err(ApiError::bad_request(
            "`password` must be at least 8 characters",
        ));
    }
    let password = request.password;
    let hash = tokio::task::spawn_blocking(move || hash_password(&password))
        .await
        .map_err(|_| ApiError::internal("cannot hash the password"))?
        .map_err(|_| ApiError::internal("cannot hash the password"))?;
    let admin = request.admin;
    let user = state
        .store
        .run(move |s| s.create_user(&username, &hash, admin))
        .await?;
    state.auth_cache.clear();
    Ok((StatusCode::CREATED, Json(user.to_model())))
}

/// A user key from a full RecordID (`svc_admin.users:<key>`) or a bare key.
fn user_key(id: &str) -> ApiResult<String> {
    key_in(id, ADMIN_DOMAIN, "users")
}

/// The key of `id` when it is a RecordID of `domain.table`, or a bare key.
fn key_in(id: &str, domain: &str, table: &str) -> ApiResult<String> {
    if !id.contains(':') {
        return match crate::ids::is_record_key(id) {
            true => Ok(id.to_string()),
            false => Err(ApiError::bad_request(format!("invalid id `{id}`"))),
        };
    }
    let parsed = RecordId::parse(id).map_err(ApiError::bad_request)?;
    if parsed.table.domain != domain || parsed.table.table != table {
        return Err(ApiError::not_found(format!(
            "no {table} record `{id}` in domain `{domain}`"
        )));
    }
    Ok(parsed.key)
}

async fn get_user(
    State(state): State<AppState>,
    who: Identity,
    Path(id): Path<String>,
) -> ApiResult<Json<User>> {
    who.require_admin()?;
    let key = user_key(&id)?;
    state
        .store
        .run(move |s| s.user_by_key(&key))
        .await?
        .map(|u| Json(u.to_model()))
        .ok_or_else(|| ApiError::not_found(format!("no user `{id}`")))
}

async fn delete_user(
    State(state): State<AppState>,
    who: Identity,
    Path(id): Path<String>,
) -> ApiResult<Json<Success>> {
    who.require_admin()?;
    let key = user_key(&id)?;
    if key == who.0.key {
        return Err(ApiError::bad_request("you cannot delete yourself"));
    }
    let user = key.clone();
    let removed = state.store.run(move |s| s.delete_user(&key)).await?;
    state.auth_cache.clear();
    if removed {
        if let Ok(broker) = state.broker() {
            broker.disconnect_where(|p| p.user_key == user).await;
        }
        Ok(Json(Success::yes()))
    } else {
        Err(ApiError::not_found(format!("no user `{id}`")))
    }
}

async fn list_groups(State(state): State<AppState>, caller: Caller) -> ApiResult<Json<Vec<Group>>> {
    caller.require_admin()?;
    let domain = caller.domain;
    Ok(Json(
        state.store.run(move |s| s.list_groups(&domain)).await?,
    ))
}

async fn create_group(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(request): JsonBody<NewGroupRequest>,
) -> ApiResult<(StatusCode, Json<Group>)> {
    caller.require_admin()?;
    let name = request.name.trim().to_string();
    if name.is_empty() || name.len() > 128 {
        return Err(ApiError::bad_request("`name` must be 1 to 128 characters"));
    }
    for grant in &request.grants {
        if grant.feature.is_empty() || grant.scope.is_empty() {
            return Err(ApiError::bad_request(
                "every grant needs a `feature` and a `scope`",
            ));
        }
        if grant.action == READ || grant.action == READ_WRITE {
            continue;
        }
        let (domain, feature) = (caller.domain.clone(), grant.feature.clone());
        let custom = state
            .store
            .run(move |s| s.custom_actions(&domain, &feature))
            .await?;
        if !custom.contains(&grant.action) {
            return Err(ApiError::bad_request(format!(
                "action `{}` is not configured for feature `{}` in domain `{}`",
                grant.action, grant.feature, caller.domain
            )));
        }
    }
    let domain = caller.domain.clone();
    let grants = request.grants;
    let group = state
        .store
        .run(move |s| s.create_group(&domain, &name, &grants))
        .await?;
    state.auth_cache.clear();
    Ok((StatusCode::CREATED, Json(group)))
}

async fn add_member(
    State(state): State<AppState>,
    caller: Caller,
    Path((gid, uid)): Path<(String, String)>,
) -> ApiResult<Json<Success>> {
    caller.require_admin()?;
    let group = key_in(&gid, &caller.domain, "groups")?;
    let user = user_key(&uid)?;
    let domain = caller.domain.clone();
    let added = state
        .store
        .run(move |s| s.add_group_member(&domain, &group, &user))
        .await?;
    state.auth_cache.clear();
    if added {
        Ok(Json(Success::yes()))
    } else {
        Err(ApiError::not_found(format!(
            "no group `{gid}` in domain `{}` or no user `{uid}`",
            caller.domain
        )))
    }
}

async fn import_permissions(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(request): JsonBody<PermissionImport>,
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
    state.auth_cache.clear();
    Ok(Json(Success::yes()))
}

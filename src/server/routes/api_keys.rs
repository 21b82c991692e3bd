//! API keys (`/auth/keys…`, also under `/svc/auth`). Every user creates, lists and revokes
//! its own keys (the `api_keys` feature's `self` scope, which everyone holds). With `api_keys`
//! at scope `all` in the active domain, a user also lists (`read`) and revokes (`read-write`)
//! the keys of that domain's users (those in one of its groups): `GET /auth/keys?scope=all`,
//! `DELETE /auth/keys/:id?scope=all`. An administrator reaches every key that way. Without
//! `scope=all` a route touches only the caller's own keys, as the interface says.
//!
//! A key remembers the domain it was made in (the `Domain` header of its creation, as the
//! console's Developer Keys page sends it): a topic the key publishes first, no namespace
//! covering it and no domain owning it, becomes a tag of that domain ([`crate::server::services::mqtt_policy`]). Keys
//! made in `svc_admin` carry none, as every key from before.

use crate::ids::ADMIN_DOMAIN;
use crate::model::{ApiKeyInfo, NewApiKey, NewApiKeyRequest, Success};
use crate::server::error::{ApiError, ApiResult};
use crate::server::http::caller::{Access, Caller};
use crate::server::http::json::JsonBody;
use crate::server::services::credentials::new_api_key;
use crate::server::AppState;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use utoipa_axum::{router::OpenApiRouter, routes};

pub const FEATURE: &str = "api_keys";
/// The scope of other users' keys.
const ALL: &str = "all";

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_key, list_keys))
        .routes(routes!(revoke_key))
}

#[utoipa::path(post, path = "/keys", tag = "auth", request_body = NewApiKeyRequest,
    responses((status = 201, description = "The new key, with its secret (shown only once)", body = NewApiKey)))]
async fn create_key(
    State(state): State<AppState>,
    Caller { user, domain }: Caller,
    JsonBody(request): JsonBody<NewApiKeyRequest>,
) -> ApiResult<(StatusCode, Json<NewApiKey>)> {
    let name = request.name.trim().to_string();
    if name.is_empty() || name.len() > 200 {
        return Err(ApiError::bad_request("`name` must be 1 to 200 characters"));
    }
    let (key, prefix, hash) = new_api_key();
    let domain = (domain != ADMIN_DOMAIN).then_some(domain);
    let info = state
        .store
        .run(move |s| s.create_api_key(&user.key, &name, &prefix, &hash, domain.as_deref()))
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(NewApiKey {
            success: true,
            id: info.id,
            name: info.name,
            key,
            prefix: info.prefix,
            created_dt: info.created_dt,
            domain: info.domain,
        }),
    ))
}

#[derive(Deserialize)]
struct KeysQuery {
    scope: Option<String>,
}

impl KeysQuery {
    /// Whether `scope=all` was asked for (`self`, the default, is the caller's own keys).
    fn all(&self) -> ApiResult<bool> {
        match self.scope.as_deref() {
            None | Some("self") => Ok(false),
            Some(ALL) => Ok(true),
            Some(other) => Err(ApiError::bad_request(format!(
                "invalid query parameter `scope`: `{other}` is neither `self` nor `all`"
            ))),
        }
    }
}

#[utoipa::path(get, path = "/keys", tag = "auth", params(("scope" = Option<String>, Query, pattern = "^(self|all)$", description = "`self` (the default): the caller's own keys; `all`: every user's (administrators)")),
    responses((status = 200, description = "The keys, without their secrets", body = Vec<ApiKeyInfo>)))]
async fn list_keys(
    State(state): State<AppState>,
    caller: Caller,
    Query(query): Query<KeysQuery>,
) -> ApiResult<Json<Vec<ApiKeyInfo>>> {
    let keys = if query.all()? {
        caller.require(&state, FEATURE, ALL, Access::Read).await?;
        let domain = (!caller.user.admin).then(|| caller.domain.clone());
        state
            .store
            .run(move |s| s.api_keys_of_users(domain.as_deref()))
            .await?
    } else {
        let user = caller.user.key.clone();
        state.store.run(move |s| s.list_api_keys(&user)).await?
    };
    Ok(Json(keys))
}

/// Whose key `id` is, when the caller may revoke it: its own, or with `scope=all` (and
/// `api_keys` `all` read-write) one of a user of the active domain; an administrator, any.
async fn revocable_owner(
    state: &AppState,
    caller: &Caller,
    id: &str,
    all: bool,
) -> ApiResult<Option<String>> {
    let lookup = id.to_string();
    let Some(owner) = state.store.run(move |s| s.api_key_user(&lookup)).await? else {
        return Ok(None);
    };
    if owner == caller.user.key {
        return Ok(Some(owner));
    }
    if !all {
        return Ok(None);
    }
    if caller.user.admin {
        return Ok(Some(owner));
    }
    if caller
        .require(state, FEATURE, ALL, Access::Write)
        .await
        .is_err()
    {
        return Ok(None);
    }
    let (user, domain) = (owner.clone(), caller.domain.clone());
    let in_domain = state
        .store
        .run(move |s| Ok(!s.user_group_ids(&user, Some(&domain))?.is_empty()))
        .await?;
    Ok(in_domain.then_some(owner))
}

#[utoipa::path(delete, path = "/keys/{id}", tag = "auth", params(("scope" = Option<String>, Query, pattern = "^(self|all)$", description = "`self` (the default): the caller's own keys; `all`: every user's (administrators)")),
    responses((status = 200, description = "The key is revoked", body = Success)))]
async fn revoke_key(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Query(query): Query<KeysQuery>,
) -> ApiResult<Json<Success>> {
    let all = query.all()?;
    let key = id.rsplit(':').next().unwrap_or_default().to_string();
    let Some(owner) = revocable_owner(&state, &caller, &id, all).await? else {
        return Err(ApiError::not_found("you have no API key with this id"));
    };
    let removed = state
        .store
        .run(move |s| s.delete_api_key(&owner, &id))
        .await?;
    state.identities.clear();
    if removed {
        if let Ok(broker) = state.broker() {
            broker
                .disconnect_where(|p| p.api_key_id.as_deref() == Some(key.as_str()))
                .await;
        }
        Ok(Json(Success::yes()))
    } else {
        Err(ApiError::not_found("you have no API key with this id"))
    }
}

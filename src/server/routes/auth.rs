//! Authentication routes (mounted under `/auth` and `/svc/auth`): login, the permission
//! reports and checks, `me`, and token validation. API keys are in [`crate::server::routes::api_keys`].

use crate::model::{
    LoginRequest, LoginResponse, PermissionCheck, PermissionResponse, User, ValidateTokenRequest,
    ValidateTokenResponse,
};
use crate::server::error::{ApiError, ApiResult};
use crate::server::http::caller::{Caller, Identity};
use crate::server::http::errors::LoginRefusal;
use crate::server::http::json::JsonBody;
use crate::server::AppState;
use axum::extract::{ConnectInfo, Path, State};
use axum::Json;
use std::net::SocketAddr;
use utoipa_axum::{router::OpenApiRouter, routes};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(login))
        .routes(routes!(permission))
        .routes(routes!(domain_permission))
        .routes(routes!(check))
        .routes(routes!(check_domain_scope))
        .routes(routes!(me))
        .routes(routes!(validate_token))
}

const BAD_LOGIN: &str = "invalid username or password";

/// Checks a user name and password; failures are counted per name and client address, and a
/// locked name or address is refused (429 with `Retry-After`) without checking the password.
#[utoipa::path(post, path = "/login", tag = "auth", security(()),
    request_body = LoginRequest,
    responses((status = 200, description = "A token for the user", body = LoginResponse),
        (status = 401, description = "Invalid username or password"),
        (status = 429, description = "Too many failed logins; retry after `Retry-After` seconds")))]
async fn login(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    JsonBody(request): JsonBody<LoginRequest>,
) -> Result<Json<LoginResponse>, LoginRefusal> {
    let throttle = &state.identities.login_throttle;
    if let Err(throttled) = throttle.check(&request.username, peer.ip()) {
        crate::telemetry::get().login_refused("http", "throttled");
        return Err(LoginRefusal::Throttled(throttled));
    }
    match state
        .identities
        .user_of_password(&request.username, &request.password)
        .await?
    {
        Some(user) => {
            throttle.succeeded(&request.username);
            let tkn = state
                .identities
                .jwt
                .issue(&user)
                .map_err(|_| ApiError::internal("cannot sign the token"))?;
            Ok(Json(LoginResponse { success: true, tkn }))
        }
        None => {
            throttle.failed(&request.username, peer.ip());
            crate::telemetry::get().login_refused("http", "failure");
            Err(ApiError::unauthorized(BAD_LOGIN).into())
        }
    }
}

#[utoipa::path(get, path = "/permission/action/feature/{feature}/scope/{scope}", tag = "auth",
    responses((status = 200, description = "The caller's actions on the feature at the scope", body = PermissionResponse)))]
async fn permission(
    State(state): State<AppState>,
    caller: Caller,
    Path((feature, scope)): Path<(String, String)>,
) -> ApiResult<Json<PermissionResponse>> {
    let actions = caller.actions(&state, &feature, &scope).await?;
    Ok(Json(PermissionResponse { actions }))
}

/// `GET /auth/permission/action/feature/:feature`: the domain scope (grants on `*`).
#[utoipa::path(get, path = "/permission/action/feature/{feature}", tag = "auth",
    responses((status = 200, description = "The caller's actions on the feature in the whole domain", body = PermissionResponse)))]
async fn domain_permission(
    State(state): State<AppState>,
    caller: Caller,
    Path(feature): Path<String>,
) -> ApiResult<Json<PermissionResponse>> {
    let actions = caller.actions(&state, &feature, DOMAIN_SCOPE).await?;
    Ok(Json(PermissionResponse { actions }))
}

/// The scope a grant covers the whole domain with, and what a check without a scope asks.
const DOMAIN_SCOPE: &str = "*";

/// Whether the caller holds `action` on `feature` at `scope` (`read-write` implies `read`).
#[utoipa::path(get, path = "/permission/check/feature/{feature}/scope/{scope}/action/{action}", tag = "auth",
    responses((status = 200, description = "Whether the caller holds the action", body = PermissionCheck)))]
async fn check(
    State(state): State<AppState>,
    caller: Caller,
    Path((feature, scope, action)): Path<(String, String, String)>,
) -> ApiResult<Json<PermissionCheck>> {
    let actions = caller.actions(&state, &feature, &scope).await?;
    Ok(Json(PermissionCheck {
        success: true,
        permission: actions.contains(&action),
    }))
}

#[utoipa::path(get, path = "/permission/check/feature/{feature}/action/{action}", tag = "auth",
    responses((status = 200, description = "Whether the caller holds the action in the whole domain", body = PermissionCheck)))]
async fn check_domain_scope(
    state: State<AppState>,
    caller: Caller,
    Path((feature, action)): Path<(String, String)>,
) -> ApiResult<Json<PermissionCheck>> {
    check(
        state,
        caller,
        Path((feature, DOMAIN_SCOPE.to_string(), action)),
    )
    .await
}

/// The caller with its profile and every group it belongs to.
#[utoipa::path(get, path = "/me", tag = "auth",
    responses((status = 200, description = "The caller with its profile and groups", body = User)))]
async fn me(State(state): State<AppState>, Identity(user): Identity) -> ApiResult<Json<User>> {
    let key = user.key.clone();
    let (profile, groups) = state
        .store
        .run(move |s| Ok((s.user_profile(&key)?, s.user_group_ids(&key, None)?)))
        .await?;
    Ok(Json(user.to_model(profile, groups)))
}

#[utoipa::path(post, path = "/jwt/validate", tag = "auth",
    request_body = ValidateTokenRequest,
    responses((status = 200, description = "Whether the token is valid", body = ValidateTokenResponse)))]
async fn validate_token(
    State(state): State<AppState>,
    _caller: Identity,
    JsonBody(request): JsonBody<ValidateTokenRequest>,
) -> Json<ValidateTokenResponse> {
    let valid = state.identities.user_of_token(&request.token).await.is_ok();
    Json(ValidateTokenResponse { valid })
}

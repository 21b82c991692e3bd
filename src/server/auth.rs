//! Authentication routes (mounted under `/auth` and `/svc/auth`): login, the permission
//! reports and checks, `me`, and token validation. API keys are in [`super::api_keys`].

use super::caller::user_of_password;
use super::caller::{Caller, Identity};
use super::error::{ApiError, ApiResult};
use super::json::JsonBody;
use super::AppState;
use crate::model::{
    LoginRequest, LoginResponse, PermissionCheck, PermissionResponse, User, ValidateTokenRequest,
    ValidateTokenResponse,
};
use axum::extract::{Path, State};
use axum::routing::{get, post};
use axum::{Json, Router};

pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/login", post(login))
        .route(
            "/permission/action/feature/{feature}/scope/{scope}",
            get(permission),
        )
        .route(
            "/permission/action/feature/{feature}",
            get(domain_permission),
        )
        .route(
            "/permission/check/feature/{feature}/scope/{scope}/action/{action}",
            get(check),
        )
        .route(
            "/permission/check/feature/{feature}/action/{action}",
            get(check_domain_scope),
        )
        .route("/me", get(me))
        .route("/jwt/validate", post(validate_token))
}

const BAD_LOGIN: &str = "invalid username or password";

async fn login(
    State(state): State<AppState>,
    JsonBody(request): JsonBody<LoginRequest>,
) -> ApiResult<Json<LoginResponse>> {
    match user_of_password(&state, &request.username, &request.password).await? {
        Some(user) => {
            let tkn = state
                .jwt
                .issue(&user)
                .map_err(|_| ApiError::internal("cannot sign the token"))?;
            Ok(Json(LoginResponse { success: true, tkn }))
        }
        None => Err(ApiError::unauthorized(BAD_LOGIN)),
    }
}

async fn permission(
    State(state): State<AppState>,
    caller: Caller,
    Path((feature, scope)): Path<(String, String)>,
) -> ApiResult<Json<PermissionResponse>> {
    let actions = caller.actions(&state, &feature, &scope).await?;
    Ok(Json(PermissionResponse { actions }))
}

/// `GET /auth/permission/action/feature/:feature`: the domain scope (grants on `*`).
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
async fn me(State(state): State<AppState>, Identity(user): Identity) -> ApiResult<Json<User>> {
    let key = user.key.clone();
    let (profile, groups) = state
        .store
        .run(move |s| Ok((s.user_profile(&key)?, s.user_group_ids(&key, None)?)))
        .await?;
    Ok(Json(user.to_model(profile, groups)))
}

async fn validate_token(
    State(state): State<AppState>,
    _caller: Identity,
    JsonBody(request): JsonBody<ValidateTokenRequest>,
) -> Json<ValidateTokenResponse> {
    let valid = super::caller::user_of_token(&state, &request.token)
        .await
        .is_ok();
    Json(ValidateTokenResponse { valid })
}

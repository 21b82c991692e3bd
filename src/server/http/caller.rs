//! Who is calling and in which domain: credential checking (JWT, API key, both-headers rule),
//! the `Domain` header, and permission checks, with an in-memory cache of identity data that
//! every identity write clears.

use crate::ids::{parse_domain_header, ADMIN_DOMAIN};
use crate::server::error::{ApiError, ApiResult};
use crate::server::services::identity::{READ, READ_WRITE};
use crate::server::AppState;
use crate::store::{AuthUser, GrantSet};
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use std::sync::Arc;

pub const API_KEY_HEADER: &str = "x-svc-api-key";

/// An authenticated user (routes that need no domain).
pub struct Identity(pub Arc<AuthUser>);

/// An authenticated user acting in a domain (every data-plane route).
pub struct Caller {
    pub user: Arc<AuthUser>,
    pub domain: String,
}

/// The user a layer already authenticated for this request (the request log needs it), put in
/// the request's extensions so the extractors do not check the credential a second time.
#[derive(Clone)]
pub struct Authenticated(pub Arc<AuthUser>);

/// The request's user: the one already [`Authenticated`], else from its credential headers.
async fn user_of_request(state: &AppState, parts: &Parts) -> ApiResult<Arc<AuthUser>> {
    match parts.extensions.get::<Authenticated>() {
        Some(Authenticated(user)) => Ok(user.clone()),
        None => authenticate(state, &parts.headers).await,
    }
}

impl FromRequestParts<AppState> for Identity {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> ApiResult<Identity> {
        user_of_request(state, parts).await.map(Identity)
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> ApiResult<Caller> {
        let domain = domain_of(&parts.headers)?;
        let user = user_of_request(state, parts).await?;
        if !state.identities.domain_exists(&domain).await? {
            return Err(ApiError::bad_request(format!(
                "unknown domain `domains:{domain}`"
            )));
        }
        Ok(Caller { user, domain })
    }
}

/// The active domain: the `Domain` header, or `svc_admin` without one.
pub fn domain_of(headers: &HeaderMap) -> ApiResult<String> {
    match headers.get("domain") {
        None => Ok(ADMIN_DOMAIN.to_string()),
        Some(value) => {
            let text = value
                .to_str()
                .map_err(|_| ApiError::bad_request("invalid Domain header: not ASCII text"))?;
            parse_domain_header(text)
                .map(str::to_string)
                .map_err(ApiError::bad_request)
        }
    }
}

/// Checks the credential headers; when both are sent both must be valid and the JWT's user acts.
pub async fn authenticate(state: &AppState, headers: &HeaderMap) -> ApiResult<Arc<AuthUser>> {
    let bearer = match headers.get(header::AUTHORIZATION) {
        None => None,
        Some(value) => Some(
            value
                .to_str()
                .ok()
                .and_then(|v| v.strip_prefix("Bearer "))
                .map(str::trim)
                .filter(|t| !t.is_empty())
                .ok_or_else(|| {
                    ApiError::unauthorized("the Authorization header must be `Bearer <token>`")
                })?,
        ),
    };
    let api_key = match headers.get(API_KEY_HEADER) {
        None => None,
        Some(value) => Some(
            value
                .to_str()
                .map_err(|_| ApiError::unauthorized("invalid API key"))?
                .trim(),
        ),
    };
    let key_user = match api_key {
        Some(key) => Some(state.identities.user_of_api_key(key).await?.0),
        None => None,
    };
    match (bearer, key_user) {
        (Some(token), _) => state.identities.user_of_token(token).await,
        (None, Some(user)) => Ok(user),
        (None, None) => Err(ApiError::unauthorized(
            "a credential is required: send Authorization: Bearer <token> or X-Svc-Api-Key",
        )),
    }
}

/// What a request needs to be allowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

impl Caller {
    /// The actions this caller holds for a feature and scope in its domain.
    pub async fn actions(
        &self,
        state: &AppState,
        feature: &str,
        scope: &str,
    ) -> ApiResult<Vec<String>> {
        if self.user.admin {
            let (domain, feature_name) = (self.domain.clone(), feature.to_string());
            let mut actions = vec![READ.to_string(), READ_WRITE.to_string()];
            actions.extend(
                state
                    .store
                    .run(move |s| s.custom_actions(&domain, &feature_name))
                    .await?,
            );
            actions.extend(crate::store::built_in_actions(feature).map(str::to_string));
            actions.sort();
            actions.dedup();
            return Ok(actions);
        }
        Ok(self.grants(state).await?.actions(feature, scope))
    }

    async fn grants(&self, state: &AppState) -> ApiResult<Arc<GrantSet>> {
        state
            .identities
            .grants_of(&self.user.key, &self.domain)
            .await
    }

    /// Fails with 401 unless the caller may read (or write) `feature` at `scope`.
    /// Requires the custom `action` of `feature` (scope `*`), which `read-write` includes:
    /// an operator's verb such as the alarms' `ack` (401 otherwise).
    pub async fn require_action(
        &self,
        state: &AppState,
        feature: &str,
        action: &str,
    ) -> ApiResult<()> {
        if self.user.admin {
            return Ok(());
        }
        let actions = self.grants(state).await?.actions(feature, "*");
        if actions.iter().any(|a| a == action || a == READ_WRITE) {
            return Ok(());
        }
        Err(ApiError::unauthorized(format!(
            "not allowed to {action} {feature} in domain `{}`: it needs the `{action}` or `read-write` action",
            self.domain
        )))
    }

    pub async fn require(
        &self,
        state: &AppState,
        feature: &str,
        scope: &str,
        access: Access,
    ) -> ApiResult<()> {
        if self.user.admin {
            return Ok(());
        }
        let actions = self.grants(state).await?.actions(feature, scope);
        let allowed = match access {
            Access::Read => actions.iter().any(|a| a == READ || a == READ_WRITE),
            Access::Write => actions.iter().any(|a| a == READ_WRITE),
        };
        if allowed {
            Ok(())
        } else {
            let verb = if access == Access::Read {
                "read"
            } else {
                "write"
            };
            Err(ApiError::unauthorized(format!(
                "not allowed to {verb} {feature} `{scope}` in domain `{}`",
                self.domain
            )))
        }
    }
}

impl Caller {
    /// The record id `id` names, when it is a record of the caller's domain's system table
    /// `table` (404 naming it as a `noun` otherwise): a route on one upstream or connector.
    pub fn own_record(&self, id: &str, table: &str, noun: &str) -> ApiResult<crate::ids::RecordId> {
        let id = crate::ids::RecordId::parse(id).map_err(ApiError::bad_request)?;
        if id.table.domain != self.domain || id.table.table != table {
            return Err(ApiError::not_found(format!("no {noun} `{id}`")));
        }
        Ok(id)
    }

    pub fn require_admin(&self) -> ApiResult<()> {
        Identity(self.user.clone()).require_admin()
    }
}

impl Identity {
    pub fn require_admin(&self) -> ApiResult<()> {
        if self.0.admin {
            Ok(())
        } else {
            Err(ApiError::unauthorized("this route needs an administrator"))
        }
    }
}

/// The credential of a long-lived response (an event stream), checked again whenever grants,
/// keys or users changed since the last look: a revoked credential or read grant ends it.
pub struct Recheck {
    headers: HeaderMap,
    feature: &'static str,
    generation: u64,
}

impl Recheck {
    pub fn new(state: &AppState, headers: HeaderMap, feature: &'static str) -> Recheck {
        Recheck {
            headers,
            feature,
            generation: state.authz_generation(),
        }
    }

    /// Whether `caller` may still read the feature (the sentence of the refusal if not); the
    /// credential is authenticated anew only when something it depends on changed.
    pub async fn still_allowed(
        &mut self,
        state: &AppState,
        caller: &mut Caller,
    ) -> Result<(), String> {
        let now = state.authz_generation();
        if now == self.generation {
            return Ok(());
        }
        self.generation = now;
        caller.user = authenticate(state, &self.headers)
            .await
            .map_err(|e| e.message)?;
        caller
            .require(state, self.feature, "*", Access::Read)
            .await
            .map_err(|e| e.message)
    }
}

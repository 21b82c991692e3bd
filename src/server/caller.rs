//! Who is calling and in which domain: credential checking (JWT, API key, both-headers rule),
//! the `Domain` header, and permission checks, with an in-memory cache of identity data that
//! every identity write clears.

use super::credentials::{hash_api_key, API_KEY_PREFIX};
use super::error::{ApiError, ApiResult};
use super::AppState;
use crate::ids::{parse_domain_header, ADMIN_DOMAIN};
use crate::store::{ApiKeyOwner, AuthUser, GrantSet};
use crate::time::now_rfc3339;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, HeaderMap};
use foldhash::{HashMap, HashSet};
use std::borrow::Borrow;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

pub const API_KEY_HEADER: &str = "x-svc-api-key";
/// How often a key's `last_used_dt` is written at most.
const TOUCH_INTERVAL: Duration = Duration::from_secs(60);

/// Built-in actions every domain knows.
pub const READ: &str = "read";
pub const READ_WRITE: &str = "read-write";

/// Identity data read on every request, cached; any identity write calls [`AuthCache::clear`].
#[derive(Default)]
pub struct AuthCache {
    users: RwLock<HashMap<String, Arc<AuthUser>>>,
    /// API key hash → the key. Only known keys are cached.
    keys: RwLock<HashMap<String, ApiKeyOwner>>,
    /// User key → domain → grants.
    grants: RwLock<HashMap<String, HashMap<String, Arc<GrantSet>>>>,
    domains: RwLock<HashSet<String>>,
    /// Tokens whose signature checked out → (user key, expiry in epoch seconds).
    tokens: RwLock<HashMap<String, (String, i64)>>,
    touched: Mutex<HashMap<String, Instant>>,
    /// Bumped by every clear, so caches elsewhere (the broker's authorization decisions) know
    /// to start over.
    generation: std::sync::atomic::AtomicU64,
}

/// Verified tokens remembered at most; the map starts over when full.
const TOKEN_CACHE: usize = 10_000;

impl AuthCache {
    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::Acquire)
    }

    pub fn clear(&self) {
        self.generation
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        if let Ok(mut m) = self.users.write() {
            m.clear();
        }
        if let Ok(mut m) = self.keys.write() {
            m.clear();
        }
        if let Ok(mut m) = self.grants.write() {
            m.clear();
        }
        if let Ok(mut m) = self.domains.write() {
            m.clear();
        }
        if let Ok(mut m) = self.tokens.write() {
            m.clear();
        }
    }
}

fn cached<K, Q, V>(map: &RwLock<HashMap<K, V>>, key: &Q) -> Option<V>
where
    K: Borrow<Q> + std::hash::Hash + Eq,
    Q: std::hash::Hash + Eq + ?Sized,
    V: Clone,
{
    map.read().ok().and_then(|m| m.get(key).cloned())
}

fn remember<K: std::hash::Hash + Eq, V>(map: &RwLock<HashMap<K, V>>, key: K, value: V) {
    if let Ok(mut m) = map.write() {
        m.insert(key, value);
    }
}

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
        if !domain_exists(state, &domain).await? {
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

pub async fn domain_exists(state: &AppState, domain: &str) -> ApiResult<bool> {
    let cache = &state.auth_cache.domains;
    if cache.read().is_ok_and(|d| d.contains(domain)) {
        return Ok(true);
    }
    let domains = state.store.reads().list_domains().await?;
    let exists = domains.iter().any(|d| d.name == domain);
    if let Ok(mut set) = cache.write() {
        set.extend(domains.into_iter().map(|d| d.name));
    }
    Ok(exists)
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
        Some(key) => Some(user_of_api_key(state, key).await?.0),
        None => None,
    };
    match (bearer, key_user) {
        (Some(token), _) => user_of_token(state, token).await,
        (None, Some(user)) => Ok(user),
        (None, None) => Err(ApiError::unauthorized(
            "a credential is required: send Authorization: Bearer <token> or X-Svc-Api-Key",
        )),
    }
}

pub async fn user_of_token(state: &AppState, token: &str) -> ApiResult<Arc<AuthUser>> {
    let invalid = || ApiError::unauthorized("invalid or expired token; log in again");
    let now = chrono::Utc::now().timestamp();
    let key = match cached(&state.auth_cache.tokens, token) {
        Some((key, exp)) if exp > now => key,
        _ => {
            let claims = state.jwt.verify(token).ok_or_else(invalid)?;
            let key = claims
                .sub
                .strip_prefix(&format!("{ADMIN_DOMAIN}.users:"))
                .ok_or_else(invalid)?
                .to_string();
            if let Ok(mut tokens) = state.auth_cache.tokens.write() {
                if tokens.len() >= TOKEN_CACHE {
                    tokens.clear();
                }
                tokens.insert(token.to_string(), (key.clone(), claims.exp));
            }
            key
        }
    };
    user_by_key(state, key).await?.ok_or_else(invalid)
}

/// The owner of an API key, and the key (its id and domain).
pub async fn user_of_api_key(
    state: &AppState,
    key: &str,
) -> ApiResult<(Arc<AuthUser>, ApiKeyOwner)> {
    let invalid = || ApiError::unauthorized("invalid API key");
    if !key.starts_with(API_KEY_PREFIX) {
        return Err(invalid());
    }
    let hash = hash_api_key(key);
    let owner = match cached(&state.auth_cache.keys, &hash) {
        Some(owner) => owner,
        None => {
            let owner = state
                .store
                .reads()
                .api_key_owner(&hash)
                .await?
                .ok_or_else(invalid)?;
            remember(&state.auth_cache.keys, hash, owner.clone());
            owner
        }
    };
    touch_key(state, owner.key.clone());
    let user = user_by_key(state, owner.user_key.clone())
        .await?
        .ok_or_else(invalid)?;
    Ok((user, owner))
}

/// Records a key's use, at most once per [`TOUCH_INTERVAL`], off the request path.
fn touch_key(state: &AppState, key_id: String) {
    let due = state.auth_cache.touched.lock().is_ok_and(|mut touched| {
        let now = Instant::now();
        match touched.get(&key_id) {
            Some(last) if now.duration_since(*last) < TOUCH_INTERVAL => false,
            _ => {
                touched.insert(key_id.clone(), now);
                true
            }
        }
    });
    if due {
        let store = state.store.clone();
        tokio::spawn(async move {
            let when = now_rfc3339();
            if let Err(e) = store.run(move |s| s.touch_api_key(&key_id, &when)).await {
                tracing::warn!(error = %e, "could not record API key use");
            }
        });
    }
}

async fn user_by_key(state: &AppState, key: String) -> ApiResult<Option<Arc<AuthUser>>> {
    if let Some(user) = cached(&state.auth_cache.users, &key) {
        return Ok(Some(user));
    }
    let Some(user) = state.store.reads().user_by_key(&key).await? else {
        return Ok(None);
    };
    let user = Arc::new(user);
    remember(&state.auth_cache.users, key, user.clone());
    Ok(Some(user))
}

/// Every grant a user holds in a domain (cached).
pub async fn grants_of(state: &AppState, user_key: &str, domain: &str) -> ApiResult<Arc<GrantSet>> {
    let known = state.auth_cache.grants.read().ok().and_then(|users| {
        users
            .get(user_key)
            .and_then(|domains| domains.get(domain).cloned())
    });
    if let Some(grants) = known {
        return Ok(grants);
    }
    let grants = Arc::new(state.store.reads().grants_of(user_key, domain).await?);
    if let Ok(mut users) = state.auth_cache.grants.write() {
        users
            .entry(user_key.to_string())
            .or_default()
            .insert(domain.to_string(), grants.clone());
    }
    Ok(grants)
}

/// The user a username and password belong to (argon2 runs off the async threads).
pub async fn user_of_password(
    state: &AppState,
    username: &str,
    password: &str,
) -> ApiResult<Option<AuthUser>> {
    let name = username.to_string();
    let found = state
        .store
        .run(move |s| s.user_with_password(&name))
        .await?;
    // Unknown users still pay for one hash check, so timing does not reveal which names exist.
    let (user, hash) = match found {
        Some((user, hash)) => (Some(user), hash),
        None => (None, super::credentials::dummy_hash().to_string()),
    };
    let password = password.to_string();
    let matches =
        tokio::task::spawn_blocking(move || super::credentials::verify_password(&password, &hash))
            .await
            .unwrap_or(false);
    Ok(user.filter(|_| matches))
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
            actions.sort();
            actions.dedup();
            return Ok(actions);
        }
        Ok(self.grants(state).await?.actions(feature, scope))
    }

    async fn grants(&self, state: &AppState) -> ApiResult<Arc<GrantSet>> {
        grants_of(state, &self.user.key, &self.domain).await
    }

    /// Fails with 401 unless the caller may read (or write) `feature` at `scope`.
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

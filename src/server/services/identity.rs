//! Who a credential belongs to: JWTs, `svcx_` API keys and passwords checked against the
//! store, the grants a user holds in a domain, and which domains exist, with an in-memory cache
//! of this identity data that every identity write clears (here or on another instance).

use crate::ids::ADMIN_DOMAIN;
use crate::server::error::{ApiError, ApiResult};
use crate::server::services::credentials::{self, hash_api_key, Jwt, API_KEY_PREFIX};
use crate::server::services::login_throttle::LoginThrottle;
use crate::store::{ApiKeyOwner, AuthUser, GrantSet, Store};
use crate::time::now_rfc3339;
use foldhash::{HashMap, HashSet};
use std::borrow::Borrow;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// How often a key's `last_used_dt` is written at most.
const TOUCH_INTERVAL: Duration = Duration::from_secs(60);

/// The identity service: one per server, shared by HTTP requests and MQTT connections.
pub struct Identities {
    store: Store,
    /// Signs and checks the HS256 tokens of `POST /auth/login`.
    pub jwt: Arc<Jwt>,
    /// Failed password logins per user name and address (HTTP and MQTT).
    pub login_throttle: LoginThrottle,
    cache: AuthCache,
}

/// Identity data read on every request, cached; any identity write calls [`AuthCache::clear`].
#[derive(Default)]
struct AuthCache {
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

/// Built-in actions every domain knows.
pub const READ: &str = "read";
pub const READ_WRITE: &str = "read-write";
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

impl Identities {
    pub fn new(store: Store, jwt: Arc<Jwt>, login_throttle: LoginThrottle) -> Identities {
        Identities {
            store,
            jwt,
            login_throttle,
            cache: AuthCache::default(),
        }
    }

    /// Changes whenever an identity write cleared the cache ([`Identities::clear`]).
    pub fn generation(&self) -> u64 {
        self.cache.generation()
    }

    /// Forgets every cached identity: call after any write to users, keys, grants or domains.
    pub fn clear(&self) {
        self.cache.clear()
    }

    pub async fn domain_exists(&self, domain: &str) -> ApiResult<bool> {
        let cache = &self.cache.domains;
        if cache.read().is_ok_and(|d| d.contains(domain)) {
            return Ok(true);
        }
        let domains = self.store.reads().list_domains().await?;
        let exists = domains.iter().any(|d| d.name == domain);
        if let Ok(mut set) = cache.write() {
            set.extend(domains.into_iter().map(|d| d.name));
        }
        Ok(exists)
    }

    pub async fn user_of_token(&self, token: &str) -> ApiResult<Arc<AuthUser>> {
        let invalid = || ApiError::unauthorized("invalid or expired token; log in again");
        let now = chrono::Utc::now().timestamp();
        let key = match cached(&self.cache.tokens, token) {
            Some((key, exp)) if exp > now => key,
            _ => {
                let claims = self.jwt.verify(token).ok_or_else(invalid)?;
                let key = claims
                    .sub
                    .strip_prefix(&format!("{ADMIN_DOMAIN}.users:"))
                    .ok_or_else(invalid)?
                    .to_string();
                if let Ok(mut tokens) = self.cache.tokens.write() {
                    if tokens.len() >= TOKEN_CACHE {
                        tokens.clear();
                    }
                    tokens.insert(token.to_string(), (key.clone(), claims.exp));
                }
                key
            }
        };
        self.user_by_key(key).await?.ok_or_else(invalid)
    }

    /// The owner of an API key, and the key (its id and domain).
    pub async fn user_of_api_key(&self, key: &str) -> ApiResult<(Arc<AuthUser>, ApiKeyOwner)> {
        let invalid = || ApiError::unauthorized("invalid API key");
        if !key.starts_with(API_KEY_PREFIX) {
            return Err(invalid());
        }
        let hash = hash_api_key(key);
        let owner = match cached(&self.cache.keys, &hash) {
            Some(owner) => owner,
            None => {
                let owner = self
                    .store
                    .reads()
                    .api_key_owner(&hash)
                    .await?
                    .ok_or_else(invalid)?;
                remember(&self.cache.keys, hash, owner.clone());
                owner
            }
        };
        self.touch_key(owner.key.clone());
        let user = self
            .user_by_key(owner.user_key.clone())
            .await?
            .ok_or_else(invalid)?;
        Ok((user, owner))
    }

    /// Records a key's use, at most once per [`TOUCH_INTERVAL`], off the request path.
    fn touch_key(&self, key_id: String) {
        let due = self.cache.touched.lock().is_ok_and(|mut touched| {
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
            let store = self.store.clone();
            tokio::spawn(async move {
                let when = now_rfc3339();
                if let Err(e) = store.run(move |s| s.touch_api_key(&key_id, &when)).await {
                    tracing::warn!(error = %e, "could not record API key use");
                }
            });
        }
    }

    async fn user_by_key(&self, key: String) -> ApiResult<Option<Arc<AuthUser>>> {
        if let Some(user) = cached(&self.cache.users, &key) {
            return Ok(Some(user));
        }
        let Some(user) = self.store.reads().user_by_key(&key).await? else {
            return Ok(None);
        };
        let user = Arc::new(user);
        remember(&self.cache.users, key, user.clone());
        Ok(Some(user))
    }

    /// Every grant a user holds in a domain (cached).
    pub async fn grants_of(&self, user_key: &str, domain: &str) -> ApiResult<Arc<GrantSet>> {
        let known = self.cache.grants.read().ok().and_then(|users| {
            users
                .get(user_key)
                .and_then(|domains| domains.get(domain).cloned())
        });
        if let Some(grants) = known {
            return Ok(grants);
        }
        let grants = Arc::new(self.store.reads().grants_of(user_key, domain).await?);
        if let Ok(mut users) = self.cache.grants.write() {
            users
                .entry(user_key.to_string())
                .or_default()
                .insert(domain.to_string(), grants.clone());
        }
        Ok(grants)
    }

    /// The user a username and password belong to (argon2 runs off the async threads).
    pub async fn user_of_password(
        &self,
        username: &str,
        password: &str,
    ) -> ApiResult<Option<AuthUser>> {
        let name = username.to_string();
        let found = self.store.run(move |s| s.user_with_password(&name)).await?;
        // Unknown users still pay for one hash check, so timing does not reveal which names exist.
        let (user, hash) = match found {
            Some((user, hash)) => (Some(user), hash),
            None => (None, credentials::dummy_hash().to_string()),
        };
        let password = password.to_string();
        let matches =
            tokio::task::spawn_blocking(move || credentials::verify_password(&password, &hash))
                .await
                .unwrap_or(false);
        Ok(user.filter(|_| matches))
    }
}

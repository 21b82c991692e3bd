//! Secrets: argon2id password hashes, HS256 JWTs (algorithm pinned), and `svcx_` API keys
//! (random, shown once, stored as SHA-256).

use crate::store::AuthUser;
use anyhow::{Context, Result};
use argon2::password_hash::{
    rand_core::OsRng, PasswordHash, PasswordHasher, PasswordVerifier, SaltString,
};
use argon2::Argon2;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use rand::distributions::{Alphanumeric, DistString};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::time::Duration;

pub const API_KEY_PREFIX: &str = "svcx_";
const API_KEY_RANDOM_LEN: usize = 40;
/// Characters of a key kept in clear to tell keys apart in listings.
const DISPLAY_PREFIX_LEN: usize = API_KEY_PREFIX.len() + 6;

pub fn hash_password(password: &str) -> Result<String> {
    let salt = SaltString::generate(&mut OsRng);
    let hashed = Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(|e| anyhow::anyhow!("cannot hash password: {e}"));
    crate::memory::give_back_freed();
    hashed
}

pub fn verify_password(password: &str, hash: &str) -> bool {
    let verified = PasswordHash::new(hash)
        .map(|parsed| {
            Argon2::default()
                .verify_password(password.as_bytes(), &parsed)
                .is_ok()
        })
        .unwrap_or(false);
    crate::memory::give_back_freed();
    verified
}

/// The hash of a random password nobody knows, checked for unknown users so that a login's
/// timing does not reveal which names exist.
pub fn dummy_hash() -> &'static str {
    static DUMMY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DUMMY.get_or_init(|| hash_password(&random_secret(32)).unwrap_or_default())
}

/// A fresh random secret of `len` alphanumerics.
pub fn random_secret(len: usize) -> String {
    Alphanumeric.sample_string(&mut rand::rngs::OsRng, len)
}

/// A new API key: (full key, display prefix, hash to store).
pub fn new_api_key() -> (String, String, String) {
    let key = format!("{API_KEY_PREFIX}{}", random_secret(API_KEY_RANDOM_LEN));
    let prefix = key[..DISPLAY_PREFIX_LEN].to_string();
    let hash = hash_api_key(&key);
    (key, prefix, hash)
}

pub fn hash_api_key(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Claims {
    pub sub: String,
    pub username: String,
    pub iat: i64,
    pub exp: i64,
    pub jti: String,
}

pub struct Jwt {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
    ttl: Duration,
}

impl Jwt {
    pub fn new(secret: &[u8], ttl: Duration) -> Jwt {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = 5;
        validation.set_required_spec_claims(&["exp", "sub", "iat"]);
        Jwt {
            encoding: EncodingKey::from_secret(secret),
            decoding: DecodingKey::from_secret(secret),
            validation,
            ttl,
        }
    }

    pub fn issue(&self, user: &AuthUser) -> Result<String> {
        let now = chrono::Utc::now().timestamp();
        let claims = Claims {
            sub: user.id(),
            username: user.username.clone(),
            iat: now,
            exp: now + self.ttl.as_secs() as i64,
            jti: uuid::Uuid::new_v4().to_string(),
        };
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
            .context("cannot sign token")
    }

    /// The claims of a token whose signature, algorithm and expiry check out.
    pub fn verify(&self, token: &str) -> Option<Claims> {
        jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation)
            .ok()
            .map(|data| data.claims)
    }
}

/// Reads `<data_dir>/jwt.secret`, creating it (mode 0600) on first start.
pub fn load_or_create_secret(data_dir: &Path) -> Result<Vec<u8>> {
    let path = data_dir.join("jwt.secret");
    if path.exists() {
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let secret = text.trim();
        anyhow::ensure!(
            secret.len() >= 32,
            "{} holds a secret shorter than 32 characters",
            path.display()
        );
        return Ok(secret.as_bytes().to_vec());
    }
    let secret = random_secret(64);
    write_private(&path, &secret)?;
    Ok(secret.into_bytes())
}

/// Writes a file only its owner can read.
fn write_private(path: &Path, contents: &str) -> Result<()> {
    use std::io::Write;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    file.write_all(contents.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user() -> AuthUser {
        AuthUser {
            key: "k1".into(),
            username: "ann".into(),
            admin: false,
            created_dt: "2026-01-01T00:00:00.000Z".into(),
        }
    }

    #[test]
    fn passwords() {
        let hash = hash_password("s3cret").unwrap();
        assert!(hash.starts_with("$argon2id$"));
        assert!(verify_password("s3cret", &hash));
        assert!(!verify_password("S3cret", &hash));
        assert!(!verify_password("s3cret", "not a hash"));
    }

    #[test]
    fn api_keys() {
        let (key, prefix, hash) = new_api_key();
        assert!(key.starts_with("svcx_") && key.len() == 45);
        assert!(key.starts_with(&prefix));
        assert_eq!(hash, hash_api_key(&key));
        assert_ne!(new_api_key().0, key);
    }

    #[test]
    fn tokens() {
        let jwt = Jwt::new(b"0123456789abcdef0123456789abcdef", Duration::from_secs(60));
        let token = jwt.issue(&user()).unwrap();
        let claims = jwt.verify(&token).unwrap();
        assert_eq!(claims.sub, "svc_admin.users:k1");
        assert_eq!(claims.username, "ann");
        let other = Jwt::new(b"another-secret-another-secret-xx", Duration::from_secs(60));
        assert!(other.verify(&token).is_none());
        let mut tampered = token.clone();
        tampered.pop();
        assert!(jwt.verify(&tampered).is_none());
    }

    #[test]
    fn secret_file_is_private_and_stable() {
        let dir = tempfile::tempdir().unwrap();
        let first = load_or_create_secret(dir.path()).unwrap();
        let second = load_or_create_secret(dir.path()).unwrap();
        assert_eq!(first, second);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("jwt.secret"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}

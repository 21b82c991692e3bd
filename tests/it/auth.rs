//! Authentication: login on `/auth/login` and `/svc/auth/login` (success, bad credentials,
//! malformed bodies), JWT verification (tampered, wrong key, expired, `alg: none`, other
//! algorithms), `POST /auth/jwt/validate`, developer API keys (create, use, list without
//! secret, revoke) and the rule for requests carrying both a JWT and an API key.

use crate::common::*;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

const LOGIN_PATHS: [&str; 2] = ["/auth/login", "/svc/auth/login"];
const PROTECTED: &str = "/svc/widgets/all";

fn decode_part(part: &str) -> Value {
    let bytes = URL_SAFE_NO_PAD.decode(part).expect("base64url JWT part");
    serde_json::from_slice(&bytes).expect("JWT part is JSON")
}

fn claims_of(token: &str) -> Value {
    let parts: Vec<&str> = token.split('.').collect();
    assert_eq!(parts.len(), 3, "JWT has three parts: {token}");
    decode_part(parts[1])
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

fn sign(claims: &Value, alg: Algorithm, secret: &[u8]) -> String {
    encode(&Header::new(alg), claims, &EncodingKey::from_secret(secret)).expect("sign JWT")
}

fn status_with_token(server: &Server, token: &str) -> StatusCode {
    server
        .with_token(token, Method::GET, PROTECTED)
        .send()
        .expect("request")
        .status()
}

/// The JWT secret the server signs with: `<data_dir>/jwt.secret` on SQLite, or the one
/// instances sharing a PostgreSQL database keep in it.
fn stored_secret(server: &Server) -> Vec<u8> {
    if !on_postgres() {
        return std::fs::read(server.data_dir.join("jwt.secret")).expect("read jwt.secret");
    }
    let sql = "SELECT encode(value, 'hex') FROM svc_secrets WHERE name = 'jwt'";
    let hex = server.store_sql(sql, sql).expect("the shared JWT secret");
    hex::decode(hex).expect("hex")
}

/// Finds the form in which the server uses its stored secret by signing a fresh, valid token
/// with each candidate and keeping the one the server accepts.
fn server_secret(server: &Server, claims: &Value) -> Vec<u8> {
    let raw = stored_secret(server);
    let trimmed = String::from_utf8_lossy(&raw).trim().as_bytes().to_vec();
    for candidate in [raw.clone(), trimmed] {
        if status_with_token(server, &sign(claims, Algorithm::HS256, &candidate)) == StatusCode::OK
        {
            return candidate;
        }
    }
    panic!("a token re-signed with <data_dir>/jwt.secret is not accepted");
}

#[test]
fn login_succeeds_on_both_paths() {
    let server = Server::start();
    for path in LOGIN_PATHS {
        let resp = server
            .req(Method::POST, path)
            .json(&json!({"username": "admin", "password": ADMIN_PASSWORD}))
            .send()
            .unwrap();
        let body = json_ok(resp, StatusCode::OK);
        assert_eq!(body["success"], json!(true), "{path}");
        let tkn = body["tkn"].as_str().expect("tkn is a string");
        let header = decode_part(tkn.split('.').next().unwrap());
        assert_eq!(header["alg"], json!("HS256"), "{path}");
        let claims = claims_of(tkn);
        assert_eq!(claims["username"], json!("admin"));
        let sub = claims["sub"].as_str().expect("sub");
        assert!(sub.starts_with("svc_admin.users:"), "sub = {sub}");
        assert!(claims["jti"].as_str().is_some_and(|j| !j.is_empty()));
        let (iat, exp) = (
            claims["iat"].as_i64().unwrap(),
            claims["exp"].as_i64().unwrap(),
        );
        assert!((iat - now()).abs() < 120, "iat {iat} is not now");
        assert_eq!(exp - iat, 12 * 3600, "default token_ttl is 12h");
        assert_eq!(status_with_token(&server, tkn), StatusCode::OK, "{path}");
    }
}

#[test]
fn token_ttl_setting_sets_exp() {
    let server = Server::start_with(&["--token-ttl", "30m"]);
    let claims = claims_of(&server.admin_token());
    assert_eq!(
        claims["exp"].as_i64().unwrap() - claims["iat"].as_i64().unwrap(),
        1800
    );
}

#[test]
fn bad_credentials_give_401_with_fixed_text() {
    let server = Server::start();
    server.create_user("carol", "carol-password");
    let attempts = [
        json!({"username": "admin", "password": "wrong"}),
        json!({"username": "nobody", "password": ADMIN_PASSWORD}),
        json!({"username": "carol", "password": ADMIN_PASSWORD}),
    ];
    for path in LOGIN_PATHS {
        for body in &attempts {
            let resp = server.req(Method::POST, path).json(body).send().unwrap();
            let text = assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
            assert_eq!(text, "invalid username or password", "{path} {body}");
        }
    }
}

#[test]
fn malformed_login_bodies_give_400() {
    let server = Server::start();
    let bodies = [
        "not json",
        "{\"username\":\"admin\"}",
        "{\"password\":\"x\"}",
        "{\"username\":1,\"password\":\"x\"}",
        "",
    ];
    for path in LOGIN_PATHS {
        for body in bodies {
            let resp = server
                .req(Method::POST, path)
                .header("Content-Type", "application/json")
                .body(body)
                .send()
                .unwrap();
            assert_error(resp, StatusCode::BAD_REQUEST, &[]);
        }
    }
}

#[test]
fn missing_or_garbage_credentials_give_401() {
    let server = Server::start();
    let resp = server.req(Method::GET, PROTECTED).send().unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
    for auth in [
        "Bearer",
        "Bearer not-a-jwt",
        "Basic YWRtaW46eA==",
        "Bearer a.b.c",
    ] {
        let resp = server
            .req(Method::GET, PROTECTED)
            .header("Authorization", auth)
            .send()
            .unwrap();
        assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
    }
}

#[test]
fn tampered_jwt_is_rejected() {
    let server = Server::start();
    let token = server.admin_token();
    let parts: Vec<&str> = token.split('.').collect();
    // Payload changed, signature kept.
    let mut claims = claims_of(&token);
    claims["username"] = json!("mallory");
    let payload = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).unwrap());
    let forged = format!("{}.{}.{}", parts[0], payload, parts[2]);
    assert_eq!(
        status_with_token(&server, &forged),
        StatusCode::UNAUTHORIZED
    );
    // Signature changed.
    let mut sig = URL_SAFE_NO_PAD.decode(parts[2]).unwrap();
    sig[0] ^= 0x01;
    let forged = format!("{}.{}.{}", parts[0], parts[1], URL_SAFE_NO_PAD.encode(sig));
    let resp = server
        .with_token(&forged, Method::GET, PROTECTED)
        .send()
        .unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
    // Signature dropped.
    let forged = format!("{}.{}.", parts[0], parts[1]);
    assert_eq!(
        status_with_token(&server, &forged),
        StatusCode::UNAUTHORIZED
    );
    // The original still works.
    assert_eq!(status_with_token(&server, &token), StatusCode::OK);
}

#[test]
fn jwt_signed_with_wrong_key_is_rejected() {
    let server = Server::start();
    let claims = claims_of(&server.admin_token());
    let real = server_secret(&server, &claims);
    let mut wrong = real.clone();
    wrong.extend_from_slice(b"-but-not-quite");
    let forged = sign(&claims, Algorithm::HS256, &wrong);
    let resp = server
        .with_token(&forged, Method::GET, PROTECTED)
        .send()
        .unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
    let forged = sign(&claims, Algorithm::HS256, b"some-other-secret");
    assert_eq!(
        status_with_token(&server, &forged),
        StatusCode::UNAUTHORIZED
    );
}

#[test]
fn expired_jwt_is_rejected() {
    let server = Server::start();
    let mut claims = claims_of(&server.admin_token());
    let secret = server_secret(&server, &claims);
    let t = now();
    claims["iat"] = json!(t - 7200);
    claims["exp"] = json!(t - 3600);
    claims["jti"] = json!(uuid::Uuid::new_v4().to_string());
    let expired = sign(&claims, Algorithm::HS256, &secret);
    let resp = server
        .with_token(&expired, Method::GET, PROTECTED)
        .send()
        .unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
    // Same claims with a future exp are accepted: only the expiry made the difference.
    claims["exp"] = json!(t + 3600);
    let fresh = sign(&claims, Algorithm::HS256, &secret);
    assert_eq!(status_with_token(&server, &fresh), StatusCode::OK);
}

#[test]
fn jwt_secret_file_is_private() {
    use std::os::unix::fs::PermissionsExt;
    let server = Server::start();
    if on_postgres() {
        // Shared through the database, never written to the data dir.
        assert!(!server.data_dir.join("jwt.secret").exists());
        assert_eq!(stored_secret(&server).len(), 32);
        return;
    }
    let meta = std::fs::metadata(server.data_dir.join("jwt.secret")).expect("jwt.secret exists");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert!(meta.len() > 0);
}

#[test]
fn alg_none_and_other_algorithms_are_rejected() {
    let server = Server::start();
    let claims = claims_of(&server.admin_token());
    let secret = server_secret(&server, &claims);
    for header in [
        json!({"alg": "none", "typ": "JWT"}),
        json!({"alg": "None", "typ": "JWT"}),
    ] {
        let h = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&header).unwrap());
        let p = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&claims).unwrap());
        let unsigned = format!("{h}.{p}.");
        let resp = server
            .with_token(&unsigned, Method::GET, PROTECTED)
            .send()
            .unwrap();
        assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
    }
    // The real secret with another HMAC algorithm: the algorithm is pinned to HS256.
    for alg in [Algorithm::HS384, Algorithm::HS512] {
        let token = sign(&claims, alg, &secret);
        assert_eq!(
            status_with_token(&server, &token),
            StatusCode::UNAUTHORIZED,
            "{alg:?}"
        );
    }
}

#[test]
fn jwt_validate_endpoint() {
    let server = Server::start();
    let token = server.admin_token();
    for path in ["/auth/jwt/validate", "/svc/auth/jwt/validate"] {
        let resp = server
            .admin(Method::POST, path)
            .json(&json!({ "token": token }))
            .send()
            .unwrap();
        assert_eq!(json_ok(resp, StatusCode::OK), json!({"valid": true}));
        let bad = format!("{token}x");
        let resp = server
            .admin(Method::POST, path)
            .json(&json!({ "token": bad }))
            .send()
            .unwrap();
        assert_eq!(json_ok(resp, StatusCode::OK), json!({"valid": false}));
    }
    let resp = server
        .req(Method::POST, "/auth/jwt/validate")
        .json(&json!({ "token": token }))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
}

#[test]
fn api_key_lifecycle() {
    let server = Server::start();
    let resp = server
        .admin(Method::POST, "/auth/keys")
        .json(&json!({"name": "ci"}))
        .send()
        .unwrap();
    let created = json_ok(resp, StatusCode::CREATED);
    assert_eq!(created["success"], json!(true));
    assert_eq!(created["name"], json!("ci"));
    let key = created["key"].as_str().expect("key").to_string();
    let id = created["id"].as_str().expect("id").to_string();
    let prefix = created["prefix"].as_str().expect("prefix").to_string();
    assert!(key.starts_with("svcx_"), "{key}");
    assert!(key.len() >= 37, "key too short: {key}");
    assert!(!prefix.is_empty() && prefix.len() < key.len());
    assert!(is_rfc3339_millis_utc(
        created["created_dt"].as_str().unwrap()
    ));

    // Used on the data plane.
    let resp = server
        .req(Method::GET, PROTECTED)
        .header("X-Svc-Api-Key", &key)
        .send()
        .unwrap();
    assert_eq!(json_ok(resp, StatusCode::OK), json!([]));

    // Listed without the secret.
    let resp = server.admin(Method::GET, "/auth/keys").send().unwrap();
    let list = json_ok(resp, StatusCode::OK);
    assert!(
        !list.to_string().contains(&key),
        "list leaks the secret: {list}"
    );
    let entry = list
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["id"] == json!(id))
        .unwrap_or_else(|| panic!("key {id} not listed: {list}"));
    let mut members: Vec<&str> = entry
        .as_object()
        .unwrap()
        .keys()
        .map(|s| s.as_str())
        .collect();
    members.sort();
    assert_eq!(
        members,
        ["created_dt", "id", "last_used_dt", "name", "prefix"]
    );
    assert_eq!(entry["prefix"], json!(prefix));
    assert!(entry.get("key").is_none());
    // The use is recorded off the request path: give it a moment.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let resp = server.admin(Method::GET, "/auth/keys").send().unwrap();
        let list = json_ok(resp, StatusCode::OK);
        let entry = list
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["id"] == json!(id))
            .unwrap()
            .clone();
        if entry["last_used_dt"].is_string() {
            assert!(is_rfc3339_millis_utc(
                entry["last_used_dt"].as_str().unwrap()
            ));
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "last_used_dt not set after use: {entry}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }

    // Listed under /svc/auth too.
    let resp = server.admin(Method::GET, "/svc/auth/keys").send().unwrap();
    assert!(json_ok(resp, StatusCode::OK).to_string().contains(&id));

    // Revoked.
    let resp = server
        .admin(Method::DELETE, &format!("/auth/keys/{}", enc(&id)))
        .send()
        .unwrap();
    assert_eq!(json_ok(resp, StatusCode::OK), json!({"success": true}));
    let resp = server
        .req(Method::GET, PROTECTED)
        .header("X-Svc-Api-Key", &key)
        .send()
        .unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
    let resp = server
        .admin(Method::DELETE, &format!("/auth/keys/{}", enc(&id)))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::NOT_FOUND, &[]);
    let resp = server.admin(Method::GET, "/auth/keys").send().unwrap();
    assert!(!json_ok(resp, StatusCode::OK).to_string().contains(&id));
}

#[test]
fn unknown_api_keys_are_rejected() {
    let server = Server::start();
    let fake = format!("svcx_{}", "a".repeat(40));
    for key in [fake.as_str(), "svcx_", "not-a-key", ""] {
        let resp = server
            .req(Method::GET, PROTECTED)
            .header("X-Svc-Api-Key", key)
            .send()
            .unwrap();
        assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
    }
}

#[test]
fn keys_belong_to_their_user() {
    let server = Server::start();
    let dave = server.user_with_grants("domains:svc_admin", "dave", &[]);
    let resp = server
        .with_token(&dave, Method::POST, "/auth/keys")
        .json(&json!({"name": "dave-key"}))
        .send()
        .unwrap();
    let created = json_ok(resp, StatusCode::CREATED);
    let id = created["id"].as_str().unwrap().to_string();
    // Not visible to, nor revocable by, another user.
    let resp = server.admin(Method::GET, "/auth/keys").send().unwrap();
    assert!(!json_ok(resp, StatusCode::OK).to_string().contains(&id));
    let resp = server
        .admin(Method::DELETE, &format!("/auth/keys/{}", enc(&id)))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::NOT_FOUND, &[]);
    let resp = server
        .with_token(&dave, Method::GET, "/auth/keys")
        .send()
        .unwrap();
    assert!(json_ok(resp, StatusCode::OK).to_string().contains(&id));
}

#[test]
fn both_headers_must_be_valid_and_jwt_wins() {
    let server = Server::start();
    server.create_domain("acme");
    let erin = server.user_with_grants("domains:acme", "erin", &[("collections", "read", "*")]);
    let resp = server
        .admin(Method::POST, "/auth/keys")
        .json(&json!({"name": "admin-key"}))
        .send()
        .unwrap();
    let admin_key = json_ok(resp, StatusCode::CREATED)["key"]
        .as_str()
        .unwrap()
        .to_string();
    let perm = "/auth/permission/action/feature/collections/scope/widgets";

    // Valid JWT (erin) + valid key (admin): erin's identity.
    let resp = server
        .with_token_in(&erin, "domains:acme", Method::GET, perm)
        .header("X-Svc-Api-Key", &admin_key)
        .send()
        .unwrap();
    assert_eq!(json_ok(resp, StatusCode::OK), json!({"actions": ["read"]}));
    let resp = server
        .with_token_in(&erin, "domains:acme", Method::POST, "/svc/widgets")
        .header("X-Svc-Api-Key", &admin_key)
        .json(&json!({"name": "x"}))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &[]);

    // The key alone is the admin.
    let resp = server
        .req(Method::GET, perm)
        .header("Domain", "domains:acme")
        .header("X-Svc-Api-Key", &admin_key)
        .send()
        .unwrap();
    assert_eq!(
        json_ok(resp, StatusCode::OK),
        json!({"actions": ["read", "read-write"]})
    );

    // Valid JWT + invalid key, invalid JWT + valid key: 401.
    let bad_key = format!("svcx_{}", "b".repeat(40));
    let resp = server
        .with_token(&erin, Method::GET, PROTECTED)
        .header("Domain", "domains:acme")
        .header("X-Svc-Api-Key", &bad_key)
        .send()
        .unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
    let resp = server
        .with_token(&format!("{erin}x"), Method::GET, PROTECTED)
        .header("Domain", "domains:acme")
        .header("X-Svc-Api-Key", &admin_key)
        .send()
        .unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
}

#[test]
fn credentials_of_a_deleted_user_stop_working() {
    let server = Server::start();
    let user_id = server.create_user("leaver", "leaver-pass-1");
    let token = server.login("leaver", "leaver-pass-1");
    let key = {
        let resp = server
            .with_token(&token, Method::POST, "/auth/keys")
            .json(&json!({"name": "leaver-key"}))
            .send()
            .unwrap();
        json_ok(resp, StatusCode::CREATED)["key"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let me = |token: &str| {
        server
            .with_token(token, Method::GET, "/auth/me")
            .send()
            .unwrap()
            .status()
    };
    assert_eq!(me(&token), StatusCode::OK);
    let key_works = server
        .req(Method::GET, "/auth/me")
        .header("X-Svc-Api-Key", &key)
        .send()
        .unwrap()
        .status();
    assert_eq!(key_works, StatusCode::OK);

    let resp = server
        .admin(Method::DELETE, &format!("/auth/user/{}", enc(&user_id)))
        .send()
        .unwrap();
    assert_eq!(json_ok(resp, StatusCode::OK), json!({"success": true}));

    // The token is still signed and unexpired, but its user is gone.
    assert_eq!(me(&token), StatusCode::UNAUTHORIZED);
    let resp = server
        .req(Method::GET, "/auth/me")
        .header("X-Svc-Api-Key", &key)
        .send()
        .unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
    let resp = server
        .admin(Method::GET, &format!("/auth/user/{}", enc(&user_id)))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::NOT_FOUND, &["no user"]);
}

//! What the audit trail records of a request, known from its method and route: which requests
//! are administrative changes (users, groups, grants, API keys, domains, and the system tables
//! namespaces, upstreams, connectors, sparkplug, processes, flows, collections, tags, and the trust list
//! of connector certificates) and the secret-free summary kept
//! of each body. `observe` writes the entries; `GET /svc/audit` is `routes::audit`.

use axum::http::Method;
use serde_json::{Map, Value};

/// Record tables whose writes are administrative (the others hold a plant's data).
const ADMIN_TABLES: [&str; 8] = [
    "tags",
    "namespaces",
    "upstreams",
    "connectors",
    "sparkplug",
    "processes",
    "flows",
    "collections",
];

/// Longest string value kept in a summary; a longer one (code, a description) is shown by size.
const MAX_SUMMARY_STRING: usize = 120;

/// Largest summary kept as is; a bigger one keeps only its top-level scalars.
const MAX_SUMMARY_BYTES: usize = 2048;

/// What a request changes, known from its method and route before it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    pub action: String,
    pub resource_type: String,
    /// Known from the path; `None` when it is the id of a record the request creates.
    pub resource_id: Option<String>,
}

/// The change a request makes, if it is administrative; `params` are the route's path
/// parameters (already percent-decoded).
pub fn classify(method: &Method, route: &str, params: &[(String, String)]) -> Option<Change> {
    if !matches!(
        *method,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    ) {
        return None;
    }
    let param = |name: &str| {
        params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let verb = match *method {
        Method::POST => "create",
        Method::DELETE => "delete",
        _ => "update",
    };
    let change = |action: &str, resource_type: &str, id: Option<String>| Change {
        action: action.to_string(),
        resource_type: resource_type.to_string(),
        resource_id: id,
    };
    let auth = route
        .strip_prefix("/svc/auth/")
        .or_else(|| route.strip_prefix("/auth/"));
    if let Some(rest) = auth {
        let last = params.last().map(|(_, v)| v.clone());
        return match rest.split('/').next().unwrap_or_default() {
            "login" | "jwt" | "me" => None,
            "group" if rest.contains("/user/") => {
                let action = if *method == Method::DELETE {
                    "remove_member"
                } else {
                    "add_member"
                };
                Some(change(action, "groups", param("gid")))
            }
            "group" => Some(change(verb, "groups", last)),
            "user" => Some(change(verb, "users", last)),
            "keys" => Some(change(verb, "api_keys", last)),
            "domains" => Some(change(verb, "domains", last)),
            "permission" => Some(change(verb, "grants", None)),
            other => Some(change(verb, other, last)),
        };
    }
    match route {
        "/svc/{target}" => {
            let target = param("target")?;
            if *method == Method::POST {
                let table = target.as_str();
                ADMIN_TABLES
                    .contains(&table)
                    .then(|| change("create", table, None))
            } else {
                let table = target.split_once(':')?.0.split_once('.')?.1;
                ADMIN_TABLES
                    .contains(&table)
                    .then(|| change(verb, table, Some(target.clone())))
            }
        }
        "/svc/code/{name}" => Some(change("upload_code", "processes", param("name"))),
        "/svc/code/{name}/restore/{version}" => {
            Some(change("restore_code", "processes", param("name")))
        }
        "/svc/processes/triggers/{id}" => Some(change("set_triggers", "processes", param("id"))),
        "/svc/flows/{name}/start" => Some(change("start", "flows", param("name"))),
        "/svc/flows/{name}/stop" => Some(change("stop", "flows", param("name"))),
        "/svc/upstreams/{id}/connect" => Some(change("connect", "upstreams", param("id"))),
        "/svc/upstreams/{id}/disconnect" => Some(change("disconnect", "upstreams", param("id"))),
        "/svc/connectors/certificates/{thumbprint}/trust" => Some(change(
            "trust",
            "connector_certificates",
            param("thumbprint"),
        )),
        "/svc/connectors/certificates/{thumbprint}/reject" => Some(change(
            "reject",
            "connector_certificates",
            param("thumbprint"),
        )),
        "/svc/connectors/certificates/{thumbprint}" => Some(change(
            "forget",
            "connector_certificates",
            param("thumbprint"),
        )),
        // The answer is the snapshot itself, never read for an id.
        "/svc/backup" => Some(change("create", "backups", Some(String::new()))),
        _ => None,
    }
}

/// The id a create answered with (`{"id": …}`), else for grants the group they went to.
pub fn created_id(request: &Value, response: &Value) -> String {
    response
        .get("id")
        .or_else(|| request.get("group_id"))
        .or_else(|| request.get("groupId"))
        .or_else(|| request.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// A small picture of a request body without secrets: fields named like a password, key,
/// secret or token are left out at every depth, long strings are replaced by their size.
pub fn summary(body: &[u8]) -> Value {
    if body.is_empty() {
        return Value::Object(Map::new());
    }
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return serde_json::json!({ "bytes": body.len() });
    };
    let full = scrub(&value, 0);
    if full.to_string().len() <= MAX_SUMMARY_BYTES {
        return full;
    }
    match full {
        Value::Object(fields) => Value::Object(
            fields
                .into_iter()
                .filter(|(_, v)| !v.is_object() && !v.is_array())
                .collect(),
        ),
        _ => serde_json::json!({ "bytes": body.len() }),
    }
}

fn scrub(value: &Value, depth: usize) -> Value {
    match value {
        Value::Object(fields) if depth < 3 => Value::Object(
            fields
                .iter()
                .filter(|(name, _)| !is_secret_name(name))
                .map(|(name, v)| (name.clone(), scrub(v, depth + 1)))
                .collect(),
        ),
        Value::Object(fields) => Value::String(format!("<{} fields>", fields.len())),
        Value::Array(items) if depth < 3 && items.len() <= 20 => {
            Value::Array(items.iter().map(|v| scrub(v, depth + 1)).collect())
        }
        Value::Array(items) => Value::String(format!("<{} items>", items.len())),
        Value::String(s) if s.len() > MAX_SUMMARY_STRING => {
            Value::String(format!("<{} characters>", s.chars().count()))
        }
        other => other.clone(),
    }
}

fn is_secret_name(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    ["password", "secret", "token", "passphrase", "credential"]
        .iter()
        .any(|s| name.contains(s))
        || name == "key"
        || name.ends_with("_key")
        || name.ends_with("apikey")
        || name.starts_with("private")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn admin_routes_are_changes_and_data_routes_are_not() {
        let user = classify(&Method::DELETE, "/auth/user/{id}", &params(&[("id", "u1")]));
        assert_eq!(user.unwrap().resource_type, "users");
        let member = classify(
            &Method::POST,
            "/svc/auth/group/{gid}/user/{uid}",
            &params(&[("gid", "g"), ("uid", "u")]),
        )
        .unwrap();
        assert_eq!(
            (member.action.as_str(), member.resource_id),
            ("add_member", Some("g".into()))
        );
        assert!(classify(&Method::POST, "/auth/login", &[]).is_none());
        let removed = classify(
            &Method::DELETE,
            "/auth/group/{gid}/user/{uid}",
            &params(&[("gid", "g"), ("uid", "u")]),
        )
        .unwrap();
        assert_eq!(removed.action, "remove_member");
        let regranted = classify(&Method::PUT, "/auth/group/{gid}", &params(&[("gid", "g")]));
        let regranted = regranted.unwrap();
        assert_eq!(
            (regranted.action.as_str(), regranted.resource_type.as_str()),
            ("update", "groups")
        );
        let grant = classify(&Method::POST, "/svc/auth/permission", &[]).unwrap();
        assert_eq!(grant.resource_type, "grants");
        let flows = classify(
            &Method::POST,
            "/svc/{target}",
            &params(&[("target", "flows")]),
        );
        assert_eq!(flows.unwrap().action, "create");
        let data = classify(
            &Method::POST,
            "/svc/{target}",
            &params(&[("target", "orders")]),
        );
        assert!(data.is_none());
        let update = classify(
            &Method::PUT,
            "/svc/{target}",
            &params(&[("target", "demo.upstreams:abc")]),
        )
        .unwrap();
        assert_eq!(update.resource_id.as_deref(), Some("demo.upstreams:abc"));
        assert!(classify(&Method::GET, "/auth/user", &[]).is_none());
    }

    #[test]
    fn summaries_hold_no_secrets() {
        let body = br#"{"username":"ann","password":"p4ss","auth":{"client_key":"k","user":"u",
            "Password":"x"},"api_key":"svc_1","token":"t","code":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}"#;
        let s = summary(body);
        let text = s.to_string();
        for secret in ["p4ss", "client_key", "svc_1", "\"t\"", "\"x\"", "AAAA"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert_eq!(s["username"], "ann");
        assert_eq!(s["auth"]["user"], "u");
        assert_eq!(summary(b"not json")["bytes"], 8);
    }
}

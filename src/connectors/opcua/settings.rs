//! An OPC UA connector's `settings`: checked and completed with their defaults when the record
//! is written ([`check`]), and read back into typed [`Settings`] when the connector connects.

use crate::duration::parse_duration;
use serde_json::{Map, Value};
use std::time::Duration;

/// The security policies svc offers (the deprecated Basic128Rsa15 and Basic256 are not).
pub const POLICIES: [&str; 4] = [
    "None",
    "Basic256Sha256",
    "Aes128_Sha256_RsaOaep",
    "Aes256_Sha256_RsaPss",
];

const MODES: [&str; 3] = ["None", "Sign", "SignAndEncrypt"];

/// The user a session is activated as.
#[derive(Debug, Clone, PartialEq)]
pub enum UserIdentity {
    Anonymous,
    /// The password is the connector's write-only secret.
    Username(String),
    /// svc's own application instance certificate.
    Certificate,
}

/// The checked settings, typed.
#[derive(Debug, Clone)]
pub struct Settings {
    pub endpoint: String,
    /// One of [`POLICIES`].
    pub security_policy: String,
    /// `None`, `Sign` or `SignAndEncrypt`.
    pub security_mode: String,
    pub identity: UserIdentity,
    pub timeout: Duration,
    pub session_timeout: Duration,
    pub publishing_interval: Duration,
    pub keep_alive_count: u32,
    pub lifetime_count: u32,
}

/// Checks `settings` and fills in the defaults; the error names the field.
pub fn check(settings: &mut Map<String, Value>) -> Result<(), String> {
    for key in settings.keys() {
        if !matches!(
            key.as_str(),
            "endpoint"
                | "security_policy"
                | "security_mode"
                | "identity"
                | "timeout"
                | "session_timeout"
                | "publishing_interval"
                | "keep_alive_count"
                | "lifetime_count"
        ) {
            return Err(format!(
                "settings.{key} is not a setting of an opcua connector."
            ));
        }
    }
    let endpoint = match settings.get("endpoint") {
        Some(Value::String(s)) => s.trim().to_string(),
        Some(_) => {
            return Err("settings.endpoint must be a string like opc.tcp://host:4840.".into())
        }
        None => return Err("settings.endpoint is required (opc.tcp://host:port).".into()),
    };
    check_endpoint(&endpoint)?;
    settings.insert("endpoint".into(), Value::String(endpoint));

    let policy = match settings.get("security_policy") {
        None | Some(Value::Null) => "None".to_string(),
        Some(Value::String(s)) if POLICIES.contains(&s.as_str()) => s.clone(),
        Some(_) => {
            return Err(format!(
                "settings.security_policy must be one of {}.",
                POLICIES.join(", ")
            ))
        }
    };
    let mode = match settings.get("security_mode") {
        None | Some(Value::Null) if policy == "None" => "None".to_string(),
        None | Some(Value::Null) => "SignAndEncrypt".to_string(),
        Some(Value::String(s)) if MODES.contains(&s.as_str()) => s.clone(),
        Some(_) => {
            return Err("settings.security_mode must be None, Sign or SignAndEncrypt.".into())
        }
    };
    if (policy == "None") != (mode == "None") {
        return Err(if policy == "None" {
            format!("settings.security_mode must be None when settings.security_policy is None, not {mode}.")
        } else {
            format!("settings.security_mode must be Sign or SignAndEncrypt with security policy {policy}.")
        });
    }
    settings.insert("security_policy".into(), Value::String(policy));
    settings.insert("security_mode".into(), Value::String(mode));

    let identity = match settings.get("identity") {
        None | Some(Value::Null) => serde_json::json!({"type": "anonymous"}),
        Some(value) => {
            parse_identity(value)?;
            value.clone()
        }
    };
    settings.insert("identity".into(), identity);

    for (name, default) in [
        ("timeout", "10s"),
        ("session_timeout", "60s"),
        ("publishing_interval", "1s"),
    ] {
        let text = match settings.get(name) {
            None | Some(Value::Null) => default.to_string(),
            Some(Value::String(s)) => s.clone(),
            Some(_) => {
                return Err(format!(
                    "settings.{name} must be a duration like {default}."
                ))
            }
        };
        let duration = parse_duration(&text).map_err(|e| format!("settings.{name}: {e}."))?;
        if duration.is_zero() {
            return Err(format!("settings.{name} must be longer than zero."));
        }
        settings.insert(name.into(), Value::String(text));
    }
    for (name, default) in [("keep_alive_count", 10u64), ("lifetime_count", 30)] {
        let count = match settings.get(name) {
            None | Some(Value::Null) => default,
            Some(value) => match value.as_u64() {
                Some(n) if (1..=u32::MAX as u64).contains(&n) => n,
                _ => {
                    return Err(format!(
                        "settings.{name} must be a whole number from 1 to 4294967295."
                    ))
                }
            },
        };
        settings.insert(name.into(), Value::from(count));
    }
    let keep_alive = settings["keep_alive_count"].as_u64().unwrap_or(10);
    let lifetime = settings["lifetime_count"].as_u64().unwrap_or(30);
    if lifetime < keep_alive.saturating_mul(3) {
        return Err(
            "settings.lifetime_count must be at least three times settings.keep_alive_count."
                .into(),
        );
    }
    Ok(())
}

fn check_endpoint(endpoint: &str) -> Result<(), String> {
    let rest = endpoint
        .strip_prefix("opc.tcp://")
        .ok_or("settings.endpoint must start with opc.tcp:// (opc.tcp://host:port[/path]).")?;
    let authority = rest.split('/').next().unwrap_or_default();
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || host.starts_with('[') => (host, Some(port)),
        _ => (authority, None),
    };
    if host.is_empty() || host.contains(char::is_whitespace) {
        return Err("settings.endpoint has no host (opc.tcp://host:port[/path]).".into());
    }
    if let Some(port) = port {
        if !matches!(port.parse::<u16>(), Ok(p) if p > 0) {
            return Err(format!("settings.endpoint has no valid port: `{port}`."));
        }
    }
    Ok(())
}

fn parse_identity(value: &Value) -> Result<UserIdentity, String> {
    let object = value
        .as_object()
        .ok_or("settings.identity must be an object like {\"type\":\"anonymous\"}.")?;
    match object.get("type").and_then(Value::as_str) {
        Some("anonymous") if object.len() == 1 => Ok(UserIdentity::Anonymous),
        Some("certificate") if object.len() == 1 => Ok(UserIdentity::Certificate),
        Some("username") => match object.get("username") {
            Some(Value::String(name)) if !name.is_empty() && object.len() == 2 => {
                Ok(UserIdentity::Username(name.clone()))
            }
            _ => Err("settings.identity.username must be a non-empty string (and the only other member).".into()),
        },
        Some("anonymous") | Some("certificate") => {
            Err("settings.identity has members its type does not take.".into())
        }
        _ => Err("settings.identity.type must be anonymous, username or certificate.".into()),
    }
}

impl Settings {
    /// Reads settings [`check`] has completed (an error only for a record written around it).
    pub fn read(settings: &Map<String, Value>) -> Result<Settings, String> {
        let mut settings = settings.clone();
        check(&mut settings)?;
        let text = |name: &str| settings[name].as_str().unwrap_or_default().to_string();
        let duration = |name: &str| parse_duration(settings[name].as_str().unwrap_or_default());
        Ok(Settings {
            endpoint: text("endpoint"),
            security_policy: text("security_policy"),
            security_mode: text("security_mode"),
            identity: parse_identity(&settings["identity"])?,
            timeout: duration("timeout")?,
            session_timeout: duration("session_timeout")?,
            publishing_interval: duration("publishing_interval")?,
            keep_alive_count: settings["keep_alive_count"].as_u64().unwrap_or(10) as u32,
            lifetime_count: settings["lifetime_count"].as_u64().unwrap_or(30) as u32,
        })
    }

    /// Whether the connection is signed (and so checks the server's certificate).
    pub fn secure(&self) -> bool {
        self.security_policy != "None"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn checked(value: Value) -> Result<Map<String, Value>, String> {
        let mut map = value.as_object().unwrap().clone();
        check(&mut map).map(|_| map)
    }

    #[test]
    fn defaults_are_filled_in() {
        let map = checked(json!({"endpoint": "opc.tcp://plc:4840"})).unwrap();
        assert_eq!(map["security_policy"], "None");
        assert_eq!(map["security_mode"], "None");
        assert_eq!(map["identity"], json!({"type": "anonymous"}));
        assert_eq!(map["timeout"], "10s");
        assert_eq!(map["session_timeout"], "60s");
        assert_eq!(map["publishing_interval"], "1s");
        assert_eq!(map["keep_alive_count"], 10);
        assert_eq!(map["lifetime_count"], 30);
        let map = checked(
            json!({"endpoint": "opc.tcp://plc:4840/ua", "security_policy": "Basic256Sha256"}),
        )
        .unwrap();
        assert_eq!(map["security_mode"], "SignAndEncrypt");
        let settings = Settings::read(&map).unwrap();
        assert!(settings.secure());
        assert_eq!(settings.publishing_interval, Duration::from_secs(1));
    }

    #[test]
    fn errors_name_the_setting() {
        let cases = [
            (json!({}), "settings.endpoint"),
            (json!({"endpoint": "http://x"}), "settings.endpoint"),
            (
                json!({"endpoint": "opc.tcp://x:99999"}),
                "settings.endpoint",
            ),
            (
                json!({"endpoint": "opc.tcp://x", "security_policy": "Basic128Rsa15"}),
                "settings.security_policy",
            ),
            (
                json!({"endpoint": "opc.tcp://x", "security_mode": "Sign"}),
                "settings.security_mode",
            ),
            (
                json!({"endpoint": "opc.tcp://x", "security_policy": "Basic256Sha256", "security_mode": "None"}),
                "settings.security_mode",
            ),
            (
                json!({"endpoint": "opc.tcp://x", "identity": {"type": "username"}}),
                "settings.identity.username",
            ),
            (
                json!({"endpoint": "opc.tcp://x", "identity": {"type": "kerberos"}}),
                "settings.identity.type",
            ),
            (
                json!({"endpoint": "opc.tcp://x", "timeout": "soon"}),
                "settings.timeout",
            ),
            (
                json!({"endpoint": "opc.tcp://x", "keep_alive_count": 0}),
                "settings.keep_alive_count",
            ),
            (
                json!({"endpoint": "opc.tcp://x", "lifetime_count": 5}),
                "settings.lifetime_count",
            ),
            (
                json!({"endpoint": "opc.tcp://x", "colour": 1}),
                "settings.colour",
            ),
        ];
        for (value, field) in cases {
            let error = checked(value.clone()).unwrap_err();
            assert!(error.starts_with(field), "{value}: {error}");
        }
        let map = checked(
            json!({"endpoint": "opc.tcp://x", "identity": {"type": "username", "username": "op"}}),
        )
        .unwrap();
        assert_eq!(
            Settings::read(&map).unwrap().identity,
            UserIdentity::Username("op".into())
        );
    }
}

//! An upstream's record: every field checked with an error naming it, defaults filled in, so
//! what is stored is always complete. The password is not part of the record (it is kept
//! aside, write-only); the record says only whether one is set. `sparkplug` makes the upstream
//! a Sparkplug B edge node as well (see `upstream::sparkplug`).

use crate::fields::*;
use crate::sparkplug::topic::valid_id;
use crate::topic::{validate_topic_filter, validate_topic_name};
use serde_json::{json, Map, Value};

pub use crate::store::UPSTREAMS;
/// The permission feature of upstreams (domain scope `*`).
pub const FEATURE: &str = "upstreams";

const PROTOCOLS: [(&str, u16); 4] = [("mqtt", 1883), ("mqtts", 8883), ("ws", 80), ("wss", 443)];

/// Checks an upstream record (`fields`, without `id` and times) and rewrites it normalised:
/// known fields only, defaults filled in. `domain` and the record's name make the default
/// client id. `password` must have been taken out before (see [`take_password`]).
pub fn normalise(
    fields: &mut Map<String, Value>,
    device: &str,
    domain: &str,
) -> Result<(), String> {
    let mut out = Map::new();
    let known = [
        "name",
        "description",
        "enabled",
        "protocol",
        "host",
        "port",
        "path",
        "client_id",
        "mqtt_version",
        "keep_alive",
        "clean_start",
        "session_expiry",
        "username",
        "password_set",
        "tls",
        "reconnect",
        "buffer",
        "bindings",
        "sparkplug",
    ];
    if let Some(unknown) = fields
        .keys()
        .find(|k| !known.contains(&k.as_str()) && !is_system(k))
    {
        return Err(format!("unknown field `{unknown}`"));
    }
    let name = link_name(fields)?;
    out.insert("name".into(), json!(name));
    if let Some(description) = text(fields, "description")? {
        out.insert("description".into(), json!(description));
    }
    out.insert(
        "enabled".into(),
        json!(flag(fields, "enabled")?.unwrap_or(true)),
    );
    let protocol = text(fields, "protocol")?.unwrap_or_else(|| "mqtt".into());
    let Some(&(_, default_port)) = PROTOCOLS.iter().find(|(p, _)| *p == protocol) else {
        return Err(format!(
            "field `protocol` must be mqtt, mqtts, ws or wss, not `{protocol}`"
        ));
    };
    out.insert("protocol".into(), json!(protocol));
    let host = text(fields, "host")?.ok_or("field `host` is required")?;
    if host.is_empty() || host.contains(|c: char| c.is_whitespace() || c == '/') {
        return Err(format!(
            "field `host` must be a host name or address, not `{host}`"
        ));
    }
    out.insert("host".into(), json!(host));
    let port = number(fields, "port", 1, 65_535)?.unwrap_or(u64::from(default_port));
    out.insert("port".into(), json!(port));
    if protocol.starts_with("ws") {
        let path = text(fields, "path")?.unwrap_or_else(|| "/mqtt".into());
        if !path.starts_with('/') || path.contains(char::is_whitespace) {
            return Err(format!("field `path` must start with `/`, not `{path}`"));
        }
        out.insert("path".into(), json!(path));
    } else if fields.get("path").is_some_and(|p| !p.is_null()) {
        return Err("field `path` is only for the ws and wss protocols".into());
    }
    let client_id = text(fields, "client_id")?.unwrap_or_else(|| {
        format!("svc-{device}-{domain}-{name}").replace(char::is_whitespace, "_")
    });
    if client_id.is_empty() || client_id.len() > 128 {
        return Err("field `client_id` must be 1 to 128 characters".into());
    }
    out.insert("client_id".into(), json!(client_id));
    let version = match fields.get("mqtt_version") {
        None | Some(Value::Null) => "5",
        Some(v) if v == 5 || v == "5" || v == "5.0" => "5",
        Some(v) if v == 4 || v == "3.1.1" || v == "4" => "3.1.1",
        Some(other) => {
            return Err(format!(
                "field `mqtt_version` must be 5 or \"3.1.1\", not {other}"
            ))
        }
    };
    out.insert("mqtt_version".into(), json!(version));
    out.insert(
        "keep_alive".into(),
        // MQTT allows 0, but a bridge needs keep-alive to notice a dead link (and rumqttc
        // wants at least 5 s of MQTT 5 clients).
        json!(number(fields, "keep_alive", 5, 65_535)?.unwrap_or(60)),
    );
    out.insert(
        "clean_start".into(),
        json!(flag(fields, "clean_start")?.unwrap_or(false)),
    );
    let expiry = number(fields, "session_expiry", 0, u64::from(u32::MAX))?.unwrap_or(3600);
    out.insert("session_expiry".into(), json!(expiry));
    if let Some(username) = text(fields, "username")? {
        out.insert("username".into(), json!(username));
    }
    out.insert(
        "password_set".into(),
        json!(flag(fields, "password_set")?.unwrap_or(false)),
    );
    out.insert("tls".into(), tls(fields.get("tls"))?);
    out.insert("reconnect".into(), reconnect(fields.get("reconnect"))?);
    out.insert("buffer".into(), buffer(fields.get("buffer"))?);
    out.insert("bindings".into(), bindings(fields.get("bindings"))?);
    if let Some(edge) = sparkplug(fields.get("sparkplug"))? {
        out.insert("sparkplug".into(), edge);
    }
    *fields = out;
    Ok(())
}

/// The `local` paths of an upstream's bindings (checked against the domain's namespaces).
pub fn binding_locals(fields: &Map<String, Value>) -> Vec<(usize, String)> {
    fields
        .get("bindings")
        .and_then(Value::as_array)
        .map(|bindings| {
            bindings
                .iter()
                .enumerate()
                .filter_map(|(i, b)| Some((i, b.get("local")?.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// The `sparkplug.branch` of an upstream that is a Sparkplug edge node (checked against the
/// domain's namespaces, as binding locals are).
pub fn sparkplug_branch(fields: &Map<String, Value>) -> Option<String> {
    let branch = fields.get("sparkplug")?.get("branch")?.as_str()?;
    Some(branch.to_string())
}

/// `sparkplug`: `{group, node, branch}` makes the upstream a Sparkplug B edge node publishing
/// the tags under `branch`; absent or `false`, it is not one (`false` is how an update turns
/// the role off, since null keeps the stored value).
fn sparkplug(value: Option<&Value>) -> Result<Option<Value>, String> {
    let edge = match value {
        None | Some(Value::Null) | Some(Value::Bool(false)) => return Ok(None),
        Some(Value::Object(edge)) => edge,
        Some(_) => {
            return Err(
                "field `sparkplug` must be an object {group, node, branch}, or false".into(),
            )
        }
    };
    only(edge, "sparkplug", &["group", "node", "branch"])?;
    let named = within("sparkplug");
    let mut out = Map::new();
    for id in ["group", "node"] {
        let text = text(edge, id)
            .map_err(named)?
            .ok_or_else(|| format!("field `sparkplug.{id}` is required"))?;
        // Sparkplug ids are one topic level of the Sparkplug topics.
        if !valid_id(&text) || text.contains('\0') {
            return Err(format!(
                "field `sparkplug.{id}` must be one topic level without `/`, `+`, `#`, NUL or \
                 a leading `$`, not `{text}`"
            ));
        }
        out.insert(id.into(), json!(text));
    }
    let branch = text(edge, "branch")
        .map_err(named)?
        .ok_or("field `sparkplug.branch` is required")?;
    validate_topic_name(&branch).map_err(|e| format!("field `sparkplug.branch`: {e}"))?;
    if branch.starts_with('$') || branch.split('/').any(str::is_empty) {
        return Err(format!(
            "field `sparkplug.branch` must be a topic path without empty levels and not a `$` \
             topic, not `{branch}`"
        ));
    }
    out.insert("branch".into(), json!(branch));
    Ok(Some(Value::Object(out)))
}

fn tls(value: Option<&Value>) -> Result<Value, String> {
    let tls = object(value, "tls")?;
    only(
        &tls,
        "tls",
        &["ca", "cert", "key", "server_name", "insecure_skip_verify"],
    )?;
    let mut out = Map::new();
    for pem in ["ca", "cert", "key"] {
        if let Some(text) = text(&tls, pem).map_err(within("tls"))? {
            if !text.contains("-----BEGIN ") {
                return Err(format!("field `tls.{pem}` must be PEM text"));
            }
            out.insert(pem.into(), json!(text));
        }
    }
    if out.contains_key("cert") != out.contains_key("key") {
        return Err("fields `tls.cert` and `tls.key` go together".into());
    }
    if let Some(name) =
        text(&tls, "server_name").map_err(|e| e.replace("field `", "field `tls."))?
    {
        out.insert("server_name".into(), json!(name));
    }
    let insecure = flag(&tls, "insecure_skip_verify")
        .map_err(within("tls"))?
        .unwrap_or(false);
    out.insert("insecure_skip_verify".into(), json!(insecure));
    Ok(Value::Object(out))
}

fn buffer(value: Option<&Value>) -> Result<Value, String> {
    let buffer = object(value, "buffer")?;
    only(
        &buffer,
        "buffer",
        &[
            "max_messages",
            "max_bytes",
            "max_age",
            "overflow",
            "conflate",
        ],
    )?;
    let named = within("buffer");
    let max_messages = number(&buffer, "max_messages", 1, 100_000_000)
        .map_err(named)?
        .unwrap_or(100_000);
    let max_bytes = number(&buffer, "max_bytes", 1024, 1 << 40)
        .map_err(named)?
        .unwrap_or(64 << 20);
    let max_age = duration_field(&buffer, "buffer", "max_age", "24h")?;
    let overflow = text(&buffer, "overflow")
        .map_err(named)?
        .unwrap_or_else(|| "drop_oldest".into());
    if overflow != "drop_oldest" && overflow != "reject" {
        return Err(format!(
            "field `buffer.overflow` must be drop_oldest or reject, not `{overflow}`"
        ));
    }
    let conflate = flag(&buffer, "conflate").map_err(named)?.unwrap_or(false);
    Ok(json!({
        "max_messages": max_messages, "max_bytes": max_bytes, "max_age": max_age,
        "overflow": overflow, "conflate": conflate,
    }))
}

fn bindings(value: Option<&Value>) -> Result<Value, String> {
    let list = match value {
        None | Some(Value::Null) => return Ok(json!([])),
        Some(Value::Array(list)) => list,
        Some(_) => return Err("field `bindings` must be an array".into()),
    };
    let mut out = Vec::with_capacity(list.len());
    for (i, binding) in list.iter().enumerate() {
        let at = format!("bindings[{i}]");
        let binding = object(Some(binding), &at)?;
        only(
            &binding,
            &at,
            &["direction", "local", "remote", "filter", "qos", "retain"],
        )?;
        let named = within(&at);
        let direction = text(&binding, "direction")
            .map_err(named)?
            .unwrap_or_default();
        if !matches!(direction.as_str(), "in" | "out" | "both") {
            return Err(format!("field `{at}.direction` must be in, out or both"));
        }
        let local = text(&binding, "local").map_err(named)?.unwrap_or_default();
        validate_topic_name(&local).map_err(|e| format!("field `{at}.local`: {e}"))?;
        let remote = text(&binding, "remote").map_err(named)?.unwrap_or_default();
        if !remote.is_empty() {
            validate_topic_name(&remote).map_err(|e| format!("field `{at}.remote`: {e}"))?;
        }
        let filter = text(&binding, "filter")
            .map_err(named)?
            .unwrap_or_else(|| "#".into());
        validate_topic_filter(&filter).map_err(|e| format!("field `{at}.filter`: {e}"))?;
        let qos = number(&binding, "qos", 0, 2).map_err(named)?.unwrap_or(1);
        let retain = text(&binding, "retain")
            .map_err(named)?
            .unwrap_or_else(|| "preserve".into());
        if retain != "preserve" && retain != "clear" {
            return Err(format!("field `{at}.retain` must be preserve or clear"));
        }
        out.push(json!({
            "direction": direction, "local": local, "remote": remote, "filter": filter,
            "qos": qos, "retain": retain,
        }));
    }
    Ok(Value::Array(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normalised(value: Value) -> Result<Value, String> {
        let mut fields = value.as_object().cloned().unwrap_or_default();
        normalise(&mut fields, "edge1", "acme").map(|()| Value::Object(fields))
    }

    #[test]
    fn defaults_are_filled_in() {
        let got = normalised(json!({"name": "plant", "host": "broker.local"})).unwrap();
        assert_eq!(got["protocol"], "mqtt");
        assert_eq!(got["port"], 1883);
        assert_eq!(got["client_id"], "svc-edge1-acme-plant");
        assert_eq!(got["mqtt_version"], "5");
        assert_eq!(got["enabled"], true);
        assert_eq!(got["password_set"], false);
        assert_eq!(got["buffer"]["overflow"], "drop_oldest");
        assert_eq!(got["bindings"], json!([]));
        let ws = normalised(json!({"name": "c", "host": "h", "protocol": "wss"})).unwrap();
        assert_eq!(
            (ws["port"].clone(), ws["path"].clone()),
            (json!(443), json!("/mqtt"))
        );
        let v3 = normalised(json!({"name": "c", "host": "h", "mqtt_version": "3.1.1"})).unwrap();
        assert_eq!(v3["mqtt_version"], "3.1.1");
        let binding = normalised(json!({"name": "c", "host": "h",
            "bindings": [{"direction": "both", "local": "acme/site1", "remote": "corp/acme/site1"}]}))
        .unwrap();
        assert_eq!(binding["bindings"][0]["filter"], "#");
        assert_eq!(binding["bindings"][0]["qos"], 1);
    }

    #[test]
    fn every_error_names_its_field() {
        let base = json!({"name": "c", "host": "h"});
        let cases = [
            (json!({"port": 70000}), "`port`"),
            (json!({"port": "x"}), "`port`"),
            (json!({"protocol": "http"}), "`protocol`"),
            (json!({"host": "a b"}), "`host`"),
            (json!({"path": "/x"}), "`path`"),
            (json!({"protocol": "ws", "path": "x"}), "`path`"),
            (json!({"mqtt_version": 3}), "`mqtt_version`"),
            (json!({"keep_alive": -1}), "`keep_alive`"),
            (json!({"keep_alive": 0}), "`keep_alive`"),
            (json!({"tls": {"ca": "nope"}}), "`tls.ca`"),
            (json!({"tls": {"cert": "-----BEGIN X"}}), "`tls.cert`"),
            (json!({"tls": {"bogus": 1}}), "`tls.bogus`"),
            (json!({"reconnect": {"max": "soon"}}), "`reconnect.max`"),
            (json!({"reconnect": {"jitter": 2}}), "`reconnect.jitter`"),
            (
                json!({"buffer": {"overflow": "explode"}}),
                "`buffer.overflow`",
            ),
            (
                json!({"buffer": {"max_messages": 0}}),
                "`buffer.max_messages`",
            ),
            (
                json!({"bindings": [{"direction": "up", "local": "a"}]}),
                "`bindings[0].direction`",
            ),
            (
                json!({"bindings": [{"direction": "in", "local": "a/+"}]}),
                "`bindings[0].local`",
            ),
            (
                json!({"bindings": [{"direction": "in", "local": "a", "remote": "b/#"}]}),
                "`bindings[0].remote`",
            ),
            (
                json!({"bindings": [{"direction": "in", "local": "a", "filter": "a/#/b"}]}),
                "`bindings[0].filter`",
            ),
            (
                json!({"bindings": [{"direction": "in", "local": "a", "qos": 3}]}),
                "`bindings[0].qos`",
            ),
            (json!({"colour": "red"}), "`colour`"),
            (json!({"sparkplug": "yes"}), "`sparkplug`"),
            (
                json!({"sparkplug": {"node": "n", "branch": "a"}}),
                "`sparkplug.group`",
            ),
            (
                json!({"sparkplug": {"group": "g/h", "node": "n", "branch": "a"}}),
                "`sparkplug.group`",
            ),
            (
                json!({"sparkplug": {"group": "g", "node": "n+", "branch": "a"}}),
                "`sparkplug.node`",
            ),
            (
                json!({"sparkplug": {"group": "g", "node": "n", "branch": "a/#"}}),
                "`sparkplug.branch`",
            ),
            (
                json!({"sparkplug": {"group": "g", "node": "n", "branch": "a//b"}}),
                "`sparkplug.branch`",
            ),
            (
                json!({"sparkplug": {"group": "g", "node": "n"}}),
                "`sparkplug.branch`",
            ),
            (
                json!({"sparkplug": {"group": "g", "node": "n", "branch": "a", "x": 1}}),
                "`sparkplug.x`",
            ),
            (json!({"name": "a/b"}), "`name`"),
        ];
        for (patch, needle) in cases {
            let mut body = base.clone();
            for (k, v) in patch.as_object().unwrap() {
                body[k] = v.clone();
            }
            let err = normalised(body.clone()).expect_err(&body.to_string());
            assert!(err.contains(needle), "{body}: {err}");
        }
        assert!(normalised(json!({"host": "h"}))
            .unwrap_err()
            .contains("`name`"));
        assert!(normalised(json!({"name": "c"}))
            .unwrap_err()
            .contains("`host`"));
    }

    #[test]
    fn a_sparkplug_edge_node_is_kept_and_false_turns_it_off() {
        let edge = json!({"group": "Plant", "node": "svc1", "branch": "acme/site1"});
        let got = normalised(json!({"name": "c", "host": "h", "sparkplug": edge})).unwrap();
        assert_eq!(got["sparkplug"], edge);
        let fields = got.as_object().unwrap();
        assert_eq!(sparkplug_branch(fields).as_deref(), Some("acme/site1"));
        let off = normalised(json!({"name": "c", "host": "h", "sparkplug": false})).unwrap();
        assert!(off.get("sparkplug").is_none(), "{off}");
        let none = normalised(json!({"name": "c", "host": "h"})).unwrap();
        assert!(none.get("sparkplug").is_none(), "{none}");
    }

    #[test]
    fn the_password_is_taken_out() {
        let mut fields = json!({"name": "c", "password": "s3cret"})
            .as_object()
            .cloned()
            .unwrap();
        assert_eq!(take_password(&mut fields), Ok(Some(Some("s3cret".into()))));
        assert!(!fields.contains_key("password"));
        assert_eq!(take_password(&mut fields), Ok(None));
        let mut cleared = json!({"password": ""}).as_object().cloned().unwrap();
        assert_eq!(take_password(&mut cleared), Ok(Some(None)));
        let mut wrong = json!({"password": 5}).as_object().cloned().unwrap();
        assert!(take_password(&mut wrong).is_err());
    }
}

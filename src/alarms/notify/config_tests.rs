//! The record checks of a pipeline: defaults, reading a record back, and a sentence naming
//! every bad field.

use super::*;

fn check(body: Value) -> Result<Value, String> {
    let mut fields = body.as_object().unwrap().clone();
    normalise(&mut fields).map(|()| Value::Object(fields))
}

fn error(body: Value) -> String {
    check(body).expect_err("refused")
}

#[test]
fn a_minimal_record_gets_every_default() {
    let stored = check(json!({
        "name": "ops",
        "email": {"host": "smtp.example.com", "from": "svc@example.com", "to": ["ops@example.com"]}
    }))
    .unwrap();
    assert_eq!(
        stored,
        json!({
            "name": "ops",
            "enabled": true,
            "priorities": ["low", "medium", "high", "critical"],
            "states": ["active_unacknowledged", "normal"],
            "email": {"host": "smtp.example.com", "port": 587, "tls": "starttls",
                      "from": "svc@example.com", "to": ["ops@example.com"]}
        })
    );
    let pipeline = Pipeline::from_record("k1", &stored).unwrap();
    assert_eq!(pipeline.email.as_ref().unwrap().tls, Tls::Starttls);
    assert!(pipeline.takes(Priority::Low, StateName::ActiveUnacknowledged));
    assert!(!pipeline.takes(Priority::Low, StateName::ActiveAcknowledged));
}

#[test]
fn a_full_record_reads_back_as_its_pipeline() {
    let stored = check(json!({
        "name": "night",
        "priorities": ["critical", "high"],
        "webhook": {"url": "https://hooks.example.com/a", "headers": {"Authorization": "Bearer x"}},
        "email": {"host": "mail", "port": 2525, "tls": "none", "username": "u",
                  "from": "svc <svc@example.com>", "to": ["a@example.com", "b@example.com"]},
        "rate_limit": {"count": 5},
        "digest": {"window": "30s", "min": 3},
        "escalation": {"after": "5m", "to": ["boss@example.com"],
                       "webhook": {"url": "http://pager.local/x"}}
    }))
    .unwrap();
    let p = Pipeline::from_record("k", &stored).unwrap();
    assert_eq!(p.priorities, vec![Priority::Critical, Priority::High]);
    assert_eq!(
        p.rate_limit,
        Some(RateLimit {
            count: 5,
            per_ms: 600_000
        })
    );
    assert_eq!(
        p.digest,
        Some(Digest {
            window_ms: 30_000,
            min: 3
        })
    );
    let escalation = p.escalation.unwrap();
    assert_eq!(escalation.after_ms, 300_000);
    assert_eq!(escalation.webhook.unwrap().url, "http://pager.local/x");
    let email = p.email.unwrap();
    assert_eq!(
        (email.port, email.tls, email.username.as_deref()),
        (2525, Tls::None, Some("u"))
    );
    assert_eq!(
        p.webhook.unwrap().headers,
        vec![("Authorization".into(), "Bearer x".into())]
    );
}

#[test]
fn every_bad_field_is_named() {
    let mail = json!({"host": "m", "from": "a@b.c", "to": ["d@e.f"]});
    let cases = [
        (json!({"email": mail}), "field `name`"),
        (json!({"name": "x"}), "field `webhook` or field `email`"),
        (
            json!({"name": "x", "email": mail, "extra": 1}),
            "unknown field `extra`",
        ),
        (
            json!({"name": "x", "email": mail, "priorities": ["urgent"]}),
            "field `priorities`",
        ),
        (
            json!({"name": "x", "email": mail, "priorities": []}),
            "field `priorities`",
        ),
        (
            json!({"name": "x", "email": mail, "states": ["on"]}),
            "field `states`",
        ),
        (
            json!({"name": "x", "webhook": {"url": "ftp://h/x"}}),
            "field `webhook.url`",
        ),
        (
            json!({"name": "x", "webhook": {"url": "not a url"}}),
            "field `webhook.url`",
        ),
        (json!({"name": "x", "webhook": {}}), "field `webhook.url`"),
        (
            json!({"name": "x", "webhook": {"url": "http://h", "headers": {"a b": "c"}}}),
            "field `webhook.headers`",
        ),
        (
            json!({"name": "x", "webhook": {"url": "http://h", "headers": {"a": 1}}}),
            "field `webhook.headers.a`",
        ),
        (
            json!({"name": "x", "webhook": {"url": "http://h", "method": "PUT"}}),
            "unknown field `webhook.method`",
        ),
        (
            json!({"name": "x", "email": {"from": "a@b.c", "to": ["d@e.f"]}}),
            "field `email.host`",
        ),
        (
            json!({"name": "x", "email": {"host": "m", "to": ["d@e.f"]}}),
            "field `email.from`",
        ),
        (
            json!({"name": "x", "email": {"host": "m", "from": "nobody", "to": ["d@e.f"]}}),
            "field `email.from`",
        ),
        (
            json!({"name": "x", "email": {"host": "m", "from": "a@b.c"}}),
            "field `email.to`",
        ),
        (
            json!({"name": "x", "email": {"host": "m", "from": "a@b.c", "to": ["x"]}}),
            "field `email.to`",
        ),
        (
            json!({"name": "x", "email": {"host": "m", "from": "a@b.c", "to": ["d@e.f"], "tls": "ssl"}}),
            "field `email.tls`",
        ),
        (
            json!({"name": "x", "email": {"host": "m", "from": "a@b.c", "to": ["d@e.f"], "port": 0}}),
            "field `email.port`",
        ),
        (
            json!({"name": "x", "email": mail, "rate_limit": {"per": "1m"}}),
            "field `rate_limit.count`",
        ),
        (
            json!({"name": "x", "email": mail, "rate_limit": {"count": 2, "per": "soon"}}),
            "field `rate_limit.per`",
        ),
        (
            json!({"name": "x", "email": mail, "rate_limit": 5}),
            "field `rate_limit`",
        ),
        (
            json!({"name": "x", "email": mail, "digest": {"min": 1}}),
            "field `digest.min`",
        ),
        (
            json!({"name": "x", "email": mail, "digest": {"window": "0s"}}),
            "field `digest.window`",
        ),
        (
            json!({"name": "x", "email": mail, "escalation": {"after": "1m"}}),
            "field `escalation.to`",
        ),
        (
            json!({"name": "x", "email": mail, "escalation": {"after": "x", "to": ["d@e.f"]}}),
            "field `escalation.after`",
        ),
        (
            json!({"name": "x", "webhook": {"url": "http://h"}, "escalation": {"to": ["d@e.f"]}}),
            "field `escalation.to` needs field `email`",
        ),
        (
            json!({"name": "x", "email": mail, "escalation": {"webhook": {"url": "h"}}}),
            "field `escalation.webhook.url`",
        ),
        (
            json!({"name": "x", "email": mail, "enabled": "yes"}),
            "field `enabled`",
        ),
    ];
    for (body, needle) in cases {
        let e = error(body.clone());
        assert!(e.contains(needle), "{body}: `{e}` does not name {needle}");
        assert!(!e.contains('\n'), "{e}");
    }
}

#[test]
fn the_default_port_follows_the_tls_mode() {
    for (tls, port) in [("none", 25), ("starttls", 587), ("tls", 465)] {
        let stored = check(json!({"name": "x",
            "email": {"host": "m", "from": "a@b.c", "to": ["d@e.f"], "tls": tls}}))
        .unwrap();
        assert_eq!(stored["email"]["port"], json!(port), "{tls}");
    }
}

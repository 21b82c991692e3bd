//! The `database` setting and the PostgreSQL engine's start (issue 18): a URL that is not one
//! is refused with a sentence, an unreachable server is named without its password, and on a
//! fresh database the engine applies its versioned migrations once, records them, and keeps
//! identity (the bootstrap administrator) in PostgreSQL across restarts.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::process::Command;
use std::time::Duration;

#[test]
fn a_database_setting_that_is_not_a_postgres_url_is_refused_with_a_sentence() {
    for bad in ["mysql://h/db", "postgres://h:notaport/db", "postgres://h"] {
        let out = Command::new(env!("CARGO_BIN_EXE_svc"))
            .args(["serve", "--database", bad])
            .env_remove("SVC_CONFIG")
            .output()
            .expect("run svc");
        assert!(!out.status.success(), "{bad}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("invalid database"), "{bad}: {stderr}");
        assert!(!stderr.contains("panicked"), "{bad}: {stderr}");
    }
}

#[test]
fn an_unreachable_postgres_is_named_without_its_password() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let url = format!("postgres://svc:hunter2-secret@127.0.0.1:{port}/plant?sslmode=disable");
    let (ready, stderr) = serve_once(&url);
    assert!(!ready, "{stderr}");
    assert!(
        stderr.contains(&format!("postgres://svc@127.0.0.1:{port}/plant")),
        "{stderr}"
    );
    assert!(stderr.contains("unreachable"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "the password leaked: {stderr}");
}

#[test]
fn the_engine_applies_its_migrations_once_and_keeps_identity_in_postgres() {
    let pg = Postgres::start();
    let url = pg.fresh_database();
    let db = database_name(&url);
    let password = url
        .split(':')
        .nth(2)
        .and_then(|rest| rest.split('@').next())
        .expect("password in the URL")
        .to_string();

    let (_, first) = serve_once(&url);
    assert!(!first.contains(&password), "the password leaked: {first}");
    let migrations = |pg: &Postgres| {
        pg.psql(
            &db,
            "SELECT string_agg(version::text, ',' ORDER BY version) FROM svc_schema_migrations",
        )
        .expect("migrations table")
    };
    let applied = migrations(&pg);
    assert!(applied.starts_with("1,2"), "{applied}");
    let admins = |pg: &Postgres| {
        pg.psql(
            &db,
            "SELECT string_agg(username, ',') FROM auth_users WHERE admin",
        )
        .expect("users table")
    };
    assert_eq!(admins(&pg), "admin", "{first}");
    assert_eq!(
        pg.psql(
            &db,
            "SELECT count(*) FROM auth_domains WHERE name = 'svc_admin'"
        )
        .expect("domains"),
        "1"
    );

    // A second start (another instance, or the same one again) finds every migration applied
    // and the administrator already there.
    let (_, second) = serve_once(&url);
    assert_eq!(migrations(&pg), applied, "{second}");
    assert_eq!(admins(&pg), "admin", "{second}");
    assert!(!second.contains(&password), "the password leaked: {second}");
}

/// While PostgreSQL is down: REST answers 503 with a sentence, MQTT keeps routing live values,
/// and historized values acknowledged at QoS 1 wait in the historian's journal; when it is back
/// svc reconnects by itself, answers again and writes every one of those values.
#[test]
fn a_postgres_outage_is_503_live_values_keep_flowing_and_history_catches_up() {
    let mut pg = Postgres::start();
    let url = pg.fresh_database();
    let server = Server::start_with(&["--database", &url]);
    server.create_domain("plant");
    server.create_tag("domains:plant", "plant/line1/temp", true);
    server.create_record("domains:plant", "orders", &json!({"qty": 1}));
    let mut watcher = server.mqtt_admin(Proto::V5, Via::Tcp, "outage-watcher");
    watcher.subscribe("plant/#", 1);
    let mut feed = server.mqtt_admin(Proto::V5, Via::Tcp, "outage-feed");

    pg.stop();
    // What must reach the database answers 503: a list and a write. (A record read by id
    // a moment before may still be answered from svc's record cache, which no other
    // instance can make stale while the database is down.)
    let list = server.admin_in("domains:plant", Method::GET, "/svc/orders/all");
    let write = server
        .admin_in("domains:plant", Method::POST, "/svc/orders")
        .json(&json!({"qty": 2}));
    for (what, request) in [("list", list), ("write", write)] {
        let down = request.send().expect("request while down");
        let status = down.status();
        let body = down.text().expect("body");
        assert_eq!(
            status,
            StatusCode::SERVICE_UNAVAILABLE,
            "{what}: {body}\n{}",
            server.stderr()
        );
        assert!(body.contains("unreachable"), "{what}: {body}");
    }
    const T0: i64 = 1_767_225_600_000;
    for i in 0..5 {
        let payload = json!({"value": i, "timestamp": T0 + i * 1000}).to_string();
        assert_eq!(
            feed.publish("plant/line1/temp", payload, 1, false),
            "Success"
        );
        let live = watcher.expect_publish("plant/line1/temp");
        let text = String::from_utf8_lossy(&live.payload).into_owned();
        assert!(text.contains(&format!("\"value\":{i}")), "{text}");
    }

    pg.start_server();
    let orders = server.poll(Duration::from_secs(15), "svc answering again", || {
        let resp = server
            .admin_in("domains:plant", Method::GET, "/svc/orders/all")
            .send()
            .ok()?;
        (resp.status() == StatusCode::OK).then(|| resp.json::<Value>().ok())?
    });
    assert_eq!(orders.as_array().map(Vec::len), Some(1), "{orders}");
    let history = server.poll(Duration::from_secs(20), "the 5 values in the historian", || {
        let resp = server
            .admin_in("domains:plant", Method::PATCH, "/svc/historian")
            .json(&json!({"topic": "plant/line1/temp", "start_time": "2026-01-01T00:00:00Z", "range": "1m"}))
            .send()
            .ok()?;
        let points: Value = resp.json().ok()?;
        (points.as_array().map_or(0, Vec::len) == 5).then_some(points)
    });
    let values: Vec<i64> = history
        .as_array()
        .expect("points")
        .iter()
        .map(|p| p["value"].as_i64().expect("a number"))
        .collect();
    assert_eq!(values, [0, 1, 2, 3, 4]);
}

/// Two `svc serve` instances on one PostgreSQL database are one platform: a user made on one
/// logs in on the other, a token from one is good on the other (the JWT secret lives in the
/// database), and an API key revoked or a user deleted on one is refused by the other within
/// a second, although the other had just cached them.
#[test]
fn two_instances_on_one_database_share_identity_and_forget_it_together() {
    let pg = Postgres::start();
    let url = pg.fresh_database();
    let a = Server::start_with(&["--database", &url]);
    let b = Server::start_with(&["--database", &url]);
    let who = |server: &Server, token: &str| {
        server
            .with_token(token, Method::GET, "/svc/")
            .send()
            .expect("GET /svc/")
            .status()
    };
    let user_id = a.create_user("operator", "Op3rator-pass!");
    let token_b = b.login("operator", "Op3rator-pass!");
    let token_a = a.login("operator", "Op3rator-pass!");
    assert_eq!(who(&b, &token_a), StatusCode::OK, "a token from a, on b");
    assert_eq!(who(&a, &token_b), StatusCode::OK, "a token from b, on a");

    let (key_id, key) = a.create_api_key(&a.admin_token(), "line1");
    let with_key = |server: &Server| {
        server
            .req(Method::GET, "/svc/")
            .header("X-Svc-Api-Key", &key)
            .send()
            .expect("GET /svc/ with a key")
            .status()
    };
    assert_eq!(with_key(&b), StatusCode::OK, "the key, cached on b");
    a.revoke_api_key(&a.admin_token(), &key_id);
    b.poll(Duration::from_secs(1), "b refusing the revoked key", || {
        (with_key(&b) == StatusCode::UNAUTHORIZED).then_some(())
    });

    assert_eq!(who(&b, &token_b), StatusCode::OK, "the user, cached on b");
    let deleted = a
        .admin(Method::DELETE, &format!("/auth/user/{}", enc(&user_id)))
        .send()
        .expect("delete the user");
    assert_eq!(deleted.status(), StatusCode::OK);
    b.poll(
        Duration::from_secs(1),
        "b refusing the deleted user",
        || (who(&b, &token_b) == StatusCode::UNAUTHORIZED).then_some(()),
    );
}

/// The historian's points go into day partitions created as values need them, and retention
/// drops whole partitions that hold only expired days (a value older than the retention is
/// gone, a recent one stays).
#[test]
fn historian_partitions_are_made_for_the_values_and_dropped_by_retention() {
    let pg = Postgres::start();
    let url = pg.fresh_database();
    let mut server = Server::start_with(&["--database", &url, "--historian-retention", "30d"]);
    server.create_domain("plant");
    server.create_tag("domains:plant", "plant/line1/temp", true);
    let now = chrono::Utc::now().timestamp_millis();
    let old = now - 40 * 86_400_000;
    let recent = now - 3_600_000;
    let mut feed = server.mqtt_admin(Proto::V5, Via::Tcp, "retention-feed");
    for (ts, value) in [(old, 1), (recent, 2)] {
        let payload = json!({"value": value, "timestamp": ts}).to_string();
        assert_eq!(
            feed.publish("plant/line1/temp", payload, 1, false),
            "Success"
        );
    }
    let partition = |ts: i64| {
        let day = chrono::DateTime::from_timestamp_millis(ts).expect("a time");
        format!("hist_points_p{}", day.format("%Y%m%d"))
    };
    let db = database_name(&url);
    let partitions = || {
        pg.psql(
            &db,
            "SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_inherits i \
             JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'hist_points'::regclass",
        )
        .expect("partitions")
    };
    // The recent value's day has its partition; the old value closed into a block at once (a
    // block never spans more than a day), and its day's emptied partition may already be given
    // back, so it is either there or not.
    let both = format!("{},{}", partition(old), partition(recent));
    server.poll(Duration::from_secs(10), "the day partitions", || {
        let now = partitions();
        (now == both || now == partition(recent)).then_some(())
    });
    // Rows, and points closed into blocks (the 40-day-old one closes at once: a block never
    // spans more than a day).
    let stored = || -> usize {
        pg.psql(
            &db,
            "SELECT (SELECT count(*) FROM hist_points) \
                  + (SELECT coalesce(sum(count), 0) FROM hist_blocks)",
        )
        .expect("count")
        .parse()
        .expect("a count")
    };
    server.poll(Duration::from_secs(10), "both values stored", || {
        (stored() == 2).then_some(())
    });

    // The sweep runs at start (and every minute): the 40-day-old partition goes whole.
    assert!(server.terminate().success());
    server.restart();
    server.poll(
        Duration::from_secs(10),
        "the expired partition dropped",
        || (partitions() == partition(recent)).then_some(()),
    );
    // The old value goes with its partition, or, when the sealer closed it into a block while
    // the start's sweep ran (its block committed after the sweep looked), at the next sweep a
    // minute later: retention holds within one sweep period.
    server.poll(
        Duration::from_secs(75),
        "the expired value gone, the recent one kept",
        || (stored() == 1).then_some(()),
    );
}

/// A value PostgreSQL cannot hold (text with a NUL character, which `jsonb` refuses) is the
/// caller's 400 with a sentence, not a server error, and stores nothing.
#[test]
fn a_value_postgres_cannot_hold_is_a_400_that_stores_nothing() {
    let pg = Postgres::start();
    let server = Server::start_with(&["--database", &pg.fresh_database()]);
    server.create_domain("plant");
    server.create_record("domains:plant", "notes", &json!({"text": "kept"}));
    let refused = server
        .admin_in("domains:plant", Method::POST, "/svc/notes")
        .json(&json!({"text": "a\u{0}b"}))
        .send()
        .expect("POST");
    assert_error(refused, StatusCode::BAD_REQUEST, &["cannot store"]);
    assert_eq!(server.count("domains:plant", "notes"), 1);
}

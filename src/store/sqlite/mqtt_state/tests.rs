//! Tests of the broker's durable state on a temporary SQLite file: every write kind round trips,
//! a batch is one transaction, the load expires what has expired (with its rows), the state
//! outlives the `SqliteStore` that wrote it, and the tables stay out of every domain's relations.

use super::*;
use crate::report_sql;
use crate::store::interface::*;

fn store() -> (tempfile::TempDir, SqliteStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("t.db")).unwrap();
    (dir, store)
}

fn message(topic: &str, payload: &[u8]) -> StoredMessage {
    StoredMessage {
        topic: topic.into(),
        payload: payload.to_vec(),
        qos: 1,
        retain: false,
        properties: vec![0x01, 0x00, 0xff],
        received_ms: 1_000,
        expires_at_ms: None,
    }
}

fn put_session(client_id: &str, expiry_secs: u32, disconnected_at_ms: Option<i64>) -> MqttWrite {
    MqttWrite::PutSession {
        client_id: client_id.into(),
        owner: format!("owner-of-{client_id}"),
        expiry_secs,
        disconnected_at_ms,
    }
}

fn subscribe(client_id: &str, filter: &str, options: &[u8]) -> MqttWrite {
    MqttWrite::PutSubscription {
        client_id: client_id.into(),
        subscription: StoredSubscription {
            filter: filter.into(),
            options: options.to_vec(),
        },
    }
}

fn enqueue(client_id: &str, seq: i64, message: StoredMessage) -> MqttWrite {
    MqttWrite::Enqueue {
        client_id: client_id.into(),
        seq,
        message,
    }
}

fn inbound(client_id: &str, packet_id: u16) -> MqttWrite {
    MqttWrite::PutInboundQos2 {
        client_id: client_id.into(),
        packet_id,
    }
}

/// Rows of `table` for `client_id`, whether or not a load would show them.
fn rows_of(store: &SqliteStore, table: &str, client_id: &str) -> i64 {
    store
        .conn()
        .unwrap()
        .query_row(
            &format!("SELECT count(*) FROM {table} WHERE client_id = ?1"),
            [client_id],
            |r| r.get(0),
        )
        .unwrap()
}

fn session<'s>(sessions: &'s [StoredSession], client_id: &str) -> &'s StoredSession {
    sessions
        .iter()
        .find(|s| s.client_id == client_id)
        .unwrap_or_else(|| panic!("no session `{client_id}` in {sessions:?}"))
}

#[test]
fn every_write_kind_round_trips() {
    let (_dir, store) = store();
    let mut kept = message("plant/a", b"");
    kept.retain = true;
    kept.qos = 2;
    kept.expires_at_ms = Some(i64::MAX);
    kept.properties = Vec::new();
    store
        .mqtt_write(&[
            MqttWrite::PutRetained(message("plant/a", b"old")),
            MqttWrite::PutRetained(kept.clone()),
            MqttWrite::PutRetained(message("plant/b", b"gone")),
            MqttWrite::DeleteRetained {
                topic: "plant/b".into(),
            },
            put_session("c1", 60, None),
            subscribe("c1", "plant/#", &[1]),
            subscribe("c1", "plant/#", &[2, 3]),
            subscribe("c1", "other/+", &[0]),
            MqttWrite::DeleteSubscription {
                client_id: "c1".into(),
                filter: "other/+".into(),
            },
            enqueue("c1", 1, message("plant/x", b"one")),
            enqueue("c1", 2, message("plant/y", b"two")),
            enqueue("c1", 3, message("plant/z", b"three")),
            MqttWrite::SetDelivery {
                client_id: "c1".into(),
                seq: 2,
                packet_id: Some(7),
                state: 2,
            },
            MqttWrite::Dequeue {
                client_id: "c1".into(),
                seq: 1,
            },
            inbound("c1", 9),
            inbound("c1", 9),
            inbound("c1", 4),
            MqttWrite::DeleteInboundQos2 {
                client_id: "c1".into(),
                packet_id: 4,
            },
        ])
        .unwrap();
    // An upsert of the session changes its fields and keeps what it holds.
    store
        .mqtt_write(&[MqttWrite::PutSession {
            client_id: "c1".into(),
            owner: "someone-else".into(),
            expiry_secs: 3_600,
            disconnected_at_ms: Some(50_000),
        }])
        .unwrap();

    let (retained, sessions) = store.mqtt_load(60_000).unwrap();
    assert_eq!(retained, vec![kept]);
    assert_eq!(
        sessions,
        vec![StoredSession {
            client_id: "c1".into(),
            owner: "someone-else".into(),
            expiry_secs: 3_600,
            disconnected_at_ms: Some(50_000),
            subscriptions: vec![StoredSubscription {
                filter: "plant/#".into(),
                options: vec![2, 3],
            }],
            queue: vec![
                QueuedMessage {
                    seq: 2,
                    packet_id: Some(7),
                    state: 2,
                    message: message("plant/y", b"two"),
                },
                QueuedMessage {
                    seq: 3,
                    packet_id: None,
                    state: 0,
                    message: message("plant/z", b"three"),
                },
            ],
            inbound_qos2: vec![9],
        }]
    );

    store
        .mqtt_write(&[MqttWrite::DeleteSession {
            client_id: "c1".into(),
        }])
        .unwrap();
    assert_eq!(store.mqtt_load(60_000).unwrap().1, vec![]);
    for table in [
        "mqtt_sessions",
        "mqtt_subscriptions",
        "mqtt_queue",
        "mqtt_inbound_qos2",
    ] {
        assert_eq!(rows_of(&store, table, "c1"), 0, "{table} keeps rows of c1");
    }
}

#[test]
fn a_failing_write_leaves_nothing_of_its_batch() {
    let (_dir, store) = store();
    store
        .mqtt_write(&[
            put_session("c1", 60, Some(0)),
            enqueue("c1", 1, message("t", b"a")),
        ])
        .unwrap();
    let err = store
        .mqtt_write(&[
            MqttWrite::PutRetained(message("r", b"x")),
            put_session("c2", 60, Some(0)),
            enqueue("c1", 2, message("t", b"b")),
            MqttWrite::Dequeue {
                client_id: "c1".into(),
                seq: 1,
            },
            enqueue("c1", 2, message("t", b"again")),
        ])
        .unwrap_err();
    match err {
        StoreError::Conflict(m) => assert!(m.contains("#4") && m.contains("`c1`"), "{m}"),
        other => panic!("expected a conflict, got {other:?}"),
    }
    let (retained, sessions) = store.mqtt_load(1_000).unwrap();
    assert!(retained.is_empty());
    assert_eq!(sessions.len(), 1);
    let queue = &session(&sessions, "c1").queue;
    assert_eq!(queue.len(), 1);
    assert_eq!(queue[0].message.payload, b"a");
}

#[test]
fn values_the_broker_cannot_mean_are_refused() {
    let (_dir, store) = store();
    let mut bad = message("t", b"x");
    bad.qos = 3;
    let refused = [
        vec![MqttWrite::PutRetained(bad.clone())],
        vec![put_session("c", 60, None), enqueue("c", 1, bad)],
        vec![
            put_session("c", 60, None),
            enqueue("c", 1, message("t", b"x")),
            MqttWrite::SetDelivery {
                client_id: "c".into(),
                seq: 1,
                packet_id: Some(1),
                state: 3,
            },
        ],
    ];
    for batch in refused {
        let err = store.mqtt_write(&batch).unwrap_err();
        assert!(matches!(err, StoreError::Invalid(_)), "{err:?}");
    }
    assert_eq!(store.mqtt_load(0).unwrap(), (vec![], vec![]));
}

#[test]
fn load_drops_what_has_expired_with_its_rows() {
    let (_dir, store) = store();
    let mut expiring = message("r/expiring", b"x");
    expiring.expires_at_ms = Some(10_000);
    let mut lasting = message("r/lasting", b"y");
    lasting.expires_at_ms = Some(10_001);
    let mut stale = message("q/stale", b"z");
    stale.expires_at_ms = Some(5_000);
    store
        .mqtt_write(&[
            MqttWrite::PutRetained(expiring),
            MqttWrite::PutRetained(lasting.clone()),
            // Disconnected at 1 s for 9 s: ends exactly at 10 s.
            put_session("ended", 9, Some(1_000)),
            subscribe("ended", "a/#", &[1]),
            enqueue("ended", 1, message("a/b", b"q")),
            inbound("ended", 3),
            put_session("kept", 10, Some(1_000)),
            enqueue("kept", 1, stale.clone()),
            enqueue("kept", 2, stale.clone()),
            enqueue("kept", 3, message("q/fresh", b"f")),
            // Delivery of #2 has started: it must be finished, expired or not.
            MqttWrite::SetDelivery {
                client_id: "kept".into(),
                seq: 2,
                packet_id: Some(11),
                state: 1,
            },
            // Connected when the broker stopped; a clean session (expiry 0) ends with that.
            put_session("was-connected", 30, None),
            put_session("clean", 0, None),
            subscribe("clean", "x", &[0]),
        ])
        .unwrap();

    let (retained, sessions) = store.mqtt_load(10_000).unwrap();
    assert_eq!(retained, vec![lasting]);
    let names: Vec<&str> = sessions.iter().map(|s| s.client_id.as_str()).collect();
    assert_eq!(names, ["kept", "was-connected"]);
    let kept: Vec<(i64, &str)> = session(&sessions, "kept")
        .queue
        .iter()
        .map(|q| (q.seq, q.message.topic.as_str()))
        .collect();
    assert_eq!(kept, [(2, "q/stale"), (3, "q/fresh")]);
    assert_eq!(
        session(&sessions, "was-connected").disconnected_at_ms,
        Some(10_000)
    );
    for client_id in ["ended", "clean"] {
        for table in [
            "mqtt_sessions",
            "mqtt_subscriptions",
            "mqtt_queue",
            "mqtt_inbound_qos2",
        ] {
            assert_eq!(rows_of(&store, table, client_id), 0, "{table}, {client_id}");
        }
    }

    // The start counted as the disconnection, and that was stored: 30 s later it ends.
    let (_, sessions) = store.mqtt_load(39_999).unwrap();
    assert!(sessions.iter().any(|s| s.client_id == "was-connected"));
    let (_, sessions) = store.mqtt_load(40_000).unwrap();
    assert!(sessions.iter().all(|s| s.client_id != "was-connected"));
}

#[test]
fn load_drops_rows_whose_session_is_gone() {
    let (_dir, store) = store();
    store
        .mqtt_write(&[
            put_session("c", 60, None),
            MqttWrite::DeleteSession {
                client_id: "c".into(),
            },
            // A write that raced the deletion.
            enqueue("c", 1, message("t", b"late")),
            subscribe("c", "t", &[0]),
            inbound("c", 1),
        ])
        .unwrap();
    assert_eq!(rows_of(&store, "mqtt_queue", "c"), 1);
    assert_eq!(store.mqtt_load(0).unwrap().1, vec![]);
    for table in ["mqtt_subscriptions", "mqtt_queue", "mqtt_inbound_qos2"] {
        assert_eq!(rows_of(&store, table, "c"), 0, "{table}");
    }
}

#[test]
fn the_state_outlives_the_store_that_wrote_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broker.db");
    let writes = [
        MqttWrite::PutRetained(message("r", b"kept")),
        put_session("c", 600, Some(5_000)),
        subscribe("c", "s/#", &[1, 2]),
        enqueue("c", 1, message("s/1", b"q")),
        MqttWrite::SetDelivery {
            client_id: "c".into(),
            seq: 1,
            packet_id: Some(42),
            state: 1,
        },
        inbound("c", 77),
    ];
    {
        let store = SqliteStore::open(&path).unwrap();
        store.mqtt_write(&writes).unwrap();
        // No close(): the write-ahead log is left as a stopped process leaves it.
    }
    let first = SqliteStore::open(&path).unwrap().mqtt_load(6_000).unwrap();
    assert_eq!(first.0.len(), 1);
    assert_eq!(first.1.len(), 1);
    assert_eq!(first.1[0].queue[0].packet_id, Some(42));
    assert_eq!(first.1[0].inbound_qos2, [77]);
    let second = SqliteStore::open(&path).unwrap().mqtt_load(6_000).unwrap();
    assert_eq!(first, second);
}

#[test]
fn ten_thousand_enqueues_in_one_call_come_back_in_order() {
    let (_dir, store) = store();
    let mut writes = vec![put_session("bulk", 60, None)];
    // Written out of order, so the order read back is the store's doing.
    writes.extend((0..10_000i64).rev().map(|seq| {
        let mut m = message("bulk/t", &seq.to_be_bytes());
        m.received_ms = seq;
        enqueue("bulk", seq, m)
    }));
    store.mqtt_write(&writes).unwrap();
    let (_, sessions) = store.mqtt_load(0).unwrap();
    let queue = &session(&sessions, "bulk").queue;
    assert_eq!(queue.len(), 10_000);
    for (i, queued) in queue.iter().enumerate() {
        let seq = i as i64;
        assert_eq!(queued.seq, seq);
        assert_eq!(queued.message.payload, seq.to_be_bytes());
        assert_eq!(queued.message.received_ms, seq);
    }
}

#[test]
fn the_broker_tables_are_no_relation_of_any_domain() {
    let (_dir, store) = store();
    store
        .mqtt_write(&[
            MqttWrite::PutRetained(message("r", b"x")),
            put_session("c", 60, None),
            subscribe("c", "f", &[0]),
            enqueue("c", 1, message("t", b"x")),
            inbound("c", 1),
        ])
        .unwrap();
    for table in [
        "mqtt_retained",
        "mqtt_sessions",
        "mqtt_subscriptions",
        "mqtt_queue",
        "mqtt_inbound_qos2",
    ] {
        let query = report_sql::check(&format!("SELECT * FROM {table}")).unwrap();
        for domain in ["svc_admin", "mqtt", "mqtt_retained", "d"] {
            let err = store.report_relations(domain, &query).err();
            assert!(
                matches!(err, Some(StoreError::Invalid(_))),
                "`{table}` resolves in domain `{domain}`: {err:?}"
            );
        }
    }
}

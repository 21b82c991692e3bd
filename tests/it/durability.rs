//! "Acknowledged" means "stored": `kill -9` in the middle of a load loses nothing that svc
//! acknowledged. Several rounds, each on the data dir of the last: concurrent MQTT QoS 1
//! publishers (pipelined, many in flight) on historized tags and REST writers creating records;
//! the server is killed with SIGKILL while they run; after a restart every PUBACKed value is in
//! the historian and every record answered 201 is there. The historian closes rows into
//! blocks all the while (each publisher's tag fills several blocks a round, and a tag left
//! idle for a second closes at once), so kills also land while blocks are written.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

const DOMAIN: &str = "domains:plant";
const PUBLISHERS: usize = 4;
const REST_WRITERS: usize = 2;
const ROUNDS: usize = 3;

fn tag(publisher: usize) -> String {
    format!("plant/line/p{publisher}")
}

/// Publishes increasing integers on `topic` at QoS 1 with up to 100 in flight until the
/// connection breaks (the server was killed) or `stop`; returns the values svc PUBACKed.
fn publish_until_killed(
    port: u16,
    key: &str,
    topic: &str,
    first: u64,
    stop: &AtomicBool,
) -> BTreeSet<u64> {
    let publisher = Publisher {
        client_id: format!("dur-{topic}-{first}"),
        username: "device",
        password: key,
        topic,
    };
    publish_acknowledged(port, publisher, first.., |_| !stop.load(Ordering::Relaxed))
}

/// Creates records until a request fails; returns the ids answered 201.
fn create_until_killed(server_base: &str, token: &str, writer: usize) -> Vec<String> {
    let client = reqwest::blocking::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let mut created = Vec::new();
    for n in 0.. {
        let sent = client
            .post(format!("{server_base}/svc/readings"))
            .bearer_auth(token)
            .header("Domain", DOMAIN)
            .json(&json!({"writer": writer, "n": n}))
            .send();
        match sent {
            Ok(resp) if resp.status() == StatusCode::CREATED => {
                let body: Value = resp.json().unwrap();
                created.push(body["id"].as_str().unwrap().to_string());
            }
            _ => break,
        }
    }
    created
}

fn historized_values(server: &Server, topic: &str) -> BTreeSet<u64> {
    let resp = server
        .admin_in(DOMAIN, Method::PATCH, "/svc/historian")
        .json(&json!({"topic": topic, "start_time": "2000-01-01T00:00:00Z"}))
        .send()
        .unwrap();
    let points = json_ok(resp, StatusCode::OK);
    points
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            p["value"]
                .as_u64()
                .unwrap_or_else(|| panic!("value of {p}"))
        })
        .collect()
}

#[test]
fn acknowledged_values_and_records_survive_kill_9() {
    let mut server = Server::start_with(&["--historian-seal-idle", "1s"]);
    server.create_domain("plant");
    for p in 0..PUBLISHERS {
        server.create_tag(DOMAIN, &tag(p), true);
    }
    let mut acked: Vec<BTreeSet<u64>> = vec![BTreeSet::new(); PUBLISHERS];
    let mut records: Vec<String> = Vec::new();
    for round in 0..ROUNDS {
        let token = server.admin_token();
        let (_, key) = server.create_api_key(&token, &format!("device-{round}"));
        let port = server.listener_port("mqtt");
        let stop = Arc::new(AtomicBool::new(false));
        let publishers: Vec<_> = (0..PUBLISHERS)
            .map(|p| {
                let (key, stop) = (key.clone(), stop.clone());
                let first = (round as u64) * 10_000_000;
                thread::spawn(move || publish_until_killed(port, &key, &tag(p), first, &stop))
            })
            .collect();
        let writers: Vec<_> = (0..REST_WRITERS)
            .map(|w| {
                let (base, token) = (server.base.clone(), token.clone());
                thread::spawn(move || create_until_killed(&base, &token, w))
            })
            .collect();
        // Let the load run, then kill the server under it.
        thread::sleep(Duration::from_millis(1500 + 500 * round as u64));
        server.kill9();
        let deadline = Instant::now() + Duration::from_secs(20);
        for (p, publisher) in publishers.into_iter().enumerate() {
            let got = publisher.join().expect("publisher thread");
            assert!(
                !got.is_empty(),
                "round {round}: publisher {p} got no PUBACK before the kill"
            );
            acked[p].extend(got);
        }
        stop.store(true, Ordering::Relaxed);
        for writer in writers {
            records.extend(writer.join().expect("writer thread"));
        }
        assert!(
            Instant::now() < deadline,
            "load threads did not notice the kill"
        );
        server.restart();
        for (p, values) in acked.iter().enumerate() {
            let stored = historized_values(&server, &tag(p));
            let lost: Vec<_> = values.difference(&stored).take(10).collect();
            assert!(
                lost.is_empty(),
                "round {round}: {} of {} PUBACKed values of {} lost after kill -9, e.g. {lost:?}",
                values.difference(&stored).count(),
                values.len(),
                tag(p)
            );
        }
        let count = server.count(DOMAIN, "readings");
        assert!(
            count >= records.len() as u64,
            "round {round}: {count} records stored, {} answered 201",
            records.len()
        );
        for id in records.iter().step_by(97) {
            let resp = server
                .admin_in(DOMAIN, Method::GET, &rec_path(id))
                .send()
                .unwrap();
            json_ok(resp, StatusCode::OK);
        }
    }
    let blocks = server
        .store_sql(
            "SELECT count(*) FROM hist_blocks",
            "SELECT count(*) FROM hist_blocks",
        )
        .and_then(|n| n.trim().parse::<u64>().ok())
        .unwrap_or(0);
    assert!(blocks > 0, "no block was written under the load");
    let total: usize = acked.iter().map(BTreeSet::len).sum();
    assert!(
        total > 1_000,
        "only {total} values acknowledged over {ROUNDS} rounds"
    );
    assert!(
        records.len() > 50,
        "only {} records over {ROUNDS} rounds",
        records.len()
    );
}

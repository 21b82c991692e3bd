//! Functions and flows load for `bench/functions.sh`, each measurement against a reference in the
//! same run on the same `svc serve`:
//!
//! - invocations/s of a trivial function (`function main(i) { return i + 1; }`) through
//!   `POST /svc/processes/execute`, `--clients` concurrent HTTP clients for `--seconds`, against
//!   the same clients calling `GET /svc/` (an authenticated route that runs no code);
//! - tag-change → tag-write latency through flows (`tag-in → svc.tag.write`, and
//!   `tag-in → function → svc.tag.write`): one MQTT client publishes `N` to the input tag and waits
//!   for the output tag, one message at a time, `--samples` times; the reference is the plain
//!   MQTT round trip of the same client publishing to a topic it subscribes to.
//!
//! `--rounds` rounds interleave every measurement; the report (Markdown, on stdout) shows the round
//! with the median result.
//!
//!   functions_load --url http://127.0.0.1:6188 --mqtt-port 1883 --password ADMIN_PASSWORD

use reqwest::Client;
use rumqttc::{AsyncClient, Event, EventLoop, MqttOptions, Packet, QoS};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn usage(problem: &str) -> ! {
    eprintln!("functions_load: {problem}\nusage: functions_load --url URL --mqtt-port PORT --password PASSWORD [--clients 8] [--seconds 5] [--samples 2000] [--rounds 3]");
    std::process::exit(2)
}

struct Settings {
    url: String,
    mqtt_port: u16,
    password: String,
    clients: usize,
    seconds: u64,
    samples: usize,
    rounds: usize,
}

fn settings() -> Settings {
    let mut flags = HashMap::new();
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let name = flag
            .strip_prefix("--")
            .unwrap_or_else(|| usage(&format!("unexpected {flag}")));
        let value = args
            .next()
            .unwrap_or_else(|| usage(&format!("--{name} needs a value")));
        flags.insert(name.to_string(), value);
    }
    let text = |name: &str| {
        flags
            .get(name)
            .cloned()
            .unwrap_or_else(|| usage(&format!("--{name} is required")))
    };
    let number = |name: &str, default: u64| {
        flags.get(name).map_or(default, |v| {
            v.parse()
                .unwrap_or_else(|_| usage(&format!("--{name} wants a number")))
        })
    };
    Settings {
        url: text("url"),
        mqtt_port: number("mqtt-port", 1883) as u16,
        password: text("password"),
        clients: number("clients", 8) as usize,
        seconds: number("seconds", 5),
        samples: number("samples", 2000) as usize,
        rounds: number("rounds", 3) as usize,
    }
}

#[tokio::main]
async fn main() {
    let s = settings();
    let http = Client::new();
    let token = login(&http, &s).await;
    setup(&http, &s, &token).await;

    let mut execute = Vec::new();
    let mut info = Vec::new();
    let mut direct = Vec::new();
    let mut plain = Vec::new();
    let mut scripted = Vec::new();
    let (mqtt, mut events) = connect(&s).await;
    for topic in ["bench/echo", "bench/flow/out", "bench/flow/fn-out"] {
        mqtt.subscribe(topic, QoS::AtMostOnce)
            .await
            .expect("subscribe");
    }
    wait_suback(&mut events, 3).await;
    for round in 1..=s.rounds {
        eprintln!("[bench] round {round}/{}", s.rounds);
        info.push(throughput(&http, &s, &token, false).await);
        execute.push(throughput(&http, &s, &token, true).await);
        plain.push(
            latency(
                &mqtt,
                &mut events,
                s.samples,
                "bench/echo",
                "bench/echo",
                1.0,
            )
            .await,
        );
        direct.push(
            latency(
                &mqtt,
                &mut events,
                s.samples,
                "bench/flow/in",
                "bench/flow/out",
                1.0,
            )
            .await,
        );
        scripted.push(
            latency(
                &mqtt,
                &mut events,
                s.samples,
                "bench/flow/fn-in",
                "bench/flow/fn-out",
                2.0,
            )
            .await,
        );
    }
    let info = median_by(info, |r| *r);
    let execute = median_by(execute, |r| *r);
    let plain = median_by(plain, |l| l.p50);
    let direct = median_by(direct, |l| l.p50);
    let scripted = median_by(scripted, |l| l.p50);

    println!("| measurement | svc | reference | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| trivial function, `POST /svc/processes/execute` ({} clients) | {execute:.0} calls/s | `GET /svc/` {info:.0} req/s | {:.2} |",
        s.clients,
        execute / info
    );
    for (name, flow) in [
        ("flow tag-in → svc.tag.write", &direct),
        ("flow tag-in → function → svc.tag.write", &scripted),
    ] {
        println!(
            "| {name}, p50 / p99 | {:.2} / {:.2} ms | plain MQTT round trip {:.2} / {:.2} ms | {:.2} / {:.2} |",
            flow.p50, flow.p99, plain.p50, plain.p99, flow.p50 / plain.p50, flow.p99 / plain.p99
        );
    }
    println!();
    println!(
        "{} rounds, median round shown; {} s per throughput run, {} latency samples per run (QoS 0, one message in flight).",
        s.rounds, s.seconds, s.samples
    );
}

async fn login(http: &Client, s: &Settings) -> String {
    let resp: Value = http
        .post(format!("{}/auth/login", s.url))
        .json(&json!({"username": "admin", "password": s.password}))
        .send()
        .await
        .expect("login")
        .json()
        .await
        .expect("login body");
    resp["tkn"]
        .as_str()
        .unwrap_or_else(|| usage(&format!("login failed: {resp}")))
        .to_string()
}

async fn setup(http: &Client, s: &Settings, token: &str) {
    let bodies = [
        (
            "/svc/processes",
            json!({"name": "bench-trivial", "code": "function main(i) { return i + 1; }", "allow_overlap": true}),
        ),
        (
            "/svc/flows",
            json!({"name": "bench-direct", "running": true, "nodes": [
                {"id": "in", "type": "tag-in", "config": {"topic": "bench/flow/in"}, "wires": ["out"]},
                {"id": "out", "type": "svc.tag.write", "config": {"topic": "bench/flow/out"}}
            ]}),
        ),
        (
            "/svc/flows",
            json!({"name": "bench-function", "running": true, "nodes": [
                {"id": "in", "type": "tag-in", "config": {"topic": "bench/flow/fn-in"}, "wires": ["double"]},
                {"id": "double", "type": "function", "config": {"code": "function main(msg) { return msg.payload * 2; }"}, "wires": ["out"]},
                {"id": "out", "type": "svc.tag.write", "config": {"topic": "bench/flow/fn-out"}}
            ]}),
        ),
    ];
    for (path, body) in bodies {
        let resp = http
            .post(format!("{}{path}", s.url))
            .bearer_auth(token)
            .json(&body)
            .send()
            .await
            .expect("setup request");
        if !resp.status().is_success() {
            usage(&format!(
                "POST {path}: {} {}",
                resp.status(),
                resp.text().await.unwrap_or_default()
            ));
        }
    }
}

/// Completed requests per second over `--seconds` with `--clients` concurrent clients.
async fn throughput(http: &Client, s: &Settings, token: &str, execute: bool) -> f64 {
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let workers: Vec<_> = (0..s.clients)
        .map(|client| {
            let (http, done, stop) = (http.clone(), Arc::clone(&done), Arc::clone(&stop));
            let (url, token) = (s.url.clone(), token.to_string());
            tokio::spawn(async move {
                let mut n = client as u64 * 1_000_000;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let request = if execute {
                        http.post(format!("{url}/svc/processes/execute"))
                            .json(&json!({"name": "bench-trivial", "input": n}))
                    } else {
                        http.get(format!("{url}/svc/"))
                    };
                    let resp = request.bearer_auth(&token).send().await.expect("request");
                    let ok = resp.status().is_success();
                    let body = resp.bytes().await.expect("body");
                    assert!(ok, "{}", String::from_utf8_lossy(&body));
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(s.seconds)).await;
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.await.expect("worker");
    }
    done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

async fn connect(s: &Settings) -> (AsyncClient, EventLoop) {
    let mut options = MqttOptions::new(
        format!("functions-bench-{}", std::process::id()),
        "127.0.0.1",
        s.mqtt_port,
    );
    options.set_credentials("admin", &s.password);
    options.set_keep_alive(Duration::from_secs(30));
    AsyncClient::new(options, 100)
}

async fn wait_suback(events: &mut EventLoop, mut count: usize) {
    while count > 0 {
        if let Event::Incoming(Packet::SubAck(_)) = events.poll().await.expect("mqtt") {
            count -= 1;
        }
    }
}

struct Latency {
    p50: f64,
    p99: f64,
}

/// Publishes `i` to `input` and waits for `i * factor` on `output`, one at a time.
async fn latency(
    mqtt: &AsyncClient,
    events: &mut EventLoop,
    samples: usize,
    input: &str,
    output: &str,
    factor: f64,
) -> Latency {
    let warmup = 50;
    let mut times = Vec::with_capacity(samples);
    for i in 0..samples + warmup {
        let started = Instant::now();
        mqtt.publish(input, QoS::AtMostOnce, false, i.to_string())
            .await
            .expect("publish");
        let wanted = i as f64 * factor;
        loop {
            let Ok(event) = tokio::time::timeout(Duration::from_secs(10), events.poll()).await
            else {
                usage(&format!("no message on {output} within 10 s"))
            };
            let event = event.expect("mqtt");
            if let Event::Incoming(Packet::Publish(p)) = event {
                let value: Option<f64> = std::str::from_utf8(&p.payload)
                    .ok()
                    .and_then(|t| t.parse().ok());
                if p.topic == output && value == Some(wanted) {
                    break;
                }
            }
        }
        if i >= warmup {
            times.push(started.elapsed().as_secs_f64() * 1000.0);
        }
    }
    times.sort_by(f64::total_cmp);
    let at = |q: f64| times[((times.len() as f64 - 1.0) * q).round() as usize];
    Latency {
        p50: at(0.5),
        p99: at(0.99),
    }
}

fn median_by<T>(mut rounds: Vec<T>, key: impl Fn(&T) -> f64) -> T {
    rounds.sort_by(|a, b| key(a).total_cmp(&key(b)));
    rounds.swap_remove(rounds.len() / 2)
}

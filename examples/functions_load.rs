//! Functions and flows load for `bench/functions.sh`, each measurement against a reference in the
//! same run on the same `svc serve`:
//!
//! - invocations/s of a trivial process (`i + 1`) in JavaScript, TypeScript and Python through
//!   `POST /svc/processes/execute`, `--clients` concurrent HTTP clients for `--seconds`, against
//!   the same clients calling `GET /svc/` (an authenticated route that runs no code); Python's
//!   also against as many concurrent callers each starting a fresh `python3 -I -c` per call;
//! - the same for a JavaScript and a Python process keeping a 10,000-entry map in module-level
//!   state between its runs (each call updates one entry), and for the trivial JavaScript and
//!   Python processes with `fresh_state` (a fresh context, a fork per run) against their warm
//!   selves;
//! - tag-change → tag-write latency through flows (`tag-in → svc.tag.write`, and
//!   `tag-in → function → svc.tag.write`): one MQTT client publishes `N` to the input tag and waits
//!   for the output tag, one message at a time, `--samples` times; the reference is the plain
//!   MQTT round trip of the same client publishing to a topic it subscribes to; the same for a
//!   process in each language triggered by the tag change, its output a `tag_write`.
//!
//! `--rounds` rounds interleave every measurement; the report (Markdown, on stdout) shows the round
//! with the median result. With `--baseline-url` and `--baseline-mqtt-port` (a second server, e.g.
//! a build of main before a change, with the same admin password) each round measures both in
//! turn (which goes first alternates), and a second table gives every figure of this svc against
//! the baseline's.
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
    eprintln!("functions_load: {problem}\nusage: functions_load --url URL --mqtt-port PORT --password PASSWORD [--baseline-url URL --baseline-mqtt-port PORT] [--clients 8] [--seconds 5] [--samples 2000] [--rounds 3]");
    std::process::exit(2)
}

struct Settings {
    /// The svc measured, then the baseline if one is given.
    targets: Vec<Target>,
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
    let mut targets = vec![Target {
        url: text("url"),
        mqtt_port: number("mqtt-port", 1883) as u16,
    }];
    if let Some(url) = flags.get("baseline-url") {
        targets.push(Target {
            url: url.clone(),
            mqtt_port: number("baseline-mqtt-port", 0) as u16,
        });
    }
    Settings {
        targets,
        password: text("password"),
        clients: number("clients", 8) as usize,
        seconds: number("seconds", 5),
        samples: number("samples", 2000) as usize,
        rounds: number("rounds", 3) as usize,
    }
}

/// A trivial process per language: `i + 1` for the execute route, `i * 2` from a tag change
/// to a tag write.
const LANGUAGES: [(&str, &str, &str); 3] = [
    (
        "javascript",
        "function main(i) { return i + 1; }",
        "function main(i) { return i * 2; }",
    ),
    (
        "typescript",
        "function main(i: number): number { return i + 1; }",
        "function main(i: number): number { return i * 2; }",
    ),
    (
        "python",
        "def main(i):\n    return i + 1",
        "def main(i):\n    return i * 2",
    ),
];

/// A process per language that keeps a 10,000-entry map in module-level state between its
/// runs (issue 38: warm runtimes), each call updating one entry.
const MAP_PROCESSES: [(&str, &str); 2] = [
    (
        "javascript",
        "const table = new Map();
for (let i = 0; i < 10000; i++) table.set('k' + i, {n: i, hits: 0});
function main(i) { const entry = table.get('k' + (i % 10000)); entry.hits += 1; return table.size; }",
    ),
    (
        "python",
        "table = {'k%d' % i: {'n': i, 'hits': 0} for i in range(10000)}

def main(i):
    table['k%d' % (i % 10000)]['hits'] += 1
    return len(table)",
    ),
];

/// Languages whose trivial process is also measured with `fresh_state` (the cost of keeping no
/// state: a fresh JavaScript context, a forked Python child per run).
const FRESH_LANGUAGES: [usize; 2] = [0, 2];

/// The reference for Python: a fresh interpreter per call, doing the same work.
const PYTHON_ONE_SHOT: &str = "import json, sys; print(json.dumps(int(sys.argv[1]) + 1))";

/// A server to measure.
struct Target {
    url: String,
    mqtt_port: u16,
}

/// A server ready to measure: logged in, its processes and flows set up, its MQTT client
/// subscribed to every output.
struct Server<'a> {
    target: &'a Target,
    token: String,
    mqtt: AsyncClient,
    events: EventLoop,
}

/// What one round measured.
#[derive(Default)]
struct Round {
    info: f64,
    /// calls/s through the execute route, per language
    execute: Vec<f64>,
    /// calls/s of the process keeping a map, per language of [`MAP_PROCESSES`]
    map: Vec<f64>,
    /// calls/s of the trivial process with `fresh_state` (a fresh context, a fork per run), per
    /// language of [`FRESH_LANGUAGES`]
    fresh: Vec<f64>,
    one_shot_python: f64,
    plain: Vec<Latency>,
    direct: Vec<Latency>,
    scripted: Vec<Latency>,
    /// tag change → process → tag write, per language
    process: Vec<Latency>,
}

#[tokio::main]
async fn main() {
    let s = settings();
    let http = Client::new();
    let mut servers = Vec::new();
    for target in &s.targets {
        servers.push(prepare(&s, &http, target).await);
    }
    let mut rounds: Vec<Vec<Round>> = servers.iter().map(|_| Vec::new()).collect();
    for round in 1..=s.rounds {
        eprintln!("[bench] round {round}/{}", s.rounds);
        // Every other round the other server goes first, so neither always runs on a machine
        // the other has just warmed (or heated).
        let mut order: Vec<usize> = (0..servers.len()).collect();
        if round % 2 == 0 {
            order.reverse();
        }
        for i in order {
            rounds[i].push(measure(&s, &http, &mut servers[i]).await);
        }
    }
    let mut rounds = rounds.into_iter();
    let measured = rounds.next().expect("the svc measured");
    report(&s, &measured);
    if let Some(baseline) = rounds.next() {
        compare(&measured, &baseline);
    }
}

async fn prepare<'a>(s: &Settings, http: &Client, target: &'a Target) -> Server<'a> {
    let token = login(http, target, s).await;
    setup(http, target, &token).await;
    let (mqtt, mut events) = connect(target, s).await;
    let mut outputs = vec![
        "bench/echo".to_string(),
        "bench/flow/out".into(),
        "bench/flow/fn-out".into(),
    ];
    outputs.extend(
        LANGUAGES
            .iter()
            .map(|(l, ..)| format!("bench/process/{l}/out")),
    );
    for topic in &outputs {
        mqtt.subscribe(topic, QoS::AtMostOnce)
            .await
            .expect("subscribe");
    }
    wait_suback(&mut events, outputs.len()).await;
    Server {
        target,
        token,
        mqtt,
        events,
    }
}

/// One round of every measurement on one server.
async fn measure(s: &Settings, http: &Client, server: &mut Server<'_>) -> Round {
    let (target, token) = (server.target, server.token.as_str());
    let mut r = Round {
        info: throughput(s, target, Load::Http(http, token, None)).await,
        ..Round::default()
    };
    for (language, ..) in LANGUAGES {
        let name = format!("bench-{language}");
        let load = Load::Http(http, token, Some(&name));
        r.execute.push(throughput(s, target, load).await);
    }
    for (language, _) in MAP_PROCESSES {
        let name = format!("bench-map-{language}");
        let load = Load::Http(http, token, Some(&name));
        r.map.push(throughput(s, target, load).await);
    }
    for i in FRESH_LANGUAGES {
        let name = format!("bench-fresh-{}", LANGUAGES[i].0);
        let load = Load::Http(http, token, Some(&name));
        r.fresh.push(throughput(s, target, load).await);
    }
    r.one_shot_python = throughput(s, target, Load::PythonOneShot).await;
    let mut pairs = vec![
        ("bench/echo".to_string(), "bench/echo".to_string(), 1.0),
        ("bench/flow/in".into(), "bench/flow/out".into(), 1.0),
        ("bench/flow/fn-in".into(), "bench/flow/fn-out".into(), 2.0),
    ];
    for (language, ..) in LANGUAGES {
        let topic = |end: &str| format!("bench/process/{language}/{end}");
        pairs.push((topic("in"), topic("out"), 2.0));
    }
    let mut measured = Vec::new();
    for (input, output, factor) in pairs {
        let (mqtt, events) = (&server.mqtt, &mut server.events);
        measured.push(latency(mqtt, events, s.samples, input, output, factor).await);
    }
    let mut measured = measured.into_iter();
    r.plain.extend(measured.next());
    r.direct.extend(measured.next());
    r.scripted.extend(measured.next());
    r.process.extend(measured);
    r
}

fn report(s: &Settings, rounds: &[Round]) {
    let median = |key: &dyn Fn(&Round) -> f64| -> &Round {
        let mut sorted: Vec<&Round> = rounds.iter().collect();
        sorted.sort_by(|a, b| key(a).total_cmp(&key(b)));
        sorted[sorted.len() / 2]
    };
    println!("| measurement | svc | reference | ratio |");
    println!("|---|---|---|---|");
    for (i, (language, ..)) in LANGUAGES.iter().enumerate() {
        let r = median(&|r| r.execute[i] / r.info);
        println!(
            "| trivial {language} process, `POST /svc/processes/execute` ({} clients) | {:.0} calls/s | `GET /svc/` {:.0} req/s | {:.2} |",
            s.clients,
            r.execute[i],
            r.info,
            r.execute[i] / r.info
        );
    }
    for (i, (language, _)) in MAP_PROCESSES.iter().enumerate() {
        let r = median(&|r| r.map[i] / r.info);
        println!(
            "| {language} process keeping a 10,000-entry map between runs, `POST /svc/processes/execute` ({} clients) | {:.0} calls/s | `GET /svc/` {:.0} req/s | {:.2} |",
            s.clients,
            r.map[i],
            r.info,
            r.map[i] / r.info
        );
    }
    for (f, i) in FRESH_LANGUAGES.iter().enumerate() {
        let language = LANGUAGES[*i].0;
        let r = median(&|r| r.fresh[f] / r.execute[*i]);
        println!(
            "| trivial {language} process with `fresh_state` (no warm runtime), `POST /svc/processes/execute` ({} clients) | {:.0} calls/s | the same process warm {:.0} calls/s | {:.2} |",
            s.clients,
            r.fresh[f],
            r.execute[*i],
            r.fresh[f] / r.execute[*i]
        );
    }
    let python = LANGUAGES.len() - 1;
    let r = median(&|r| r.execute[python] / r.one_shot_python);
    println!(
        "| trivial python process, `POST /svc/processes/execute` ({} clients) | {:.0} calls/s | a fresh `python3 -c` per call {:.0} calls/s | {:.2} |",
        s.clients,
        r.execute[python],
        r.one_shot_python,
        r.execute[python] / r.one_shot_python
    );
    let latency_row = |name: &str, flow: &Latency, plain: &Latency| {
        println!(
            "| {name}, p50 / p99 | {:.2} / {:.2} ms | plain MQTT round trip {:.2} / {:.2} ms | {:.2} / {:.2} |",
            flow.p50, flow.p99, plain.p50, plain.p99, flow.p50 / plain.p50, flow.p99 / plain.p99
        );
    };
    let r = median(&|r| r.direct[0].p50 / r.plain[0].p50);
    latency_row("flow tag-in → svc.tag.write", &r.direct[0], &r.plain[0]);
    let r = median(&|r| r.scripted[0].p50 / r.plain[0].p50);
    latency_row(
        "flow tag-in → function → svc.tag.write",
        &r.scripted[0],
        &r.plain[0],
    );
    for (i, (language, ..)) in LANGUAGES.iter().enumerate() {
        let r = median(&|r| r.process[i].p50 / r.plain[0].p50);
        latency_row(
            &format!("tag change → {language} process → tag_write output"),
            &r.process[i],
            &r.plain[0],
        );
    }
    println!();
    println!(
        "{} rounds, the median round of each row shown; {} s per throughput run, {} latency samples per run (QoS 0, one message in flight).",
        s.rounds, s.seconds, s.samples
    );
}

/// Every figure of this svc against the baseline's, each the median of its rounds: calls/s
/// (svc / baseline, above 1 is faster) and latencies (svc / baseline, below 1 is faster).
fn compare(measured: &[Round], baseline: &[Round]) {
    type Figure = (String, Box<dyn Fn(&Round) -> f64>);
    let mut calls: Vec<Figure> = vec![("`GET /svc/`".into(), Box::new(|r: &Round| r.info))];
    for (i, (language, ..)) in LANGUAGES.iter().enumerate() {
        let name = format!("trivial {language} process, execute");
        calls.push((name, Box::new(move |r: &Round| r.execute[i])));
    }
    for (i, (language, _)) in MAP_PROCESSES.iter().enumerate() {
        let name = format!("{language} process keeping a 10,000-entry map, execute");
        calls.push((name, Box::new(move |r: &Round| r.map[i])));
    }
    for (f, i) in FRESH_LANGUAGES.iter().enumerate() {
        let name = format!(
            "trivial {} process with `fresh_state`, execute",
            LANGUAGES[*i].0
        );
        calls.push((name, Box::new(move |r: &Round| r.fresh[f])));
    }
    type LatencyOf = fn(&Round) -> &Latency;
    let mut latencies: Vec<(String, LatencyOf)> = vec![
        ("plain MQTT round trip".into(), |r| &r.plain[0]),
        ("flow tag-in → svc.tag.write".into(), |r| &r.direct[0]),
        ("flow tag-in → function → svc.tag.write".into(), |r| {
            &r.scripted[0]
        }),
    ];
    let processes: [LatencyOf; 3] = [|r| &r.process[0], |r| &r.process[1], |r| &r.process[2]];
    for ((language, ..), of) in LANGUAGES.iter().zip(processes) {
        latencies.push((format!("tag change → {language} process → tag"), of));
    }
    let median = |rounds: &[Round], key: &dyn Fn(&Round) -> f64| {
        let mut values: Vec<f64> = rounds.iter().map(key).collect();
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    };
    println!();
    println!("Against the baseline (each figure the median of its rounds; calls/s above 1 and latencies below 1 are faster):");
    println!();
    println!("| figure | svc | baseline | svc / baseline |");
    println!("|---|---|---|---|");
    for (name, of) in &calls {
        let (new, old) = (median(measured, of), median(baseline, of));
        println!(
            "| {name} | {new:.0} calls/s | {old:.0} calls/s | {:.2} |",
            new / old
        );
    }
    for (name, of) in &latencies {
        let p50 = |r: &Round| of(r).p50;
        let p99 = |r: &Round| of(r).p99;
        let (new50, old50) = (median(measured, &p50), median(baseline, &p50));
        let (new99, old99) = (median(measured, &p99), median(baseline, &p99));
        println!(
            "| {name}, p50 / p99 | {new50:.2} / {new99:.2} ms | {old50:.2} / {old99:.2} ms | {:.2} / {:.2} |",
            new50 / old50,
            new99 / old99
        );
    }
}

async fn login(http: &Client, target: &Target, s: &Settings) -> String {
    let resp: Value = http
        .post(format!("{}/auth/login", target.url))
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

async fn setup(http: &Client, target: &Target, token: &str) {
    let mut bodies = vec![
        json!({"name": "bench-direct", "running": true, "nodes": [
            {"id": "in", "type": "tag-in", "config": {"topic": "bench/flow/in"}, "wires": ["out"]},
            {"id": "out", "type": "svc.tag.write", "config": {"topic": "bench/flow/out"}}
        ]}),
        json!({"name": "bench-function", "running": true, "nodes": [
            {"id": "in", "type": "tag-in", "config": {"topic": "bench/flow/fn-in"}, "wires": ["double"]},
            {"id": "double", "type": "function", "config": {"code": "function main(msg) { return msg.payload * 2; }"}, "wires": ["out"]},
            {"id": "out", "type": "svc.tag.write", "config": {"topic": "bench/flow/fn-out"}}
        ]}),
    ];
    let mut paths = vec!["/svc/flows"; bodies.len()];
    for (language, increment, double) in LANGUAGES {
        bodies.push(
            json!({"name": format!("bench-{language}"), "language": language,
            "code": increment, "allow_overlap": true}),
        );
        let topic = |end: &str| format!("bench/process/{language}/{end}");
        bodies.push(
            json!({"name": format!("bench-{language}-tag"), "language": language,
            "code": double,
            "triggers": [{"type": "tag_change", "config": {"tag": topic("in")}}],
            "outputs": [{"type": "tag_write", "config": {"tag": topic("out")}}]}),
        );
        paths.extend(["/svc/processes"; 2]);
    }
    for i in FRESH_LANGUAGES {
        let (language, increment, _) = LANGUAGES[i];
        bodies.push(
            json!({"name": format!("bench-fresh-{language}"), "language": language,
            "code": increment, "allow_overlap": true, "fresh_state": true}),
        );
        paths.push("/svc/processes");
    }
    for (language, code) in MAP_PROCESSES {
        bodies.push(
            json!({"name": format!("bench-map-{language}"), "language": language,
            "code": code, "allow_overlap": true}),
        );
        paths.push("/svc/processes");
    }
    for (path, body) in paths.into_iter().zip(bodies) {
        let resp = http
            .post(format!("{}{path}", target.url))
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

/// What a throughput run repeats: an HTTP call (`Some(process)`: execute it, `None`:
/// `GET /svc/`), or a fresh Python interpreter.
#[derive(Clone, Copy)]
enum Load<'a> {
    Http(&'a Client, &'a str, Option<&'a str>),
    PythonOneShot,
}

/// Completed calls per second over `--seconds` with `--clients` concurrent callers.
async fn throughput(s: &Settings, target: &Target, load: Load<'_>) -> f64 {
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let workers: Vec<_> = (0..s.clients)
        .map(|client| {
            let (done, stop) = (Arc::clone(&done), Arc::clone(&stop));
            let url = target.url.clone();
            let load = match load {
                Load::Http(http, token, process) => {
                    Some((http.clone(), token.to_string(), process.map(str::to_string)))
                }
                Load::PythonOneShot => None,
            };
            tokio::spawn(async move {
                let mut n = client as u64 * 1_000_000;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    match &load {
                        Some((http, token, process)) => {
                            let request = match process {
                                Some(name) => http
                                    .post(format!("{url}/svc/processes/execute"))
                                    .json(&json!({"name": name, "input": n})),
                                None => http.get(format!("{url}/svc/")),
                            };
                            let resp = request.bearer_auth(token).send().await.expect("request");
                            let ok = resp.status().is_success();
                            let body = resp.bytes().await.expect("body");
                            let what = process.as_deref().unwrap_or("GET /svc/");
                            assert!(ok, "{what}: {}", String::from_utf8_lossy(&body));
                        }
                        None => {
                            let out = tokio::process::Command::new("/usr/bin/python3")
                                .args(["-I", "-c", PYTHON_ONE_SHOT, &n.to_string()])
                                .env_clear()
                                .output()
                                .await
                                .expect("python3");
                            assert!(out.status.success(), "python3 -c failed");
                        }
                    }
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

async fn connect(target: &Target, s: &Settings) -> (AsyncClient, EventLoop) {
    let mut options = MqttOptions::new(
        format!("functions-bench-{}", std::process::id()),
        "127.0.0.1",
        target.mqtt_port,
    );
    options.set_credentials("admin", &s.password);
    // Nothing polls the connection during the throughput runs of a round (a minute and more),
    // so no PINGREQ goes out: the keep alive must outlast them.
    options.set_keep_alive(Duration::from_secs(600));
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
    input: String,
    output: String,
    factor: f64,
) -> Latency {
    let warmup = 50;
    let mut times = Vec::with_capacity(samples);
    for i in 0..samples + warmup {
        let started = Instant::now();
        mqtt.publish(&input, QoS::AtMostOnce, false, i.to_string())
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

//! Historian load and reference measurements for `bench/historian.sh`. Every subcommand prints one
//! JSON line.
//!
//! - `ingest`: publishes `--count` values to one historized topic over MQTT (QoS 1 by default,
//!   `--publishers` connections; payload `{"value":N,"timestamp":<start + N*step ms>}`, or the bare
//!   number `N` with `--receive-time`, so the broker's receive time is the timestamp), and times
//!   from the first publish until `hist_points` holds `--count` rows of that series, polled
//!   read-only on `--db` (WAL lets a reader in while svc writes), or on the PostgreSQL database
//!   when `--db` is a `postgres://` URL.
//! - `raw-ingest`: the reference. A fresh database in `--dir` with the DDL of `hist_series` and
//!   `hist_points` copied from `--schema-from`, svc's pragmas (WAL, synchronous=NORMAL), and
//!   `--count` rows of the same shape inserted in transactions of `--batch` rows (`--svc-sql`:
//!   svc's `INSERT … ON CONFLICT DO NOTHING` in `BEGIN IMMEDIATE` transactions instead).
//! - `query`: reads `--count` points of `--topic` through `PATCH /svc/historian` pages of
//!   `--page` points (`start_time`/`end_time`/`limit`; the next page starts 1 ms after the last
//!   timestamp), timing each request until its body is fully received.
//! - `raw-query`: the reference. The same rows read straight from `--db`:
//!   `SELECT ts, value FROM hist_points WHERE series=? AND ts>=? AND ts<? ORDER BY ts, seq`.
//!
//!   historian_load ingest --port 1883 --password KEY --topic bench/ingest --count 200000 --db svc.db
//!   historian_load raw-ingest --schema-from svc.db --dir /tmp/x --count 200000
//!   historian_load query --url http://127.0.0.1:6188 --token JWT --topic bench/query --count 1000000
//!   historian_load raw-query --db svc.db --topic bench/query --count 1000000

use rumqttc::{AsyncClient, Event, MqttOptions, Outgoing, Packet, QoS};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// 2026-01-01T00:00:00Z: the first timestamp of a series written with explicit timestamps.
const DEFAULT_START_MS: i64 = 1_767_225_600_000;
/// svc's administrative domain, where tags declared without a `Domain` header live.
const DEFAULT_DOMAIN: &str = "svc_admin";

fn usage(problem: &str) -> ! {
    eprintln!(
        "historian_load: {problem}\nusage: historian_load ingest|raw-ingest|query|raw-query \
         [--flag value]… (see the header of examples/historian_load.rs)"
    );
    std::process::exit(2)
}

/// `--flag value` pairs.
struct Flags(HashMap<String, String>);

impl Flags {
    fn parse(raw: impl Iterator<Item = String>) -> Flags {
        let mut map = HashMap::new();
        let mut raw = raw.peekable();
        while let Some(flag) = raw.next() {
            let Some(name) = flag.strip_prefix("--") else {
                usage(&format!("unexpected argument {flag}"))
            };
            // A flag followed by another flag (or nothing) is a switch.
            let value = match raw.peek() {
                Some(v) if !v.starts_with("--") => raw.next().unwrap_or_default(),
                _ => "true".into(),
            };
            map.insert(name.to_string(), value);
        }
        Flags(map)
    }
    fn text(&self, name: &str, default: &str) -> String {
        self.0.get(name).cloned().unwrap_or_else(|| default.into())
    }
    fn required(&self, name: &str) -> String {
        self.0
            .get(name)
            .cloned()
            .unwrap_or_else(|| usage(&format!("--{name} is required")))
    }
    fn number<T: std::str::FromStr>(&self, name: &str, default: T) -> T {
        match self.0.get(name) {
            Some(v) => v
                .parse()
                .unwrap_or_else(|_| usage(&format!("--{name} wants a number"))),
            None => default,
        }
    }
    fn switch(&self, name: &str) -> bool {
        self.0.get(name).is_some_and(|v| v == "true")
    }
}

fn main() {
    let mut raw = std::env::args().skip(1);
    let command = raw.next().unwrap_or_else(|| usage("no subcommand"));
    let flags = Flags::parse(raw);
    match command.as_str() {
        "ingest" => ingest(&flags),
        "raw-ingest" => raw_ingest(&flags),
        "query" => query(&flags),
        "raw-query" => raw_query(&flags),
        other => usage(&format!("unknown subcommand {other}")),
    }
}

/// The series id of (domain, topic) in a historian database.
fn series_of(conn: &Connection, domain: &str, topic: &str) -> Option<i64> {
    conn.query_row(
        "SELECT id FROM hist_series WHERE domain = ?1 AND topic = ?2",
        params![domain, topic],
        |r| r.get(0),
    )
    .optional()
    .unwrap_or(None)
}

/// The rows of one series in svc's historian, on either engine: `db` is the SQLite file (read
/// only; WAL lets a reader in while svc writes) or a `postgres://` URL.
enum StoredRows {
    Sqlite {
        conn: Connection,
        series: Option<i64>,
        domain: String,
        topic: String,
    },
    Postgres {
        client: tokio_postgres::Client,
        domain: String,
        topic: String,
    },
}

impl StoredRows {
    fn open(runtime: &tokio::runtime::Runtime, db: &str, domain: &str, topic: &str) -> StoredRows {
        let (domain, topic) = (domain.to_string(), topic.to_string());
        if db.starts_with("postgres://") || db.starts_with("postgresql://") {
            let client = runtime.block_on(async {
                let (client, connection) = tokio_postgres::connect(db, tokio_postgres::NoTls)
                    .await
                    .unwrap_or_else(|e| usage(&format!("cannot connect to {db}: {e}")));
                tokio::spawn(connection);
                client
            });
            StoredRows::Postgres {
                client,
                domain,
                topic,
            }
        } else {
            StoredRows::Sqlite {
                conn: open_read_only(db),
                series: None,
                domain,
                topic,
            }
        }
    }

    /// The rows stored so far; `None` while the series does not exist yet.
    fn count(&mut self, runtime: &tokio::runtime::Runtime) -> Option<u64> {
        match self {
            StoredRows::Sqlite {
                conn,
                series,
                domain,
                topic,
            } => {
                if series.is_none() {
                    *series = series_of(conn, domain, topic);
                }
                let id = (*series)?;
                conn.query_row(
                    "SELECT count(*) FROM hist_points WHERE series = ?1",
                    [id],
                    |r| r.get(0),
                )
                .ok()
            }
            StoredRows::Postgres {
                client,
                domain,
                topic,
            } => runtime
                .block_on(client.query_one(
                    "SELECT count(*) FROM hist_points p JOIN hist_series s ON s.id = p.series \
                     WHERE s.domain = $1 AND s.topic = $2",
                    &[&*domain, &*topic],
                ))
                .ok()
                .map(|row| row.get::<_, i64>(0) as u64),
        }
    }
}

fn open_read_only(db: &str) -> Connection {
    let conn = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .unwrap_or_else(|e| usage(&format!("cannot open {db}: {e}")));
    conn.busy_timeout(Duration::from_secs(10))
        .expect("busy timeout");
    conn
}

// --- ingest over MQTT ------------------------------------------------------------------------

fn ingest(flags: &Flags) {
    let host = flags.text("host", "127.0.0.1");
    let port: u16 = flags.number("port", 1883);
    let username = flags.text("username", "bench");
    let password = flags.text("password", "");
    let topic = flags.required("topic");
    let count: u64 = flags.number("count", 200_000);
    let publishers: u64 = flags.number("publishers", 4).max(1);
    let qos = match flags.number::<u8>("qos", 1) {
        0 => QoS::AtMostOnce,
        1 => QoS::AtLeastOnce,
        _ => QoS::ExactlyOnce,
    };
    let start_ms: i64 = flags.number("start-ms", DEFAULT_START_MS);
    let step_ms: i64 = flags.number("step-ms", 1_000);
    let receive_time = flags.switch("receive-time");
    let db = flags.required("db");
    let domain = flags.text("domain", DEFAULT_DOMAIN);

    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let started = Instant::now();
    let published = runtime.block_on(async {
        let tasks: Vec<_> = (0..publishers)
            .map(|p| {
                // Publisher p sends values p, p + P, p + 2P, …
                let mut options =
                    MqttOptions::new(format!("hist-load-{p}-{}", std::process::id()), &host, port);
                options.set_keep_alive(Duration::from_secs(60));
                options.set_inflight(1_000);
                options.set_credentials(&username, &password);
                let topic = topic.clone();
                tokio::spawn(async move {
                    let (client, mut event_loop) = AsyncClient::new(options, 10_000);
                    let sender = tokio::spawn(async move {
                        let mut n = p;
                        while n < count {
                            let body = if receive_time {
                                n.to_string()
                            } else {
                                let ts = start_ms + n as i64 * step_ms;
                                format!("{{\"value\":{n},\"timestamp\":{ts}}}")
                            };
                            if client.publish(&topic, qos, false, body).await.is_err() {
                                break;
                            }
                            n += publishers;
                        }
                        client
                    });
                    let mine = (count + publishers - 1 - p) / publishers;
                    let wanted = if qos == QoS::AtMostOnce { 0 } else { mine };
                    let mut acked = 0u64;
                    let mut sender = Some(sender);
                    loop {
                        match tokio::time::timeout(Duration::from_secs(10), event_loop.poll()).await
                        {
                            Ok(Ok(Event::Incoming(Packet::PubAck(_) | Packet::PubComp(_)))) => {
                                acked += 1
                            }
                            Ok(Ok(_)) => {}
                            Ok(Err(e)) => {
                                eprintln!("publisher {p}: {e}");
                                break;
                            }
                            Err(_) => {
                                eprintln!("publisher {p}: stalled at {acked} of {wanted} acks");
                                break;
                            }
                        }
                        if acked >= wanted && sender.as_ref().is_some_and(|s| s.is_finished()) {
                            if let Some(Ok(client)) = match sender.take() {
                                Some(s) => Some(s.await),
                                None => None,
                            } {
                                let _ = client.disconnect().await;
                                let _ = tokio::time::timeout(Duration::from_secs(10), async {
                                    // Done once the DISCONNECT is written; the broker may take its time to close.
                                    while let Ok(event) = event_loop.poll().await {
                                        if matches!(event, Event::Outgoing(Outgoing::Disconnect)) {
                                            break;
                                        }
                                    }
                                })
                                .await;
                            }
                            break;
                        }
                    }
                    acked
                })
            })
            .collect();
        let mut acked = 0;
        for t in tasks {
            acked += t.await.unwrap_or(0);
        }
        acked
    });
    let publish_seconds = started.elapsed().as_secs_f64();

    // Poll the database until every value is a row (or nothing moved for 10 s).
    let mut stored = StoredRows::open(&runtime, &db, &domain, &topic);
    let mut rows = 0u64;
    let mut last_change = Instant::now();
    let mut durable_at = None;
    while last_change.elapsed() < Duration::from_secs(10) {
        if let Some(now) = stored.count(&runtime) {
            if now != rows {
                rows = now;
                last_change = Instant::now();
            }
            if rows >= count {
                durable_at = Some(started.elapsed().as_secs_f64());
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let seconds = durable_at.unwrap_or_else(|| started.elapsed().as_secs_f64());
    println!(
        "{{\"values\":{count},\"acked\":{published},\"rows\":{rows},\"complete\":{},\
         \"publish_seconds\":{publish_seconds:.3},\"seconds\":{seconds:.3},\"values_per_s\":{:.0}}}",
        durable_at.is_some(),
        rows as f64 / seconds
    );
}

// --- raw insert reference ----------------------------------------------------------------------

fn raw_ingest(flags: &Flags) {
    let schema_from = flags.required("schema-from");
    let dir = PathBuf::from(flags.required("dir"));
    let count: u64 = flags.number("count", 200_000);
    let batch: u64 = flags.number("batch", 5_000).max(1);
    // svc's statement and transaction kind instead of the plainest ones.
    let svc_sql = flags.switch("svc-sql");
    let start_ms: i64 = flags.number("start-ms", DEFAULT_START_MS);
    let step_ms: i64 = flags.number("step-ms", 1_000);

    let ddl: Vec<String> = {
        let source = open_read_only(&schema_from);
        let mut stmt = source
            .prepare(
                "SELECT sql FROM sqlite_master WHERE name IN ('hist_series', 'hist_points') \
                 ORDER BY name = 'hist_points'",
            )
            .expect("read the schema");
        let ddl = stmt
            .query_map([], |r| r.get(0))
            .expect("read the schema")
            .collect::<Result<Vec<String>, _>>()
            .expect("read the schema");
        ddl
    };
    if ddl.len() != 2 {
        usage(&format!(
            "{schema_from} has no hist_series/hist_points tables"
        ));
    }
    std::fs::create_dir_all(&dir).expect("create --dir");
    let path = dir.join("raw.db");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    let mut conn = Connection::open(&path).expect("create the raw database");
    conn.execute_batch(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA mmap_size=268435456;",
    )
    .expect("pragmas");
    for sql in &ddl {
        conn.execute_batch(sql)
            .expect("create the historian tables");
    }

    let started = Instant::now();
    conn.execute(
        "INSERT INTO hist_series (domain, topic) VALUES ('svc_admin', 'bench/raw')",
        [],
    )
    .expect("series");
    let series = conn.last_insert_rowid();
    let mut n = 0u64;
    while n < count {
        let behavior = if svc_sql {
            rusqlite::TransactionBehavior::Immediate
        } else {
            rusqlite::TransactionBehavior::Deferred
        };
        let tx = conn.transaction_with_behavior(behavior).expect("begin");
        {
            let mut insert = tx
                .prepare_cached(if svc_sql {
                    "INSERT INTO hist_points (series, ts, seq, num, value) VALUES (?1, ?2, 0, ?3, ?4) \
                     ON CONFLICT (series, ts, seq) DO NOTHING"
                } else {
                    "INSERT INTO hist_points (series, ts, seq, num, value) VALUES (?1, ?2, 0, ?3, ?4)"
                })
                .expect("prepare");
            let end = (n + batch).min(count);
            while n < end {
                let ts = start_ms + n as i64 * step_ms;
                insert
                    .execute(params![series, ts, n as f64, n.to_string()])
                    .expect("insert");
                n += 1;
            }
        }
        tx.commit().expect("commit");
    }
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "{{\"values\":{count},\"batch\":{batch},\"svc_sql\":{svc_sql},\"seconds\":{seconds:.3},\
         \"values_per_s\":{:.0}}}",
        count as f64 / seconds
    );
}

// --- range queries -----------------------------------------------------------------------------

fn rfc3339(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .expect("timestamp in range")
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn query(flags: &Flags) {
    let url = flags.required("url");
    let token = flags.required("token");
    let topic = flags.required("topic");
    let domain = flags.text("domain", DEFAULT_DOMAIN);
    let count: u64 = flags.number("count", 1_000_000);
    let page: u64 = flags.number("page", 100_000);
    let start_ms: i64 = flags.number("start-ms", DEFAULT_START_MS);
    let step_ms: i64 = flags.number("step-ms", 1_000);
    let end_ms = start_ms + count as i64 * step_ms;

    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(600))
        .build()
        .expect("http client");
    let mut next_ms = start_ms;
    let mut points = 0u64;
    let mut pages = 0u64;
    let mut bytes = 0u64;
    let mut seconds = 0.0;
    let mut worst_page = 0.0f64;
    while points < count {
        let body = serde_json::json!({
            "topic": topic,
            "start_time": rfc3339(next_ms),
            "end_time": rfc3339(end_ms),
            "limit": page.min(count - points),
        });
        let t = Instant::now();
        let response = client
            .patch(format!("{url}/svc/historian"))
            .bearer_auth(&token)
            .header("Domain", format!("domains:{domain}"))
            .json(&body)
            .send()
            .expect("PATCH /svc/historian");
        let status = response.status();
        let body = response.bytes().expect("response body");
        let took = t.elapsed().as_secs_f64();
        if !status.is_success() {
            usage(&format!(
                "PATCH /svc/historian → {status}: {}",
                String::from_utf8_lossy(&body)
            ));
        }
        seconds += took;
        worst_page = worst_page.max(took);
        bytes += body.len() as u64;
        pages += 1;
        // Outside the timed part: check the page and find where the next one starts.
        let got: Vec<serde_json::Value> = serde_json::from_slice(&body).expect("a JSON array");
        let Some(last) = got.last() else { break };
        let last_ms = last["timestamp"]
            .as_str()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.timestamp_millis())
            .expect("a timestamp");
        points += got.len() as u64;
        next_ms = last_ms + 1;
    }
    println!(
        "{{\"points\":{points},\"pages\":{pages},\"bytes\":{bytes},\"seconds\":{seconds:.3},\
         \"worst_page_seconds\":{worst_page:.3},\"points_per_s\":{:.0}}}",
        points as f64 / seconds
    );
}

fn raw_query(flags: &Flags) {
    let db = flags.required("db");
    let topic = flags.required("topic");
    let domain = flags.text("domain", DEFAULT_DOMAIN);
    let count: u64 = flags.number("count", 1_000_000);
    let start_ms: i64 = flags.number("start-ms", DEFAULT_START_MS);
    let step_ms: i64 = flags.number("step-ms", 1_000);
    let end_ms = start_ms + count as i64 * step_ms;

    let conn = open_read_only(&db);
    conn.execute_batch("PRAGMA mmap_size=268435456;")
        .expect("pragmas");
    let series =
        series_of(&conn, &domain, &topic).unwrap_or_else(|| usage(&format!("no series {topic}")));
    let started = Instant::now();
    let mut stmt = conn
        .prepare(
            "SELECT ts, value FROM hist_points WHERE series = ?1 AND ts >= ?2 AND ts < ?3 \
             ORDER BY ts, seq",
        )
        .expect("prepare");
    let mut rows = stmt
        .query(params![series, start_ms, end_ms])
        .expect("query");
    let (mut points, mut text_bytes, mut ts_sum) = (0u64, 0u64, 0i64);
    while let Some(row) = rows.next().expect("row") {
        let ts: i64 = row.get(0).expect("ts");
        let value: String = row.get(1).expect("value");
        ts_sum = ts_sum.wrapping_add(ts);
        text_bytes += value.len() as u64;
        points += 1;
    }
    let seconds = started.elapsed().as_secs_f64();
    let points_per_s = points as f64 / seconds;
    std::hint::black_box(ts_sum);
    println!(
        "{{\"points\":{points},\"value_bytes\":{text_bytes},\"seconds\":{seconds:.3},\
         \"points_per_s\":{points_per_s:.0}}}"
    );
}

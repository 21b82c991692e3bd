//! Historian load and reference measurements for `bench/historian.sh`. Every subcommand prints one
//! JSON line.
//!
//! - `ingest`: publishes `--count` values to one historized topic over MQTT (QoS 1 by default,
//!   `--publishers` connections; payload `{"value":N,"timestamp":<start + N*step ms>}`, or the bare
//!   number `N` with `--receive-time`, so the broker's receive time is the timestamp), and times
//!   from the first publish until `hist_points` holds `--count` rows of that series, polled
//!   read-only on `--db` (WAL lets a reader in while svc writes), or on the PostgreSQL database
//!   when `--db` is a `postgres://` URL. Once the database keeps blocks (it has `hist_blocks`),
//!   closed points are no longer rows: the points are then counted through the API (a `count`
//!   aggregate over all time; `--url` and `--token` required).
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

#[path = "common/flags.rs"]
mod flags;
#[path = "common/publisher.rs"]
mod publisher;
#[path = "common/svc_api.rs"]
mod svc_api;

use flags::Flags;
use publisher::{publish_all, Connect};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use svc_api::{rfc3339, Svc, DEFAULT_DOMAIN};

/// 2026-01-01T00:00:00Z: the first timestamp of a series written with explicit timestamps.
const DEFAULT_START_MS: i64 = 1_767_225_600_000;

const USAGE: &str = "historian_load ingest|raw-ingest|query|raw-query [--flag value]… \
                     (see the header of examples/historian_load.rs)";

fn usage(problem: &str) -> ! {
    flags::usage("historian_load", USAGE, problem)
}

fn main() {
    let mut raw = std::env::args().skip(1);
    let command = raw.next().unwrap_or_else(|| usage("no subcommand"));
    let flags = Flags::parse("historian_load", USAGE, raw);
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
    /// Once the database keeps blocks (a `hist_blocks` table), points closed into a block are
    /// no longer rows: the stored points are counted through the API instead.
    Api { svc: Svc, topic: String },
}

/// Every time a bench writes (1970 to 2100): the window of a count through the API.
const ALL_TIME_MS: (i64, i64) = (0, 4_102_444_800_000);

impl StoredRows {
    /// `api`: the svc to count through when the database keeps blocks.
    fn open(
        runtime: &tokio::runtime::Runtime,
        db: &str,
        domain: &str,
        topic: &str,
        api: Option<Svc>,
    ) -> StoredRows {
        let rows = StoredRows::open_db(runtime, db, domain, topic);
        if !rows.has_blocks(runtime) {
            return rows;
        }
        let svc = api.unwrap_or_else(|| {
            usage("the database keeps blocks (hist_blocks): give --url and --token to count through the API")
        });
        StoredRows::Api {
            svc,
            topic: topic.to_string(),
        }
    }

    fn has_blocks(&self, runtime: &tokio::runtime::Runtime) -> bool {
        match self {
            StoredRows::Sqlite { conn, .. } => conn
                .query_row(
                    "SELECT count(*) FROM sqlite_master WHERE name = 'hist_blocks'",
                    [],
                    |r| r.get::<_, i64>(0),
                )
                .is_ok_and(|n| n > 0),
            StoredRows::Postgres { client, .. } => runtime
                .block_on(client.query_one("SELECT to_regclass('hist_blocks') IS NOT NULL", &[]))
                .is_ok_and(|row| row.get::<_, bool>(0)),
            StoredRows::Api { .. } => true,
        }
    }

    fn open_db(
        runtime: &tokio::runtime::Runtime,
        db: &str,
        domain: &str,
        topic: &str,
    ) -> StoredRows {
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
            StoredRows::Api { svc, topic } => svc
                .count(topic, ALL_TIME_MS.0, ALL_TIME_MS.1)
                .ok()
                .filter(|&n| n > 0),
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
    let qos = publisher::qos(flags.number("qos", 1));
    let start_ms: i64 = flags.number("start-ms", DEFAULT_START_MS);
    let step_ms: i64 = flags.number("step-ms", 1_000);
    let receive_time = flags.switch("receive-time");
    let db = flags.required("db");
    let domain = flags.text("domain", DEFAULT_DOMAIN);

    let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
    let connect = Connect {
        host,
        port,
        username,
        password,
    };
    let started = Instant::now();
    let published = runtime.block_on(async {
        let tasks: Vec<_> = (0..publishers)
            .map(|p| {
                // Publisher p sends values p, p + P, p + 2P, …
                let topic = topic.clone();
                let messages = (p..count).step_by(publishers as usize).map(move |n| {
                    let body = if receive_time {
                        n.to_string()
                    } else {
                        let ts = start_ms + n as i64 * step_ms;
                        format!("{{\"value\":{n},\"timestamp\":{ts}}}")
                    };
                    (topic.clone(), body)
                });
                let name = format!("hist-load-{p}");
                tokio::spawn(publish_all(
                    name.clone(),
                    connect.options(&name),
                    qos,
                    messages,
                ))
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
    let api = match (flags.optional("url"), flags.optional("token")) {
        (Some(url), Some(token)) => Some(Svc::new(&url, &token, &domain)),
        _ => None,
    };
    let mut stored = StoredRows::open(&runtime, &db, &domain, &topic, api);
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

    let svc = Svc::new(&url, &token, &domain);
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
        let (body, took) = svc.historian(&body).unwrap_or_else(|e| usage(&e));
        seconds += took;
        worst_page = worst_page.max(took);
        bytes += body.len() as u64;
        pages += 1;
        // Outside the timed part: check the page and find where the next one starts.
        let got: Vec<serde_json::Value> = serde_json::from_slice(&body).expect("a JSON array");
        let Some(last) = got.last() else { break };
        let last_ms = last["timestamp"]
            .as_str()
            .and_then(svc_api::parse_ms)
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

//! What svc's historian occupies: the bytes of every table whose name starts with `hist_` (its
//! indexes, TOAST and partitions included) and the rows still in `hist_points`, on SQLite
//! (`dbstat`, the database opened read-only while svc runs) or PostgreSQL
//! (`pg_total_relation_size`). With `--settle`, first waits for the historian's background
//! work (closing hot rows into blocks) to finish, as a plant's database would be found later.

use crate::flags::Flags;
use rusqlite::{Connection, OpenFlags};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// One look at the historian's tables.
#[derive(Debug, Clone, PartialEq)]
pub struct Look {
    /// Bytes per top-level table (partitions counted in their parent).
    pub tables: BTreeMap<String, u64>,
    pub hot_rows: u64,
}

impl Look {
    pub fn bytes(&self) -> u64 {
        self.tables.values().sum()
    }
}

pub enum Db {
    Sqlite(Connection),
    Postgres(tokio::runtime::Runtime, tokio_postgres::Client),
}

impl Db {
    pub fn open(db: &str) -> Result<Db, String> {
        if db.starts_with("postgres://") || db.starts_with("postgresql://") {
            let runtime = tokio::runtime::Runtime::new().expect("tokio runtime");
            let client = runtime.block_on(async {
                let (client, connection) = tokio_postgres::connect(db, tokio_postgres::NoTls)
                    .await
                    .map_err(|e| format!("cannot connect to {db}: {e}"))?;
                tokio::spawn(connection);
                Ok::<_, String>(client)
            })?;
            Ok(Db::Postgres(runtime, client))
        } else {
            let conn = Connection::open_with_flags(
                db,
                OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .map_err(|e| format!("cannot open {db}: {e}"))?;
            conn.busy_timeout(Duration::from_secs(10))
                .map_err(|e| e.to_string())?;
            Ok(Db::Sqlite(conn))
        }
    }

    pub fn look(&self) -> Result<Look, String> {
        let mut tables = BTreeMap::new();
        let hot_rows = match self {
            Db::Sqlite(conn) => {
                // dbstat names every b-tree page's owner (table or index); sqlite_master ties
                // an index to its table. Free pages belong to no table and are not counted.
                let mut stmt = conn
                    .prepare(
                        "SELECT m.tbl_name, sum(d.pgsize) FROM dbstat d \
                         JOIN sqlite_master m ON m.name = d.name \
                         WHERE m.tbl_name LIKE 'hist\\_%' ESCAPE '\\' GROUP BY m.tbl_name",
                    )
                    .map_err(|e| format!("dbstat: {e}"))?;
                let rows = stmt
                    .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
                    .map_err(|e| format!("dbstat: {e}"))?;
                for row in rows {
                    let (name, bytes) = row.map_err(|e| format!("dbstat: {e}"))?;
                    tables.insert(name, bytes as u64);
                }
                conn.query_row("SELECT count(*) FROM hist_points", [], |r| {
                    r.get::<_, i64>(0)
                })
                .map_err(|e| format!("count hist_points: {e}"))? as u64
            }
            Db::Postgres(runtime, client) => {
                // Every table named hist_* in the current schema and, recursively, its
                // partitions (whatever they are named), each counted in its top table.
                let rows = runtime
                    .block_on(client.query(
                        "WITH RECURSIVE t(oid, top) AS ( \
                           SELECT c.oid, c.relname::text FROM pg_class c \
                           WHERE c.relkind IN ('r', 'p') AND c.relname LIKE 'hist\\_%' \
                             AND c.relnamespace = current_schema()::regnamespace \
                             AND NOT c.relispartition \
                           UNION SELECT i.inhrelid, t.top FROM pg_inherits i \
                           JOIN t ON i.inhparent = t.oid) \
                         SELECT top, sum(pg_total_relation_size(oid))::bigint FROM t GROUP BY top",
                        &[],
                    ))
                    .map_err(|e| format!("table sizes: {e}"))?;
                for row in rows {
                    tables.insert(row.get::<_, String>(0), row.get::<_, i64>(1) as u64);
                }
                runtime
                    .block_on(client.query_one("SELECT count(*) FROM hist_points", &[]))
                    .map_err(|e| format!("count hist_points: {e}"))?
                    .get::<_, i64>(0) as u64
            }
        };
        if tables.is_empty() {
            return Err("no table named hist_* was found".into());
        }
        Ok(Look { tables, hot_rows })
    }

    /// Plain `VACUUM` of the historian's tables (PostgreSQL): dead rows left by moving hot
    /// rows into blocks become free space and empty trailing pages are returned, as autovacuum
    /// would do on its own later.
    fn vacuum(&self, tables: &BTreeMap<String, u64>) -> Result<(), String> {
        if let Db::Postgres(runtime, client) = self {
            let names: Vec<String> = tables.keys().map(|t| format!("\"{t}\"")).collect();
            runtime
                .block_on(client.batch_execute(&format!("VACUUM {}", names.join(", "))))
                .map_err(|e| format!("VACUUM: {e}"))?;
        }
        Ok(())
    }
}

/// Measures, after settling when asked (see the header of main.rs).
pub fn run(flags: &Flags) -> Result<String, String> {
    let db = Db::open(&flags.required("db"))?;
    let started = Instant::now();
    let mut look = db.look()?;
    let mut settled = Value::Null;
    if flags.switch("settle") {
        let rows_below: u64 = flags.number("settle-rows", 5_000);
        let quiet = Duration::from_secs_f64(flags.number("settle-quiet", 15.0));
        let timeout = Duration::from_secs_f64(flags.number("settle-timeout", 300.0));
        let mut changed = Instant::now();
        // Closing the rows is not the end: the store gives their space back a writer round
        // later (PostgreSQL drops the emptied partitions), so the sizes must also hold still.
        let still = Duration::from_secs(3);
        let reason = loop {
            if look.hot_rows < rows_below && changed.elapsed() >= still {
                break format!(
                    "hist_points below {rows_below} rows, sizes still for {}s",
                    still.as_secs()
                );
            }
            if changed.elapsed() >= quiet {
                break format!("no change for {}s", quiet.as_secs_f64());
            }
            if started.elapsed() >= timeout {
                break format!("timed out after {}s", timeout.as_secs_f64());
            }
            std::thread::sleep(Duration::from_secs(1));
            let next = db.look()?;
            if next != look {
                changed = Instant::now();
                look = next;
            }
        };
        settled = json!({
            "seconds": (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
            "ended": reason,
        });
    }
    if flags.switch("vacuum") {
        db.vacuum(&look.tables)?;
        look = db.look()?;
    }
    let tables: Map<String, Value> = look
        .tables
        .iter()
        .map(|(name, bytes)| (name.clone(), Value::from(*bytes)))
        .collect();
    Ok(json!({
        "bytes": look.bytes(),
        "hot_rows": look.hot_rows,
        "tables": tables,
        "settle": settled,
    })
    .to_string())
}

//! Raw rusqlite insert loop for `bench/run.sh`: the ceiling `svc serve`'s create rate is
//! measured against. It copies the schema of one record table (with its indexes, full-text
//! tables and triggers) from the database of a running svc into a fresh database with svc's
//! settings (WAL, `synchronous=NORMAL`), so the layout is exactly svc's, then inserts `COUNT`
//! rows the way svc stores records (key, JSON document, two timestamps), from one thread:
//!
//! - `each`: one transaction per insert (autocommit), as svc did per request before group commit;
//! - `batched`: `BATCH` inserts per transaction, as a group commit of `BATCH` waiting requests.
//!
//! Documents are `bench_load`'s. Prints one line per mode: `raw <mode> <records/s>`.
//!
//! ```sh
//! cargo run --release --example bench_sqlite -- <svc.db> <table> <work-dir> <count> [batch]
//! ```
//! `<table>` is the qualified name, e.g. `bench.items`.

use rusqlite::{params, Connection};
use std::path::Path;
use std::time::Instant;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn main() {
    if let Err(e) = run() {
        eprintln!("bench_sqlite: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 4 {
        eprintln!("usage: bench_sqlite <svc.db> <table> <work-dir> <count> [batch]");
        std::process::exit(2);
    }
    let (source, table, work) = (Path::new(&args[0]), &args[1], Path::new(&args[2]));
    let count: usize = args[3].parse()?;
    let batch: usize = args.get(4).map_or(Ok(256), |b| b.parse())?;
    let schema = table_schema(source, table)?;
    for (mode, per_tx) in [("each", 1), ("batched", batch.max(1))] {
        let path = work.join(format!("raw-{mode}.db"));
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
        let mut conn = Connection::open(&path)?;
        conn.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON; \
             PRAGMA mmap_size=268435456;",
        )?;
        conn.execute_batch(&schema)?;
        let rate = insert(&mut conn, table, count, per_tx)?;
        println!("raw {mode} {rate:.0}");
    }
    Ok(())
}

/// The SQL creating `table` and everything svc built on it, in creation order. FTS5's shadow
/// tables are left out: creating the virtual table makes them.
fn table_schema(source: &Path, table: &str) -> Result<String> {
    let conn = Connection::open(source)?;
    let mut stmt = conn.prepare(
        "SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL \
         AND (tbl_name = ?1 OR tbl_name LIKE ?1 || '\\_\\_fts\\_\\_%' ESCAPE '\\') \
         ORDER BY rowid",
    )?;
    let rows: Vec<(String, String)> = stmt
        .query_map([table], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let virtual_tables: Vec<&str> = rows
        .iter()
        .filter(|(_, sql)| sql.starts_with("CREATE VIRTUAL TABLE"))
        .map(|(name, _)| name.as_str())
        .collect();
    let statements: Vec<&str> = rows
        .iter()
        .filter(|(name, _)| {
            !virtual_tables
                .iter()
                .any(|v| name.len() > v.len() && name.starts_with(&format!("{v}_")))
        })
        .map(|(_, sql)| sql.as_str())
        .collect();
    if statements.is_empty() {
        return Err(format!("no table `{table}` in {}", source.display()).into());
    }
    Ok(statements.join(";\n") + ";")
}

/// Inserts `count` records, `per_tx` to a transaction; records per second.
fn insert(conn: &mut Connection, table: &str, count: usize, per_tx: usize) -> Result<f64> {
    let sql = format!(
        "INSERT INTO \"{}\" (key, data, created_dt, updated_dt) VALUES (?1, ?2, ?3, ?3)",
        table.replace('"', "\"\"")
    );
    let started = Instant::now();
    let mut n = 0;
    while n < count {
        let tx = conn.transaction()?;
        {
            let mut stmt = tx.prepare_cached(&sql)?;
            for n in n..(n + per_tx).min(count) {
                let (line, hall) = (n % 1000, n % 7);
                let data = format!(
                    r#"{{"sku":"SKU-{n}","line":"line-{line}","value":{n},"tags":["t{line}","g{hall}"],"note":"pump {line} in hall h{hall}"}}"#
                );
                let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
                stmt.execute(params![format!("item{n}"), data, now])?;
            }
        }
        tx.commit()?;
        n += per_tx;
    }
    Ok(count as f64 / started.elapsed().as_secs_f64())
}

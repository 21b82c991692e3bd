//! Background checkpoints of the write-ahead log.
//!
//! SQLite's automatic checkpoint runs on the connection whose commit crosses 1,000 WAL frames,
//! so a writer that every REST create waits on (the record writer, the historian writer) paid
//! for copying the log into the database file and its fsync: 13 % of the record writer's time
//! under a stream of creates. Every connection of the store turns it off, and this thread
//! checkpoints instead, on its own connection, in `PASSIVE` mode (it never waits for a writer
//! or a reader, and readers see the same data either way).
//!
//! It looks every [`BUSY_INTERVAL`] while the log grows and backs off to [`IDLE_INTERVAL`]
//! while nothing is written, so an idle server wakes it twice a minute. A page written many
//! times between two looks is copied once.

use rusqlite::Connection;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

/// How soon it looks again after the log grew.
pub const BUSY_INTERVAL: Duration = Duration::from_millis(100);
/// How long it waits at most while nothing is written.
pub const IDLE_INTERVAL: Duration = Duration::from_secs(30);

/// The checkpointing thread; it ends when this is dropped.
pub struct Checkpointer {
    _stop: mpsc::Sender<()>,
}

/// What one `PRAGMA wal_checkpoint(PASSIVE)` reported: frames in the log, frames copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub log_frames: i64,
    pub checkpointed: i64,
}

impl Checkpointer {
    /// Starts checkpointing the database at `path` (already created, in WAL mode).
    pub fn start(path: &Path) -> std::io::Result<Checkpointer> {
        let conn = Connection::open(path).map_err(std::io::Error::other)?;
        conn.busy_timeout(Duration::from_secs(10))
            .map_err(std::io::Error::other)?;
        let (stop, stopped) = mpsc::channel::<()>();
        std::thread::Builder::new()
            .name("svc-checkpoint".into())
            .spawn(move || run(&conn, &stopped))?;
        Ok(Checkpointer { _stop: stop })
    }
}

fn run(conn: &Connection, stopped: &mpsc::Receiver<()>) {
    let mut interval = BUSY_INTERVAL;
    let mut last = None;
    loop {
        match stopped.recv_timeout(interval) {
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            // The store is gone (or sent a stop, which it never does).
            _ => return,
        }
        match checkpoint(conn) {
            Ok(progress) => {
                let grew = last.is_some_and(|last: Progress| last.log_frames != progress.log_frames)
                    || progress.checkpointed < progress.log_frames;
                interval = if grew {
                    BUSY_INTERVAL
                } else {
                    (interval * 2).min(IDLE_INTERVAL)
                };
                last = Some(progress);
            }
            Err(e) => {
                tracing::warn!("checkpoint of the write-ahead log failed: {e}");
                interval = IDLE_INTERVAL.min(interval * 2);
            }
        }
    }
}

/// Copies what it can of the log into the database file without waiting for anyone.
pub fn checkpoint(conn: &Connection) -> rusqlite::Result<Progress> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
        Ok(Progress {
            log_frames: row.get(1)?,
            checkpointed: row.get(2)?,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wal_connection(path: &Path) -> Connection {
        let conn = Connection::open(path).expect("open");
        conn.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0; \
             CREATE TABLE IF NOT EXISTS t (x BLOB);",
        )
        .expect("setup");
        conn
    }

    #[test]
    fn the_thread_copies_the_log_that_writers_leave() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("db");
        let writer = wal_connection(&path);
        for _ in 0..50 {
            writer
                .execute("INSERT INTO t VALUES (randomblob(4000))", [])
                .expect("insert");
        }
        let logged = std::fs::metadata(&path).expect("db").len();
        let _checkpointer = Checkpointer::start(&path).expect("start");
        // Only a checkpoint puts the pages into the database file.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while std::fs::metadata(&path).expect("db").len() < logged + 50 * 4000 {
            assert!(
                std::time::Instant::now() < deadline,
                "the log was not checkpointed"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn the_loop_ends_when_its_store_is_gone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let conn = wal_connection(&dir.path().join("db"));
        let (stop, stopped) = mpsc::channel();
        drop(stop);
        run(&conn, &stopped);
    }
}

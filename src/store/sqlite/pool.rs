//! The store's pool of SQLite connections. Each connection reports the record tables it writes
//! to the [`RecordCache`] (through SQLite's update hook, so no write path can forget to), and
//! [`Conn`], the handle the store's methods hold, tells the cache once more when it goes back to
//! the pool, after whatever it wrote was committed or rolled back.

use crate::store::record_cache::{RecordCache, Written};
use r2d2::{ManageConnection, PooledConnection};
use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::Connection;
use std::sync::Arc;

pub type Pool = r2d2::Pool<Manager>;

/// A connection with the record tables it wrote since it left the pool.
pub struct Tracked {
    conn: Connection,
    written: Arc<Written>,
    cache: Arc<RecordCache>,
}

/// [`SqliteConnectionManager`] whose connections are [`Tracked`].
pub struct Manager {
    sqlite: SqliteConnectionManager,
    cache: Arc<RecordCache>,
}

impl Manager {
    pub fn new(sqlite: SqliteConnectionManager, cache: Arc<RecordCache>) -> Manager {
        Manager { sqlite, cache }
    }
}

/// Record tables are named `<domain>.<table>`; the store's own tables have no dot.
fn is_record_table(name: &str) -> bool {
    name.contains('.')
}

impl ManageConnection for Manager {
    type Connection = Tracked;
    type Error = rusqlite::Error;

    fn connect(&self) -> Result<Tracked, rusqlite::Error> {
        let conn = self.sqlite.connect()?;
        let written = Arc::new(Written::default());
        let (cache, noted) = (self.cache.clone(), written.clone());
        // The first row a checkout writes to a table fails the reads of it already in progress;
        // reads that begin after it are failed when the connection goes back (see `Conn`), so
        // the table's further rows need not clear it again (a group commit writes up to 256).
        conn.update_hook(Some(move |_, _: &str, table: &str, _| {
            if is_record_table(table) && noted.note(table) {
                cache.invalidate(table);
            }
        }));
        Ok(Tracked {
            conn,
            written,
            cache: self.cache.clone(),
        })
    }

    fn is_valid(&self, tracked: &mut Tracked) -> Result<(), rusqlite::Error> {
        self.sqlite.is_valid(&mut tracked.conn)
    }

    fn has_broken(&self, tracked: &mut Tracked) -> bool {
        self.sqlite.has_broken(&mut tracked.conn)
    }
}

/// A connection taken from the pool; derefs to the SQLite connection.
pub struct Conn(PooledConnection<Manager>);

impl Conn {
    pub fn new(pooled: PooledConnection<Manager>) -> Conn {
        Conn(pooled)
    }
}

impl std::ops::Deref for Conn {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        &self.0.conn
    }
}

impl std::ops::DerefMut for Conn {
    fn deref_mut(&mut self) -> &mut Connection {
        &mut self.0.conn
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        // Whatever this connection wrote is committed or undone by now (a transaction cannot
        // outlive the borrow of its connection): reads that began before the commit saw the
        // old rows and must not keep them.
        for table in self.0.written.take() {
            self.0.cache.invalidate(&table);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_write_to_a_record_table_drops_its_cached_records() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = Arc::new(RecordCache::default());
        let manager = Manager::new(
            SqliteConnectionManager::file(dir.path().join("db")),
            cache.clone(),
        );
        let pool = r2d2::Pool::builder()
            .max_size(2)
            .build(manager)
            .expect("pool");
        let conn = Conn::new(pool.get().expect("conn"));
        conn.execute_batch(
            "CREATE TABLE \"acme.items\" (key TEXT PRIMARY KEY, data TEXT); \
             CREATE TABLE plain (x);",
        )
        .expect("schema");
        let keep = |text: &str| {
            let read = cache.begin_read("acme.items", "a").expect("enabled");
            cache.finish_read(read, "acme.items", "a", text);
        };
        keep("v1");
        conn.execute("INSERT INTO plain VALUES (1)", [])
            .expect("insert");
        assert!(
            cache.get("acme.items", "a").is_some(),
            "other tables leave it"
        );
        conn.execute("INSERT INTO \"acme.items\" VALUES ('b', '{}')", [])
            .expect("insert");
        assert!(cache.get("acme.items", "a").is_none(), "a write drops it");

        // A read that began while the write was not yet committed is overtaken when the
        // writing connection goes back to the pool.
        let mut writer = Conn::new(pool.get().expect("conn"));
        let tx = writer.transaction().expect("tx");
        tx.execute("UPDATE \"acme.items\" SET data = 'new' WHERE key = 'b'", [])
            .expect("update");
        let read = cache.begin_read("acme.items", "b").expect("enabled");
        tx.commit().expect("commit");
        drop(writer);
        cache.finish_read(read, "acme.items", "b", "old");
        assert!(
            cache.get("acme.items", "b").is_none(),
            "the old text is not kept"
        );
    }
}

//! Online snapshots of the store with SQLite's backup API, and the check that a file is an svc
//! database before `svc restore` puts it in place.

use super::{SqliteStore, StoreError, StoreResult};
use rusqlite::{Connection, OpenFlags};
use std::path::Path;

impl SqliteStore {
    /// Writes a consistent copy of the database to `dest` while the server keeps running.
    ///
    /// The whole copy is one backup step, so it reads one snapshot of the write-ahead log:
    /// writers go on meanwhile, and every commit made before the step began is in the copy.
    pub(super) fn online_backup(&self, dest: &Path) -> StoreResult<()> {
        let source = self.conn()?;
        let mut target = Connection::open(dest)
            .map_err(|e| StoreError::Internal(format!("cannot create {}: {e}", dest.display())))?;
        {
            let backup = rusqlite::backup::Backup::new(&source, &mut target)?;
            backup.step(-1)?;
        }
        // The copy is a standalone file: no WAL beside it, readable by any SQLite.
        target.execute_batch("PRAGMA journal_mode=DELETE;")?;
        target
            .close()
            .map_err(|(_, e)| StoreError::Internal(format!("cannot close the snapshot: {e}")))?;
        Ok(())
    }
}

/// Tables every svc database has (created by [`SqliteStore::open`]); a file without them is not one.
const REQUIRED_TABLES: [&str; 4] = ["auth_domains", "auth_users", "auth_groups", "auth_api_keys"];

/// Opens `path` read-only and checks that it is an intact SQLite database holding svc's tables;
/// the error says what is wrong with it.
pub fn check_svc_database(path: &Path) -> Result<(), String> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    let check: String = conn
        .query_row("PRAGMA quick_check", [], |r| r.get(0))
        .map_err(|e| format!("{} is not an SQLite database ({e})", path.display()))?;
    if check != "ok" {
        return Err(format!(
            "{} is damaged (integrity check: {check})",
            path.display()
        ));
    }
    let mut stmt = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .map_err(|e| format!("cannot read the tables of {}: {e}", path.display()))?;
    let tables: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .and_then(|rows| rows.collect())
        .map_err(|e| format!("cannot read the tables of {}: {e}", path.display()))?;
    let missing: Vec<&str> = REQUIRED_TABLES
        .iter()
        .copied()
        .filter(|t| !tables.iter().any(|have| have == t))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "{} is not an svc database: it lacks the tables {}",
            path.display(),
            missing.join(", ")
        ));
    }
    Ok(())
}

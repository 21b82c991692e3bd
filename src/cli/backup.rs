//! `svc backup <file>`: asks a running server for a consistent snapshot of its store
//! (`POST /svc/backup`, administrators) and writes it to a local file. `svc restore <file>`:
//! puts a snapshot in place as the database of a stopped data dir, keeping the old one.

use super::client::Client;
use super::error::{CliError, CliResult};
use reqwest::Method;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The database file of a data dir (as `svc serve` names it).
const DB_FILE: &str = "svc.db";
/// A big store takes long to send; the client's usual limit is for ordinary calls.
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(24 * 3600);

pub fn backup(client: &Client, file: &Path) -> CliResult<()> {
    let partial = sibling(file, ".partial");
    let request = client
        .request(Method::POST, "/svc/backup")
        .timeout(DOWNLOAD_TIMEOUT);
    let mut response = client.send(request)?;
    let mut out = std::fs::File::create(&partial)
        .map_err(|e| CliError::failed(format!("cannot create {}: {e}", partial.display())))?;
    let written = response.copy_to(&mut out).map_err(|e| {
        let _ = std::fs::remove_file(&partial);
        CliError::failed(format!("the snapshot was cut off: {e}"))
    })?;
    out.sync_all()
        .map_err(|e| CliError::failed(format!("cannot write {}: {e}", partial.display())))?;
    drop(out);
    // Only a complete snapshot gets the asked-for name.
    std::fs::rename(&partial, file)
        .map_err(|e| CliError::failed(format!("cannot write {}: {e}", file.display())))?;
    eprintln!("svc: wrote {} ({written} bytes)", file.display());
    Ok(())
}

pub fn restore(file: &Path, data_dir: &Path) -> CliResult<()> {
    if !file.is_file() {
        return Err(CliError::failed(format!("no file {}", file.display())));
    }
    std::fs::create_dir_all(data_dir).map_err(|e| {
        CliError::failed(format!(
            "cannot create data dir {}: {e}",
            data_dir.display()
        ))
    })?;
    // Held while the files are swapped, so a server cannot start on a half-restored dir.
    let _lock = crate::server::lock_data_dir(data_dir).map_err(|e| {
        CliError::failed(format!(
            "{e:#}; stop the server before restoring into {}",
            data_dir.display()
        ))
    })?;
    crate::store::check_svc_database(file).map_err(CliError::failed)?;
    let db = data_dir.join(DB_FILE);
    let incoming = sibling(&db, ".restoring");
    std::fs::copy(file, &incoming)
        .map_err(|e| CliError::failed(format!("cannot copy {}: {e}", file.display())))?;
    if db.exists() {
        let kept = sibling(&db, ".before-restore");
        // The old database's write-ahead log and index go with it, under SQLite's names for
        // the kept file, so the kept copy holds every commit it had.
        for suffix in ["", "-wal", "-shm"] {
            let from = sibling(&db, suffix);
            if from.exists() {
                let to = sibling(&kept, suffix);
                std::fs::rename(&from, &to).map_err(|e| {
                    CliError::failed(format!("cannot move {} aside: {e}", from.display()))
                })?;
            }
        }
        eprintln!("svc: the previous database is kept as {}", kept.display());
    }
    std::fs::rename(&incoming, &db)
        .map_err(|e| CliError::failed(format!("cannot put {} in place: {e}", db.display())))?;
    eprintln!("svc: restored {} into {}", file.display(), db.display());
    Ok(())
}

/// `path` with `suffix` appended to its file name.
fn sibling(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

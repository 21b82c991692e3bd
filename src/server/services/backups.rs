//! Snapshots of the running store on a schedule: `backup_schedule` writes them under
//! `<data_dir>/backups/` and keeps the newest `backup_keep`; the newest is reported by
//! `GET /svc/`. And the data dir lock that tells `svc restore` a server is using the directory.

use crate::model::BackupInfo;
use crate::server::AppState;
use crate::time::{format_rfc3339, now_rfc3339};
use anyhow::Context;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The file a running server keeps locked in its data dir.
pub const LOCK_FILE: &str = "svc.lock";

/// The folder of scheduled snapshots, inside the data dir.
pub const BACKUP_DIR: &str = "backups";

const SNAPSHOT_PREFIX: &str = "svc-";

const SNAPSHOT_SUFFIX: &str = ".db";

/// Takes the data dir's lock for the life of the process; fails if another process has it.
pub fn lock_data_dir(data_dir: &Path) -> anyhow::Result<File> {
    let path = data_dir.join(LOCK_FILE);
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => anyhow::bail!(
            "another svc process is using the data dir {} (it holds {})",
            data_dir.display(),
            path.display()
        ),
        Err(std::fs::TryLockError::Error(e)) => {
            Err(e).with_context(|| format!("cannot lock {}", path.display()))
        }
    }
}

/// The newest snapshot made by this server (or found under the data dir at start).
pub struct Backups {
    dir: PathBuf,
    last: Mutex<Option<BackupInfo>>,
}

/// Scheduled snapshots in `dir`, oldest first (their names sort by time).
fn snapshots(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(SNAPSHOT_PREFIX) && n.ends_with(SNAPSHOT_SUFFIX))
        })
        .collect();
    found.sort();
    found
}

impl Backups {
    pub fn new(data_dir: &Path) -> Backups {
        let dir = data_dir.join(BACKUP_DIR);
        let last = snapshots(&dir).pop().and_then(|path| {
            let meta = std::fs::metadata(&path).ok()?;
            let time = meta.modified().ok()?;
            Some(BackupInfo {
                time: format_rfc3339(time.into()),
                file: Some(path.display().to_string()),
                size_bytes: meta.len(),
                kind: "scheduled".into(),
            })
        });
        Backups {
            dir,
            last: Mutex::new(last),
        }
    }

    /// Where snapshots are written (`<data_dir>/backups`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn last(&self) -> Option<BackupInfo> {
        self.last.lock().ok().and_then(|l| l.clone())
    }

    /// Remembers the newest snapshot, scheduled or downloaded.
    pub fn set_last(&self, info: BackupInfo) {
        if let Ok(mut last) = self.last.lock() {
            *last = Some(info);
        }
    }
}

/// Writes a snapshot at each time of `backup_schedule` and deletes all but the newest
/// `backup_keep`.
pub fn spawn_schedule(state: &AppState) {
    let Some(schedule) = state.settings.backup_schedule.clone() else {
        return;
    };
    let state = state.clone();
    tokio::spawn(async move {
        loop {
            let now = chrono::Utc::now();
            let Some(next) = schedule.next_after(now) else {
                tracing::warn!("backup_schedule has no next time; scheduled backups stop");
                return;
            };
            let wait = (next - now).to_std().unwrap_or_default();
            tokio::time::sleep(wait).await;
            match scheduled_snapshot(&state).await {
                Ok(info) => {
                    tracing::info!(file = ?info.file, bytes = info.size_bytes, "backup written");
                    state.backups.set_last(info);
                }
                Err(e) => tracing::error!(error = %e, "scheduled backup failed"),
            }
        }
    });
}

async fn scheduled_snapshot(state: &AppState) -> Result<BackupInfo, String> {
    // Every value acknowledged so far in its series, not only in the journal beside the
    // database (which a restore does not bring back).
    state
        .uns
        .historian
        .settle()
        .await
        .map_err(|e| e.to_string())?;
    let dir = state.backups.dir.clone();
    let keep = state.settings.backup_keep;
    let time = now_rfc3339();
    let name = format!(
        "{SNAPSHOT_PREFIX}{}{SNAPSHOT_SUFFIX}",
        time.replace([':', '.'], "")
    );
    let (path, partial) = (dir.join(&name), dir.join(format!(".{name}.partial")));
    let (target, done) = (partial.clone(), path.clone());
    state
        .store
        .run(move |s| {
            let io = |e: std::io::Error| crate::store::StoreError::Internal(e.to_string());
            std::fs::create_dir_all(&dir).map_err(io)?;
            s.snapshot_to(&target)?;
            // Renamed only when complete, so a listed snapshot is never a torn one.
            std::fs::rename(&target, &done).map_err(io)?;
            for old in snapshots(&dir).iter().rev().skip(keep) {
                if let Err(e) = std::fs::remove_file(old) {
                    tracing::warn!(error = %e, file = %old.display(), "cannot prune a backup");
                }
            }
            Ok(())
        })
        .await
        .map_err(|e| {
            let _ = std::fs::remove_file(&partial);
            e.to_string()
        })?;
    let size_bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    Ok(BackupInfo {
        time,
        file: Some(path.display().to_string()),
        size_bytes,
        kind: "scheduled".into(),
    })
}

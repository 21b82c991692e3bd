//! `POST /svc/backup` (administrators): a snapshot of the running store streamed to the caller
//! (`svc backup <file>`). Scheduled snapshots are `services::backups`.

use crate::model::BackupInfo;
use crate::server::error::{ApiError, ApiResult};
use crate::server::http::caller::Identity;
use crate::server::AppState;
use crate::time::now_rfc3339;
use axum::body::Body;
use axum::extract::State;
use axum::http::header;
use axum::response::Response;
use tokio::io::AsyncReadExt;
use utoipa_axum::{router::OpenApiRouter, routes};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(download))
}

/// `POST /svc/backup`: a consistent snapshot of the store as the answer's body
/// (`application/vnd.sqlite3`), taken while the server keeps serving.
#[utoipa::path(post, path = "/svc/backup", tag = "admin",
    responses((status = 200, description = "A consistent snapshot of the store (SQLite)", content_type = "application/vnd.sqlite3", body = Vec<u8>)))]
async fn download(State(state): State<AppState>, who: Identity) -> ApiResult<Response> {
    who.require_admin()?;
    // Every value acknowledged so far in its series, not only in the journal beside the
    // database (which a restore does not bring back).
    crate::server::routes::historian::settled(&state).await?;
    let dir = state.backups.dir().to_path_buf();
    let temp = dir.join(format!(".download-{}.db", uuid::Uuid::new_v4()));
    let time = now_rfc3339();
    let target = temp.clone();
    let snapshot = state
        .store
        .run(move |s| {
            std::fs::create_dir_all(&dir).map_err(|e| {
                crate::store::StoreError::Internal(format!("cannot create {}: {e}", dir.display()))
            })?;
            s.snapshot_to(&target)
        })
        .await;
    if let Err(e) = snapshot {
        let _ = std::fs::remove_file(&temp);
        return Err(e.into());
    }
    let opened = tokio::fs::File::open(&temp).await;
    // The open handle keeps the bytes; the name goes now so nothing is left behind.
    let _ = std::fs::remove_file(&temp);
    let file = opened.map_err(|e| ApiError::internal(format!("cannot read the snapshot: {e}")))?;
    let size = file.metadata().await.map(|m| m.len()).unwrap_or(0);
    state.backups.set_last(BackupInfo {
        time: time.clone(),
        file: None,
        size_bytes: size,
        kind: "download".into(),
    });
    let name = format!("svc-{}.db", time.replace([':', '.'], ""));
    Response::builder()
        .header(header::CONTENT_TYPE, "application/vnd.sqlite3")
        .header(header::CONTENT_LENGTH, size)
        .header(
            header::CONTENT_DISPOSITION,
            format!("attachment; filename=\"{name}\""),
        )
        .body(Body::from_stream(file_chunks(file)))
        .map_err(|e| ApiError::internal(format!("cannot build the answer: {e}")))
}

/// The file in chunks of 64 KiB.
fn file_chunks(
    file: tokio::fs::File,
) -> impl futures::Stream<Item = std::io::Result<bytes::Bytes>> + Send {
    futures::stream::unfold(Some(file), |file| async move {
        let mut file = file?;
        let mut buf = vec![0u8; 64 * 1024];
        match file.read(&mut buf).await {
            Ok(0) => None,
            Ok(n) => {
                buf.truncate(n);
                Some((Ok(bytes::Bytes::from(buf)), Some(file)))
            }
            Err(e) => Some((Err(e), None)),
        }
    })
}

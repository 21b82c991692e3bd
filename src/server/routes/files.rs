//! Record bodies that carry files: multipart parsing (a `record` part with the JSON plus file
//! parts), storing uploads under the data dir, and the two download routes.

use crate::ids::{is_identifier, RecordId, TableRef};
use crate::model::FileRequest;
use crate::server::error::{ApiError, ApiResult};
use crate::server::http::caller::{Access, Caller};
use crate::server::http::json::{into_object, parse_json, read_body, JsonBody};
use crate::server::AppState;
use axum::body::Bytes;
use axum::extract::{FromRequest, Multipart, Path, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};
use std::path::PathBuf;
use utoipa_axum::{router::OpenApiRouter, routes};

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(download_by_body))
        .routes(routes!(download_by_path))
}

/// A file part of a multipart body, not yet stored.
pub struct Upload {
    field: String,
    file_name: String,
    bytes: Bytes,
}

/// A record body: its fields and any uploaded files.
pub struct RecordBody {
    pub fields: Map<String, Value>,
    pub uploads: Vec<Upload>,
}

/// Reads a JSON object body, or a multipart body with a `record` part and file parts.
pub async fn read_record_body(state: &AppState, request: Request) -> ApiResult<RecordBody> {
    let is_multipart = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("multipart/form-data"));
    if !is_multipart {
        let bytes = read_body(request, state).await?;
        let fields = into_object(parse_json(&bytes)?)?;
        return Ok(RecordBody {
            fields,
            uploads: Vec::new(),
        });
    }
    let mut multipart = Multipart::from_request(request, state)
        .await
        .map_err(|e| ApiError::bad_request(format!("invalid multipart body: {}", e.body_text())))?;
    let mut fields = None;
    let mut uploads = Vec::new();
    while let Some(part) = multipart.next_field().await.map_err(multipart_error)? {
        let name = part.name().unwrap_or_default().to_string();
        let file_name = part.file_name().map(str::to_string);
        let bytes = part.bytes().await.map_err(multipart_error)?;
        match (name.as_str(), file_name) {
            ("record", None) => {
                let record = parse_json(&bytes).and_then(into_object).map_err(|e| {
                    ApiError::bad_request(format!("the `record` part: {}", e.message))
                })?;
                fields = Some(record);
            }
            (_, Some(file_name)) => {
                if !is_identifier(&name) || crate::schema::is_system_field(&name) {
                    return Err(ApiError::bad_request(format!(
                        "invalid file field name `{name}`"
                    )));
                }
                uploads.push(Upload {
                    field: name,
                    file_name: safe_file_name(&file_name),
                    bytes,
                });
            }
            (other, None) => {
                return Err(ApiError::bad_request(format!(
                    "unexpected multipart part `{other}`: send the record as `record` and files with a file name"
                )))
            }
        }
    }
    let fields = fields.ok_or_else(|| {
        ApiError::bad_request("the multipart body needs a `record` part holding the JSON record")
    })?;
    Ok(RecordBody { fields, uploads })
}

pub(in crate::server) fn multipart_error(
    err: axum::extract::multipart::MultipartError,
) -> ApiError {
    if err.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "request body is larger than the limit",
        )
    } else {
        ApiError::bad_request(format!("invalid multipart body: {}", err.body_text()))
    }
}

/// Keeps the base name and only `[A-Za-z0-9._-]`, so a name can never leave its directory.
fn safe_file_name(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let cleaned: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let cleaned = cleaned.trim_start_matches('.').to_string();
    if cleaned.is_empty() {
        "file".into()
    } else {
        cleaned.chars().take(128).collect()
    }
}

fn record_dir(state: &AppState, table: &TableRef, key: &str) -> PathBuf {
    state
        .settings
        .data_dir
        .join("files")
        .join(&table.domain)
        .join(&table.table)
        .join(key)
}

/// Stores uploads for a record and points the record's fields at them (a field given several
/// files holds an array of names).
pub async fn store_uploads(
    state: &AppState,
    table: &TableRef,
    key: &str,
    uploads: Vec<Upload>,
    fields: &mut Map<String, Value>,
) -> ApiResult<()> {
    if uploads.is_empty() {
        return Ok(());
    }
    let dir = record_dir(state, table, key);
    // Every field's names first, so a refused list writes no file.
    let mut names: Vec<(String, Vec<String>)> = Vec::new();
    for upload in &uploads {
        match names.iter_mut().find(|(f, _)| *f == upload.field) {
            Some((_, list)) => list.push(upload.file_name.clone()),
            None => names.push((upload.field.clone(), vec![upload.file_name.clone()])),
        }
    }
    let mut values = Vec::with_capacity(names.len());
    for (field, uploaded) in names {
        let value = merged_names(&field, fields.get(&field), uploaded, &dir)?;
        values.push((field, value));
    }
    tokio::fs::create_dir_all(&dir)
        .await
        .map_err(|e| ApiError::internal(format!("cannot store files: {e}")))?;
    for upload in uploads {
        tokio::fs::write(dir.join(&upload.file_name), &upload.bytes)
            .await
            .map_err(|e| ApiError::internal(format!("cannot store file: {e}")))?;
    }
    fields.extend(values);
    Ok(())
}

/// The value of a field that received files. The record part may list names (the SDK sends the
/// file's name, or a list mixing new files with names of files already stored): each listed
/// name is an uploaded file or one stored for this record, in the listed order, and uploads it
/// does not list follow. Without a list the field holds the uploads.
fn merged_names(
    field: &str,
    listed: Option<&Value>,
    uploaded: Vec<String>,
    dir: &std::path::Path,
) -> ApiResult<Value> {
    let listed: Vec<&str> = match listed {
        Some(Value::String(name)) => vec![name.as_str()],
        Some(Value::Array(items)) if items.iter().all(Value::is_string) => {
            items.iter().filter_map(Value::as_str).collect()
        }
        _ => Vec::new(),
    };
    let mut remaining = uploaded;
    let mut names = Vec::with_capacity(listed.len() + remaining.len());
    for name in listed {
        let safe = safe_file_name(name);
        if let Some(at) = remaining.iter().position(|u| *u == safe) {
            names.push(remaining.remove(at));
        } else if dir.join(&safe).is_file() {
            names.push(safe);
        } else {
            return Err(ApiError::bad_request(format!(
                "field `{field}` names file `{name}`, which is neither uploaded nor stored"
            )));
        }
    }
    names.append(&mut remaining);
    Ok(if names.len() == 1 {
        Value::String(names.remove(0))
    } else {
        Value::Array(names.into_iter().map(Value::String).collect())
    })
}

/// Removes every stored file of a record (after the record itself is deleted).
pub async fn remove_files(state: &AppState, table: &TableRef, key: &str) {
    let dir = record_dir(state, table, key);
    if let Err(e) = tokio::fs::remove_dir_all(&dir).await {
        if e.kind() != std::io::ErrorKind::NotFound {
            tracing::warn!(error = %e, "could not remove files of a deleted record");
        }
    }
}

#[utoipa::path(patch, path = "/svc/file", tag = "records", request_body = FileRequest,
    responses((status = 404, description = "The body names a tag, flow, process, group or record that does not exist"),
        (status = 200, description = "The file's bytes", content_type = "application/octet-stream", body = Vec<u8>)))]
async fn download_by_body(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(request): JsonBody<FileRequest>,
) -> ApiResult<Response> {
    let id = RecordId::parse(&request.record_id).map_err(ApiError::bad_request)?;
    if id.table.table != request.collection_name {
        return Err(ApiError::bad_request(
            "`collectionName` does not match the table of `recordID`",
        ));
    }
    download(&state, &caller, id, &request.field_name, &request.file_name).await
}

#[utoipa::path(get, path = "/svc/file/{id}/{field}/{name}", tag = "records",
    responses((status = 200, description = "The file's bytes", content_type = "application/octet-stream", body = Vec<u8>)))]
async fn download_by_path(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, field, name)): Path<(String, String, String)>,
) -> ApiResult<Response> {
    let id = RecordId::parse(&id).map_err(ApiError::bad_request)?;
    download(&state, &caller, id, &field, &name).await
}

async fn download(
    state: &AppState,
    caller: &Caller,
    id: RecordId,
    field: &str,
    name: &str,
) -> ApiResult<Response> {
    let missing = || ApiError::not_found(format!("no file `{name}` in field `{field}` of `{id}`"));
    if id.table.domain != caller.domain {
        return Err(missing());
    }
    caller
        .require(state, "collections", &id.table.table, Access::Read)
        .await?;
    let (table, key) = (id.table.clone(), id.key.clone());
    let record = state
        .store
        .run(move |s| s.get_record(&table, &key))
        .await?
        .ok_or_else(missing)?;
    let listed = match record.get(field) {
        Some(Value::String(s)) => s == name,
        Some(Value::Array(items)) => items.iter().any(|v| v.as_str() == Some(name)),
        _ => false,
    };
    if !listed || safe_file_name(name) != name {
        return Err(missing());
    }
    let path = record_dir(state, &id.table, &id.key).join(name);
    let bytes = tokio::fs::read(&path).await.map_err(|_| missing())?;
    let mime = mime_guess::from_path(name).first_or_octet_stream();
    let mut response = bytes.into_response();
    if let Ok(value) = HeaderValue::from_str(mime.as_ref()) {
        response.headers_mut().insert(header::CONTENT_TYPE, value);
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::safe_file_name;

    #[test]
    fn file_names_stay_in_their_directory() {
        assert_eq!(safe_file_name("report.pdf"), "report.pdf");
        assert_eq!(safe_file_name("../../etc/passwd"), "passwd");
        assert_eq!(safe_file_name("..\\boot.ini"), "boot.ini");
        assert_eq!(safe_file_name(".hidden"), "hidden");
        assert_eq!(safe_file_name("a b;c.txt"), "a_b_c.txt");
        assert_eq!(safe_file_name(".."), "file");
    }
}

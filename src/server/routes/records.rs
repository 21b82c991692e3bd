//! Generic record routes under `/svc`: create, get, update (merge), delete, list and count on
//! tables addressed by name in the caller's domain. The `collections` table is where schemas
//! are defined.

use crate::ids::{is_record_key, new_key, RecordId, TableRef};
use crate::model::{CountResponse, Success};
use crate::query::{self, ListQuery};
use crate::schema::{Collection, RESERVED_TABLES};
use crate::server::error::{ApiError, ApiResult};
use crate::server::http::caller::{Access, Caller};
use crate::server::routes::files::{read_record_body, remove_files, store_uploads, RecordBody};
use crate::server::routes::openapi::{Record, RecordFields};
use crate::server::services::checked_writes::{insert_with_secret, update_checked, write_lock};
use crate::server::services::system_tables;
use crate::server::AppState;
use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use utoipa_axum::{router::OpenApiRouter, routes};

const COLLECTIONS: &str = "collections";

/// The permission a table's records fall under: system tables have their own features.
fn feature_scope(table: &TableRef) -> (&'static str, &str) {
    match system_tables::of(table) {
        Some(system) => (system.feature(), "*"),
        None => ("collections", &table.table),
    }
}

impl Caller {
    pub(in crate::server) async fn require_table(
        &self,
        state: &AppState,
        table: &TableRef,
        access: Access,
    ) -> ApiResult<()> {
        let (feature, scope) = feature_scope(table);
        self.require(state, feature, scope, access).await
    }
}

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(count))
        .routes(routes!(get_one, create, update, remove))
}

/// The table a request addresses in the caller's domain; system tables are refused.
fn table_of(caller: &Caller, table: &str) -> ApiResult<TableRef> {
    let table = TableRef::new(&caller.domain, table).map_err(ApiError::bad_request)?;
    if RESERVED_TABLES.contains(&table.table.as_str()) {
        return Err(ApiError::bad_request(format!(
            "`{}` is a system table and has its own routes",
            table.table
        )));
    }
    Ok(table)
}

/// A RecordID from the path that must belong to the caller's domain; another domain's id is
/// reported absent, never forbidden, so its existence does not leak.
fn record_of(caller: &Caller, id: &str) -> ApiResult<RecordId> {
    if crate::ids::is_identifier(id) {
        // `GET /svc/products`: a table where a record was expected.
        return Err(ApiError::bad_request(format!(
            "`{id}` is a table, not a record: list it with `GET /svc/{id}/all`, or name one \
             record as <domain>.{id}:<key>"
        )));
    }
    let id = RecordId::parse(id).map_err(ApiError::bad_request)?;
    if id.table.domain != caller.domain {
        return Err(not_found(&id));
    }
    table_of(caller, &id.table.table)?;
    Ok(id)
}

fn not_found(id: &RecordId) -> ApiError {
    ApiError::not_found(format!("no record `{id}`"))
}

fn parse_query(raw: Option<String>) -> ApiResult<ListQuery> {
    let raw = raw.unwrap_or_default();
    let pairs: Vec<(String, String)> = form_urlencoded::parse(raw.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    query::parse(&pairs).map_err(|e| ApiError::bad_request(e.to_string()))
}

#[utoipa::path(get, path = "/svc/{table}/all", tag = "records",
    responses((status = 200, description = "The table's records matching the list query", body = Vec<Record>)))]
async fn list(
    State(state): State<AppState>,
    caller: Caller,
    Path(table): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    let table = table_of(&caller, &table)?;
    caller.require_table(&state, &table, Access::Read).await?;
    let query = parse_query(raw)?;
    if query.expand.is_empty() && query.fields.is_none() {
        let records = state
            .store
            .reads()
            .list_records_text(&table, &query)
            .await?;
        return Ok(json_text(format!("[{}]", records.join(","))));
    }
    let mut records = state.store.reads().list_records(&table, &query).await?;
    if !query.expand.is_empty() {
        expand(&state, &caller, &mut records, &query.expand).await?;
    }
    if let Some(fields) = &query.fields {
        for record in &mut records {
            project(record, fields);
        }
    }
    Ok(Json(records).into_response())
}

/// A response whose body is JSON text the store already assembled.
fn json_text(body: String) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

#[utoipa::path(get, path = "/svc/{table}/count", tag = "records",
    responses((status = 200, description = "How many records match the list query", body = CountResponse)))]
async fn count(
    State(state): State<AppState>,
    caller: Caller,
    Path(table): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Json<CountResponse>> {
    let table = table_of(&caller, &table)?;
    caller.require_table(&state, &table, Access::Read).await?;
    let query = parse_query(raw)?;
    let count = state
        .store
        .reads()
        .count_records(&table, &query.filters, &query.or_filters)
        .await?;
    Ok(Json(CountResponse { count }))
}

#[utoipa::path(get, path = "/svc/{target}", tag = "records",
    responses((status = 200, description = "The record named by `target` (a RecordID `<domain>.<table>:<key>`)", body = Record)))]
async fn get_one(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    RawQuery(raw): RawQuery,
) -> ApiResult<Response> {
    let id = record_of(&caller, &id)?;
    caller
        .require_table(&state, &id.table, Access::Read)
        .await?;
    let shape = RecordShape::parse(raw)?;
    let text = match state.store.cached_record_text(&id.table, &id.key) {
        Some(text) => text,
        None => state
            .store
            .reads()
            .get_record_text(&id.table, &id.key)
            .await?
            .ok_or_else(|| not_found(&id))?,
    };
    let Some(shape) = shape else {
        return Ok(json_text(text));
    };
    let mut records = [serde_json::from_str::<Value>(&text)
        .map_err(|e| ApiError::internal(format!("stored record is unreadable: {e}")))?];
    if !shape.expand.is_empty() {
        expand(&state, &caller, &mut records, &shape.expand).await?;
    }
    let [mut record] = records;
    if let Some(fields) = &shape.fields {
        project(&mut record, fields);
    }
    Ok(Json(record).into_response())
}

/// `expand` and `fields` of a single-record read, like the list's.
struct RecordShape {
    expand: Vec<String>,
    fields: Option<Vec<String>>,
}

impl RecordShape {
    /// `None` when neither is asked for; any other list parameter → 400 naming it.
    fn parse(raw: Option<String>) -> ApiResult<Option<RecordShape>> {
        let query = parse_query(raw.clone())?;
        if let Some(key) = raw.as_deref().and_then(|r| {
            form_urlencoded::parse(r.as_bytes())
                .map(|(k, _)| k.into_owned())
                .find(|k| k != "expand" && k != "fields")
        }) {
            return Err(ApiError::bad_request(format!(
                "invalid query parameter `{key}`: only `expand` and `fields` apply to one record"
            )));
        }
        if query.expand.is_empty() && query.fields.is_none() {
            return Ok(None);
        }
        Ok(Some(RecordShape {
            expand: query.expand,
            fields: query.fields,
        }))
    }
}

#[utoipa::path(post, path = "/svc/{target}", tag = "records", request_body(content = RecordFields, description = "The record's fields as JSON, or multipart/form-data with its files"),
    responses((status = 201, description = "The new record in the table named by `target`", body = Record),
        (status = 409, description = "A record with that id exists already")))]
async fn create(
    State(state): State<AppState>,
    caller: Caller,
    Path(table): Path<String>,
    request: Request,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let table = table_of(&caller, &table)?;
    caller.require_table(&state, &table, Access::Write).await?;
    let RecordBody {
        mut fields,
        uploads,
    } = read_record_body(&state, request).await?;
    if table.table == COLLECTIONS {
        return create_collection(&state, &caller, fields).await;
    }
    let key = requested_key(&table, fields.remove("id"))?;
    let system = system_tables::of(&table);
    let _declaring = write_lock(&state, system).await;
    let mut secret = None;
    if let Some(system) = system {
        secret = system.take_secret(&mut fields)?;
        system
            .prepare_new(&state, &table.domain, &caller.user.id(), &mut fields)
            .await?;
    }
    store_uploads(&state, &table, &key, uploads, &mut fields).await?;
    let record = insert_with_secret(&state, &table, key, fields, secret).await?;
    Ok((StatusCode::CREATED, Json(record)))
}

async fn create_collection(
    state: &AppState,
    caller: &Caller,
    fields: Map<String, Value>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let collection = parse_collection(fields)?;
    let domain = caller.domain.clone();
    let record = state
        .store
        .run(move |s| s.create_collection(&domain, &collection))
        .await?;
    Ok((StatusCode::CREATED, Json(record)))
}

/// `PUT` of a collection: the body is the whole new definition (its `name`, if given, is the
/// path's); indexes are rebuilt in the same transaction and the records stay.
async fn replace_collection(
    state: &AppState,
    caller: &Caller,
    id: &RecordId,
    mut fields: Map<String, Value>,
) -> ApiResult<Json<Value>> {
    match fields.get("name") {
        None => {
            fields.insert("name".into(), Value::String(id.key.clone()));
        }
        Some(name) if name.as_str() == Some(&id.key) => {}
        Some(_) => {
            return Err(ApiError::bad_request(
                "a collection cannot be renamed; `name` must be the one in the path",
            ))
        }
    }
    let collection = parse_collection(fields)?;
    let domain = caller.domain.clone();
    let record = state
        .store
        .run(move |s| s.replace_collection(&domain, &collection))
        .await?
        .ok_or_else(|| not_found(id))?;
    Ok(Json(record))
}

fn parse_collection(fields: Map<String, Value>) -> ApiResult<Collection> {
    let collection: Collection = serde_json::from_value(Value::Object(fields))
        .map_err(|e| ApiError::bad_request(format!("invalid collection: {e}")))?;
    collection.validate().map_err(ApiError::bad_request)?;
    Ok(collection)
}

/// The key for a new record: the body's `id` (a bare key, or a RecordID of this table) or a
/// fresh random one.
fn requested_key(table: &TableRef, id: Option<Value>) -> ApiResult<String> {
    let Some(id) = id else {
        return Ok(new_key());
    };
    let text = id
        .as_str()
        .ok_or_else(|| ApiError::bad_request("`id` must be a string"))?;
    if is_record_key(text) {
        return Ok(text.to_string());
    }
    match RecordId::parse(text) {
        Ok(parsed) if parsed.table == *table => Ok(parsed.key),
        Ok(_) => Err(ApiError::bad_request(format!(
            "`id` `{text}` belongs to another table"
        ))),
        Err(_) => Err(ApiError::bad_request(format!(
            "invalid `id` `{text}`: use [A-Za-z0-9_-]{{1,128}} or a full record id of this table"
        ))),
    }
}

#[utoipa::path(put, path = "/svc/{target}", tag = "records", request_body(content = RecordFields, description = "The record's fields as JSON, or multipart/form-data with its files"),
    responses((status = 200, description = "The record named by `target` (a RecordID), updated", body = Record)))]
async fn update(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    request: Request,
) -> ApiResult<Json<Value>> {
    let id = record_of(&caller, &id)?;
    caller
        .require_table(&state, &id.table, Access::Write)
        .await?;
    let RecordBody {
        mut fields,
        uploads,
    } = read_record_body(&state, request).await?;
    if let Some(body_id) = fields.remove("id") {
        if body_id.as_str() != Some(id.to_string().as_str()) && body_id.as_str() != Some(&id.key) {
            return Err(ApiError::bad_request(
                "`id` in the body does not match the path",
            ));
        }
    }
    if id.table.table == COLLECTIONS {
        return replace_collection(&state, &caller, &id, fields).await;
    }
    store_uploads(&state, &id.table, &id.key, uploads, &mut fields).await?;
    let updated = update_checked(&state, &id.table, &id.key, fields)
        .await?
        .ok_or_else(|| not_found(&id))?;
    Ok(Json(updated))
}

#[utoipa::path(delete, path = "/svc/{target}", tag = "records",
    responses((status = 200, description = "The record is deleted", body = Success)))]
async fn remove(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Success>> {
    let id = record_of(&caller, &id)?;
    caller
        .require_table(&state, &id.table, Access::Write)
        .await?;
    let (table, key) = (id.table.clone(), id.key.clone());
    let system = system_tables::of(&table);
    let _declaring = write_lock(&state, system).await;
    let before = match system {
        Some(_) => state.store.reads().get_record(&table, &key).await?,
        None => None,
    };
    let removed = if table.table == COLLECTIONS {
        let domain = caller.domain.clone();
        state
            .store
            .run(move |s| s.delete_collection(&domain, &key))
            .await?
    } else {
        state.records.delete(&table, &key).await?
    };
    if !removed {
        return Err(not_found(&id));
    }
    remove_files(&state, &id.table, &id.key).await;
    if let (Some(system), Some(before)) = (system, before) {
        system
            .after_delete(&state, &id.table.domain, &before)
            .await?;
    }
    Ok(Json(Success::yes()))
}

/// Keeps `id` and the listed fields.
fn project(record: &mut Value, fields: &[String]) {
    if let Value::Object(map) = record {
        map.retain(|k, _| k == "id" || fields.iter().any(|f| f == k));
    }
}

/// Replaces RecordID-valued fields (or arrays of them) with the referenced records of the
/// caller's domain that the caller may read; other values stay as they are.
async fn expand(
    state: &AppState,
    caller: &Caller,
    records: &mut [Value],
    fields: &[String],
) -> ApiResult<()> {
    let mut wanted: BTreeSet<String> = BTreeSet::new();
    for record in records.iter() {
        for field in fields {
            for id in referenced_ids(record.get(field)) {
                wanted.insert(id);
            }
        }
    }
    let mut readable = Vec::new();
    let mut allowed_tables: BTreeSet<String> = BTreeSet::new();
    for id in wanted {
        let Ok(parsed) = RecordId::parse(&id) else {
            continue;
        };
        if parsed.table.domain != caller.domain {
            continue;
        }
        let table = parsed.table.table.clone();
        if !allowed_tables.contains(&table) {
            if caller
                .require_table(state, &parsed.table, Access::Read)
                .await
                .is_err()
            {
                continue;
            }
            allowed_tables.insert(table);
        }
        readable.push(parsed);
    }
    let found = state
        .store
        .run(move |s| {
            let mut found = Map::new();
            for id in readable {
                if let Some(record) = s.get_record(&id.table, &id.key)? {
                    found.insert(id.to_string(), record);
                }
            }
            Ok(found)
        })
        .await?;
    for record in records.iter_mut() {
        for field in fields {
            if let Some(value) = record.get_mut(field) {
                replace_refs(value, &found);
            }
        }
    }
    Ok(())
}

fn referenced_ids(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    }
}

fn replace_refs(value: &mut Value, found: &Map<String, Value>) {
    match value {
        Value::String(s) => {
            if let Some(record) = found.get(s.as_str()) {
                *value = record.clone();
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| replace_refs(v, found)),
        _ => {}
    }
}

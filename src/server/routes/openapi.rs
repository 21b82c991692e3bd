//! The OpenAPI 3.1 document of the REST API, served without credentials at `GET /svc/openapi.json`.
//!
//! Every route file registers its handlers through utoipa-axum's `routes!`, which takes each
//! route's method and path from the handler's own `#[utoipa::path]` annotation: a route cannot be
//! served without being documented. The annotations say what is particular to a route (body,
//! success response, the errors only it returns); [`finish`] adds what every route shares, so it
//! is written once: the credential (bearer JWT or `X-Svc-Api-Key`), the optional `Domain` header,
//! path parameters as strings, and the plain-text error responses of SPEC section 3.

use crate::server::AppState;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};
use std::sync::OnceLock;
use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, Type};
use utoipa::openapi::{RefOr, Schema};
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;

/// The content type of every error response (SPEC section 3: one plain-text sentence).
const TEXT_PLAIN: &str = "text/plain; charset=utf-8";

#[derive(OpenApi)]
#[openapi(info(
    title = "svc",
    description = "REST API of svc: records, tags, historian, automation and administration. \
                   Every error is a status with one plain-text sentence."
))]
struct ApiDoc;

/// An empty router that carries the document's title; the route files are merged into it.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(ApiDoc::openapi()).routes(utoipa_axum::routes!(openapi_json))
}

/// The finished document, kept for [`openapi_json`]; set once when the router is built.
static DOCUMENT: OnceLock<String> = OnceLock::new();

/// Adds the conventions every route shares to the routers' document and keeps it for serving.
pub fn finish(doc: utoipa::openapi::OpenApi) -> Value {
    let mut doc = serde_json::to_value(doc).unwrap_or_else(|_| json!({}));
    apply_conventions(&mut doc);
    let _ = DOCUMENT.set(doc.to_string());
    doc
}

/// This document.
#[utoipa::path(
    get,
    path = "/svc/openapi.json",
    tag = "api",
    security(()),
    responses((status = 200, description = "The OpenAPI 3.1 document of this API", body = Object))
)]
async fn openapi_json() -> Response {
    let body = DOCUMENT.get().cloned().unwrap_or_default();
    ([(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// A record: any JSON object; the server gives it `id`, `created_dt` and `updated_dt`.
pub struct Record;

impl utoipa::PartialSchema for Record {
    fn schema() -> RefOr<Schema> {
        let string = |description: &str| {
            ObjectBuilder::new()
                .schema_type(Type::String)
                .description(Some(description))
        };
        free_form_object("A record: a schemaless JSON object with the fields the server keeps")
            .property("id", string("The record's id (`table:key`)"))
            .property("created_dt", string("RFC 3339 UTC with milliseconds"))
            .property("updated_dt", string("RFC 3339 UTC with milliseconds"))
            .required("id")
            .into()
    }
}

impl utoipa::ToSchema for Record {}

/// A function as the platform's SDK reads it (its `Process`): the record's fields, with `id`,
/// `domain_id` and `createdBy` as the SDK's RecordID objects.
pub struct Process;

impl utoipa::PartialSchema for Process {
    fn schema() -> RefOr<Schema> {
        let record_id = |description: &str| {
            let string = || ObjectBuilder::new().schema_type(Type::String);
            ObjectBuilder::new()
                .schema_type(Type::Object)
                .description(Some(description))
                .property("Table", string())
                .property("ID", string())
                .required("Table")
                .required("ID")
        };
        free_form_object("A process in the SDK's shape; a RecordID's string form is `Table:ID`")
            .property(
                "id",
                record_id("The process's RecordID: `Table` is `<domain>.processes`, `ID` its key"),
            )
            .property(
                "domain_id",
                record_id("Its domain: `Table` is `domains`, `ID` the domain's name"),
            )
            .property(
                "createdBy",
                record_id("The user who created it (absent when svc did not record one)"),
            )
            .property("name", ObjectBuilder::new().schema_type(Type::String))
            .property(
                "triggers",
                utoipa::openapi::schema::ArrayBuilder::new()
                    .items(free_form_object("A trigger: `{type, config}`")),
            )
            .required("id")
            .required("domain_id")
            .required("name")
            .into()
    }
}

impl utoipa::ToSchema for Process {}

/// The fields of a record to create or update: any JSON object (`id` optional).
pub struct RecordFields;

impl utoipa::PartialSchema for RecordFields {
    fn schema() -> RefOr<Schema> {
        free_form_object("The record's fields; `id` names the key to create (optional)").into()
    }
}

impl utoipa::ToSchema for RecordFields {}

/// A JSON object that may hold any field. Built, not parsed from JSON: parsing would link
/// utoipa's whole schema deserializer into the binary.
fn free_form_object(description: &str) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .description(Some(description))
        .additional_properties(Some(AdditionalProperties::FreeForm(true)))
}

/// What a status means on any route; a route's own annotation may say more.
fn error_description(status: &str) -> &'static str {
    match status {
        "400" => {
            "The request is malformed: a parameter, header or body is not what the route takes"
        }
        "401" => "No credential, or one that is not valid",
        "403" => "The credential does not grant this in the domain",
        "404" => "No such route, domain or resource",
        "409" => "The resource exists already or changed meanwhile",
        "413" => "The request body is larger than the limit",
        "415" => "The content type is not one the route takes",
        "422" => "The request is well formed but cannot be carried out",
        "429" => "Too many failed attempts; retry after `Retry-After` seconds",
        "503" => "A part of the server the route needs is not running",
        _ => "The request failed",
    }
}

/// The shared conventions (see the module comment), applied to the serialized document.
fn apply_conventions(doc: &mut Value) {
    doc["components"]["securitySchemes"] = json!({
        "bearer": {"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
                   "description": "The token of `POST /svc/auth/login`"},
        "apiKey": {"type": "apiKey", "in": "header", "name": "X-Svc-Api-Key",
                   "description": "An API key of `POST /svc/auth/keys`"}
    });
    let mut seen_ids = std::collections::HashSet::new();
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for (path, item) in paths.iter_mut() {
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for (method, operation) in item.iter_mut() {
            let Some(operation) = operation.as_object_mut() else {
                continue;
            };
            shape_operation(path, method, operation);
            // The authentication routes are served under two prefixes: ids must stay unique.
            if let Some(Value::String(id)) = operation.get_mut("operationId") {
                let mut unique = id.clone();
                let mut n = 2;
                while !seen_ids.insert(unique.clone()) {
                    unique = format!("{id}_{n}");
                    n += 1;
                }
                *id = unique;
            }
        }
    }
}

fn shape_operation(path: &str, method: &str, operation: &mut Map<String, Value>) {
    // An annotation's `security(())` marks a public route; every other route needs a credential.
    let public = operation.contains_key("security");
    let parameters = operation
        .entry("parameters")
        .or_insert_with(|| json!([]))
        .as_array_mut()
        .map(std::mem::take)
        .unwrap_or_default();
    let mut parameters = parameters;
    for name in path_parameters(path) {
        let declared = parameters
            .iter()
            .any(|p| p["name"] == name.as_str() && p["in"] == "path");
        if !declared {
            let mut schema = json!({"type": "string"});
            if let Some(pattern) = path_pattern(path, method, &name) {
                schema["pattern"] = json!(pattern);
            }
            parameters.push(json!({"name": name, "in": "path", "required": true,
                                   "schema": schema}));
        }
    }
    let mut errors = vec!["400"];
    if !public {
        operation.insert("security".into(), json!([{"bearer": []}, {"apiKey": []}]));
        parameters.push(json!({
            "name": "Domain", "in": "header", "required": false,
            "description": "The domain the request acts in, as `domains:<name>`",
            "schema": {"type": "string"}
        }));
        errors.extend(["401", "403"]);
    }
    if path.contains('{') {
        errors.push("404");
    }
    if operation.contains_key("requestBody") {
        errors.push("413");
    }
    if parameters.is_empty() {
        operation.remove("parameters");
    } else {
        operation.insert("parameters".into(), Value::Array(parameters));
    }
    let responses = operation.entry("responses").or_insert_with(|| json!({}));
    let Some(responses) = responses.as_object_mut() else {
        return;
    };
    for status in errors {
        responses
            .entry(status)
            .or_insert_with(|| json!({"description": error_description(status)}));
    }
    for (status, response) in responses.iter_mut() {
        let is_error = status.starts_with('4') || status.starts_with('5');
        if is_error && response.get("content").is_none() {
            response["content"] = json!({TEXT_PLAIN: {"schema": {"type": "string"}}});
        }
        // Every response carries the request's correlation id (middleware::correlate).
        response["headers"]["App-CorrelationID"] = json!({
            "description": "The request's correlation id, as logged",
            "required": true,
            "schema": {"type": "string"}
        });
        if status == "429" {
            response["headers"]["Retry-After"] = json!({
                "description": "Seconds until another attempt may succeed",
                "required": true,
                "schema": {"type": "integer", "minimum": 0}
            });
        }
    }
}

/// A table name (`ids::is_identifier`).
const TABLE: &str = "^[A-Za-z_][A-Za-z0-9_]{0,62}$";
/// A RecordID: `<domain>.<table>:<key>` (`ids::RecordId::parse`).
const RECORD_ID: &str = "^[a-z][a-z0-9_]{0,62}\\.[A-Za-z_][A-Za-z0-9_]{0,62}:[A-Za-z0-9_-]{1,128}$";
/// A RecordID or its bare key (`users::key_in`).
const ID_OR_KEY: &str =
    "^([a-z][a-z0-9_]{0,62}\\.[A-Za-z_][A-Za-z0-9_]{0,62}:)?[A-Za-z0-9_-]{1,128}$";
/// A function's, process's or flow's name (`ids::check_name`).
const NAME: &str = "^[A-Za-z0-9_-]{1,64}$";

/// What the server takes in a path parameter, where it has a rule.
fn path_pattern(path: &str, method: &str, name: &str) -> Option<&'static str> {
    match name {
        "table" => Some(TABLE),
        // `POST /svc/{target}` creates in a table; the other methods name a record.
        "target" if method == "post" => Some(TABLE),
        "target" => Some(RECORD_ID),
        "id" if path.starts_with("/svc/file/") => Some(RECORD_ID),
        "id" | "gid" | "uid" => Some(ID_OR_KEY),
        "name" if !path.starts_with("/svc/file/") => Some(NAME),
        "version" => Some("^[0-9]{1,9}$"),
        _ => None,
    }
}

/// The `{name}` segments of a route template.
fn path_parameters(path: &str) -> Vec<String> {
    path.split('/')
        .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openapi_conventions_mark_credentials_parameters_and_errors() {
        let mut doc = json!({"paths": {
            "/svc/{table}/all": {"get": {"operationId": "list", "responses": {
                "200": {"description": "ok"}, "409": {"description": "taken"}}}},
            "/auth/login": {"post": {"operationId": "login", "security": [{}],
                "requestBody": {"content": {}}, "responses": {}}},
            "/svc/auth/login": {"post": {"operationId": "login", "security": [{}],
                "responses": {}}}
        }});
        apply_conventions(&mut doc);
        let list = &doc["paths"]["/svc/{table}/all"]["get"];
        assert_eq!(list["parameters"][0]["name"], "table");
        assert_eq!(list["parameters"][1]["name"], "Domain");
        assert!(list["responses"]["404"]["content"][TEXT_PLAIN].is_object());
        assert!(list["responses"]["409"]["content"][TEXT_PLAIN].is_object());
        assert!(list["responses"]["401"].is_object());
        assert_eq!(
            list["responses"]["200"]["headers"]["App-CorrelationID"]["required"],
            true
        );
        let login = &doc["paths"]["/auth/login"]["post"];
        assert_eq!(login["security"], json!([{}]));
        assert!(login["responses"]["401"].is_null());
        assert!(login["responses"]["413"].is_object());
        assert_eq!(
            doc["paths"]["/svc/auth/login"]["post"]["operationId"],
            "login_2"
        );
    }
}

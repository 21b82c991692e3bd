//! Code uploads: `POST /svc/code/:name` takes one file (`.js` script, `.mjs` ES module, `.ts`
//! TypeScript script or module, `.mts` TypeScript module, or a `.zip` bundle whose
//! `manifest.json` names the entry module) and makes it the function's
//! next version, creating the function on its first upload. Every version stays readable
//! (`GET /svc/code/:name/versions[/:version]`) and can be restored as a new version
//! (`POST /svc/code/:name/restore/:version`).

use crate::functions::{
    typescript, validate_name, CodeVersion, JAVASCRIPT, MAX_CODE_BYTES, PROCESSES, PYTHON,
    TYPESCRIPT,
};
use crate::ids::{new_key, TableRef};
use crate::server::error::{ApiError, ApiResult};
use crate::server::http::caller::{Access, Caller};
use crate::server::routes::files::multipart_error;
use crate::server::services::checked_writes::{insert_checked, update_checked};
use crate::server::services::system_tables::{record_by_name, record_key, PROCESSES_TABLE};
use crate::server::AppState;
use axum::extract::{FromRequest, Multipart, Path, Request, State};
use axum::http::StatusCode;
use axum::Json;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::io::Read;
use utoipa_axum::{router::OpenApiRouter, routes};

/// Files a bundle may hold.
const MAX_BUNDLE_FILES: usize = 200;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(upload))
        .routes(routes!(versions))
        .routes(routes!(version))
        .routes(routes!(restore))
}

/// The code of an upload, ready to store.
#[derive(Debug, PartialEq)]
struct Code {
    code: String,
    modules: BTreeMap<String, String>,
    module: bool,
    language: &'static str,
}

#[utoipa::path(post, path = "/svc/code/{name}", tag = "processes",
    request_body(content = Vec<u8>, content_type = "multipart/form-data", description = "Exactly one code file"),
    responses((status = 201, description = "The code is stored as a new version", body = Object)))]
async fn upload(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    request: Request,
) -> ApiResult<(StatusCode, Json<Value>)> {
    caller
        .require(&state, PROCESSES, "*", Access::Write)
        .await?;
    validate_name(&name).map_err(ApiError::bad_request)?;
    let (file_name, bytes) = single_file(&state, request).await?;
    if bytes.len() > MAX_CODE_BYTES {
        return Err(too_large());
    }
    let code = code_of(&file_name, &bytes)?;
    save_code(&state, &caller, &name, code).await
}

fn too_large() -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("the code is larger than the {MAX_CODE_BYTES}-byte limit"),
    )
}

/// The one file part of a multipart body.
async fn single_file(state: &AppState, request: Request) -> ApiResult<(String, bytes::Bytes)> {
    let mut multipart = Multipart::from_request(request, state).await.map_err(|e| {
        ApiError::bad_request(format!(
            "send the code as a multipart file: {}",
            e.body_text()
        ))
    })?;
    let mut file = None;
    while let Some(part) = multipart.next_field().await.map_err(multipart_error)? {
        let Some(file_name) = part.file_name().map(str::to_string) else {
            return Err(ApiError::bad_request(
                "every part must be a file; send exactly one code file",
            ));
        };
        if file.is_some() {
            return Err(ApiError::bad_request("send exactly one code file"));
        }
        let bytes = part.bytes().await.map_err(multipart_error)?;
        file = Some((file_name, bytes));
    }
    file.ok_or_else(|| ApiError::bad_request("the multipart body holds no file"))
}

fn unprocessable(message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, message)
}

/// Reads an uploaded file by its type.
fn code_of(file_name: &str, bytes: &[u8]) -> ApiResult<Code> {
    let extension = file_name
        .rsplit_once('.')
        .map(|(_, ext)| ext.to_ascii_lowercase())
        .unwrap_or_default();
    let text = || {
        String::from_utf8(bytes.to_vec())
            .map_err(|_| unprocessable(format!("`{file_name}` is not UTF-8 text")))
    };
    match extension.as_str() {
        "js" | "cjs" => Ok(Code {
            code: text()?,
            modules: BTreeMap::new(),
            module: false,
            language: JAVASCRIPT,
        }),
        "mjs" => Ok(Code {
            code: text()?,
            modules: BTreeMap::new(),
            module: true,
            language: JAVASCRIPT,
        }),
        "ts" | "mts" => {
            let code = text()?;
            Ok(Code {
                module: extension == "mts" || typescript::is_module(&code),
                code,
                modules: BTreeMap::new(),
                language: TYPESCRIPT,
            })
        }
        "zip" => bundle(bytes),
        "py" => Ok(Code {
            code: text()?,
            modules: BTreeMap::new(),
            module: false,
            language: PYTHON,
        }),
        _ => Err(unprocessable(format!(
            "`{file_name}` is not a function: upload a .js, .mjs, .ts, .mts or .py file or a .zip bundle"
        ))),
    }
}

#[derive(Deserialize)]
struct Manifest {
    main: String,
}

/// A `.zip` bundle: `manifest.json` `{"main": "index.mjs"}` plus the entry and the modules it
/// imports (`.js`/`.mjs` files, all ES modules; with a `.ts`/`.mts` entry a TypeScript bundle
/// whose `.ts` files are modules too).
fn bundle(bytes: &[u8]) -> ApiResult<Code> {
    let bad = |why: String| unprocessable(format!("invalid bundle: {why}"));
    let mut archive =
        zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|e| bad(e.to_string()))?;
    if archive.len() > MAX_BUNDLE_FILES {
        return Err(bad(format!("more than {MAX_BUNDLE_FILES} files")));
    }
    let mut files = BTreeMap::new();
    let mut total = 0usize;
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(|e| bad(e.to_string()))?;
        if entry.is_dir() {
            continue;
        }
        let name = entry
            .name()
            .map_err(|e| bad(e.to_string()))?
            .trim_start_matches("./")
            .to_string();
        let mut text = String::new();
        // Read at most what is left of the budget, so a zip bomb stops at the limit.
        let budget = (MAX_CODE_BYTES - total + 1) as u64;
        (&mut entry)
            .take(budget)
            .read_to_string(&mut text)
            .map_err(|_| bad(format!("`{name}` is not UTF-8 text")))?;
        total += text.len();
        if total > MAX_CODE_BYTES {
            return Err(too_large());
        }
        files.insert(name, text);
    }
    let manifest = files
        .remove("manifest.json")
        .ok_or_else(|| bad("no manifest.json".into()))?;
    let manifest: Manifest =
        serde_json::from_str(&manifest).map_err(|e| bad(format!("manifest.json: {e}")))?;
    let code = files.remove(&manifest.main).ok_or_else(|| {
        bad(format!(
            "the entry `{}` is not in the bundle",
            manifest.main
        ))
    })?;
    let typescript = manifest.main.ends_with(".ts") || manifest.main.ends_with(".mts");
    let modules: BTreeMap<String, String> = files
        .into_iter()
        .filter(|(name, _)| {
            name.ends_with(".js") || name.ends_with(".mjs") || (typescript && name.ends_with(".ts"))
        })
        .collect();
    Ok(Code {
        code,
        modules,
        module: true,
        language: if typescript { TYPESCRIPT } else { JAVASCRIPT },
    })
}

/// Makes `code` the function's current version in the caller's domain (creating the
/// function when it is new).
async fn save_code(
    state: &AppState,
    caller: &Caller,
    name: &str,
    code: Code,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let domain = caller.domain.as_str();
    let table = TableRef::new(domain, PROCESSES).map_err(ApiError::bad_request)?;
    let mut fields = Map::new();
    fields.insert("code".into(), Value::String(code.code));
    fields.insert(
        "modules".into(),
        serde_json::to_value(code.modules).map_err(|e| ApiError::internal(e.to_string()))?,
    );
    fields.insert("module".into(), Value::Bool(code.module));
    fields.insert("language".into(), Value::String(code.language.into()));
    let existing = record_by_name(state, PROCESSES_TABLE, domain, name).await?;
    let code_error = |e: ApiError| {
        if e.status == StatusCode::BAD_REQUEST {
            unprocessable(e.message)
        } else {
            e
        }
    };
    match existing {
        Some(record) => {
            let key = record_key(&record)?;
            let updated = update_checked(state, &table, &key, fields)
                .await
                .map_err(code_error)?
                .ok_or_else(|| ApiError::not_found(format!("no function `{name}`")))?;
            Ok((StatusCode::OK, Json(updated)))
        }
        None => {
            fields.insert("name".into(), Value::String(name.to_string()));
            PROCESSES_TABLE
                .prepare_new(state, domain, &caller.user.id(), &mut fields)
                .await
                .map_err(code_error)?;
            let record = insert_checked(state, &table, new_key(), fields).await?;
            Ok((StatusCode::CREATED, Json(record)))
        }
    }
}

async fn stored_versions(
    state: &AppState,
    caller: &Caller,
    name: &str,
) -> ApiResult<Vec<CodeVersion>> {
    caller.require(state, PROCESSES, "*", Access::Read).await?;
    let (domain, name_owned) = (caller.domain.clone(), name.to_string());
    let versions = state
        .store
        .run(move |s| s.code_versions(&domain, &name_owned))
        .await?;
    if versions.is_empty() {
        return Err(ApiError::not_found(format!("no function `{name}`")));
    }
    Ok(versions)
}

#[utoipa::path(get, path = "/svc/code/{name}/versions", tag = "processes",
    responses((status = 200, description = "The stored versions of the code", body = Vec<Object>)))]
async fn versions(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<Json<Vec<CodeVersion>>> {
    Ok(Json(stored_versions(&state, &caller, &name).await?))
}

async fn pick(
    state: &AppState,
    caller: &Caller,
    name: &str,
    version: &str,
) -> ApiResult<CodeVersion> {
    let wanted: u64 = version
        .parse()
        .map_err(|_| ApiError::bad_request(format!("version `{version}` is not a number")))?;
    stored_versions(state, caller, name)
        .await?
        .into_iter()
        .find(|v| v.version == wanted)
        .ok_or_else(|| ApiError::not_found(format!("function `{name}` has no version {wanted}")))
}

#[utoipa::path(get, path = "/svc/code/{name}/versions/{version}", tag = "processes",
    responses((status = 200, description = "One stored version", body = Object)))]
async fn version(
    State(state): State<AppState>,
    caller: Caller,
    Path((name, version)): Path<(String, String)>,
) -> ApiResult<Json<CodeVersion>> {
    Ok(Json(pick(&state, &caller, &name, &version).await?))
}

/// Makes an old version's code current again, as a new version.
#[utoipa::path(post, path = "/svc/code/{name}/restore/{version}", tag = "processes",
    responses((status = 201, description = "The version is stored again as the newest", body = Object)))]
async fn restore(
    State(state): State<AppState>,
    caller: Caller,
    Path((name, version)): Path<(String, String)>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    caller
        .require(&state, PROCESSES, "*", Access::Write)
        .await?;
    let old = pick(&state, &caller, &name, &version).await?;
    if record_by_name(&state, PROCESSES_TABLE, &caller.domain, &name)
        .await?
        .is_none()
    {
        return Err(ApiError::not_found(format!("no function `{name}`")));
    }
    let code = Code {
        language: if old.language == TYPESCRIPT {
            TYPESCRIPT
        } else {
            JAVASCRIPT
        },
        code: old.code,
        modules: old.modules,
        module: old.module,
    };
    let (_, record) = save_code(&state, &caller, &name, code).await?;
    Ok((StatusCode::OK, record))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn zip_of(files: &[(&str, &str)]) -> Vec<u8> {
        let mut out = std::io::Cursor::new(Vec::new());
        let mut writer = zip::ZipWriter::new(&mut out);
        for (name, text) in files {
            writer
                .start_file(*name, zip::write::SimpleFileOptions::default())
                .unwrap();
            writer.write_all(text.as_bytes()).unwrap();
        }
        writer.finish().unwrap();
        out.into_inner()
    }

    #[test]
    fn file_types() {
        let js = code_of("f.js", b"1").unwrap();
        assert!(!js.module && js.code == "1");
        assert!(code_of("F.MJS", b"export default 1").unwrap().module);
        let ts = code_of("f.ts", b"const a: number = 1; a").unwrap();
        assert_eq!((ts.language, ts.module), (TYPESCRIPT, false));
        let ts_module = code_of("f.ts", b"export default (x: number) => x").unwrap();
        assert_eq!((ts_module.language, ts_module.module), (TYPESCRIPT, true));
        assert!(code_of("f.mts", b"1").unwrap().module);
        assert_eq!(code_of("f.py", b"1").unwrap().language, PYTHON);
        for bad in ["f.txt", "f", "f.exe"] {
            let err = code_of(bad, b"x").unwrap_err();
            assert_eq!(err.status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}");
        }
        assert_eq!(
            code_of("f.js", &[0xff, 0xfe]).unwrap_err().status,
            StatusCode::UNPROCESSABLE_ENTITY
        );
    }

    #[test]
    fn bundles() {
        let zip = zip_of(&[
            ("manifest.json", r#"{"main":"index.mjs"}"#),
            (
                "index.mjs",
                "import {k} from 'lib.js'; export default () => k;",
            ),
            ("lib.js", "export const k = 2;"),
            ("README.md", "ignored"),
        ]);
        let code = code_of("b.zip", &zip).unwrap();
        assert!(code.module && code.code.starts_with("import"));
        assert_eq!(code.modules.keys().collect::<Vec<_>>(), ["lib.js"]);
        for bad in [
            zip_of(&[("index.mjs", "x")]),
            zip_of(&[("manifest.json", r#"{"main":"nope.mjs"}"#)]),
            zip_of(&[("manifest.json", "{")]),
            b"not a zip".to_vec(),
        ] {
            assert_eq!(
                code_of("b.zip", &bad).unwrap_err().status,
                StatusCode::UNPROCESSABLE_ENTITY
            );
        }
        let bomb = "x".repeat(MAX_CODE_BYTES + 10);
        let zip = zip_of(&[("manifest.json", r#"{"main":"a.mjs"}"#), ("a.mjs", &bomb)]);
        assert_eq!(
            code_of("b.zip", &zip).unwrap_err().status,
            StatusCode::PAYLOAD_TOO_LARGE
        );
    }
}

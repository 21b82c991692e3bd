//! Code uploads (issue 6): `POST /svc/code/:name` with one `.js`, `.mjs` or `.zip` file
//! creates a function or its next version; other types are 422, oversize files 413; every
//! version stays readable and an old one can be restored as a new version.

use crate::common::*;
use reqwest::blocking::multipart::{Form, Part};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::io::Write;

const ADMIN: &str = "domains:svc_admin";

fn upload(
    server: &Server,
    name: &str,
    file_name: &str,
    bytes: Vec<u8>,
) -> reqwest::blocking::Response {
    let form = Form::new().part("file", Part::bytes(bytes).file_name(file_name.to_string()));
    server
        .admin_in(ADMIN, Method::POST, &format!("/svc/code/{name}"))
        .multipart(form)
        .send()
        .unwrap()
}

fn run(server: &Server, name: &str, input: Value) -> Value {
    let resp = server
        .admin_in(ADMIN, Method::POST, "/svc/processes/execute")
        .json(&json!({"name": name, "input": input}))
        .send()
        .unwrap();
    json_ok(resp, StatusCode::OK)["output"].clone()
}

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
fn each_accepted_type_runs_and_versions_can_be_restored() {
    let server = Server::start();
    let created = json_ok(
        upload(
            &server,
            "scale",
            "scale.js",
            b"function main(i) { return i * 10; }".to_vec(),
        ),
        StatusCode::CREATED,
    );
    assert_eq!(
        (created["name"].clone(), created["version"].clone()),
        (json!("scale"), json!(1))
    );
    assert_eq!(run(&server, "scale", json!(4)), json!(40));

    let updated = json_ok(
        upload(
            &server,
            "scale",
            "scale.mjs",
            b"export default function (i) { return i * 100; }".to_vec(),
        ),
        StatusCode::OK,
    );
    assert_eq!(updated["version"], json!(2));
    assert_eq!(updated["module"], json!(true));
    assert_eq!(run(&server, "scale", json!(4)), json!(400));

    let bundle = zip_of(&[
        ("manifest.json", r#"{"main": "index.mjs"}"#),
        ("index.mjs", "import { factor } from 'lib/factor.js';\nexport default function (i) { return i * factor; }"),
        ("lib/factor.js", "export const factor = 1000;"),
    ]);
    let bundled = json_ok(
        upload(&server, "scale", "scale.zip", bundle),
        StatusCode::OK,
    );
    assert_eq!(bundled["version"], json!(3));
    assert_eq!(run(&server, "scale", json!(4)), json!(4000));

    let versions = server.get_json(ADMIN, "/svc/code/scale/versions");
    let numbers: Vec<u64> = versions
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_u64().unwrap())
        .collect();
    assert_eq!(numbers, [1, 2, 3]);
    let first = server.get_json(ADMIN, "/svc/code/scale/versions/1");
    assert_eq!(first["code"], json!("function main(i) { return i * 10; }"));

    let resp = server
        .admin_in(ADMIN, Method::POST, "/svc/code/scale/restore/1")
        .send()
        .unwrap();
    let restored = json_ok(resp, StatusCode::OK);
    assert_eq!(restored["version"], json!(4), "{restored}");
    assert_eq!(restored["module"], json!(false));
    assert_eq!(run(&server, "scale", json!(4)), json!(40));
    assert_eq!(
        server
            .get_json(ADMIN, "/svc/code/scale/versions")
            .as_array()
            .unwrap()
            .len(),
        4
    );
    for (path, status) in [
        ("/svc/code/scale/versions/99", StatusCode::NOT_FOUND),
        ("/svc/code/scale/versions/one", StatusCode::BAD_REQUEST),
        ("/svc/code/nothing/versions", StatusCode::NOT_FOUND),
    ] {
        let resp = server.admin_in(ADMIN, Method::GET, path).send().unwrap();
        assert_error(resp, status, &[]);
    }
}

#[test]
fn wrong_types_oversize_files_and_bad_bodies_are_refused_and_change_nothing() {
    let server = Server::start();
    json_ok(
        upload(
            &server,
            "f",
            "f.js",
            b"function main() { return 'v1'; }".to_vec(),
        ),
        StatusCode::CREATED,
    );
    for (file_name, bytes, needle) in [
        ("f.txt", b"hello".to_vec(), ".js"),
        ("f.py", b"def (:\n".to_vec(), "line 1"),
        ("f.exe", vec![0x4d, 0x5a, 0, 0], ".js"),
        ("f.js", vec![0xff, 0xfe, 0x00], "UTF-8"),
        ("f.zip", b"not a zip".to_vec(), "bundle"),
        (
            "f.zip",
            zip_of(&[("index.mjs", "export default 1")]),
            "manifest",
        ),
        ("f.js", b"function (".to_vec(), "compile"),
    ] {
        assert_error(
            upload(&server, "f", file_name, bytes),
            StatusCode::UNPROCESSABLE_ENTITY,
            &[needle],
        );
    }
    let big = format!(
        "// {}\nfunction main() {{ return 1; }}",
        "x".repeat(1 << 20)
    );
    assert_error(
        upload(&server, "f", "f.js", big.into_bytes()),
        StatusCode::PAYLOAD_TOO_LARGE,
        &[],
    );
    assert_error(
        upload(&server, "bad name!", "f.js", b"1".to_vec()),
        StatusCode::BAD_REQUEST,
        &[],
    );
    let two = Form::new()
        .part("a", Part::bytes(b"1".to_vec()).file_name("a.js"))
        .part("b", Part::bytes(b"2".to_vec()).file_name("b.js"));
    let resp = server
        .admin_in(ADMIN, Method::POST, "/svc/code/f")
        .multipart(two)
        .send()
        .unwrap();
    assert_error(resp, StatusCode::BAD_REQUEST, &["one"]);
    let resp = server
        .admin_in(ADMIN, Method::POST, "/svc/code/f")
        .json(&json!({"code": "1"}))
        .send()
        .unwrap();
    assert_error(resp, StatusCode::BAD_REQUEST, &["multipart"]);
    assert_eq!(run(&server, "f", Value::Null), json!("v1"));
    let versions = server.get_json(ADMIN, "/svc/code/f/versions");
    assert_eq!(versions.as_array().unwrap().len(), 1, "{versions}");
}

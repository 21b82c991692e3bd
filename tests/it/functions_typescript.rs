//! TypeScript functions (issue 15): a function whose `language` is `typescript` keeps its
//! TypeScript source and runs its JavaScript in the QuickJS sandbox. A tag-change function
//! written with interfaces, an enum and typed parameters converts a tag that an MQTT
//! subscriber receives and the historian records; a syntax error is refused with its line and
//! column; `.ts` and `.mts` uploads and a TypeScript bundle run; `svc functions deploy x.ts`.

use crate::cli_support::{acme, Cli};
use crate::common::*;
use reqwest::blocking::multipart::{Form, Part};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::io::Write;

const ADMIN: &str = "domains:svc_admin";

const CONVERTER: &str = r#"
enum Scale { Celsius = "C", Fahrenheit = "F" }
interface Reading { value: number; unit?: Scale }

function toFahrenheit(c: number): number {
  return c * 9 / 5 + 32;
}

function main(input: number | Reading): number {
  const c: number = typeof input === "number" ? input : input.value;
  const f = toFahrenheit(c);
  svc.tag.write("plant/boiler/temp_f", f);
  console.log(`converted to ${Scale.Fahrenheit}`, c, f);
  return f;
}
"#;

fn post_function(server: &Server, body: &Value) -> reqwest::blocking::Response {
    server
        .admin_in(ADMIN, Method::POST, "/svc/processes")
        .json(body)
        .send()
        .expect("POST /svc/processes")
}

fn upload(server: &Server, name: &str, file_name: &str, bytes: Vec<u8>) -> Value {
    let form = Form::new().part("file", Part::bytes(bytes).file_name(file_name.to_string()));
    let resp = server
        .admin_in(ADMIN, Method::POST, &format!("/svc/code/{name}"))
        .multipart(form)
        .send()
        .expect("POST /svc/code");
    json_ok(resp, StatusCode::CREATED)
}

fn run(server: &Server, name: &str, input: Value) -> Value {
    let resp = server
        .admin_in(ADMIN, Method::POST, "/svc/processes/execute")
        .json(&json!({"name": name, "input": input}))
        .send()
        .expect("POST /svc/processes/execute");
    json_ok(resp, StatusCode::OK)["output"].clone()
}

#[test]
fn a_typescript_tag_change_function_converts_a_tag_for_subscribers_and_the_historian() {
    let server = Server::start();
    server.create_tag(ADMIN, "plant/boiler/temp_c", false);
    server.create_tag(ADMIN, "plant/boiler/temp_f", true);
    let created = json_ok(
        post_function(
            &server,
            &json!({"name": "c_to_f", "language": "typescript", "code": CONVERTER,
                "triggers": [{"type": "tag_change", "topic": "plant/+/temp_c"}]}),
        ),
        StatusCode::CREATED,
    );
    assert_eq!(created["language"], "typescript");
    assert_eq!(
        created["code"], CONVERTER,
        "the TypeScript source is what is kept"
    );

    let mut sub = server.mqtt_admin(Proto::V5, Via::Tcp, "fahrenheit-watcher");
    sub.subscribe("plant/boiler/temp_f", 1);
    let mut device = server.mqtt_admin(Proto::V3, Via::Tcp, "boiler");
    for c in ["100", "0", "-40"] {
        assert_eq!(
            device.publish("plant/boiler/temp_c", c, 1, false),
            "Success"
        );
    }
    let received: Vec<String> = (0..3)
        .map(|_| sub.expect_publish("plant/boiler/temp_f").text())
        .collect();
    assert_eq!(received, ["212", "32", "-40"]);
    let history = server.history(ADMIN, "plant/boiler/temp_f", 3);
    let values: Vec<f64> = history
        .as_array()
        .expect("points")
        .iter()
        .filter_map(|p| p["value"].as_f64())
        .collect();
    assert_eq!(values, [-40.0, 32.0, 212.0], "newest first");
    assert_eq!(run(&server, "c_to_f", json!({"value": 25})), json!(77));
}

#[test]
fn typescript_errors_are_refused_with_their_line_and_column() {
    let server = Server::start();
    let resp = post_function(
        &server,
        &json!({"name": "broken", "language": "typescript",
            "code": "function main(x: number): number {\n  const y: = x;\n  return y;\n}"}),
    );
    assert_error(resp, StatusCode::BAD_REQUEST, &["line 2, column 12"]);
    let resp = post_function(
        &server,
        &json!({"name": "other", "language": "cobol", "code": "1"}),
    );
    assert_error(resp, StatusCode::BAD_REQUEST, &["cobol", "typescript"]);
    // Nothing was stored.
    let resp = server
        .admin_in(ADMIN, Method::POST, "/svc/processes/execute")
        .json(&json!({"name": "broken", "input": 1}))
        .send()
        .expect("execute");
    assert_eq!(resp.status(), StatusCode::NOT_FOUND);
}

#[test]
fn ts_and_mts_uploads_and_a_typescript_bundle_run() {
    let server = Server::start();
    let script = upload(
        &server,
        "double",
        "double.ts",
        b"const k: number = 2;\nfunction main(input: {x: number}) { return {y: input.x * k}; }"
            .to_vec(),
    );
    assert_eq!(
        (script["language"].as_str(), script["module"].as_bool()),
        (Some("typescript"), Some(false))
    );
    assert_eq!(run(&server, "double", json!({"x": 21})), json!({"y": 42}));
    upload(
        &server,
        "triple",
        "triple.mts",
        b"export default (input: {x: number}): {y: number} => ({y: input.x * 3});".to_vec(),
    );
    assert_eq!(run(&server, "triple", json!({"x": 5})), json!({"y": 15}));

    let mut zip = std::io::Cursor::new(Vec::new());
    {
        let mut writer = zip::ZipWriter::new(&mut zip);
        let options = zip::write::SimpleFileOptions::default();
        for (name, text) in [
            ("manifest.json", r#"{"main": "index.ts"}"#),
            (
                "index.ts",
                "import { scale } from './lib/scale';\nexport default (x: number) => scale(x);",
            ),
            (
                "lib/scale.ts",
                "export function scale(x: number): number { return x * 10; }",
            ),
        ] {
            writer.start_file(name, options).expect("zip entry");
            writer.write_all(text.as_bytes()).expect("zip write");
        }
        writer.finish().expect("zip");
    }
    let bundle = upload(&server, "bundle", "bundle.zip", zip.into_inner());
    assert_eq!(bundle["language"], "typescript", "{bundle}");
    assert_eq!(run(&server, "bundle", json!(4)), json!(40));
}

#[test]
fn svc_functions_deploys_a_typescript_file() {
    let (_server, cli) = acme();
    let file = cli.home().join("scale.ts");
    std::fs::write(
        &file,
        "type In = { x: number };\nfunction main(input: In): { y: number } { return { y: input.x * 4 }; }",
    )
    .expect("write scale.ts");
    let record = deploy(&cli, &file.display().to_string());
    assert_eq!(record["language"], "typescript", "{record}");
    let resp = cli.json(&["functions", "run", "scale", "--input", r#"{"x":3}"#]);
    assert_eq!(resp["output"], json!({"y": 12}), "{resp}");
}

fn deploy(cli: &Cli, file: &str) -> Value {
    cli.json(&["functions", "deploy", file, "--trigger", "http"])
}

//! Processes in the SDK's shape (issue 15): a TypeScript and a Python process created with named `tag` and
//! `sql` inputs, two `tag_write` outputs (one field, the whole output), two `sql` outputs (an
//! INSERT and an UPDATE, made record writes), a `config` from `keys`/`values` and an
//! SDK-shaped `tag_change` trigger; a tag change makes it write exactly the expected tags for
//! an MQTT subscriber and the historian and the expected records. `GET /svc/processes/domain` answers in the SDK's
//! shape; `PUT /svc/processes/triggers/:id` takes SDK triggers (an interval that then fires)
//! and answers the process; `log_enabled: false` logs only failures; malformed SDK fields are
//! refused with 400 naming them. The SDK's own sequence `getProcesses()` → `changeTriggers(
//! process.id, …)` works as the SDK sends it: ids as RecordID objects `{Table, ID}` in, the
//! path `processes/triggers/<Table>:<ID>` out (issue 32).

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::time::Duration;

const ACME: &str = "domains:acme";

const MONITOR: &str = r#"
interface Counts { n: number }

function main(speed: number): { alarm: boolean; site: string; orders: number } {
  const limit = inputs.limit as number;
  const counts = inputs.counts as Counts[];
  return { alarm: speed > limit, site: config.site as string, orders: counts[0].n };
}
"#;

fn post_process(server: &Server, body: &Value) -> reqwest::blocking::Response {
    server
        .admin_in(ACME, Method::POST, "/svc/processes")
        .json(body)
        .send()
        .expect("POST /svc/processes")
}

/// The same monitor in Python: `inputs` and `config` are read-only mappings.
const MONITOR_PY: &str = r#"
def main(speed):
    counts = inputs["counts"]
    return {"alarm": speed > inputs["limit"], "site": config["site"], "orders": counts[0]["n"]}
"#;

fn monitor_body() -> Value {
    monitor_in("typescript")
}

fn monitor_in(language: &str) -> Value {
    let code = if language == "python" {
        MONITOR_PY
    } else {
        MONITOR
    };
    json!({
        "name": "monitor", "enabled": true, "log_enabled": true, "language": language,
        "code": code, "version": 1,
        "triggers": [{"type": "tag_change", "config": {"tag": "plant/line1/speed"}}],
        "inputs": [
            {"name": "limit", "type": "tag", "config": {"tag": "plant/line1/limit"}},
            {"name": "counts", "type": "sql",
             "config": {"query": "SELECT count(*) AS n FROM orders"}}
        ],
        "outputs": [
            {"type": "tag_write", "config": {"tag": "plant/line1/alarm", "field": "alarm"}},
            {"type": "tag_write", "config": {"tag": "plant/line1/summary"}},
            {"type": "sql", "config": {"query":
                "INSERT INTO alarm_log (site, orders, source) VALUES (:site, :orders, 'monitor')"}},
            {"type": "sql", "config": {"query": "UPDATE orders SET qty = :orders WHERE id = 'o1'"}}
        ],
        "keys": [{"key": "site"}],
        "values": [{"value": "plant1"}]
    })
}

fn setup() -> Server {
    let server = Server::start();
    server.create_domain("acme");
    for tag in [
        "plant/line1/speed",
        "plant/line1/limit",
        "plant/line1/summary",
    ] {
        server.create_tag(ACME, tag, false);
    }
    server.create_tag(ACME, "plant/line1/alarm", true);
    for id in ["o1", "o2"] {
        server.create_record(ACME, "orders", &json!({"id": id, "qty": 1}));
    }
    server
}

#[test]
fn a_typescript_sdk_process_resolves_its_inputs_and_writes_its_outputs() {
    resolves_inputs_and_writes_outputs("typescript");
}

#[test]
fn a_python_sdk_process_resolves_its_inputs_and_writes_its_outputs() {
    resolves_inputs_and_writes_outputs("python");
}

fn resolves_inputs_and_writes_outputs(language: &str) {
    let server = setup();
    let body = monitor_in(language);
    let created = json_ok(post_process(&server, &body), StatusCode::CREATED);
    let id = created["id"].as_str().expect("id").to_string();

    let mut watcher = server.mqtt_admin(Proto::V5, Via::Tcp, "watcher");
    watcher.subscribe("plant/line1/+", 1);
    let mut device = server.mqtt_admin(Proto::V5, Via::Tcp, "line1");
    device.publish("plant/line1/limit", "50", 1, true);
    assert_eq!(watcher.expect_publish("plant/line1/limit").text(), "50");
    device.publish("plant/line1/speed", "70", 1, false);
    assert_eq!(watcher.expect_publish("plant/line1/speed").text(), "70");
    let alarm = watcher.expect_publish("plant/line1/alarm");
    assert_eq!(alarm.text(), "true");
    let summary: Value =
        serde_json::from_str(&watcher.expect_publish("plant/line1/summary").text())
            .expect("JSON summary");
    assert_eq!(
        summary,
        json!({"alarm": true, "site": "plant1", "orders": 2})
    );
    // The historized alarm tag was recorded by the historian.
    let history = server.history(ACME, "plant/line1/alarm", 1);
    assert_eq!(history[0]["value"], json!(true), "{history}");
    // The sql outputs became record writes in the process's domain.
    let alarms = server.poll(Duration::from_secs(10), "an alarm record", || {
        let list = server.get_json(ACME, "/svc/alarm_log/all");
        (list.as_array()?.len() == 1).then_some(list)
    });
    assert_eq!(alarms[0]["site"], "plant1", "{alarms}");
    assert_eq!(alarms[0]["orders"], 2, "{alarms}");
    assert_eq!(alarms[0]["source"], "monitor", "{alarms}");
    // The outputs run in order, each committed on its own: the update follows the insert.
    let order = server.poll(Duration::from_secs(10), "the order's update", || {
        let order = server.get_json(ACME, &format!("/svc/{}", enc("acme.orders:o1")));
        (order["qty"] != json!(1)).then_some(order)
    });
    assert_eq!(order["qty"], 2, "{order}");

    // The SDK reads the process back in its own shape.
    let listed = server.get_json(ACME, "/svc/processes/domain");
    let process = &listed[0];
    assert_eq!(process["name"], "monitor", "{listed}");
    assert_eq!(
        process["triggers"],
        json!([{"type": "tag_change", "config": {"tag": "plant/line1/speed"}}])
    );
    assert_eq!(process["inputs"], body["inputs"]);
    assert_eq!(process["outputs"], body["outputs"]);
    assert_eq!(process["keys"], json!([{"key": "site"}]));
    assert_eq!(process["values"], json!([{"value": "plant1"}]));
    assert_eq!(process["log_enabled"], true);
    assert_eq!(process["language"], language);

    // SDK triggers in, the process out; the interval then fires.
    let resp = server
        .admin_in(
            ACME,
            Method::PUT,
            &format!("/svc/processes/triggers/{}", enc(&id)),
        )
        .json(&json!({"triggers": [
            {"type": "interval", "config": {"interval_value": 200, "interval_unit": "ms"}}
        ]}))
        .send()
        .expect("PUT triggers");
    let updated = json_ok(resp, StatusCode::OK);
    assert_eq!(
        updated["triggers"],
        json!([{"type": "interval", "config": {"interval_value": 200, "interval_unit": "ms"}}])
    );
    assert_eq!(updated["inputs"], body["inputs"], "{updated}");
    server.poll(Duration::from_secs(10), "an interval run", || {
        let runs = server.get_json(ACME, "/svc/processes/runs/monitor");
        runs.as_array()?
            .iter()
            .any(|r| r["trigger"] == "interval")
            .then_some(())
    });
}

#[test]
fn log_enabled_false_logs_only_failures() {
    let server = setup();
    json_ok(
        post_process(
            &server,
            &json!({"name": "quiet", "language": "typescript", "log_enabled": false,
                "code": "function main(x: number): number { if (x < 0) throw new Error('negative'); return x * 2; }",
                "triggers": [{"type": "manual", "config": {}}]}),
        ),
        StatusCode::CREATED,
    );
    let execute = |input: Value| {
        server
            .admin_in(ACME, Method::POST, "/svc/processes/execute")
            .json(&json!({"name": "quiet", "input": input}))
            .send()
            .expect("execute")
    };
    assert_eq!(json_ok(execute(json!(4)), StatusCode::OK)["output"], 8);
    assert_error(
        execute(json!(-1)),
        StatusCode::UNPROCESSABLE_ENTITY,
        &["negative"],
    );
    let runs = server.get_json(ACME, "/svc/processes/runs/quiet");
    let runs = runs.as_array().expect("runs");
    assert_eq!(runs.len(), 1, "only the failure is logged: {runs:?}");
    assert_eq!(runs[0]["success"], false);
}

#[test]
fn malformed_sdk_fields_are_refused_naming_them() {
    let server = setup();
    let with = |patch: Value| {
        let mut body = monitor_body();
        for (k, v) in patch.as_object().expect("object") {
            body[k] = v.clone();
        }
        body
    };
    let cases = [
        (
            json!({"inputs": [{"name": "x", "type": "file", "config": {}}]}),
            "file",
        ),
        (
            json!({"inputs": [{"name": "x", "type": "tag", "config": {}}]}),
            "inputs[0].config.tag",
        ),
        (
            json!({"inputs": [{"name": "x", "type": "sql", "config": {"query": "DELETE FROM orders"}}]}),
            "inputs[0].config.query",
        ),
        (
            json!({"inputs": [{"name": "a b", "type": "tag", "config": {"tag": "t"}}]}),
            "inputs[0].name",
        ),
        (
            json!({"outputs": [{"type": "sql", "config": {"query": "DELETE FROM orders WHERE id = :id"}}]}),
            "outputs[0].config.query",
        ),
        (
            json!({"outputs": [{"type": "sql", "config": {"query": "INSERT INTO beta.secrets (code) VALUES (:c)"}}]}),
            "own domain",
        ),
        (json!({"keys": [{"key": "a"}], "values": []}), "parallel"),
        (
            json!({"triggers": [{"type": "interval", "config": {"interval_unit": "s"}}]}),
            "interval_value",
        ),
        (
            json!({"triggers": [{"type": "sometimes", "config": {}}]}),
            "sometimes",
        ),
    ];
    for (patch, needle) in cases {
        assert_error(
            post_process(&server, &with(patch.clone())),
            StatusCode::BAD_REQUEST,
            &[needle],
        );
    }
    let listed = server.get_json(ACME, "/svc/processes/domain");
    assert_eq!(listed, json!([]), "nothing was stored");
}

#[test]
fn an_http_trigger_serves_its_endpoint_in_its_domain_only() {
    let server = setup();
    server.create_domain("beta");
    json_ok(
        post_process(
            &server,
            &json!({"name": "scale", "language": "typescript",
                "code": "function main(input: {x: number | string}) {\n  const x = Number(input.x);\n  if (Number.isNaN(x)) throw new Error('x must be a number');\n  return {y: x * 2};\n}",
                "triggers": [{"type": "http", "config": {"endpoint": "scale"}}]}),
        ),
        StatusCode::CREATED,
    );
    let call = |domain: &str, method: Method, path: &str, body: Option<Value>| {
        let request = server.admin_in(domain, method, path);
        match body {
            Some(body) => request.json(&body),
            None => request,
        }
        .send()
        .expect("endpoint call")
    };
    let posted = call(
        ACME,
        Method::POST,
        "/svc/processes/http/scale",
        Some(json!({"x": 21})),
    );
    assert_eq!(json_ok(posted, StatusCode::OK), json!({"y": 42}));
    let got = call(ACME, Method::GET, "/svc/processes/http/scale?x=4", None);
    assert_eq!(json_ok(got, StatusCode::OK), json!({"y": 8}));
    assert_error(
        call(
            ACME,
            Method::POST,
            "/svc/processes/http/scale",
            Some(json!({"x": "abc"})),
        ),
        StatusCode::UNPROCESSABLE_ENTITY,
        &["x must be a number"],
    );
    assert_error(
        call(
            "domains:beta",
            Method::POST,
            "/svc/processes/http/scale",
            Some(json!({"x": 1})),
        ),
        StatusCode::NOT_FOUND,
        &["scale"],
    );
    // One endpoint, one process per domain; another domain may use the same name.
    assert_error(
        post_process(
            &server,
            &json!({"name": "other", "code": "1",
                "triggers": [{"type": "http", "config": {"endpoint": "scale"}}]}),
        ),
        StatusCode::CONFLICT,
        &["scale", "function `scale`"],
    );
    let resp = server
        .admin_in("domains:beta", Method::POST, "/svc/processes")
        .json(
            &json!({"name": "scale", "code": "function main(){ return 'beta'; }",
            "triggers": [{"type": "http", "config": {"endpoint": "scale"}}]}),
        )
        .send()
        .expect("POST beta process");
    json_ok(resp, StatusCode::CREATED);
    let beta = call(
        "domains:beta",
        Method::POST,
        "/svc/processes/http/scale",
        None,
    );
    assert_eq!(json_ok(beta, StatusCode::OK), json!("beta"));
}

/// A request as the platform's SDK sends it: its developer key and its application's domain.
fn sdk(
    server: &Server,
    key: &str,
    method: Method,
    path: &str,
) -> reqwest::blocking::RequestBuilder {
    server
        .req(method, path)
        .header("X-Svc-Api-Key", key)
        .header("Domain", ACME)
}

/// The SDK's `RecordIDToString`: `Table + ":" + ID`, put in the path as it is (the SDK builds
/// the URL with `new URL(path, base)`, which leaves `.` and `:` alone).
fn record_id_to_string(id: &Value) -> String {
    let (Some(table), Some(key)) = (id["Table"].as_str(), id["ID"].as_str()) else {
        panic!("not an SDK RecordID: {id}");
    };
    format!("{table}:{key}")
}

#[test]
fn the_sdk_changes_the_triggers_of_a_process_it_listed() {
    let server = setup();
    server.create_domain("beta");
    let user_id = server.create_user("dev", "dev-pw-123");
    let group = server.create_group_with_grants(ACME, "devs", &[("processes", "read-write", "*")]);
    server.add_user_to_group(ACME, &group, &user_id);
    let (_, key) = server.create_api_key(&server.login("dev", "dev-pw-123"), "sdk");
    let created = json_ok(
        sdk(&server, &key, Method::POST, "/svc/processes")
            .json(
                &json!({"name": "ticker", "language": "typescript", "log_enabled": true,
                "code": "function main(): number { return 1; }",
                "triggers": [{"type": "manual", "config": {}}]}),
            )
            .send()
            .expect("create the process"),
        StatusCode::CREATED,
    );

    // getProcesses(): `id`, `domain_id` and `createdBy` are RecordID objects.
    let listed = json_ok(
        sdk(&server, &key, Method::GET, "/svc/processes/domain")
            .send()
            .expect("getProcesses"),
        StatusCode::OK,
    );
    let process = listed
        .as_array()
        .and_then(|all| all.iter().find(|p| p["name"] == "ticker"))
        .unwrap_or_else(|| panic!("no ticker in {listed}"))
        .clone();
    let record_key = created["id"]
        .as_str()
        .expect("the record's id")
        .split_once(':')
        .expect("a RecordID")
        .1;
    assert_eq!(
        process["id"],
        json!({"Table": "acme.processes", "ID": record_key}),
        "{process}"
    );
    assert_eq!(
        process["domain_id"],
        json!({"Table": "domains", "ID": "acme"}),
        "{process}"
    );
    let (user_table, user_key) = user_id.split_once(':').expect("the user's RecordID");
    assert_eq!(
        process["createdBy"],
        json!({"Table": user_table, "ID": user_key}),
        "{process}"
    );
    assert_eq!(process["createdDt"], created["created_dt"], "{process}");

    // changeTriggers(process.id, triggers): PUT processes/triggers/${Table}:${ID}.
    let path = format!(
        "/svc/processes/triggers/{}",
        record_id_to_string(&process["id"])
    );
    let interval =
        json!([{"type": "interval", "config": {"interval_value": 200, "interval_unit": "ms"}}]);
    let changed = json_ok(
        sdk(&server, &key, Method::PUT, &path)
            .json(&json!({"triggers": interval}))
            .send()
            .expect("changeTriggers"),
        StatusCode::OK,
    );
    assert_eq!(changed["triggers"], interval, "{changed}");
    assert_eq!(changed["id"], process["id"], "{changed}");
    assert_eq!(changed["createdBy"], process["createdBy"], "{changed}");
    let again = json_ok(
        sdk(&server, &key, Method::GET, "/svc/processes/domain")
            .send()
            .expect("getProcesses again"),
        StatusCode::OK,
    );
    assert_eq!(again[0]["triggers"], interval, "{again}");
    server.poll(Duration::from_secs(10), "a run on the new interval", || {
        let runs = server.get_json(ACME, "/svc/processes/runs/ticker");
        runs.as_array()?
            .iter()
            .any(|r| r["trigger"] == "interval")
            .then_some(())
    });

    // The record routes keep string ids, and the route takes the string forms too: the full
    // RecordID (encoded or not), the bare key and `processes:<key>`.
    let record = &server.get_json(ACME, "/svc/processes/all")[0];
    let full = record["id"]
        .as_str()
        .expect("a string id on the record routes");
    assert_eq!(full, format!("acme.processes:{record_key}"));
    assert_eq!(record["createdBy"], json!(user_id), "{record}");
    // Who created it is svc's to say: an update naming someone else (in the SDK's shape) keeps it.
    let updated = json_ok(
        sdk(&server, &key, Method::PUT, &format!("/svc/{}", enc(full)))
            .json(&json!({"enabled": true, "createdBy": {"Table": "svc_admin.users", "ID": "someone"},
                "domain_id": {"Table": "domains", "ID": "beta"}, "createdDt": "2020-01-01T00:00:00.000Z"}))
            .send()
            .expect("PUT the record"),
        StatusCode::OK,
    );
    assert_eq!(updated["createdBy"], json!(user_id), "{updated}");
    assert!(updated.get("domain_id").is_none(), "{updated}");
    let manual = json!([{"type": "manual", "config": {}}]);
    for id in [
        enc(full),
        full.to_string(),
        record_key.to_string(),
        format!("processes:{record_key}"),
    ] {
        let answer = json_ok(
            sdk(
                &server,
                &key,
                Method::PUT,
                &format!("/svc/processes/triggers/{id}"),
            )
            .json(&json!({"triggers": manual}))
            .send()
            .expect("PUT triggers by a string id"),
            StatusCode::OK,
        );
        assert_eq!(answer["triggers"], manual, "{id}: {answer}");
    }
    // Another domain's RecordID is no process of this one; an id that is none is refused.
    assert_error(
        sdk(
            &server,
            &key,
            Method::PUT,
            &format!("/svc/processes/triggers/beta.processes:{record_key}"),
        )
        .json(&json!({"triggers": manual}))
        .send()
        .expect("PUT another domain's id"),
        StatusCode::NOT_FOUND,
        &[],
    );
    assert_error(
        sdk(
            &server,
            &key,
            Method::PUT,
            "/svc/processes/triggers/undefined:undefined",
        )
        .json(&json!({"triggers": manual}))
        .send()
        .expect("PUT a broken id"),
        StatusCode::BAD_REQUEST,
        &["undefined:undefined"],
    );
}

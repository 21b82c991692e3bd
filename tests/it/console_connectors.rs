//! The console's Connectors page (Administration → Connectors) in headless Chromium against the
//! real binary and a Modbus device (pymodbus, `tests/peers/modbus_server.py`): an administrator
//! (whose effective grants include `connectors` read-write) tests a Modbus connector from the
//! form without saving it, saves it, sees it reach `connected` with its point's quality `good`
//! as REST reports them, and disables it (state `disabled`, the record's `enabled` false). A user who may only read connectors sees the
//! connector and its state but no control that would change anything.

use crate::common::*;
use crate::console_support::{acme_server, blocking, stop, Browser};
use serde_json::json;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(5);
const FORM: &str = "#connector-form";

/// Replaces the text of the input or textarea `css`.
async fn set(browser: &Browser, css: &str, text: &str) {
    let input = browser.element(css).await;
    input.clear().await.expect("clear");
    input.send_keys(text).await.expect("type");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modbus_connector_is_created_watched_and_disabled_in_the_console() {
    let peer = blocking(|| DevicePeer::python("modbus_server.py", &["--set", "hr:1=42"])).await;
    let server = acme_server(|server| {
        server.create_record(
            "domains:acme",
            "namespaces",
            &json!({"name": "plant", "path": "acme/plant"}),
        );
        server.user_with_grants(
            "domains:acme",
            "viewer",
            &[("tags", "read", "*"), ("connectors", "read", "*")],
        );
    })
    .await;
    let server = std::sync::Arc::new(server);
    // An administrator's effective grants name the feature, so the console offers its controls.
    let rights = {
        let server = server.clone();
        blocking(move || server.get_json("domains:acme", "/auth/permission")).await
    };
    assert!(
        rights["permissions"].as_array().is_some_and(|all| all
            .iter()
            .any(|g| g["name"] == "connectors" && g["action"] == "read-write")),
        "{rights}"
    );
    let browser = Browser::start().await;
    browser.log_in(&server.base, "admin", ADMIN_PASSWORD).await;
    browser.open(&server.base, "#/acme/admin/connectors").await;

    // The form, filled in: Modbus is the default kind, its starter replaced by the device's.
    browser
        .fill(&format!("{FORM} input[name=name]"), "plc1")
        .await;
    let settings = json!({"host": "127.0.0.1", "port": peer.port, "timeout": "500ms"});
    set(
        &browser,
        &format!("{FORM} textarea[name=settings]"),
        &settings.to_string(),
    )
    .await;
    let points = json!([{"tag": "acme/plant/pressure", "unit": "bar",
        "address": {"function": "holding_register", "address": 1, "type": "uint16",
            "poll_interval": "100ms"}}]);
    set(
        &browser,
        &format!("{FORM} textarea[name=points]"),
        &points.to_string(),
    )
    .await;
    set(
        &browser,
        &format!("{FORM} textarea[name=reconnect]"),
        r#"{"initial": "200ms", "max": "1s"}"#,
    )
    .await;

    // Tested without saving: the device answers, nothing is stored.
    browser.click(&format!("{FORM} button.test")).await;
    let answer = browser
        .until(
            "the test's answer",
            Duration::from_secs(15),
            "document.querySelector('#connector-probe:not([hidden])')?.textContent.includes('reached in') \
             && document.querySelector('#connector-probe').textContent",
        )
        .await;
    assert!(
        answer
            .as_str()
            .is_some_and(|s| s.starts_with("plc1: reached in")),
        "{answer}"
    );
    let stored = {
        let server = server.clone();
        blocking(move || server.get_json("domains:acme", "/svc/connectors/all")).await
    };
    assert_eq!(stored, json!([]), "a test stores nothing");

    // Saved: listed, connected, its point good, as REST says.
    browser.click(&format!("{FORM} button[type=submit]")).await;
    browser.element("tr[data-connector=plc1]").await;
    let stored = {
        let server = server.clone();
        blocking(move || server.get_json("domains:acme", "/svc/connectors/all")).await
    };
    assert_eq!(stored[0]["settings"]["port"], json!(peer.port), "{stored}");
    assert_eq!(stored[0]["enabled"], true, "{stored}");
    assert_eq!(
        stored[0]["points"][0]["tag"], "acme/plant/pressure",
        "{stored}"
    );
    browser
        .until(
            "the connector connected",
            Duration::from_secs(20),
            "document.querySelector('tr[data-connector=plc1] td.connector-state')?.dataset.state === 'connected'",
        )
        .await;
    browser.click("button[data-unfold=plc1]").await;
    browser
        .until(
            "the point's quality good",
            Duration::from_secs(15),
            "document.querySelector('tr[data-points=plc1]:not([hidden]) tr[data-tag=\"acme/plant/pressure\"] td.point-quality')?.dataset.quality === 'good'",
        )
        .await;
    let status = {
        let server = server.clone();
        blocking(move || server.get_json("domains:acme", "/svc/connectors/status")).await
    };
    assert_eq!(status[0]["state"], "connected", "{status}");
    assert_eq!(status[0]["points"][0]["quality"], "good", "{status}");
    let values_in = browser
        .text("tr[data-connector=plc1] td:nth-child(6)")
        .await;
    assert!(values_in.parse::<u64>().is_ok_and(|n| n > 0), "{values_in}");
    assert_eq!(browser.text("button[data-switch=plc1]").await, "Disable");
    browser.screenshot("admin-connectors").await;

    // Disabled in the console: the record says so and the state follows.
    browser.click("button[data-switch=plc1]").await;
    browser
        .until(
            "the connector disabled",
            Duration::from_secs(10),
            "document.querySelector('tr[data-connector=plc1] td.connector-state')?.dataset.state === 'disabled'",
        )
        .await;
    let stored = {
        let server = server.clone();
        blocking(move || server.get_json("domains:acme", "/svc/connectors/all")).await
    };
    assert_eq!(stored[0]["enabled"], false, "{stored}");
    assert_eq!(browser.text("button[data-switch=plc1]").await, "Enable");

    // A user who may only read connectors sees the connector, not a control.
    browser.click("#logout").await;
    browser
        .log_in(&server.base, "viewer", "viewer-pw-123")
        .await;
    browser.open(&server.base, "#/acme/admin/connectors").await;
    browser
        .until(
            "the connector's state for the viewer",
            WAIT,
            "document.querySelector('tr[data-connector=plc1] td.connector-state')?.dataset.state === 'disabled'",
        )
        .await;
    let controls = browser
        .client
        .execute(
            "const section = document.querySelector('.admin-section'); \
             return { \
               changing: [...section.querySelectorAll('button[data-switch], button[data-test], \
                 button[data-edit], button[data-delete], button[data-trust], button[data-reject], \
                 button[data-forget], #connector-form button')] \
                 .filter(b => b.offsetParent !== null).length, \
               form: document.querySelector('#connector-form').hidden, \
               why: document.querySelector('#connectors-why').hidden ? null \
                 : document.querySelector('#connectors-why').textContent };",
            vec![],
        )
        .await
        .expect("read the controls");
    assert_eq!(controls["changing"], 0, "{controls}");
    assert_eq!(controls["form"], true, "{controls}");
    assert!(
        controls["why"]
            .as_str()
            .is_some_and(|s| s.contains("read-write")),
        "{controls}"
    );
    browser.close().await;
    stop(server).await;
    drop(peer);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_opcua_server_is_trusted_tested_browsed_and_given_a_point_in_the_console() {
    let peer = blocking(|| {
        DevicePeer::python(
            "opcua_server.py",
            &[
                "--security",
                "basic256sha256",
                "--user",
                "operator:s3cret-ua",
            ],
        )
    })
    .await;
    let endpoint = format!("opc.tcp://127.0.0.1:{}/svc", peer.port);
    let server = acme_server(move |server| {
        server.create_record(
            "domains:acme",
            "namespaces",
            &json!({"name": "ua", "path": "acme/ua"}),
        );
        server.create_record(
            "domains:acme",
            "connectors",
            &json!({"name": "line", "kind": "opcua", "password": "s3cret-ua",
                "settings": {"endpoint": endpoint, "security_policy": "Basic256Sha256",
                    "security_mode": "SignAndEncrypt", "publishing_interval": "200ms",
                    "identity": {"type": "username", "username": "operator"}},
                "reconnect": {"initial": "200ms", "max": "1s"},
                "points": [{"tag": "acme/ua/int16", "address": {"node_id": "ns=2;s=Int16"}}]}),
        );
    })
    .await;
    let server = std::sync::Arc::new(server);
    let browser = Browser::start().await;
    browser.log_in(&server.base, "admin", ADMIN_PASSWORD).await;
    browser.open(&server.base, "#/acme/admin/connectors").await;

    // The server's certificate is not trusted yet: listed pending, the connector in error.
    let state = |want: &str| {
        format!(
            "document.querySelector('tr[data-connector=line] td.connector-state')?.dataset.state === '{want}'"
        )
    };
    browser
        .until(
            "the certificate pending",
            Duration::from_secs(20),
            "document.querySelector('#certificates td.certificate-state')?.dataset.state === 'pending'",
        )
        .await;
    browser
        .until(
            "the connector refused",
            Duration::from_secs(20),
            &state("error"),
        )
        .await;
    let cause = browser
        .text("tr[data-connector=line] td.connector-error")
        .await;
    assert!(cause.starts_with("security:"), "{cause}");
    browser.click("#certificates button[data-trust]").await;
    browser
        .until(
            "the certificate trusted",
            WAIT,
            "document.querySelector('#certificates td.certificate-state')?.dataset.state === 'trusted'",
        )
        .await;
    browser
        .until(
            "the connector connected",
            Duration::from_secs(20),
            &state("connected"),
        )
        .await;
    browser
        .client
        .execute(
            "document.querySelector('#connector-certificates').scrollIntoView();",
            vec![],
        )
        .await
        .expect("scroll to the certificates");
    browser.screenshot("admin-connectors-certificates").await;

    // Test connects the stored connector with its stored password, which stays on the server.
    browser.click("button[data-test=line]").await;
    browser
        .until(
            "the stored test's answer",
            Duration::from_secs(15),
            "document.querySelector('#connector-probe:not([hidden])')?.textContent.startsWith('line: reached in')",
        )
        .await;
    // Edited, the form tests what it holds, with the password typed again.
    browser.click("button[data-edit=line]").await;
    browser
        .until(
            "the form editing line",
            WAIT,
            "document.querySelector('#connector-form').dataset.editing === 'line'",
        )
        .await;
    browser
        .fill(&format!("{FORM} input[name=password]"), "s3cret-ua")
        .await;
    browser.click(&format!("{FORM} button.test")).await;
    browser
        .until(
            "the test's answer",
            Duration::from_secs(15),
            "document.querySelector('#connector-probe:not([hidden])')?.textContent.startsWith('line: reached in')",
        )
        .await;

    // Browsed: Objects, then Plant; Int16 added to the form's points, then saved.
    browser.click("button[data-browse=line]").await;
    let plant = "#connector-browse tr[data-node='ns=2;s=Plant']";
    browser
        .click(&format!("{plant} td:first-child button"))
        .await;
    let int16 = "#connector-browse tr[data-node='ns=2;s=Int16']";
    browser.element(int16).await;
    let crumbs = browser.text("#connector-browse .breadcrumb").await;
    let crumbs: Vec<&str> = crumbs.split_whitespace().collect();
    assert_eq!(crumbs, ["Objects", "›", "Plant"]);
    browser
        .click(&format!("{int16} td:last-child button"))
        .await;
    let points = browser
        .element(&format!("{FORM} textarea[name=points]"))
        .await
        .prop("value")
        .await
        .expect("points")
        .unwrap_or_default();
    let points: serde_json::Value = serde_json::from_str(&points).expect("points JSON");
    assert_eq!(
        points[1],
        json!({"tag": "acme/ua/Int16", "address": {"node_id": "ns=2;s=Int16"}}),
        "{points}"
    );
    browser.screenshot("admin-connectors-opcua").await;
    // The breadcrumb goes back up.
    browser.click("#connector-browse .breadcrumb button").await;
    browser.element(plant).await;
    browser.click(&format!("{FORM} button[type=submit]")).await;
    browser
        .until(
            "the form back to a new connector",
            WAIT,
            "document.querySelector('#connector-form').dataset.editing === ''",
        )
        .await;
    let stored = {
        let server = server.clone();
        blocking(move || server.get_json("domains:acme", "/svc/connectors/all")).await
    };
    assert_eq!(
        stored[0]["points"][1]["address"]["node_id"], "ns=2;s=Int16",
        "{stored}"
    );
    assert_eq!(stored[0]["password_set"], true, "{stored}");
    let page = browser.text("main").await;
    assert!(!page.contains("s3cret-ua"), "{page}");
    browser.close().await;
    stop(server).await;
    drop(peer);
}

//! A tag's page in the console (issue 16) in headless Chromium against the real binary: its
//! settings saved through the console are what REST then reports (and greyed out without
//! rights); the payload inspector shows published values as a tree, raw, hex and the diff to
//! the value before; the trend overlays a second historized tag, narrows to a custom range,
//! and downloads what it shows as CSV.

use crate::common::*;
use crate::console_support::{acme_server, blocking, stop, Browser};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

const ACME: &str = "domains:acme";
const WAIT: Duration = Duration::from_secs(5);

fn stamp(at: chrono::DateTime<chrono::Utc>) -> String {
    at.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

fn tag_record(server: &Server, topic: &str) -> Value {
    let path = format!("/svc/tags/all{}", query(&[("filter[path][eq]", topic)]));
    server.get_json(ACME, &path)[0].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tags_settings_are_saved_and_its_payloads_inspected() {
    const TOPIC: &str = "plant/line1/drive";
    let server = acme_server(|server| {
        server.create_tag(ACME, TOPIC, false);
        server.user_with_grants(ACME, "viewer", &[("tags", "read", "*")]);
    })
    .await;
    let browser = Browser::start().await;
    browser.log_in(&server.base, "admin", ADMIN_PASSWORD).await;
    browser
        .open(&server.base, &format!("#/acme/tag/{}", enc(TOPIC)))
        .await;
    browser.click("#settings-panel summary").await;
    browser
        .until(
            "the settings form",
            WAIT,
            "!document.querySelector('#settings [name=unit]').disabled",
        )
        .await;
    browser
        .client
        .execute(
            "const form = document.querySelector('#settings');
             form.elements.historize.checked = true;
             form.elements.unit.value = 'rpm';
             form.elements.retention.value = '30d';
             form.elements.description.value = 'Main drive speed';",
            vec![],
        )
        .await
        .expect("fill the settings");
    browser.click("#settings button[type=submit]").await;
    browser
        .until(
            "saved",
            WAIT,
            "document.querySelector('#unit').textContent === 'rpm'",
        )
        .await;
    let server = Arc::new(server);
    let reader = server.clone();
    let tag = blocking(move || tag_record(&reader, TOPIC)).await;
    assert_eq!(tag["historize"], json!(true), "{tag}");
    assert_eq!(tag["unit"], json!("rpm"), "{tag}");
    assert_eq!(tag["retention"], json!("30d"), "{tag}");
    assert_eq!(tag["description"], json!("Main drive speed"), "{tag}");

    // Two values: the inspector shows the second and what changed from the first.
    let publisher = server.clone();
    blocking(move || {
        publisher.publish_as_admin(TOPIC, r#"{"speed": 1450, "state": {"mode": "auto"}}"#);
    })
    .await;
    browser
        .until(
            "the first value",
            WAIT,
            "document.querySelector('#inspector .json-number')?.textContent === '1450'",
        )
        .await;
    let publisher = server.clone();
    blocking(move || {
        publisher.publish_as_admin(
            TOPIC,
            r#"{"speed": 1500, "state": {"mode": "auto"}, "alarm": true}"#,
        );
    })
    .await;
    browser
        .until(
            "the second value",
            WAIT,
            "document.querySelector('#inspector .json-number')?.textContent === '1500'",
        )
        .await;
    browser.click("#payload [data-tab=diff]").await;
    let diff = browser.text("#inspector pre").await;
    assert_eq!(diff, "~ speed: 1450 → 1500\n+ alarm: true");
    browser.click("#payload [data-tab=hex]").await;
    let hex = browser.text("#inspector pre").await;
    // The bytes as published: key order and spacing as the device sent them.
    assert!(
        hex.starts_with(
            "00000000  7b 22 73 70 65 65 64 22 3a 20 31 35 30 30 2c 20  {\"speed\": 1500, "
        ),
        "{hex}"
    );
    browser.click("#payload [data-tab=raw]").await;
    assert_eq!(
        browser.text("#inspector pre").await,
        r#"{"speed": 1500, "state": {"mode": "auto"}, "alarm": true}"#
    );
    browser.screenshot("tag-inspector").await;

    // Without `tags` read-write the settings cannot be changed.
    browser
        .client
        .execute("sessionStorage.clear();", vec![])
        .await
        .expect("log out");
    browser
        .log_in(&server.base, "viewer", "viewer-pw-123")
        .await;
    browser
        .open(&server.base, &format!("#/acme/tag/{}", enc(TOPIC)))
        .await;
    browser
        .until(
            "the settings read",
            WAIT,
            "document.querySelector('#settings [name=unit]').value === 'rpm'",
        )
        .await;
    let disabled = browser
        .client
        .execute(
            "return [...document.querySelector('#settings').elements].every(c => c.disabled);",
            vec![],
        )
        .await
        .expect("settings state");
    assert_eq!(disabled, json!(true));
    browser.close().await;
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trend_overlays_tags_narrows_to_a_range_and_downloads_what_it_shows() {
    const TEMP: &str = "plant/line1/temp";
    const PRESSURE: &str = "plant/line1/pressure";
    let now = chrono::Utc::now();
    let at = |minutes: i64| stamp(now - chrono::Duration::minutes(minutes));
    let temps = [(50, 20.5), (30, 21.0), (10, 22.25)].map(|(m, v)| (at(m), v));
    let pressures = [(45, 1.5), (35, 1.75), (25, 2.0), (5, 2.5)].map(|(m, v)| (at(m), v));
    let (t, p) = (temps.clone(), pressures.clone());
    let server = blocking(move || {
        let server = Server::start();
        server.create_domain("acme");
        server.create_tag(ACME, TEMP, true);
        server.create_tag(ACME, PRESSURE, true);
        for (topic, points) in [(TEMP, &t[..]), (PRESSURE, &p[..])] {
            for (timestamp, value) in points {
                let payload = json!({"value": value, "timestamp": timestamp}).to_string();
                server.publish_as_admin(topic, &payload);
            }
            server.history(ACME, topic, points.len());
        }
        server
    })
    .await;
    let browser = Browser::start().await;
    browser.log_in(&server.base, "admin", ADMIN_PASSWORD).await;
    browser
        .open(&server.base, &format!("#/acme/tag/{}", enc(TEMP)))
        .await;
    let counts =
        "[...document.querySelectorAll('#chart .series')].map(g => g.dataset.count).join(',')";
    // 15 minutes: only the last temperature.
    browser
        .until("the 15-minute trend", WAIT, &format!("{counts} === '1'"))
        .await;
    browser.click("#presets button:nth-child(2)").await;
    browser
        .until("the hour's trend", WAIT, &format!("{counts} === '3'"))
        .await;
    browser.fill("#overlay [name=topic]", PRESSURE).await;
    browser.click("#overlay button[type=submit]").await;
    browser
        .until("the overlay", WAIT, &format!("{counts} === '3,4'"))
        .await;
    let legend = browser.text("#legend").await;
    assert!(
        legend.contains(TEMP) && legend.contains(PRESSURE),
        "{legend}"
    );
    browser.screenshot("trend-overlay").await;

    // A custom range from 40 to 20 minutes ago (the browser's local time).
    browser
        .client
        .execute(
            "const [from, to] = arguments;
             const local = (ms) => new Date(ms - new Date(ms).getTimezoneOffset() * 60000)
               .toISOString().slice(0, 16);
             const form = document.querySelector('#range');
             form.elements.from.value = local(Date.now() - from * 60000);
             form.elements.to.value = local(Date.now() - to * 60000);",
            vec![json!(40), json!(20)],
        )
        .await
        .expect("set the range");
    browser.click("#range button[type=submit]").await;
    browser
        .until("the custom range", WAIT, &format!("{counts} === '1,2'"))
        .await;
    browser.click("#csv").await;
    let csv = browser.downloaded("plant_line1_temp.csv", WAIT).await;
    let csv = String::from_utf8(csv).expect("UTF-8");
    let expected = [
        "topic,timestamp,value".to_string(),
        format!("\"{TEMP}\",{},21", temps[1].0),
        format!("\"{PRESSURE}\",{},1.75", pressures[1].0),
        format!("\"{PRESSURE}\",{},2", pressures[2].0),
    ]
    .join("\n");
    assert_eq!(csv.trim_end(), expected);
    browser.close().await;
    stop(server).await;
}

//! The web console (issue 16), in headless Chromium against the real binary: it is served
//! embedded at `/console/` under a strict Content-Security-Policy (`/` leads there); a user
//! logs in; creates a developer key that is shown once, works over HTTP and MQTT, and stops
//! working once revoked in the console; a value published with `mosquitto_pub` shows in the
//! live tags within a second; logging out, or a token the server refuses, returns to the login
//! page. Screenshots of each view land in `target/console-screenshots/`.

use crate::common::*;
use crate::console_support::{acme_server, blocking, stop, Browser};
use reqwest::{Method, StatusCode};
use serde_json::json;
use std::time::{Duration, Instant};

#[test]
fn the_console_is_served_embedded_compressed_and_under_a_strict_policy() {
    let server = Server::start();
    let no_redirects = reqwest::blocking::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let root = no_redirects.get(server.url("/")).send().expect("GET /");
    assert!(root.status().is_redirection(), "{}", root.status());
    assert_eq!(header(&root, "location"), "/console/");

    let page = server
        .req(Method::GET, "/console/")
        .header("Accept-Encoding", "gzip, deflate, br, zstd")
        .send()
        .expect("GET /console/");
    assert_eq!(page.status(), StatusCode::OK);
    assert_eq!(header(&page, "content-encoding"), "zstd");
    let gzipped = server
        .req(Method::GET, "/console/app.js")
        .header("Accept-Encoding", "gzip")
        .send()
        .expect("GET app.js");
    assert_eq!(gzipped.status(), StatusCode::OK);
    assert_eq!(header(&gzipped, "content-encoding"), "gzip");
    assert!(header(&gzipped, "content-type").contains("javascript"));
    assert_eq!(header(&gzipped, "cache-control"), "no-cache");
    let policy = header(&page, "content-security-policy");
    for rule in [
        "default-src 'none'",
        "script-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(policy.contains(rule), "{policy}");
    }
    assert!(!policy.contains("unsafe-inline"), "{policy}");
    let etag = header(&page, "etag");
    let again = server
        .req(Method::GET, "/console/")
        .header("If-None-Match", &etag)
        .send()
        .expect("conditional GET");
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    // No inline script anywhere in the page (the policy would block it anyway).
    let html = server
        .req(Method::GET, "/console/index.html")
        .send()
        .expect("index")
        .text()
        .expect("html");
    assert!(
        html.contains(r#"<script type="module" src="app.js">"#),
        "{html}"
    );
    assert_eq!(html.matches("<script").count(), 1, "{html}");
    let missing = server
        .req(Method::GET, "/console/nothing.js")
        .send()
        .expect("missing file");
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_created_in_the_console_is_shown_once_works_and_stops_when_revoked() {
    let server = acme_server(|_| {}).await;
    let browser = Browser::start().await;
    browser.log_in(&server.base, "admin", ADMIN_PASSWORD).await;
    browser.screenshot("tags").await;
    browser.open(&server.base, "#/acme/keys").await;
    browser.fill("input[name=name]", "line1-gateway").await;
    browser.click("#create button[type=submit]").await;
    let secret = browser
        .until(
            "the new key",
            Duration::from_secs(5),
            "document.querySelector('#created:not([hidden]) #secret')?.textContent",
        )
        .await;
    let key = secret.as_str().expect("key text").to_string();
    assert!(key.starts_with("svcx_"), "{key}");
    let notice = browser.text("#created .notice").await;
    assert!(notice.contains("will not be shown again"), "{notice}");
    browser.screenshot("keys").await;
    // Listed by prefix, never in full.
    let listed = browser
        .until(
            "the key in the list",
            Duration::from_secs(5),
            "document.querySelector('#keys tr td:nth-child(2)')?.textContent",
        )
        .await;
    assert!(
        key.starts_with(listed.as_str().expect("prefix")),
        "{listed}"
    );
    let table = browser.text("#keys").await;
    assert!(!table.contains(&key), "the full key is not listed: {table}");
    // Made in the domain the console shows.
    let domain = browser.text("#keys tr td:nth-child(5)").await;
    assert_eq!(domain, "acme");

    // The key works as any client would use it.
    let probe = |key: String, base: String| async move {
        blocking(move || {
            reqwest::blocking::Client::new()
                .get(format!("{base}/svc/tag/list"))
                .header("X-Svc-Api-Key", key)
                .header("Domain", "domains:acme")
                .send()
                .expect("request with the key")
                .status()
        })
        .await
    };
    assert_eq!(
        probe(key.clone(), server.base.clone()).await,
        StatusCode::OK
    );

    // Revoked in the console (after confirming), refused by the API.
    browser.click("#keys button[data-key]").await;
    browser
        .client
        .accept_alert()
        .await
        .expect("confirm the revocation");
    browser
        .until(
            "the emptied list",
            Duration::from_secs(5),
            "document.querySelectorAll('#keys tr').length === 0",
        )
        .await;
    assert_eq!(
        probe(key, server.base.clone()).await,
        StatusCode::UNAUTHORIZED
    );

    // Logging out returns to the login page; the token is gone from the tab.
    browser.click("#logout").await;
    browser
        .until(
            "the login page",
            Duration::from_secs(5),
            "document.querySelector('form.login') && sessionStorage.getItem('svc.token') === null",
        )
        .await;
    browser.close().await;
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_published_value_shows_in_the_live_tags_within_a_second() {
    let server = acme_server(|server| {
        server.create_tag("domains:acme", "plant/line1/speed", false);
        server.create_tag("domains:acme", "plant/line1/temp", false);
    })
    .await;
    let browser = Browser::start().await;
    browser.log_in(&server.base, "admin", ADMIN_PASSWORD).await;
    browser.open(&server.base, "#/acme/tags").await;
    browser
        .until(
            "the live stream",
            Duration::from_secs(5),
            "document.getElementById('status')?.textContent === 'live'",
        )
        .await;
    let never = browser.text("[data-topic='plant/line1/temp'] .value").await;
    assert_eq!(never, "never seen");

    let server = std::sync::Arc::new(server);
    let publisher = server.clone();
    let started = Instant::now();
    blocking(move || {
        publisher.publish_as_admin("plant/line1/speed", "42.5");
    })
    .await;
    let shown = browser
        .until(
            "the published value",
            Duration::from_secs(1),
            "document.querySelector(\"[data-topic='plant/line1/speed'] .value\")?.textContent === '42.5'",
        )
        .await;
    assert_eq!(shown, json!(true));
    assert!(started.elapsed() < Duration::from_secs(2));
    browser.screenshot("live-tags").await;

    // A token the server no longer accepts sends the user back to log in, saying why.
    browser
        .client
        .execute(
            "sessionStorage.setItem('svc.token', 'not.a.token'); location.hash = '#/acme/keys';",
            vec![],
        )
        .await
        .expect("spoil the token");
    let reason = browser
        .until(
            "the login page with the reason",
            Duration::from_secs(5),
            "document.querySelector('form.login .notice:not([hidden])')?.textContent",
        )
        .await;
    assert!(
        reason.as_str().is_some_and(|r| r.contains("token")),
        "{reason}"
    );
    browser.screenshot("login").await;
    browser.close().await;
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tags_trend_shows_its_historian_points_and_live_ones() {
    const TOPIC: &str = "plant/line1/temp";
    let now = chrono::Utc::now();
    let points: Vec<(String, f64)> = [(10, 20.5), (5, 21.0), (1, 22.25)]
        .iter()
        .map(|(minutes, value)| {
            let at = now - chrono::Duration::minutes(*minutes);
            (at.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(), *value)
        })
        .collect();
    let published = points.clone();
    let server = blocking(move || {
        let server = Server::start();
        server.create_domain("acme");
        server.create_record(
            "domains:acme",
            "tags",
            &json!({"path": TOPIC, "historize": true, "unit": "degC"}),
        );
        for (timestamp, value) in &published {
            let payload = json!({"value": value, "timestamp": timestamp}).to_string();
            server.publish_as_admin(TOPIC, &payload);
        }
        server.history("domains:acme", TOPIC, 3);
        server
    })
    .await;
    let browser = Browser::start().await;
    browser.log_in(&server.base, "admin", ADMIN_PASSWORD).await;
    browser
        .open(&server.base, &format!("#/acme/tag/{}", enc(TOPIC)))
        .await;
    let count = "document.querySelector('#chart .series-0')?.dataset.count";
    browser
        .until(
            "3 points on the trend",
            Duration::from_secs(5),
            &format!("{count} === '3'"),
        )
        .await;
    let titles = browser
        .client
        .execute(
            "return [...document.querySelectorAll('#chart circle title')].map(t => t.textContent);",
            vec![],
        )
        .await
        .expect("point titles");
    let titles: Vec<String> = serde_json::from_value(titles).expect("titles");
    let expected: Vec<String> = points
        .iter()
        .map(|(timestamp, value)| format!("{timestamp} {value}"))
        .collect();
    assert_eq!(titles, expected);
    let unit = browser.text("#unit").await;
    assert_eq!(unit, "degC");

    // A live value joins the trend.
    let publisher = std::sync::Arc::new(server);
    let server = publisher.clone();
    blocking(move || {
        publisher.publish_as_admin(TOPIC, "23");
    })
    .await;
    browser
        .until(
            "the live point",
            Duration::from_secs(2),
            &format!("{count} === '4'"),
        )
        .await;
    assert_eq!(browser.text("#latest").await, "23");
    browser.screenshot("trend").await;
    browser.close().await;
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_loads_in_under_150_kb() {
    let server = blocking(Server::start).await;
    let browser = Browser::start().await;
    browser.log_in(&server.base, "admin", ADMIN_PASSWORD).await;
    browser
        .until(
            "the tags view",
            Duration::from_secs(5),
            "document.getElementById('status')",
        )
        .await;
    // What the browser fetched for the page itself and its files (API calls excluded).
    let transferred = browser
        .client
        .execute(
            "const files = performance.getEntriesByType('resource').filter(e => e.name.includes('/console/'));
             const page = performance.getEntriesByType('navigation')[0];
             return {bytes: files.reduce((n, e) => n + e.transferSize, page.transferSize), files: files.length};",
            vec![],
        )
        .await
        .expect("resource timing");
    let bytes = transferred["bytes"].as_u64().expect("bytes");
    eprintln!("console first load: {transferred}");
    assert!(transferred["files"].as_u64() >= Some(5), "{transferred}");
    assert!(bytes > 0 && bytes <= 150_000, "{transferred}");
    browser.close().await;
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_write_rights_the_controls_are_disabled_and_a_forced_call_is_refused() {
    let server = acme_server(|server| {
        server.create_tag("domains:acme", "plant/line1/speed", false);
        server.create_record("domains:acme", "orders", &json!({"id": "o1", "qty": 1}));
        server.user_with_grants(
            "domains:acme",
            "viewer",
            &[("tags", "read", "*"), ("collections", "read", "orders")],
        );
    })
    .await;
    let browser = Browser::start().await;
    browser
        .log_in(&server.base, "viewer", "viewer-pw-123")
        .await;
    browser
        .open(
            &server.base,
            &format!("#/acme/tag/{}", enc("plant/line1/speed")),
        )
        .await;
    let disabled = browser
        .until(
            "the write form",
            Duration::from_secs(5),
            "document.querySelector('#write button')",
        )
        .await;
    assert_ne!(disabled, json!(null));
    let write_disabled = browser
        .client
        .execute(
            "return document.querySelector('#write button').disabled;",
            vec![],
        )
        .await
        .expect("button state");
    assert_eq!(write_disabled, json!(true));
    // Forcing the call from the page (as a user could from the browser's console) is refused.
    let status = browser
        .client
        .execute_async(
            "const done = arguments[arguments.length - 1];
             fetch('/svc/tag/write', {method: 'POST', headers: {
                 'Authorization': 'Bearer ' + sessionStorage.getItem('svc.token'),
                 'Domain': 'domains:acme', 'Content-Type': 'application/json'},
               body: JSON.stringify({topic: 'plant/line1/speed', value: 1})})
             .then(r => done(r.status));",
            vec![],
        )
        .await
        .expect("forced write");
    assert_eq!(status, json!(401));

    browser.open(&server.base, "#/acme/records/orders").await;
    browser
        .until(
            "the grid",
            Duration::from_secs(5),
            "document.querySelector(\"#records tr[data-id='acme.orders:o1']\")",
        )
        .await;
    let controls = browser
        .client
        .execute(
            "return [document.querySelector('#editor button[type=submit]').disabled,
                     document.querySelector('#records tbody td:last-child button').disabled,
                     document.querySelector('#import').disabled];",
            vec![],
        )
        .await
        .expect("control states");
    assert_eq!(controls, json!([true, true, true]));
    browser.screenshot("read-only").await;
    browser.close().await;
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tree_of_ten_thousand_tags_is_live_within_a_second() {
    const TAGS: usize = 10_000;
    let server = acme_server(|server| {
        let resp = server
            .admin_in("domains:acme", Method::POST, "/svc/namespaces")
            .json(&json!({"name": "site", "path": "site"}))
            .send()
            .expect("namespace");
        assert_eq!(resp.status(), StatusCode::CREATED);
        // Published topics under the namespace become the domain's tags.
        let mut device = server.mqtt_admin(Proto::V5, Via::Tcp, "plant");
        for i in 0..TAGS {
            let topic = format!("site/area{}/line{}/tag{i}", i % 10, (i / 10) % 10);
            device.publish(&topic, i.to_string(), 1, false);
        }
        server.poll(Duration::from_secs(120), "10,000 registered tags", || {
            let tags = server.get_json("domains:acme", "/svc/tag/list");
            (tags.as_array()?.len() == TAGS).then_some(())
        });
    })
    .await;
    let browser = Browser::start().await;
    browser.log_in(&server.base, "admin", ADMIN_PASSWORD).await;
    browser.open(&server.base, "#/acme/keys").await;
    browser.text("#keys").await;
    // From the click on Live tags to a live tree showing rows with values.
    let interactive = browser
        .client
        .execute_async(
            "const done = arguments[arguments.length - 1];
             const started = performance.now();
             document.querySelector('nav a[href$=\"/tags\"]').click();
             const check = () => {
               const live = document.getElementById('status')?.textContent === 'live';
               const counted = document.getElementById('count')?.textContent === '10000 tags';
               const shown = document.querySelectorAll('#tree [data-topic] .value:not(.never)').length;
               if (live && counted && shown > 5) done({ms: performance.now() - started, rows: document.querySelectorAll('#tree .node').length});
               else requestAnimationFrame(check);
             };
             check();",
            vec![],
        )
        .await
        .expect("time to interactive");
    eprintln!("tree of {TAGS} tags: {interactive}");
    let ms = interactive["ms"].as_f64().expect("ms");
    let rows = interactive["rows"].as_u64().expect("rows");
    assert!(rows < 200, "only the rows in view exist: {interactive}");
    assert!(ms <= 1000.0, "interactive in {ms:.0} ms");
    // Scrolling to the end shows the last tags.
    browser
        .client
        .execute(
            "const t = document.getElementById('tree'); t.scrollTop = t.scrollHeight;",
            vec![],
        )
        .await
        .expect("scroll");
    browser
        .until(
            "the last tag in view",
            Duration::from_secs(2),
            "document.querySelector(\"[data-topic='site/area9/line9/tag9999'] .value\")?.textContent === '9999'",
        )
        .await;
    browser.screenshot("tree-10k").await;
    browser.close().await;
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_function_runs_from_the_console_with_its_output_logs_and_history() {
    let server = acme_server(|server| {
        for code in [
            "function main(i) { return i.x + 1; }",
            "function main(i) { console.log('doubling', i.x); return {y: i.x * 2}; }",
        ] {
            let resp = server
                .admin_in("domains:acme", Method::POST, "/svc/code/double")
                .multipart(
                    reqwest::blocking::multipart::Form::new().part(
                        "file",
                        reqwest::blocking::multipart::Part::bytes(code.as_bytes().to_vec())
                            .file_name("double.js"),
                    ),
                )
                .send()
                .expect("upload");
            assert!(resp.status().is_success(), "{}", resp.status());
        }
    })
    .await;
    let browser = Browser::start().await;
    browser.log_in(&server.base, "admin", ADMIN_PASSWORD).await;
    browser.open(&server.base, "#/acme/functions/double").await;
    browser
        .until(
            "the code and its two versions",
            Duration::from_secs(5),
            "document.querySelector('#code')?.textContent.includes('doubling') && document.querySelectorAll('#versions tr').length === 2",
        )
        .await;
    browser
        .client
        .execute(
            "document.querySelector('#run textarea').value = '{\"x\": 21}';",
            vec![],
        )
        .await
        .expect("fill the input");
    browser.click("#run button[type=submit]").await;
    let output = browser
        .until(
            "the output",
            Duration::from_secs(5),
            "document.querySelector('#result:not([hidden]) #output')?.textContent",
        )
        .await;
    let output: serde_json::Value =
        serde_json::from_str(output.as_str().expect("text")).expect("JSON output");
    assert_eq!(output, json!({"y": 42}));
    assert_eq!(browser.text("#logs").await, "doubling 21");
    browser
        .until(
            "the run in the history",
            Duration::from_secs(5),
            "document.querySelectorAll('#runs tr').length === 1",
        )
        .await;
    browser.screenshot("functions").await;
    browser.close().await;
    stop(server).await;
}

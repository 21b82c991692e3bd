//! The console's Flows view (issue 16) in headless Chromium against the real binary: a flow
//! made through REST is listed with its state and size and drawn as a graph laid out left to
//! right (one box per node, one curve per connection, every connection pointing right, layers
//! by longest path); choosing a node by click or keyboard shows its configuration; Stop and
//! Start change the state REST reports; a message injected from the page runs the flow and its
//! run shows both in the view and through REST. A user with read-only flows rights sees the
//! graph with Start, Stop and Inject disabled; a loop through a delay node is drawn with its
//! closing edge going back; a missing flow is named in the error notice.

use crate::common::*;
use crate::console_support::{acme_server, blocking, stop, Browser};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

const FLOW: &str = "boiler-watch";

/// inject → switch (hot / else) and a debug tap; the hot branch runs through a change node.
/// Longest-path layers: in 0; check, seen 1; hot, cool 2; report 3.
fn flow(running: bool) -> Value {
    json!({
        "name": FLOW,
        "description": "hot readings get a topic",
        "running": running,
        "nodes": [
            {"id": "in", "type": "inject", "config": {"payload": 1}, "wires": ["check", "seen"]},
            {"id": "check", "type": "switch", "name": "hot?",
             "config": {"property": "payload", "rules": [{"op": "gt", "value": 80}, {"op": "else"}]},
             "wires": [["hot"], ["cool"]]},
            {"id": "hot", "type": "change",
             "config": {"rules": [{"action": "set", "property": "topic", "value": "plant/alarm"}]},
             "wires": ["report"]},
            {"id": "cool", "type": "debug", "config": {"label": "cool"}},
            {"id": "seen", "type": "debug"},
            {"id": "report", "type": "debug", "config": {"label": "report"}}
        ]
    })
}

const EDGES: [(&str, &str); 5] = [
    ("in", "check"),
    ("in", "seen"),
    ("check", "hot"),
    ("check", "cool"),
    ("hot", "report"),
];

fn create_flow(server: &Server, domain: &str) {
    let resp = server
        .admin_in(domain, Method::POST, "/svc/flows")
        .json(&flow(true))
        .send()
        .expect("create flow");
    json_ok(resp, StatusCode::CREATED);
}

/// `running` of the flow as REST reports it.
fn running(server: &Server, domain: &str) -> Value {
    let flows = server.get_json(domain, "/svc/flows/all");
    flows
        .as_array()
        .and_then(|all| all.iter().find(|f| f["name"] == FLOW))
        .map(|f| f["running"].clone())
        .unwrap_or_else(|| panic!("no {FLOW} in {flows}"))
}

async fn script(browser: &Browser, js: &str) -> Value {
    browser
        .client
        .execute(js, vec![])
        .await
        .unwrap_or_else(|e| panic!("{js}: {e}"))
}

async fn wait_for_graph(browser: &Browser) {
    browser
        .until(
            "the graph",
            Duration::from_secs(5),
            "document.querySelectorAll('#graph g.node').length === 6",
        )
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flow_is_drawn_left_to_right_shows_node_config_and_starts_stops_and_runs() {
    let server = Arc::new(
        blocking(|| {
            let server = Server::start();
            create_flow(&server, "domains:svc_admin");
            server
        })
        .await,
    );
    let browser = Browser::start().await;
    browser.log_in(&server.base, "admin", ADMIN_PASSWORD).await;

    // The overview lists the flow with its state and node count, and links to its graph.
    browser.open(&server.base, "#/svc_admin/flows").await;
    let row = browser
        .text(&format!("#flows tr[data-flow='{FLOW}']"))
        .await;
    assert!(row.contains("running") && row.contains('6'), "{row}");
    browser
        .click(&format!("#flows tr[data-flow='{FLOW}'] a"))
        .await;
    wait_for_graph(&browser).await;
    assert_eq!(
        script(&browser, "return location.hash;").await,
        json!(format!("#/svc_admin/flows/{FLOW}"))
    );

    // One curve per connection, between the right nodes.
    let edges = script(
        &browser,
        "return [...document.querySelectorAll('#graph path.edge')]
                 .map(p => [p.dataset.from, p.dataset.to]).sort();",
    )
    .await;
    let mut expected: Vec<Value> = EDGES.iter().map(|(a, b)| json!([a, b])).collect();
    expected.sort_by_key(|v| v.to_string());
    assert_eq!(edges, Value::Array(expected));

    // Left to right: every target starts right of its source's box; layers by longest path.
    let boxes = script(
        &browser,
        "const out = {};
         for (const g of document.querySelectorAll('#graph g.node')) {
           const r = g.querySelector('rect').getBoundingClientRect();
           out[g.dataset.id] = {left: r.left, right: r.right, top: r.top};
         }
         return out;",
    )
    .await;
    let left = |id: &str| boxes[id]["left"].as_f64().expect("left");
    for (from, to) in EDGES {
        let right = boxes[from]["right"].as_f64().expect("right");
        assert!(left(to) > right, "{to} is not right of {from}: {boxes}");
    }
    assert_eq!(left("check"), left("seen"), "{boxes}");
    assert_eq!(left("hot"), left("cool"), "{boxes}");
    assert!(left("report") > left("hot"), "{boxes}");
    // The switch's first port (hot) feeds the upper node of its two.
    assert!(
        boxes["hot"]["top"].as_f64() < boxes["cool"]["top"].as_f64(),
        "{boxes}"
    );

    // Clicking a node shows its configuration; Enter on a focused node does too.
    browser.click("#graph g.node[data-id='check']").await;
    browser
        .until(
            "the switch's config",
            Duration::from_secs(5),
            "document.querySelector('#node')?.dataset.node === 'check'",
        )
        .await;
    assert_eq!(browser.text("#node [data-key=type]").await, "switch");
    assert_eq!(browser.text("#node h2").await, "hot?");
    let rules = browser.text("#node [data-key=rules]").await;
    assert!(
        rules.contains("\"op\": \"gt\"") && rules.contains("80"),
        "{rules}"
    );
    browser
        .element("#graph g.node[data-id='hot']")
        .await
        .send_keys("\u{E007}")
        .await
        .expect("Enter on a node");
    browser
        .until(
            "the change node's config by keyboard",
            Duration::from_secs(5),
            "document.querySelector('#node')?.dataset.node === 'hot'",
        )
        .await;
    assert_eq!(browser.text("#node [data-key=type]").await, "change");
    assert!(browser
        .text("#node [data-key=rules]")
        .await
        .contains("plant/alarm"));

    // Stop, then Start: the state follows, as REST reports it.
    assert_eq!(browser.text("#state").await, "running");
    browser.click("#stop").await;
    browser
        .until(
            "the flow stopped",
            Duration::from_secs(5),
            "document.querySelector('#state').textContent === 'stopped' && !document.querySelector('#start').disabled",
        )
        .await;
    let reader = server.clone();
    let state = blocking(move || running(&reader, "domains:svc_admin")).await;
    assert_eq!(state, json!(false));
    browser.click("#start").await;
    browser
        .until(
            "the flow started",
            Duration::from_secs(5),
            "document.querySelector('#state').textContent === 'running' && document.querySelector('#start').disabled",
        )
        .await;
    let reader = server.clone();
    let state = blocking(move || running(&reader, "domains:svc_admin")).await;
    assert_eq!(state, json!(true));

    // Injecting a message runs the flow: the debug nodes' messages, and a run in both places.
    // A message that is not JSON is refused in the page, saying why.
    let input = browser.element("#inject textarea").await;
    input.clear().await.expect("clear the input");
    input.send_keys("{temp").await.expect("type the input");
    browser.click("#inject button[type=submit]").await;
    let notice = browser
        .until(
            "the error notice",
            Duration::from_secs(5),
            "!document.querySelector('.error').hidden && document.querySelector('.error').textContent",
        )
        .await;
    assert!(
        notice.as_str().is_some_and(|n| n.contains("not JSON")),
        "{notice}"
    );
    input.clear().await.expect("clear the input");
    input.send_keys("95").await.expect("type the input");
    browser.click("#inject button[type=submit]").await;
    browser
        .until(
            "the injected run's result",
            Duration::from_secs(10),
            "!document.querySelector('#result').hidden",
        )
        .await;
    let debug = browser.text("#debug").await;
    assert!(
        debug.contains("seen") && debug.contains("report") && debug.contains("plant/alarm"),
        "{debug}"
    );
    assert!(!debug.contains("cool"), "{debug}");
    let shown = browser
        .until(
            "the run in the list",
            Duration::from_secs(5),
            "document.querySelector('#runs tr')?.dataset.run",
        )
        .await;
    let reader = server.clone();
    let runs =
        blocking(move || reader.get_json("domains:svc_admin", &format!("/svc/flows/{FLOW}/runs")))
            .await;
    let runs = runs.as_array().expect("runs");
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["trigger"], "manual");
    assert_eq!(runs[0]["success"], json!(true));
    assert_eq!(shown, json!(runs[0]["id"].to_string()));
    assert!(browser.text("#runs tr").await.contains("manual"));

    browser.click("#graph g.node[data-id='check']").await;
    browser.screenshot("flows").await;
    browser.click("#theme").await;
    browser.screenshot("flows-dark").await;
    assert_eq!(
        script(&browser, "return document.querySelector('.error').hidden;").await,
        json!(true),
        "no error shown"
    );
    browser.close().await;
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_read_only_flows_rights_start_stop_and_inject_are_disabled() {
    let server = acme_server(|server| {
        create_flow(server, "domains:acme");
        // A loop through a delay node (allowed): its closing edge is drawn going back.
        let resp = server
            .admin_in("domains:acme", Method::POST, "/svc/flows")
            .json(&json!({"name": "retry", "nodes": [
                {"id": "in", "type": "inject", "wires": ["try"]},
                {"id": "try", "type": "switch", "config": {"rules": [{"op": "lt", "value": 3}, {"op": "else"}]},
                 "wires": [["again"], ["done"]]},
                {"id": "again", "type": "delay", "config": {"ms": 10}, "wires": ["try"]},
                {"id": "done", "type": "debug"}
            ]}))
            .send()
            .expect("create the looping flow");
        json_ok(resp, StatusCode::CREATED);
        server.user_with_grants("domains:acme", "flow-viewer", &[("flows", "read", "*")]);
    })
    .await;
    let browser = Browser::start().await;
    browser
        .log_in(&server.base, "flow-viewer", "flow-viewer-pw-123")
        .await;
    browser
        .open(&server.base, &format!("#/acme/flows/{FLOW}"))
        .await;
    wait_for_graph(&browser).await;
    let controls = script(
        &browser,
        "return [document.querySelector('#start').disabled,
                 document.querySelector('#stop').disabled,
                 document.querySelector('#inject button[type=submit]').disabled,
                 document.querySelector('#inject textarea').disabled];",
    )
    .await;
    assert_eq!(controls, json!([true, true, true, true]));
    // Reading still works: a node's configuration shows.
    browser.click("#graph g.node[data-id='in']").await;
    browser
        .until(
            "the inject node's config",
            Duration::from_secs(5),
            "document.querySelector('#node [data-key=type]')?.textContent === 'inject'",
        )
        .await;
    browser.screenshot("flows-read-only").await;

    browser.open(&server.base, "#/acme/flows/retry").await;
    let back = browser
        .until(
            "the looping flow's graph",
            Duration::from_secs(5),
            "document.querySelectorAll('#graph g.node').length === 4
             && [...document.querySelectorAll('#graph path.edge.back')]
                  .map(p => p.dataset.from + '>' + p.dataset.to).join()",
        )
        .await;
    assert_eq!(back, json!("again>try"));
    assert_eq!(
        script(
            &browser,
            "return document.querySelectorAll('#graph path.edge').length;"
        )
        .await,
        json!(4)
    );
    browser.screenshot("flows-loop").await;

    browser.open(&server.base, "#/acme/flows/nowhere").await;
    let notice = browser
        .until(
            "the missing flow's notice",
            Duration::from_secs(5),
            "!document.querySelector('.error').hidden && document.querySelector('.error').textContent",
        )
        .await;
    assert_eq!(
        notice,
        json!("There is no flow named nowhere in this domain.")
    );
    browser.close().await;
    stop(server).await;
}

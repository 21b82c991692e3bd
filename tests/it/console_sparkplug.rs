//! The console's live tags tree marks the folders of Sparkplug edge nodes and devices with
//! their state (headless Chromium against the real binary and Tahu's edge node): online once
//! born, offline after the node's death, as `GET /svc/sparkplug/nodes` says.

use crate::common::*;
use crate::console_support::{blocking, stop, Browser};
use crate::sparkplug::{setup, tahu, wait_value, ACME, PREFIX};
use serde_json::json;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_live_tree_shows_sparkplug_nodes_and_devices_with_their_state() {
    let (server, node) = blocking(|| {
        let server = setup();
        let node = tahu(&server, "press");
        node.send(json!({"cmd": "nbirth", "metrics": [
            {"name": "Force", "alias": 1, "type": "Double", "value": 12.5}]}));
        node.send(json!({"cmd": "dbirth", "device": "ram", "metrics": [
            {"name": "Stroke", "alias": 1, "type": "Int32", "value": 3}]}));
        wait_value(&server, ACME, &format!("{PREFIX}/press/ram/Stroke"), |v| {
            *v == json!(3)
        });
        (server, node)
    })
    .await;
    let browser = Browser::start().await;
    browser.log_in(&server.base, "admin", ADMIN_PASSWORD).await;
    browser.open(&server.base, "#/acme/tags").await;
    let badge = |folder: &str| {
        format!("document.querySelector(\"[data-folder='{folder}'] .sparkplug\")?.textContent")
    };
    let node_folder = format!("{PREFIX}/press");
    let device_folder = format!("{PREFIX}/press/ram");
    let online = browser
        .until("the node online", WAIT, &badge(&node_folder))
        .await;
    assert_eq!(online, json!("Sparkplug node online"));
    let device = browser
        .until("the device online", WAIT, &badge(&device_folder))
        .await;
    assert_eq!(device, json!("Sparkplug device online"));
    // The raw BIRTH is not shown as protobuf bytes read as text.
    let raw = browser
        .until(
            "the raw NBIRTH",
            WAIT,
            "document.querySelector(\"[data-topic='spBv1.0/Plant/NBIRTH/press'] .value\")?.textContent",
        )
        .await;
    assert_eq!(
        raw,
        json!("Sparkplug B payload (a host decodes it into its metrics' tags)")
    );
    browser.screenshot("sparkplug-live-tree").await;

    let mut node = node;
    let node = blocking(move || {
        node.kill();
        node
    })
    .await;
    let script = format!("{} === 'Sparkplug node offline'", badge(&node_folder));
    browser.until("the node offline", WAIT, &script).await;
    let script = format!("{} === 'Sparkplug device offline'", badge(&device_folder));
    browser.until("the device offline", WAIT, &script).await;
    browser.close().await;
    blocking(move || drop(node)).await;
    stop(server).await;
}

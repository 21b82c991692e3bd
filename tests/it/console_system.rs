//! The console's System page (issue 16) in headless Chromium: device, version, storage and
//! listeners as `GET /svc/` reports them, whether Python runs here inside which fences, and the
//! connected MQTT clients as `GET /svc/broker/clients` lists them, kept current while open.

use crate::common::*;
use crate::console_support::{blocking, stop, Browser};
use std::sync::Arc;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_system_page_shows_the_device_listeners_and_python() {
    let (server, info, probe) = blocking(|| {
        let server = Server::start();
        let info = server.get_json("domains:svc_admin", "/svc/");
        let probe = server.mqtt(
            MqttOpts::new(Proto::V5, Via::Tcp, "console-probe")
                .creds("admin", ADMIN_PASSWORD)
                .keep_alive(20),
        );
        (Arc::new(server), info, probe)
    })
    .await;
    let browser = Browser::start().await;
    browser.log_in(&server.base, "admin", ADMIN_PASSWORD).await;
    browser.open(&server.base, "#/svc_admin/system").await;
    browser
        .until(
            "the device facts",
            Duration::from_secs(5),
            "document.querySelector('[data-fact=Version]')?.textContent",
        )
        .await;
    assert_eq!(
        browser.text("[data-fact=Version]").await,
        info["version"].as_str().expect("version")
    );
    assert_eq!(
        browser.text("[data-fact=Device]").await,
        info["device_name"].as_str().expect("device")
    );
    let listeners = browser.text("#listeners").await;
    let mqtt_port = info["uns"]["bind"]["mqtt"]["port"].to_string();
    assert!(listeners.contains(&mqtt_port), "{listeners}");
    let python = browser.text("[data-fact=Available]").await;
    assert!(python.starts_with("yes, Python 3"), "{python}");
    let fences = browser.text("[data-fact=Fences]").await;
    assert!(
        fences.contains("filesystem") && fences.contains("network"),
        "{fences}"
    );

    // The connected client is in the table, as the API lists it.
    let probe_row = "document.querySelector('[data-client=\"console-probe\"]')";
    browser
        .until(
            "the connected client",
            Duration::from_secs(5),
            &format!("{probe_row}?.textContent"),
        )
        .await;
    let cells = browser
        .until(
            "the client's cells",
            Duration::from_secs(1),
            &format!("[...{probe_row}.cells].map((c) => c.textContent)"),
        )
        .await;
    let cells: Vec<&str> = cells
        .as_array()
        .expect("cells")
        .iter()
        .map(|c| c.as_str().expect("cell text"))
        .collect();
    let listed = blocking({
        let server = server.clone();
        move || server.get_json("domains:svc_admin", "/svc/broker/clients")
    })
    .await;
    let address = listed
        .as_array()
        .and_then(|l| l.iter().find(|c| c["client_id"] == "console-probe"))
        .and_then(|c| c["address"].as_str())
        .expect("the probe in GET /svc/broker/clients")
        .to_string();
    assert_eq!(cells[0], "console-probe", "{cells:?}");
    assert_eq!(cells[1], "admin", "{cells:?}");
    assert_eq!(cells[2], "all (administrator)", "{cells:?}");
    assert_eq!(cells[3], "MQTT 5", "{cells:?}");
    assert_eq!(cells[4], "tcp", "{cells:?}");
    assert_eq!(cells[5], address, "{cells:?}");
    assert_eq!(cells[7], "20 s", "{cells:?}");
    assert_eq!(
        cells[8], "clean start, ends with the connection",
        "{cells:?}"
    );
    assert_eq!(cells[9..], ["0", "0", "0"], "{cells:?}");

    // The table follows the broker while the page is open: a client that connects appears,
    // one that leaves goes.
    let late = blocking({
        let server = server.clone();
        move || {
            server.mqtt(
                MqttOpts::new(Proto::V3, Via::Ws("/"), "console-late")
                    .creds("admin", ADMIN_PASSWORD),
            )
        }
    })
    .await;
    browser
        .until(
            "the client that connected later",
            Duration::from_secs(6),
            "document.querySelector('[data-client=\"console-late\"]')?.cells[4].textContent === 'ws'",
        )
        .await;
    assert_eq!(browser.text("#client-count").await, "(2)");
    browser.screenshot("system").await;
    blocking(move || probe.disconnect()).await;
    browser
        .until(
            "the client that left to go",
            Duration::from_secs(6),
            &format!(
                "!{probe_row} && document.querySelector('#client-count').textContent === '(1)'"
            ),
        )
        .await;
    blocking(move || drop(late)).await;
    browser.close().await;
    stop(server).await;
}

/// The System page of a domain's user: its user manager sees the clients of the domain's users
/// only; a member without the right to see the domain's users is told so, and no list is asked
/// for (the API would refuse it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_domain_user_sees_only_the_domain_s_clients() {
    let (server, clients) = blocking(|| {
        let server = Server::start();
        server.create_domain("alpha");
        server.create_domain("beta");
        server.user_with_grants("domains:alpha", "alice", &[("users", "read", "*")]);
        server.user_with_grants("domains:beta", "bob", &[("users", "read", "*")]);
        server.user_with_grants("domains:alpha", "carol", &[("tags", "read", "*")]);
        let clients = [("alice", "alice-device"), ("bob", "bob-device")].map(|(user, id)| {
            server
                .mqtt(MqttOpts::new(Proto::V3, Via::Tcp, id).creds(user, &format!("{user}-pw-123")))
        });
        (server, clients)
    })
    .await;
    let browser = Browser::start().await;
    browser.log_in(&server.base, "alice", "alice-pw-123").await;
    browser.open(&server.base, "#/alpha/system").await;
    let row = "document.querySelector('[data-client=\"alice-device\"]')";
    browser
        .until(
            "alpha's client",
            Duration::from_secs(5),
            &format!("{row}?.textContent"),
        )
        .await;
    assert_eq!(browser.text("#client-count").await, "(1)");
    let cells = browser
        .until(
            "its cells",
            Duration::from_secs(1),
            &format!("[...{row}.cells].map((c) => c.textContent)"),
        )
        .await;
    assert_eq!(cells[1], "alice", "{cells}");
    assert_eq!(cells[2], "alpha", "{cells}");
    assert_eq!(
        browser
            .until(
                "the list",
                Duration::from_secs(1),
                "[...document.querySelectorAll('#clients tr')].length",
            )
            .await,
        1
    );

    browser.click("#logout").await;
    browser.log_in(&server.base, "carol", "carol-pw-123").await;
    browser.open(&server.base, "#/alpha/system").await;
    let note = browser
        .until(
            "the note about rights",
            Duration::from_secs(5),
            "document.querySelector('#clients')?.textContent",
        )
        .await;
    assert_eq!(
        note,
        "Seeing who is connected needs the right to read this domain's users."
    );
    assert_eq!(browser.text("#client-count").await, "");
    browser.close().await;
    blocking(move || drop(clients)).await;
    stop(server).await;
}

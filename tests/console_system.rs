//! The console's System page (issue 16) in headless Chromium: device, version, storage and
//! listeners as `GET /svc/` reports them, and whether Python runs here inside which fences.

mod common;
mod console_support;

use common::*;
use console_support::{blocking, stop, Browser};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_system_page_shows_the_device_listeners_and_python() {
    let (server, info) = blocking(|| {
        let server = Server::start();
        let info = server.get_json("domains:svc_admin", "/svc/");
        (server, info)
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
    browser.screenshot("system").await;
    browser.close().await;
    stop(server).await;
}

//! The console's Alarms pages (issue 37) in headless Chromium against the real binary: an alarm
//! raised by a value `mosquitto_pub` publishes shows in the live summary within a second (and
//! in the navigation's count); an operator holding only the `ack` action acknowledges it from
//! the page, and the journal (through the API and on the page) records who; the alarm's page
//! draws its tag's trend with the setpoint and deadband lines; the journal pages back and
//! filters as the API does; a user who may only read alarms sees every button disabled and is
//! refused when forcing the call.

use crate::alarms::{alarm, setup, ACME};
use crate::common::*;
use crate::console_support::{blocking, stop, Browser};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

const TEMP: &str = "acme/plant/temp";
const WAIT: Duration = Duration::from_secs(10);
const HOT: &str = "#summary tr[data-alarm='hot']";

/// `acme` with the historized tag `acme/plant/temp` (°C) watched by the high alarm `hot`
/// (80, deadband 2), the `ack` action known to the domain, and the users `operator` (alarms
/// `read` and `ack`) and `viewer` (alarms `read` only), both reading tags and the historian.
fn plant() -> Server {
    let server = setup();
    server.create_record(
        ACME,
        "tags",
        &json!({"path": TEMP, "historize": true, "unit": "degC"}),
    );
    alarm(
        &server,
        json!({"name": "hot", "tag": TEMP, "kind": "high", "setpoint": 80, "deadband": 2,
            "priority": "high", "description": "Oven 1 over temperature",
            "message": "{tag} is {value} {unit}, above {setpoint}"}),
    );
    let resp = server
        .admin_in(ACME, Method::POST, "/auth/permission")
        .json(&json!({"features": [{"name": "alarms", "actions": ["ack"]}]}))
        .send()
        .unwrap();
    json_ok(resp, StatusCode::OK);
    let readers = [
        ("alarms", "read", "*"),
        ("tags", "read", "*"),
        ("historian", "read", "*"),
    ];
    let mut operator = readers.to_vec();
    operator.push(("alarms", "ack", "*"));
    server.user_with_grants(ACME, "operator", &operator);
    server.user_with_grants(ACME, "viewer", &readers);
    server
}

fn journal(server: &Server, query: &str) -> Vec<Value> {
    let list = server.get_json(ACME, &format!("/svc/alarms/journal{query}"));
    list.as_array().expect("journal").clone()
}

/// The ids of the journal rows the page shows, in order.
async fn shown_ids(browser: &Browser) -> Vec<i64> {
    let ids = browser
        .client
        .execute(
            "return [...document.querySelectorAll('#journal tr[data-id]')].map(r => Number(r.dataset.id));",
            vec![],
        )
        .await
        .expect("journal ids");
    serde_json::from_value(ids).expect("ids")
}

fn ids(entries: &[Value]) -> Vec<i64> {
    entries.iter().map(|e| e["id"].as_i64().unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_raised_alarm_shows_within_a_second_and_an_operator_acknowledges_it() {
    let server = Arc::new(
        blocking(|| {
            let server = plant();
            // A few values under the setpoint first, for the trend.
            for value in ["74", "77.5", "79"] {
                server.publish_as_admin(TEMP, value);
            }
            server
        })
        .await,
    );
    let browser = Browser::start().await;
    browser
        .log_in(&server.base, "operator", "operator-pw-123")
        .await;
    browser.open(&server.base, "#/acme/alarms").await;
    browser
        .until(
            "the alarm stream",
            WAIT,
            "document.getElementById('feed-status')?.textContent === 'live'",
        )
        .await;
    assert_eq!(browser.text("#summary").await, "No alarm is standing.");
    let badge_hidden = "document.getElementById('alarm-badge').hidden";
    assert_eq!(
        browser.until("no badge", WAIT, badge_hidden).await,
        json!(true)
    );

    // Raised by the real Mosquitto client: on the page within a second.
    let publisher = server.clone();
    let started = Instant::now();
    blocking(move || publisher.publish_as_admin(TEMP, "85.5")).await;
    browser
        .until(
            "the raised alarm",
            Duration::from_secs(1),
            &format!("document.querySelector(\"{HOT}[data-state='active_unacknowledged']\")"),
        )
        .await;
    let took = started.elapsed();
    eprintln!("alarm raised by mosquitto_pub shown after {took:?}");
    assert!(took < Duration::from_secs(1), "{took:?}");
    let row = browser
        .client
        .execute(
            &format!(
                "const r = document.querySelector(\"{HOT}\");
                 return [r.className, ...[...r.cells].slice(0, 7).map(c => c.textContent)];"
            ),
            vec![],
        )
        .await
        .expect("the row");
    let row: Vec<String> = serde_json::from_value(row).expect("cells");
    assert!(row[0].contains("unack"), "{row:?}");
    assert_eq!(
        row[1..7],
        [
            "high",
            "hot",
            TEMP,
            "active, unacknowledged",
            "85.5 degC",
            "acme/plant/temp is 85.5 degC, above 80"
        ],
        "{row:?}"
    );
    let badge = browser
        .until(
            "the badge",
            WAIT,
            "!document.getElementById('alarm-badge').hidden && document.getElementById('alarm-badge').textContent",
        )
        .await;
    assert_eq!(badge, json!("1"));
    browser
        .until(
            "the raise in the page's journal",
            WAIT,
            "document.querySelector(\"#journal tr[data-state='active_unacknowledged']\")",
        )
        .await;
    browser.screenshot("alarms-summary").await;

    // Acknowledged from the page, with a comment: the state changes, the badge goes, and the
    // journal names the operator (through the API and on the page).
    browser.fill("#comment", "checked the cooler").await;
    browser
        .click("button[data-action='acknowledge'][data-alarm='hot']")
        .await;
    browser
        .until(
            "the acknowledged state",
            WAIT,
            &format!(
                "document.querySelector(\"{HOT}[data-state='active_acknowledged']:not(.unack)\")"
            ),
        )
        .await;
    browser.until("the badge gone", WAIT, badge_hidden).await;
    let reader = server.clone();
    let entries = blocking(move || journal(&reader, "?alarm=hot")).await;
    assert_eq!(entries[0]["state"], "active_acknowledged", "{entries:?}");
    assert_eq!(entries[0]["who"], "operator");
    assert_eq!(entries[0]["comment"], "checked the cooler");
    let who = browser
        .until(
            "the acknowledgement in the page's journal",
            WAIT,
            "document.querySelector(\"#journal tr[data-state='active_acknowledged'] td.who\")?.textContent",
        )
        .await;
    assert_eq!(who, json!("operator"));

    // The alarm's page: its tag's trend with the setpoint and where it clears.
    browser.open(&server.base, "#/acme/alarms/hot").await;
    browser
        .until(
            "the trend with its point and limits",
            WAIT,
            "document.querySelector('#chart .series-0')?.dataset.count >= 4
             && document.querySelector(\"#chart line[data-limit='deadband']\")",
        )
        .await;
    let drawn = browser
        .client
        .execute(
            "const limit = (k) => document.querySelector(`#chart line[data-limit='${k}']`);
             const point = [...document.querySelectorAll('#chart .series-0 circle')].at(-1);
             return [limit('setpoint').dataset.value, limit('deadband').dataset.value,
                     Number(point.getAttribute('cy')) < Number(limit('setpoint').getAttribute('y1')),
                     Number(limit('setpoint').getAttribute('y1')) < Number(limit('deadband').getAttribute('y1'))];",
            vec![],
        )
        .await
        .expect("the chart");
    // 85.5 is drawn above the setpoint (smaller y), which lies above where it clears (78).
    assert_eq!(drawn, json!(["80", "78", true, true]));
    assert_eq!(
        browser.text("dd[data-fact='state']").await,
        "active, acknowledged"
    );
    browser
        .client
        .execute(
            "document.getElementById('chart').scrollIntoView({block: 'center'});",
            vec![],
        )
        .await
        .expect("scroll to the chart");
    browser.screenshot("alarm-page").await;

    // Back under the deadband: the page follows the alarm back to normal.
    let publisher = server.clone();
    blocking(move || publisher.publish_as_admin(TEMP, "70")).await;
    browser
        .until(
            "the alarm back to normal",
            WAIT,
            "document.querySelector(\"dd[data-fact='state']\")?.textContent === 'normal'",
        )
        .await;
    browser.close().await;
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_journal_pages_back_and_filters_as_the_api_does() {
    let server = Arc::new(
        blocking(|| {
            let server = plant();
            // Raised and returned 35 times: 70 journal entries, more than a page.
            let mut plc = server.mqtt_admin(Proto::V5, Via::Tcp, "plc");
            for _ in 0..35 {
                plc.publish(TEMP, "90", 1, false);
                plc.publish(TEMP, "60", 1, false);
            }
            server.poll(WAIT, "70 journal entries", || {
                (journal(&server, "?limit=200").len() >= 70).then_some(())
            });
            server
        })
        .await,
    );
    let reader = server.clone();
    let everything = blocking(move || journal(&reader, "?limit=100")).await;
    let browser = Browser::start().await;
    browser.log_in(&server.base, "admin", ADMIN_PASSWORD).await;
    browser.open(&server.base, "#/acme/alarms").await;
    browser
        .until(
            "the first page",
            WAIT,
            "document.querySelectorAll('#journal tr[data-id]').length === 50",
        )
        .await;
    assert_eq!(shown_ids(&browser).await, ids(&everything[..50]));
    browser.click("#older").await;
    browser
        .until(
            "the second page",
            WAIT,
            "document.querySelectorAll('#journal tr[data-id]').length > 50",
        )
        .await;
    assert_eq!(shown_ids(&browser).await, ids(&everything));

    // Filtered by state: the entries the API gives for the same filter.
    browser
        .element("#journal-filter select[name=state]")
        .await
        .select_by_value("returned_unacknowledged")
        .await
        .expect("choose a state");
    browser.click("#journal-filter button[type=submit]").await;
    browser
        .until(
            "only returned entries",
            WAIT,
            "[...document.querySelectorAll('#journal tr[data-id]')].every(r => r.dataset.state === 'returned_unacknowledged')",
        )
        .await;
    let reader = server.clone();
    let returned = blocking(move || {
        journal(
            &reader,
            "?state=returned_unacknowledged&priority=high&limit=50",
        )
    })
    .await;
    browser
        .element("#journal-filter select[name=priority]")
        .await
        .select_by_value("high")
        .await
        .expect("choose a priority");
    browser.click("#journal-filter button[type=submit]").await;
    browser
        .until(
            "the filtered page",
            WAIT,
            &format!(
                "document.querySelectorAll('#journal tr[data-id]').length === {}",
                returned.len()
            ),
        )
        .await;
    assert_eq!(shown_ids(&browser).await, ids(&returned));
    // Nobody acted: filtering by a user leaves no entry.
    browser
        .fill("#journal-filter input[name=who]", "operator")
        .await;
    browser.click("#journal-filter button[type=submit]").await;
    browser
        .until(
            "no entry by operator",
            WAIT,
            "document.querySelector('#journal td.muted')?.textContent === 'No journal entries match.'",
        )
        .await;
    browser.close().await;
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_who_may_only_read_alarms_sees_the_buttons_disabled() {
    let server = Arc::new(blocking(plant).await);
    let publisher = server.clone();
    blocking(move || publisher.publish_as_admin(TEMP, "95")).await;
    let browser = Browser::start().await;
    browser
        .log_in(&server.base, "viewer", "viewer-pw-123")
        .await;
    browser.open(&server.base, "#/acme/alarms").await;
    browser
        .until(
            "the standing alarm",
            WAIT,
            &format!("document.querySelector(\"{HOT}[data-state='active_unacknowledged']\")"),
        )
        .await;
    let buttons = browser
        .client
        .execute(
            &format!(
                "return [...document.querySelectorAll(\"{HOT} button\")].map(b => [b.dataset.action, b.disabled]);"
            ),
            vec![],
        )
        .await
        .expect("buttons");
    assert_eq!(
        buttons,
        json!([
            ["acknowledge", true],
            ["shelve", true],
            ["out-of-service", true]
        ])
    );
    let note = browser.text("#rights-note").await;
    assert!(note.contains("“ack” or “read-write”"), "{note}");
    browser.screenshot("alarms-read-only").await;
    // Forcing the call from the page is refused by the server.
    let status = browser
        .client
        .execute_async(
            "const done = arguments[arguments.length - 1];
             fetch('/svc/alarms/acknowledge', {method: 'POST', headers: {
                 'Authorization': 'Bearer ' + sessionStorage.getItem('svc.token'),
                 'Domain': 'domains:acme', 'Content-Type': 'application/json'},
               body: JSON.stringify({alarm: 'hot'})})
             .then(r => done(r.status));",
            vec![],
        )
        .await
        .expect("forced acknowledge");
    assert_eq!(status, json!(401));
    // The alarm's own page too.
    browser.open(&server.base, "#/acme/alarms/hot").await;
    let disabled = browser
        .until(
            "the alarm page's buttons",
            WAIT,
            "[...document.querySelectorAll('#alarm-actions button')].length === 3
             && [...document.querySelectorAll('#alarm-actions button')].every(b => b.disabled)",
        )
        .await;
    assert_eq!(disabled, json!(true));
    browser.close().await;
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_alarm_is_shelved_with_a_reason_and_taken_out_of_service_from_the_page() {
    let server = Arc::new(blocking(plant).await);
    let publisher = server.clone();
    blocking(move || publisher.publish_as_admin(TEMP, "88")).await;
    let browser = Browser::start().await;
    browser
        .log_in(&server.base, "operator", "operator-pw-123")
        .await;
    browser.open(&server.base, "#/acme/alarms").await;
    let state = |wanted: &str| format!("document.querySelector(\"{HOT}[data-state='{wanted}']\")");
    browser
        .until("the alarm", WAIT, &state("active_unacknowledged"))
        .await;

    // Shelved for 2 hours with a reason: the row says until when, by whom and why.
    browser
        .click("button[data-action='shelve'][data-alarm='hot']")
        .await;
    browser
        .fill("#shelve-form input[name=reason]", "sensor swap")
        .await;
    let duration = browser.element("#shelve-form input[name=duration]").await;
    duration.clear().await.expect("clear the duration");
    duration.send_keys("2h").await.expect("type a duration");
    browser.click("#shelve-form button[type=submit]").await;
    browser.until("shelved", WAIT, &state("shelved")).await;
    let text = browser
        .until(
            "the shelve's details",
            WAIT,
            &format!(
                "(t => t.includes('by operator') && t)(document.querySelector(\"{HOT} td.state\").textContent)"
            ),
        )
        .await;
    let text = text.as_str().unwrap_or_default().to_string();
    assert!(
        text.starts_with("shelved until") && text.ends_with("by operator: sensor swap"),
        "{text}"
    );
    let reader = server.clone();
    let stored = blocking(move || reader.get_json(ACME, "/svc/alarms/active")).await;
    let until = stored[0]["shelved"]["until"].as_str().unwrap().to_string();
    let left = chrono::DateTime::parse_from_rfc3339(&until)
        .unwrap()
        .to_utc()
        - chrono::Utc::now();
    assert!(
        left > chrono::Duration::minutes(119) && left <= chrono::Duration::minutes(120),
        "{until}"
    );
    assert!(browser.text("#shelve-form").await.is_empty(), "form closed");

    // Unshelved: raised again, unacknowledged (the condition still holds).
    browser
        .click("button[data-action='unshelve'][data-alarm='hot']")
        .await;
    browser
        .until("unshelved", WAIT, &state("active_unacknowledged"))
        .await;

    // Out of service after confirming, then back in service.
    browser
        .click("button[data-action='out-of-service'][data-alarm='hot']")
        .await;
    browser
        .client
        .accept_alert()
        .await
        .expect("confirm out of service");
    browser
        .until("out of service", WAIT, &state("out_of_service"))
        .await;
    browser.screenshot("alarms-out-of-service").await;
    browser
        .click("button[data-action='in-service'][data-alarm='hot']")
        .await;
    browser
        .until("in service again", WAIT, &state("active_unacknowledged"))
        .await;
    // The page shows the new state from the alarm's live event, which may come a moment
    // before the journal's row is committed: wait for the fourth row.
    let reader = server.clone();
    let causes: Vec<String> = blocking(move || {
        reader.poll(WAIT, "the operator's four journal rows", || {
            let causes: Vec<String> = journal(&reader, "?who=operator")
                .iter()
                .map(|e| e["cause"].as_str().unwrap().to_string())
                .collect();
            (causes.len() >= 4).then_some(causes)
        })
    })
    .await;
    assert_eq!(
        causes,
        ["in-service", "out-of-service", "unshelve", "shelve"],
        "newest first"
    );
    browser.close().await;
    stop(server).await;
}

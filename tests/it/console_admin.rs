//! The console's Administration pages (issue 16) in headless Chromium against the real binary:
//! an administrator creates a user and a group, adds the user to the group and grants it a
//! permission, each confirmed through REST and by the new user logging in; deletes the user and
//! the API refuses its login; creates a domain. An upstream pointing where nothing listens shows
//! its live status as REST reports it, following the connect/disconnect switch whether it is
//! flipped in the console or through REST; its password is never shown. A user without rights
//! sees every administration control disabled, the server's refusal where a list was refused,
//! and the API refuses a forced call.

use crate::common::*;
use crate::console_support::{blocking, stop, Browser};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(5);

/// Replaces the text of the input `css`.
async fn set(browser: &Browser, css: &str, text: &str) {
    let input = browser.element(css).await;
    input.clear().await.expect("clear");
    input.send_keys(text).await.expect("type");
}

/// Chooses the option labelled `label` of the select `css`.
async fn choose(browser: &Browser, css: &str, label: &str) {
    browser
        .element(css)
        .await
        .select_by_label(label)
        .await
        .unwrap_or_else(|e| panic!("option `{label}` of `{css}`: {e}"));
}

/// `GET path` as admin in `acme`, off the async threads.
async fn admin_get(server: &Arc<Server>, path: &'static str) -> Value {
    let server = server.clone();
    blocking(move || server.get_json("domains:acme", path)).await
}

/// `POST /auth/login`'s status for `username`.
async fn login_status(
    server: &Arc<Server>,
    username: &'static str,
    password: &'static str,
) -> StatusCode {
    let server = server.clone();
    blocking(move || {
        server
            .req(Method::POST, "/auth/login")
            .json(&json!({"username": username, "password": password}))
            .send()
            .expect("login")
            .status()
    })
    .await
}

fn acme_server() -> Arc<Server> {
    let server = Server::start();
    server.create_domain("acme");
    Arc::new(server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_administrator_manages_users_groups_and_domains_in_the_console() {
    let server = blocking(acme_server).await;
    let browser = Browser::start().await;
    browser.log_in(&server.base, "admin", ADMIN_PASSWORD).await;

    // A user, created in the console, exists for REST and is no administrator.
    browser.open(&server.base, "#/acme/admin/users").await;
    browser.element("tr[data-user=admin]").await;
    browser
        .fill("#create-user input[name=username]", "olga")
        .await;
    browser
        .fill("#create-user input[name=password]", "olga-pw-1234")
        .await;
    browser.click("#create-user button[type=submit]").await;
    browser.element("tr[data-user=olga]").await;
    let users = admin_get(&server, "/auth/user").await;
    let olga = users
        .as_array()
        .and_then(|all| all.iter().find(|u| u["username"] == "olga"))
        .unwrap_or_else(|| panic!("olga in {users}"))
        .clone();
    assert_eq!(olga["admin"], false, "{olga}");
    let olga_id = olga["id"].as_str().expect("user id").to_string();
    // Nobody deletes themselves: the administrator's own row offers no delete.
    let own = browser
        .until(
            "the rows",
            WAIT,
            "document.querySelector('button[data-delete=admin]')?.disabled",
        )
        .await;
    assert_eq!(own, json!(true));
    browser.screenshot("admin-users").await;

    // A group, created in the console, gets the user and a grant.
    browser.open(&server.base, "#/acme/admin/groups").await;
    browser
        .fill("#create-group input[name=name]", "operators")
        .await;
    browser.click("#create-group button[type=submit]").await;
    let card = "[data-group=operators]";
    browser.element(card).await;
    choose(&browser, &format!("{card} select[name=user]"), "olga").await;
    browser.click(&format!("{card} .add-member button")).await;
    browser
        .until(
            "olga among the members",
            WAIT,
            "document.querySelector('[data-group=operators] .members')?.textContent.includes('olga')",
        )
        .await;
    set(&browser, &format!("{card} input[name=feature]"), "tags").await;
    set(
        &browser,
        &format!("{card} input[name=action]"),
        "read-write",
    )
    .await;
    browser.click(&format!("{card} .grant button")).await;
    browser
        .until(
            "the grant listed",
            WAIT,
            "document.querySelector('[data-group=operators] .grants tbody')?.textContent.includes('read-write')",
        )
        .await;
    browser.screenshot("admin-groups").await;
    let groups = admin_get(&server, "/auth/group").await;
    let operators = groups
        .as_array()
        .and_then(|all| all.iter().find(|g| g["name"] == "operators"))
        .unwrap_or_else(|| panic!("operators in {groups}"))
        .clone();
    assert_eq!(operators["user_ids"], json!([olga_id]), "{operators}");
    assert_eq!(
        operators["grants"],
        json!([{"feature": "tags", "action": "read-write", "scope": "*"}]),
        "{operators}"
    );

    // The new user logs in and holds what the group grants.
    let rights = {
        let server = server.clone();
        blocking(move || {
            let token = server.login("olga", "olga-pw-1234");
            let resp = server
                .with_token_in(&token, "domains:acme", Method::GET, "/auth/permission")
                .send()
                .expect("permission");
            json_ok(resp, StatusCode::OK)
        })
        .await
    };
    assert_eq!(
        rights["permissions"],
        json!([{"name": "tags", "action": "read-write", "scope": "*"}]),
        "{rights}"
    );

    // Deleted in the console (after confirming): the API refuses its login.
    browser.open(&server.base, "#/acme/admin/users").await;
    browser
        .until(
            "olga listed in her group",
            WAIT,
            "document.querySelector('tr[data-user=olga]')?.textContent.includes('operators')",
        )
        .await;
    browser.click("button[data-delete=olga]").await;
    browser
        .client
        .accept_alert()
        .await
        .expect("confirm the deletion");
    browser
        .until(
            "olga gone from the list",
            WAIT,
            "document.querySelector('tr[data-user=admin]') && !document.querySelector('tr[data-user=olga]')",
        )
        .await;
    assert_eq!(
        login_status(&server, "olga", "olga-pw-1234").await,
        StatusCode::UNAUTHORIZED
    );

    // A domain created in the console is one REST lists; a second time, the server's sentence.
    browser.open(&server.base, "#/acme/admin/domains").await;
    browser.element("tr[data-domain=acme]").await;
    for _ in 0..2 {
        browser
            .fill("#create-domain input[name=name]", "beta")
            .await;
        browser.click("#create-domain button[type=submit]").await;
        browser.element("tr[data-domain=beta]").await;
    }
    let refusal = browser
        .until(
            "the refusal of a duplicate",
            WAIT,
            "document.querySelector('.admin-section .error:not([hidden])')?.textContent",
        )
        .await;
    assert!(
        refusal
            .as_str()
            .is_some_and(|s| s.contains("beta") && s.contains("exists")),
        "{refusal}"
    );
    let domains = admin_get(&server, "/auth/domains").await;
    assert!(
        domains
            .as_array()
            .is_some_and(|all| all.iter().any(|d| d["name"] == "beta")),
        "{domains}"
    );
    browser.close().await;
    stop(server).await;
}

/// The state the console shows for `corp` once it equals what REST reports (`None`: any).
/// Which upstream state a test waits for: exactly one, or any but one (a switch just clicked
/// leaves the old state shown until its request returns, so "any" would pass too early).
#[derive(Debug, Clone, Copy)]
enum Want<'a> {
    Is(&'a str),
    Not(&'a str),
}

impl Want<'_> {
    fn accepts(self, state: &Value) -> bool {
        match (self, state.as_str()) {
            (Want::Is(want), Some(state)) => state == want,
            (Want::Not(unwanted), Some(state)) => state != unwanted,
            (_, None) => false,
        }
    }
}

async fn shown_state(browser: &Browser, server: &Arc<Server>, want: Want<'_>) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let shown = browser
            .client
            .execute(
                "return document.querySelector('tr[data-upstream=corp] td.upstream-state')?.dataset.state ?? null;",
                vec![],
            )
            .await
            .expect("read the state");
        let reported = admin_get(server, "/svc/upstreams/status").await;
        let rest = reported[0]["state"].clone();
        if shown == rest && want.accepts(&rest) {
            return rest.as_str().expect("state").to_string();
        }
        if std::time::Instant::now() > deadline {
            browser.screenshot("failed-upstream-state").await;
            panic!("the console shows {shown}, REST says {rest}, wanted {want:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upstream_shows_its_live_status_and_follows_its_switch() {
    let server = blocking(acme_server).await;
    // A port where nothing listens: taken, then given back.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let browser = Browser::start().await;
    browser.log_in(&server.base, "admin", ADMIN_PASSWORD).await;
    browser.open(&server.base, "#/acme/admin/upstreams").await;
    let form = "#upstream-form";
    browser
        .fill(&format!("{form} input[name=name]"), "corp")
        .await;
    browser
        .fill(&format!("{form} input[name=host]"), "127.0.0.1")
        .await;
    browser
        .fill(&format!("{form} input[name=port]"), &port.to_string())
        .await;
    browser
        .fill(&format!("{form} input[name=username]"), "edge")
        .await;
    browser
        .fill(
            &format!("{form} input[name=password]"),
            "upstream-secret-pw",
        )
        .await;
    browser.click(&format!("{form} button[type=submit]")).await;
    browser.element("tr[data-upstream=corp]").await;
    let record = admin_get(&server, "/svc/upstreams/all").await;
    assert_eq!(record[0]["port"], json!(port), "{record}");
    assert_eq!(record[0]["password_set"], true, "{record}");

    // Nothing listens: the link waits to try again, shown with its cause as REST says.
    shown_state(&browser, &server, Want::Is("backoff")).await;
    let cause = browser
        .text("tr[data-upstream=corp] td.upstream-error")
        .await;
    assert!(
        cause.starts_with("tcp:") && cause.contains("(retry "),
        "{cause}"
    );
    browser.screenshot("admin-upstreams").await;

    // The switch in the console: off, then on again.
    browser.click("button[data-switch=corp]").await;
    shown_state(&browser, &server, Want::Is("disabled")).await;
    assert_eq!(
        admin_get(&server, "/svc/upstreams/all").await[0]["enabled"],
        false
    );
    assert_eq!(browser.text("button[data-switch=corp]").await, "Connect");
    browser.click("button[data-switch=corp]").await;
    shown_state(&browser, &server, Want::Not("disabled")).await;

    // Switched off through REST, the open page follows by itself.
    {
        let server = server.clone();
        let id = record[0]["id"].as_str().expect("id").to_string();
        blocking(move || {
            let path = format!("/svc/upstreams/{}/disconnect", enc(&id));
            let resp = server
                .admin_in("domains:acme", Method::POST, &path)
                .send()
                .expect("disconnect");
            json_ok(resp, StatusCode::OK);
        })
        .await;
    }
    shown_state(&browser, &server, Want::Is("disabled")).await;

    // The test of the stored upstream says why it cannot be reached, in the server's words.
    browser.click("button[data-test=corp]").await;
    let refusal = browser
        .until(
            "the test's refusal",
            Duration::from_secs(15),
            "document.querySelector('.admin-section .error:not([hidden])')?.textContent",
        )
        .await;
    assert!(refusal.as_str().is_some_and(|s| !s.is_empty()), "{refusal}");

    // Editing shows no password, and a save without one keeps it.
    browser.click("button[data-edit=corp]").await;
    let password = browser
        .element(&format!("{form} input[name=password]"))
        .await;
    assert_eq!(
        password.prop("value").await.expect("value"),
        Some(String::new())
    );
    browser
        .fill(
            &format!("{form} input[name=description]"),
            "corporate broker",
        )
        .await;
    browser.click(&format!("{form} button[type=submit]")).await;
    browser
        .until(
            "the form back to a new upstream",
            WAIT,
            "document.querySelector('#upstream-form').dataset.editing === ''",
        )
        .await;
    let stored = admin_get(&server, "/svc/upstreams/all").await;
    assert_eq!(stored[0]["description"], "corporate broker", "{stored}");
    assert_eq!(stored[0]["password_set"], true, "{stored}");
    let page = browser.text("main").await;
    assert!(!page.contains("upstream-secret-pw"), "{page}");
    browser.close().await;
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_without_rights_sees_no_admin_actions_and_is_refused() {
    let (server, upstream_id) = blocking(|| {
        let server = acme_server();
        server.user_with_grants(
            "domains:acme",
            "viewer",
            &[("tags", "read", "*"), ("upstreams", "read", "*")],
        );
        let created = server.create_record(
            "domains:acme",
            "upstreams",
            &json!({"name": "corp", "host": "127.0.0.1", "port": 9, "enabled": false}),
        );
        let id = created["id"].as_str().expect("id").to_string();
        (server, id)
    })
    .await;
    let browser = Browser::start().await;
    browser
        .log_in(&server.base, "viewer", "viewer-pw-123")
        .await;
    let disabled = |form: &str| {
        format!(
            "[...document.querySelectorAll('{form} button, {form} input')].length > 0 && \
             [...document.querySelectorAll('{form} button, {form} input')].every(c => c.disabled)"
        )
    };
    let refusal = "document.querySelector('.admin-section .error:not([hidden])')?.textContent";
    for (section, form, needle) in [
        ("users", "#create-user", "not allowed to read users"),
        ("groups", "#create-group", "not allowed to read groups"),
        ("domains", "#create-domain", "administrator"),
    ] {
        browser
            .open(&server.base, &format!("#/acme/admin/{section}"))
            .await;
        browser
            .until(
                &format!("{section} controls disabled"),
                WAIT,
                &disabled(form),
            )
            .await;
        let said = browser
            .until(&format!("{section} refused"), WAIT, refusal)
            .await;
        assert!(
            said.as_str().is_some_and(|s| s.contains(needle)),
            "{section}: {said}"
        );
    }
    // Upstreams are listed (read) but every control is disabled.
    browser.open(&server.base, "#/acme/admin/upstreams").await;
    browser
        .until(
            "the upstream's status",
            WAIT,
            "document.querySelector('tr[data-upstream=corp] td.upstream-state')?.dataset.state === 'disabled'",
        )
        .await;
    browser
        .until("upstream controls disabled", WAIT, &disabled("main"))
        .await;

    // Forced calls: the API refuses them (401 is the contract's "action not allowed").
    let statuses = blocking(move || {
        let token = server.login("viewer", "viewer-pw-123");
        let call = |method: Method, path: String, body: Value| {
            server
                .with_token_in(&token, "domains:acme", method, &path)
                .json(&body)
                .send()
                .expect("forced call")
        };
        let refused = [
            call(
                Method::POST,
                "/auth/user".into(),
                json!({"username": "x", "password": "x-pw-12345"}),
            ),
            call(Method::POST, "/auth/group".into(), json!({"name": "x"})),
            call(Method::POST, "/auth/domains".into(), json!({"name": "x"})),
            call(
                Method::POST,
                format!("/svc/upstreams/{}/connect", enc(&upstream_id)),
                Value::Null,
            ),
        ]
        .into_iter()
        .map(|resp| resp.status())
        .collect::<Vec<_>>();
        (server, refused)
    })
    .await;
    let (server, refused) = statuses;
    assert_eq!(refused, vec![StatusCode::UNAUTHORIZED; 4]);
    browser.close().await;
    stop(server).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grants_members_and_groups_are_removed_in_the_console() {
    let server = blocking(acme_server).await;
    let setup = server.clone();
    blocking(move || {
        let uid = setup.create_user("piet", "piet-pw-1234");
        let gid = setup.create_group_with_grants(
            "domains:acme",
            "shift",
            &[("tags", "read", "*"), ("historian", "read", "*")],
        );
        setup.add_user_to_group("domains:acme", &gid, &uid);
    })
    .await;
    let browser = Browser::start().await;
    browser.log_in(&server.base, "admin", ADMIN_PASSWORD).await;
    browser.open(&server.base, "#/acme/admin/groups").await;
    let card = "[data-group=shift]";
    browser
        .click(&format!("{card} tr[data-grant='tags * read'] button"))
        .await;
    browser
        .client
        .accept_alert()
        .await
        .expect("confirm the revoke");
    browser
        .until(
            "the grant gone",
            WAIT,
            "!document.querySelector(\"[data-group=shift] tr[data-grant='tags * read']\")",
        )
        .await;
    let groups = admin_get(&server, "/auth/group").await;
    assert_eq!(
        groups[0]["grants"],
        json!([{"feature": "historian", "action": "read", "scope": "*"}]),
        "{groups}"
    );
    browser
        .click(&format!("{card} tr[data-member=piet] button"))
        .await;
    browser
        .client
        .accept_alert()
        .await
        .expect("confirm the removal");
    browser
        .until(
            "piet out of the group",
            WAIT,
            "!document.querySelector('[data-group=shift] tr[data-member=piet]')",
        )
        .await;
    assert_eq!(
        admin_get(&server, "/auth/group").await[0]["user_ids"],
        json!([])
    );
    browser.click(&format!("{card} button")).await;
    browser
        .client
        .accept_alert()
        .await
        .expect("confirm the deletion");
    browser
        .until(
            "the group gone",
            WAIT,
            "!document.querySelector('[data-group=shift]')",
        )
        .await;
    assert_eq!(admin_get(&server, "/auth/group").await, json!([]));
    browser.close().await;
    stop(server).await;
}

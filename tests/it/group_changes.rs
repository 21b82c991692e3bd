//! Changing and removing groups: replacing a group's grants revokes what was left out at once,
//! taking a member out or deleting the group ends the member's rights, and each refuses what
//! does not exist, a malformed body, and a caller without the `groups` right.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::json;

const ACME: &str = "domains:acme";

/// Whether the holder of `token` may list the domain's tags.
fn reads_tags(server: &Server, token: &str) -> bool {
    let resp = server
        .with_token_in(token, ACME, Method::GET, "/svc/tag/list")
        .send()
        .expect("tag list");
    resp.status() == StatusCode::OK
}

fn group_path(gid: &str) -> String {
    format!("/auth/group/{}", enc(gid))
}

#[test]
fn grants_are_replaced_members_removed_and_groups_deleted() {
    let server = Server::start();
    server.create_domain("acme");
    let uid = server.create_user("olga", "olga-pw-123");
    let gid = server.create_group_with_grants(ACME, "operators", &[("tags", "read", "*")]);
    server.add_user_to_group(ACME, &gid, &uid);
    let token = server.login("olga", "olga-pw-123");
    assert!(reads_tags(&server, &token));

    // Replacing the grants with none revokes the read at once; giving it back restores it.
    let put = |body: serde_json::Value| {
        server
            .admin_in(ACME, Method::PUT, &group_path(&gid))
            .json(&body)
            .send()
            .expect("put grants")
    };
    assert_eq!(
        json_ok(put(json!({"grants": []})), StatusCode::OK),
        json!({"success": true})
    );
    assert!(!reads_tags(&server, &token));
    let groups = server.get_json(ACME, "/auth/group");
    assert_eq!(groups[0]["grants"], json!([]), "{groups}");
    let sdk_form = json!({"features": [{"name": "tags", "action": "read", "scope": "*"}]});
    json_ok(put(sdk_form), StatusCode::OK);
    assert!(reads_tags(&server, &token));
    assert_error(
        put(json!({"grants": [{"feature": "", "action": "read", "scope": "*"}]})),
        StatusCode::BAD_REQUEST,
        &[],
    );
    assert_error(put(json!({"grant": []})), StatusCode::BAD_REQUEST, &[]);
    assert!(
        reads_tags(&server, &token),
        "a refused change changes nothing"
    );

    // Taking the member out ends her rights; a second time there is nothing to take out.
    let member = format!("{}/user/{}", group_path(&gid), enc(&uid));
    let resp = server
        .admin_in(ACME, Method::DELETE, &member)
        .send()
        .expect("remove");
    assert_eq!(json_ok(resp, StatusCode::OK), json!({"success": true}));
    assert!(!reads_tags(&server, &token));
    let resp = server
        .admin_in(ACME, Method::DELETE, &member)
        .send()
        .expect("again");
    assert_error(resp, StatusCode::NOT_FOUND, &["member"]);

    // Deleting the group removes it and its memberships.
    server.add_user_to_group(ACME, &gid, &uid);
    assert!(reads_tags(&server, &token));
    let resp = server
        .admin_in(ACME, Method::DELETE, &group_path(&gid))
        .send()
        .expect("delete");
    assert_eq!(json_ok(resp, StatusCode::OK), json!({"success": true}));
    assert!(!reads_tags(&server, &token));
    assert_eq!(server.get_json(ACME, "/auth/group"), json!([]));
    let resp = server
        .admin_in(ACME, Method::DELETE, &group_path(&gid))
        .send()
        .expect("gone");
    assert_error(resp, StatusCode::NOT_FOUND, &["group"]);
    assert_error(
        put(json!({"grants": []})),
        StatusCode::NOT_FOUND,
        &["group"],
    );
}

#[test]
fn changing_groups_needs_the_groups_right_in_that_domain() {
    let server = Server::start();
    server.create_domain("acme");
    server.create_domain("beta");
    let gid = server.create_group_with_grants(ACME, "operators", &[("tags", "read", "*")]);
    let viewer = server.user_with_grants(ACME, "viewer", &[("groups", "read", "*")]);
    let resp = server
        .with_token_in(&viewer, ACME, Method::DELETE, &group_path(&gid))
        .send()
        .expect("refused");
    assert_error(resp, StatusCode::UNAUTHORIZED, &["groups"]);
    // Another domain's group is not reachable from this one, even by an administrator.
    let resp = server
        .admin_in("domains:beta", Method::DELETE, &group_path(&gid))
        .send()
        .expect("other domain");
    assert!(resp.status().is_client_error(), "{}", resp.status());
    assert_eq!(
        server
            .get_json(ACME, "/auth/group")
            .as_array()
            .map(Vec::len),
        Some(2)
    );
}

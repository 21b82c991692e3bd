//! The platform SDK's auth calls against a running `svc serve`: permission checks and the
//! caller's effective permissions, grants added to a group, users with their profile fields,
//! groups with `features` and `user_ids`, and the permission features that govern user and group
//! administration (each boundary shown).

use crate::common::*;
use reqwest::blocking::Response;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

const ACME: &str = "domains:acme";
const BETA: &str = "domains:beta";

fn server() -> Server {
    let server = Server::start();
    server.create_domain("acme");
    server.create_domain("beta");
    server
}

fn get(server: &Server, token: &str, domain: &str, path: &str) -> Response {
    server
        .with_token_in(token, domain, Method::GET, path)
        .send()
        .expect("GET")
}

fn post(server: &Server, token: &str, domain: &str, path: &str, body: Value) -> Response {
    server
        .with_token_in(token, domain, Method::POST, path)
        .json(&body)
        .send()
        .expect("POST")
}

#[test]
fn permission_checks_in_the_sdk_shapes_under_both_prefixes() {
    let s = server();
    let reader = s.user_with_grants(
        ACME,
        "reader",
        &[
            ("collections", "read", "products"),
            ("historian", "read-write", "*"),
        ],
    );
    for prefix in ["/auth", "/svc/auth"] {
        let check = |token: &str, rest: &str| {
            json_ok(
                get(
                    &s,
                    token,
                    ACME,
                    &format!("{prefix}/permission/check/{rest}"),
                ),
                StatusCode::OK,
            )
        };
        let yes = json!({"success": true, "permission": true});
        let no = json!({"success": true, "permission": false});
        assert_eq!(
            check(&reader, "feature/collections/scope/products/action/read"),
            yes
        );
        assert_eq!(
            check(
                &reader,
                "feature/collections/scope/products/action/read-write"
            ),
            no
        );
        assert_eq!(
            check(&reader, "feature/collections/scope/orders/action/read"),
            no
        );
        // Without a scope: the domain scope, held only by grants on `*`.
        assert_eq!(
            check(&reader, "feature/historian/action/read"),
            yes,
            "read-write implies read"
        );
        assert_eq!(check(&reader, "feature/collections/action/read"), no);
        let admin = s.admin_token();
        assert_eq!(
            check(&admin, "feature/anything/scope/x/action/read-write"),
            yes
        );

        let actions = json_ok(
            get(
                &s,
                &reader,
                ACME,
                &format!("{prefix}/permission/action/feature/historian"),
            ),
            StatusCode::OK,
        );
        assert_eq!(actions, json!({"actions": ["read", "read-write"]}));
        // In another domain the same user holds nothing.
        assert_eq!(
            json_ok(
                get(
                    &s,
                    &reader,
                    BETA,
                    &format!("{prefix}/permission/check/feature/historian/action/read")
                ),
                StatusCode::OK
            ),
            no
        );
    }
    let resp = s
        .req(Method::GET, "/auth/permission/check/feature/x/action/read")
        .send()
        .unwrap();
    assert_error(resp, StatusCode::UNAUTHORIZED, &[]);
}

#[test]
fn effective_permissions_and_grants_added_to_a_group() {
    let s = server();
    let admin = s.admin_token();
    let gid = s.create_group_with_grants(ACME, "ops", &[("tags", "read", "*")]);
    let uid = s.create_user("op", "op-password-1");
    s.add_user_to_group(ACME, &gid, &uid);
    let op = s.login("op", "op-password-1");

    let mine = json_ok(get(&s, &op, ACME, "/svc/auth/permission"), StatusCode::OK);
    assert_eq!(
        mine,
        json!({"permissions": [{"name": "tags", "action": "read", "scope": "*"}]})
    );

    let added = post(
        &s,
        &admin,
        ACME,
        "/auth/permission",
        json!({"group_id": gid, "permissions": [
            {"name": "historian", "action": "read", "scope": "*"},
            {"name": "tags", "action": "read", "scope": "*"}
        ]}),
    );
    assert_eq!(json_ok(added, StatusCode::OK), json!({"success": true}));
    let mine = json_ok(get(&s, &op, ACME, "/auth/permission"), StatusCode::OK);
    assert_eq!(
        mine["permissions"],
        json!([
            {"name": "historian", "action": "read", "scope": "*"},
            {"name": "tags", "action": "read", "scope": "*"}
        ])
    );
    // The interface's import form still works; an unknown custom action in a grant is refused.
    let import = post(
        &s,
        &admin,
        ACME,
        "/auth/permission",
        json!({"features": [{"name": "reports", "actions": ["export"]}], "scopes": ["line1"]}),
    );
    assert_eq!(json_ok(import, StatusCode::OK), json!({"success": true}));
    let bad = post(
        &s,
        &admin,
        ACME,
        "/auth/permission",
        json!({"group_id": gid, "permissions": [{"name": "reports", "action": "print", "scope": "*"}]}),
    );
    assert_error(bad, StatusCode::BAD_REQUEST, &["print"]);
    let beta_group = post(
        &s,
        &admin,
        BETA,
        "/auth/permission",
        json!({"group_id": gid, "permissions": [{"name": "tags", "action": "read", "scope": "*"}]}),
    );
    assert_error(beta_group, StatusCode::NOT_FOUND, &[]);

    // An administrator holds every action of every known feature.
    let all = json_ok(get(&s, &admin, ACME, "/auth/permission"), StatusCode::OK);
    let all = all["permissions"].as_array().unwrap();
    for (name, action) in [
        ("users", "read-write"),
        ("reports", "export"),
        ("collections", "read"),
        ("processes", "read-write"),
        ("flows", "read-write"),
        ("namespace", "read-write"),
        ("upstreams", "read-write"),
    ] {
        assert!(
            all.contains(&json!({"name": name, "action": action, "scope": "*"})),
            "{name} {action}: {all:?}"
        );
    }
}

#[test]
fn users_carry_the_sdk_profile_and_groups_their_features_and_members() {
    let s = server();
    let admin = s.admin_token();
    let group = post(
        &s,
        &admin,
        ACME,
        "/auth/group",
        json!({
            "name": "operators",
            "features": [{"name": "tags", "action": "read-write", "scope": "*"}]
        }),
    );
    let group = json_ok(group, StatusCode::CREATED);
    let gid = group["id"].as_str().unwrap().to_string();
    assert_eq!(
        group["features"],
        json!([{"name": "tags", "action": "read-write", "domain": "domains:acme", "scope": "*"}])
    );
    let created = post(
        &s,
        &admin,
        ACME,
        "/auth/user",
        json!({
            "username": "ana", "password": "ana-password-1", "firstName": "Ana", "lastName": "Silva",
            "email": "ana@plant.example.com", "number": "+351 210 000 000", "userImage": "ana.png",
            "group_ids": [gid]
        }),
    );
    let created = json_ok(created, StatusCode::CREATED);
    let uid = created["id"].as_str().unwrap().to_string();
    for user in [
        created.clone(),
        json_ok(
            get(&s, &admin, ACME, &format!("/auth/user/{}", enc(&uid))),
            StatusCode::OK,
        ),
        json_ok(
            get(&s, &s.login("ana", "ana-password-1"), ACME, "/auth/me"),
            StatusCode::OK,
        ),
    ] {
        assert_eq!(user["firstName"], "Ana");
        assert_eq!(user["lastName"], "Silva");
        assert_eq!(user["username"], "ana");
        assert_eq!(user["email"], "ana@plant.example.com");
        assert_eq!(user["number"], "+351 210 000 000");
        assert_eq!(user["userImage"], "ana.png");
        assert_eq!(user["group_ids"], json!([gid]));
        assert_eq!(user["createdDt"], user["created_dt"]);
        let text = user.to_string();
        assert!(
            !text.contains("password") && !text.contains("ana-password"),
            "{text}"
        );
    }
    let groups = json_ok(get(&s, &admin, ACME, "/auth/group"), StatusCode::OK);
    assert_eq!(groups[0]["user_ids"], json!([uid]));

    for (body, needle) in [
        (
            json!({"username": "x1", "password": "password-1", "email": "not-an-address"}),
            "email",
        ),
        (
            json!({"username": "x2", "password": "password-1", "email": "a@b"}),
            "email",
        ),
        (
            json!({"username": "x3", "password": "password-1", "group_ids": ["acme.products:p1"]}),
            "group",
        ),
        (
            json!({"username": "x4", "password": "password-1", "group_ids": ["acme.groups:nope"]}),
            "no group",
        ),
    ] {
        assert_error(
            post(&s, &admin, ACME, "/auth/user", body),
            StatusCode::BAD_REQUEST,
            &[needle],
        );
    }
}

#[test]
fn the_users_and_groups_features_govern_administration_and_nothing_else() {
    let s = server();
    let admin = s.admin_token();
    let acme_ops = s.create_group_with_grants(ACME, "ops", &[("tags", "read", "*")]);
    let beta_ops = s.create_group_with_grants(BETA, "ops", &[("tags", "read", "*")]);
    let beta_user = s.create_user("bob", "bob-password-1");
    s.add_user_to_group(BETA, &beta_ops, &beta_user);
    let manager = s.user_with_grants(ACME, "umgr", &[("users", "read-write", "*")]);
    let grouper = s.user_with_grants(ACME, "gmgr", &[("groups", "read-write", "*")]);
    let nobody = s.user_with_grants(ACME, "nobody", &[("collections", "read-write", "*")]);

    // A user manager creates users into its domain's groups and sees only its domain's users.
    let made = post(
        &s,
        &manager,
        ACME,
        "/auth/user",
        json!({"username": "carl", "password": "carl-password-1", "group_ids": [acme_ops]}),
    );
    let carl = json_ok(made, StatusCode::CREATED)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let listed = json_ok(get(&s, &manager, ACME, "/auth/user"), StatusCode::OK);
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["username"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"carl") && names.contains(&"umgr"),
        "{names:?}"
    );
    assert!(
        !names.contains(&"bob") && !names.contains(&"admin"),
        "{names:?}"
    );
    assert_error(
        get(
            &s,
            &manager,
            ACME,
            &format!("/auth/user/{}", enc(&beta_user)),
        ),
        StatusCode::NOT_FOUND,
        &[],
    );
    for (body, status) in [
        (
            json!({"username": "eve", "password": "eve-password-1", "admin": true, "group_ids": [acme_ops]}),
            StatusCode::UNAUTHORIZED,
        ),
        (
            json!({"username": "eve", "password": "eve-password-1", "group_ids": [beta_ops]}),
            StatusCode::UNAUTHORIZED,
        ),
        (
            json!({"username": "eve", "password": "eve-password-1"}),
            StatusCode::BAD_REQUEST,
        ),
    ] {
        assert_error(post(&s, &manager, ACME, "/auth/user", body), status, &[]);
    }
    // … in its domain only, and it cannot manage groups or read data with that grant.
    assert_error(
        get(&s, &manager, BETA, "/auth/user"),
        StatusCode::UNAUTHORIZED,
        &[],
    );
    assert_error(
        get(&s, &manager, ACME, "/auth/group"),
        StatusCode::UNAUTHORIZED,
        &[],
    );
    assert_error(
        get(&s, &manager, ACME, "/svc/tag/list"),
        StatusCode::UNAUTHORIZED,
        &[],
    );
    assert_error(
        get(&s, &manager, ACME, "/auth/domains"),
        StatusCode::UNAUTHORIZED,
        &[],
    );
    // It deletes its own domain's users, not those of other domains.
    let del = |token: &str, id: &str| {
        s.with_token_in(
            token,
            ACME,
            Method::DELETE,
            &format!("/auth/user/{}", enc(id)),
        )
        .send()
        .unwrap()
    };
    assert_error(del(&manager, &beta_user), StatusCode::NOT_FOUND, &[]);
    s.add_user_to_group(BETA, &beta_ops, &carl);
    assert_error(
        del(&manager, &carl),
        StatusCode::UNAUTHORIZED,
        &["other domains"],
    );

    // A group manager manages groups and members, not users.
    let made = post(
        &s,
        &grouper,
        ACME,
        "/auth/group",
        json!({"name": "night", "features": [{"name": "historian", "action": "read", "scope": "*"}]}),
    );
    let night = json_ok(made, StatusCode::CREATED)["id"]
        .as_str()
        .unwrap()
        .to_string();
    let add = s
        .with_token_in(
            &grouper,
            ACME,
            Method::POST,
            &format!("/auth/group/{}/user/{}", enc(&night), enc(&carl)),
        )
        .send()
        .unwrap();
    assert_eq!(json_ok(add, StatusCode::OK), json!({"success": true}));
    assert_error(
        get(&s, &grouper, ACME, "/auth/user"),
        StatusCode::UNAUTHORIZED,
        &[],
    );
    assert_error(
        get(&s, &grouper, BETA, "/auth/group"),
        StatusCode::UNAUTHORIZED,
        &[],
    );

    // Without either feature: nothing.
    assert_error(
        get(&s, &nobody, ACME, "/auth/user"),
        StatusCode::UNAUTHORIZED,
        &[],
    );
    assert_error(
        get(&s, &nobody, ACME, "/auth/group"),
        StatusCode::UNAUTHORIZED,
        &[],
    );
    assert_error(
        post(
            &s,
            &nobody,
            ACME,
            "/auth/permission",
            json!({"group_id": acme_ops, "permissions": [{"name": "users", "action": "read-write", "scope": "*"}]}),
        ),
        StatusCode::UNAUTHORIZED,
        &[],
    );
    // An administrator still does everything.
    assert_eq!(
        json_ok(del(&admin, &carl), StatusCode::OK),
        json!({"success": true})
    );
}

#[test]
fn api_keys_scope_all_reaches_the_domain_s_users_only() {
    let s = server();
    let acme_ops = s.create_group_with_grants(ACME, "ops", &[("tags", "read", "*")]);
    let beta_ops = s.create_group_with_grants(BETA, "ops", &[("tags", "read", "*")]);
    let ann = s.create_user("ann", "ann-password-1");
    s.add_user_to_group(ACME, &acme_ops, &ann);
    let bob = s.create_user("bob", "bob-password-1");
    s.add_user_to_group(BETA, &beta_ops, &bob);
    let (ann_key_id, ann_key) = s.create_api_key(&s.login("ann", "ann-password-1"), "ann-key");
    let (bob_key_id, _) = s.create_api_key(&s.login("bob", "bob-password-1"), "bob-key");
    let keeper = s.user_with_grants(ACME, "keeper", &[("api_keys", "read-write", "all")]);
    let reader = s.user_with_grants(ACME, "kreader", &[("api_keys", "read", "all")]);

    // Everyone manages its own keys without any grant.
    let (own_id, _) = s.create_api_key(&reader, "mine");
    let mine = json_ok(get(&s, &reader, ACME, "/auth/keys"), StatusCode::OK);
    assert_eq!(mine.as_array().unwrap().len(), 1);
    assert_eq!(mine[0]["id"], json!(own_id));
    assert!(mine[0].get("user_id").is_none());

    // `all`: the keys of acme's users, with their owner; never beta's.
    let all = json_ok(
        get(&s, &keeper, ACME, "/auth/keys?scope=all"),
        StatusCode::OK,
    );
    let ids: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&ann_key_id.as_str()), "{all}");
    assert!(!ids.contains(&bob_key_id.as_str()), "{all}");
    let ann_row = all
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["id"] == json!(ann_key_id))
        .unwrap();
    assert_eq!(ann_row["user_id"], json!(ann));
    assert!(
        !all.to_string().contains(&ann_key),
        "secrets are never listed"
    );
    assert_error(
        get(&s, &keeper, BETA, "/auth/keys?scope=all"),
        StatusCode::UNAUTHORIZED,
        &[],
    );
    assert_error(
        get(
            &s,
            &s.login("ann", "ann-password-1"),
            ACME,
            "/auth/keys?scope=all",
        ),
        StatusCode::UNAUTHORIZED,
        &[],
    );
    assert_error(
        get(&s, &keeper, ACME, "/auth/keys?scope=everyone"),
        StatusCode::BAD_REQUEST,
        &["scope"],
    );

    // Revoking: read is not enough; read-write revokes acme users' keys, not beta's.
    let revoke = |token: &str, id: &str| {
        s.with_token_in(
            token,
            ACME,
            Method::DELETE,
            &format!("/auth/keys/{}?scope=all", enc(id)),
        )
        .send()
        .unwrap()
    };
    // Without `scope=all` the route is about the caller's own keys only.
    let own_only = s
        .with_token_in(
            &keeper,
            ACME,
            Method::DELETE,
            &format!("/auth/keys/{}", enc(&ann_key_id)),
        )
        .send()
        .unwrap();
    assert_error(own_only, StatusCode::NOT_FOUND, &[]);
    assert_error(revoke(&reader, &ann_key_id), StatusCode::NOT_FOUND, &[]);
    assert_error(revoke(&keeper, &bob_key_id), StatusCode::NOT_FOUND, &[]);
    assert_eq!(
        json_ok(revoke(&keeper, &ann_key_id), StatusCode::OK),
        json!({"success": true})
    );
    let with_revoked = s
        .req(Method::GET, "/auth/me")
        .header("X-Svc-Api-Key", &ann_key)
        .send()
        .unwrap();
    assert_error(with_revoked, StatusCode::UNAUTHORIZED, &[]);
}

//! CLI end to end: login/logout profiles (0600 file, `--password-stdin`), rejected tokens,
//! API keys, environment overriding the profile, usage errors, info and completions.

use crate::common;

use crate::cli_support::Cli;
use crate::common::Server;

#[test]
fn login_stores_a_private_profile_and_logout_forgets_it() {
    let server = Server::start();
    let cli = Cli::new(&server);
    cli.login_admin(&[]);
    let path = cli.credentials();
    let text = std::fs::read_to_string(&path).expect("credentials file");
    assert!(text.contains("[profiles.default]"), "{text}");
    assert!(
        text.contains(&format!("url = \"{}\"", server.base)),
        "{text}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "credentials file mode");
        let dir = std::fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(dir & 0o077, 0, "credentials dir mode {dir:o}");
    }
    // The stored token works.
    let info = cli.json(&["info"]);
    assert_eq!(info["version"], env!("CARGO_PKG_VERSION"));
    let engine = if common::on_postgres() {
        "postgres"
    } else {
        "sqlite"
    };
    assert_eq!(info["storage"]["engine"], engine);
    // Logout: the next command says to log in.
    cli.ok(&["logout"]);
    assert!(!std::fs::read_to_string(&path).unwrap().contains("token"));
    let run = cli
        .run(&["records", "list", "items"])
        .expect_code(1, "after logout");
    assert!(run.stderr.contains("401"), "{}", run.stderr);
    assert!(run.stderr.contains("svc login"), "{}", run.stderr);
}

#[test]
fn bad_password_and_rejected_token() {
    let server = Server::start();
    let cli = Cli::new(&server);
    let run = cli
        .run_with(
            &["login", "-u", "admin", "--password-stdin"],
            &[],
            Some("wrong-password\n"),
        )
        .expect_code(1, "bad password");
    assert!(run.stderr.contains("401"), "{}", run.stderr);
    assert!(!cli.credentials().exists());
    // No username and no terminal to ask on: a usage error.
    cli.run_with(&["login", "--password-stdin"], &[], Some("x\n"))
        .expect_code(2, "login without username");
    // An empty password on stdin.
    cli.run_with(&["login", "-u", "admin", "--password-stdin"], &[], Some(""))
        .expect_code(2, "empty password");

    // A stored token the server rejects (as an expired one would be).
    cli.login_admin(&[]);
    let path = cli.credentials();
    let text = std::fs::read_to_string(&path).unwrap();
    let start = text.find("token = \"").unwrap() + 9;
    let end = start + text[start..].find('"').unwrap();
    let tampered = format!("{}x{}", &text[..start], &text[end..]);
    std::fs::write(&path, tampered).unwrap();
    let run = cli.run(&["tags", "list"]).expect_code(1, "rejected token");
    assert!(run.stderr.contains("401 Unauthorized"), "{}", run.stderr);
    assert!(run.stderr.contains("log in again"), "{}", run.stderr);
}

#[test]
fn api_keys_create_list_revoke() {
    let server = Server::start();
    let cli = Cli::new(&server);
    cli.login_admin(&[]);
    let run = cli.ok(&["keys", "create", "line1", "--output", "table"]);
    let key = run.stdout.trim().to_string();
    assert!(key.starts_with("svcx_"), "key: {key}");
    assert!(
        run.stderr.contains("will not be shown again"),
        "{}",
        run.stderr
    );
    let created = cli.json(&["keys", "create", "line2"]);
    assert!(created["key"].as_str().unwrap().starts_with("svcx_"));

    let list = cli.json(&["keys", "list"]);
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2);
    let line1 = list
        .iter()
        .find(|k| k["name"] == "line1")
        .expect("line1 listed");
    assert!(
        list.iter().all(|k| k.get("key").is_none()),
        "secrets listed"
    );
    let id = line1["id"].as_str().unwrap().to_string();

    // The key works from the environment, without any profile.
    let other = Cli::new(&server);
    let run = other.run_with(
        &["tags", "list", "--output", "json"],
        &[("SVC_API_KEY", &key)],
        None,
    );
    let run = run.expect_code(0, "api key from env");
    assert!(run.json().is_array());
    // ...and as a flag.
    other.ok(&["--api-key", &key, "info"]);

    let run = cli.ok(&["keys", "revoke", &id, "--output", "json"]);
    assert_eq!(run.json()["success"], true);
    let run = other
        .run_with(&["tags", "list"], &[("SVC_API_KEY", &key)], None)
        .expect_code(1, "revoked key");
    assert!(run.stderr.contains("401"), "{}", run.stderr);
    assert!(run.stderr.contains("API key"), "{}", run.stderr);
    let run = cli
        .run(&["keys", "revoke", &id])
        .expect_code(1, "revoke twice");
    assert!(run.stderr.contains("404"), "{}", run.stderr);
}

#[test]
fn environment_overrides_the_profile() {
    let server = Server::start();
    server.create_domain("acme");
    server.create_domain("other");
    let cli = Cli::new(&server);
    cli.login_admin(&["--domain", "acme"]);
    let rec = cli.json(&["records", "create", "items", "--data", r#"{"a":1}"#]);
    assert!(
        rec["id"].as_str().unwrap().starts_with("acme.items:"),
        "{rec}"
    );
    // SVC_DOMAIN beats the profile's domain.
    let run = cli.run_with(
        &[
            "records",
            "create",
            "items",
            "--data",
            r#"{"a":2}"#,
            "--output",
            "json",
        ],
        &[("SVC_DOMAIN", "other")],
        None,
    );
    let rec = run.expect_code(0, "SVC_DOMAIN").json();
    assert!(
        rec["id"].as_str().unwrap().starts_with("other.items:"),
        "{rec}"
    );
    // The flag beats the environment.
    let run = cli.run_with(
        &[
            "--domain", "acme", "records", "count", "items", "--output", "json",
        ],
        &[("SVC_DOMAIN", "other")],
        None,
    );
    assert_eq!(run.expect_code(0, "--domain").json()["count"], 1);
    // SVC_URL beats the profile's URL (and the profile's token stays with its server).
    let run = cli.run_with(&["info"], &[("SVC_URL", "http://127.0.0.1:9")], None);
    let run = run.expect_code(1, "SVC_URL");
    assert!(run.stderr.contains("http://127.0.0.1:9"), "{}", run.stderr);
    // SVC_OUTPUT picks the format.
    let run = cli.run_with(
        &["records", "count", "items"],
        &[("SVC_OUTPUT", "table")],
        None,
    );
    assert_eq!(run.expect_code(0, "SVC_OUTPUT").stdout, "1\n");
    // Profiles are separate.
    let run = cli
        .run(&["--profile", "ops", "tags", "list"])
        .expect_code(1, "other profile");
    assert!(run.stderr.contains("not logged in"), "{}", run.stderr);
}

#[test]
fn usage_errors_exit_2_without_panics() {
    let server = Server::start();
    let cli = Cli::new(&server);
    cli.login_admin(&[]);
    for args in [
        vec!["frobnicate"],
        vec!["records"],
        vec!["records", "list"],
        vec!["records", "list", "t", "--limit", "-1"],
        vec!["records", "list", "t", "--filter", "price %% 3"],
        vec!["records", "list", "t", "--filter", "price:float > 3"],
        vec!["records", "list", "t", "--sort", "price:sideways"],
        vec!["records", "create", "t", "--data", "{not json"],
        vec!["records", "create", "t", "--data", "[1,2]"],
        vec!["records", "import", "t", "/dev/null", "--concurrency", "0"],
        vec!["historian", "query", "a/b", "--start", "yesterday"],
        vec!["tags", "publish", "a/b", "not json"],
        vec!["tags", "publish", "a/b", "1", "--qos", "3"],
        vec!["--output", "xml", "info"],
        vec!["completions", "tcsh"],
        vec!["records", "get", ""],
        vec!["records", "list", ""],
        vec!["--domain", "a\nb", "info"],
        vec!["--api-key", "k e y", "info"],
    ] {
        let run = cli.run(&args).expect_code(2, &args.join(" "));
        assert!(!run.stderr.is_empty(), "{args:?}: no message");
    }
    // A server-side rejection is exit 1 with the server's text.
    let run = cli
        .run(&["records", "list", "t", "--limit", "20000"])
        .expect_code(1, "limit too large");
    assert!(run.stderr.contains("400 Bad Request"), "{}", run.stderr);
    assert!(
        run.stderr.contains("limit must be at most 10000"),
        "{}",
        run.stderr
    );
    // Nothing listening.
    let run = cli
        .run_with(&["info"], &[("SVC_URL", "http://127.0.0.1:9")], None)
        .expect_code(1, "no server");
    assert!(run.stderr.contains("cannot reach"), "{}", run.stderr);
}

#[test]
fn completions_for_each_shell() {
    let server = Server::start();
    let cli = Cli::new(&server);
    for shell in ["bash", "zsh", "fish"] {
        let run = cli.ok(&["completions", shell]);
        assert!(run.stdout.contains("svc"), "{shell}");
        assert!(run.stdout.contains("records"), "{shell}");
    }
}

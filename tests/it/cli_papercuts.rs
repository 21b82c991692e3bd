//! CLI papercuts of issue 17, end to end through the built binary: `--mqtt-allow-anonymous`
//! without a value means true; `svc serve --help` (and the other subcommands that talk to no
//! server: `restore`, `completions`) lists no client-only option, neither do the shell
//! completions, and they refuse them; a filter value that starts with an operator character
//! must be quoted (exit 2); `svc --version` names the commit and the build date.

use crate::cli_support::{acme, Cli};
use crate::common::*;
use serde_json::json;

/// The client-only options, as `--help` prints them.
const CLIENT_ONLY: [&str; 5] = ["--url", "--domain", "--api-key", "--profile", "--output"];

#[test]
fn mqtt_allow_anonymous_without_a_value_means_true() {
    // The flag is followed by another flag, which must not be taken as its value.
    let server = Server::start_with(&["--mqtt-allow-anonymous", "--device-name", "papercut"]);
    assert_eq!(
        server.get_json("domains:svc_admin", "/svc/")["device_name"],
        "papercut"
    );
    let (ok, out) = server.mosquitto_pub(true, &["-t", "anon/m", "-m", "1", "-q", "1"]);
    assert!(ok, "anonymous mosquitto_pub refused: {out}");

    // An explicit `false` still refuses anonymous clients.
    let server = Server::start_with(&["--mqtt-allow-anonymous", "false"]);
    let (ok, out) = server.mosquitto_pub(true, &["-t", "anon/m", "-m", "1", "-q", "1"]);
    assert!(
        !ok,
        "anonymous mosquitto_pub accepted with the flag false: {out}"
    );
}

#[test]
fn serve_help_lists_no_client_option_and_serve_refuses_them() {
    let server = Server::start();
    let cli = Cli::new(&server);
    let help = cli.ok(&["serve", "--help"]).stdout;
    assert!(help.contains("--data-dir"), "{help}");
    assert!(help.contains("--mqtt-allow-anonymous"), "{help}");
    for option in CLIENT_ONLY {
        assert!(
            !help.contains(option),
            "`svc serve --help` lists {option}:\n{help}"
        );
    }
    for local in ["restore", "migrate", "completions"] {
        let help = cli.ok(&[local, "--help"]).stdout;
        for option in CLIENT_ONLY {
            assert!(
                !help.contains(option),
                "`svc {local} --help` lists {option}:\n{help}"
            );
        }
    }
    // Client subcommands (`backup` talks to a running server) still list them, and take them
    // before or after their name.
    for client in [&["records", "list", "--help"][..], &["backup", "--help"]] {
        let help = cli.ok(client).stdout;
        for option in CLIENT_ONLY {
            assert!(
                help.contains(option),
                "`svc {}` lacks {option}:\n{help}",
                client.join(" ")
            );
        }
    }
    // The bash completions offer them for client subcommands only.
    let script = cli.ok(&["completions", "bash"]).stdout;
    let offered = |case: &str| -> String {
        let start = script
            .find(&format!("{case})"))
            .unwrap_or_else(|| panic!("no `{case})` case in the bash completions"));
        let rest = &script[start..];
        let opts = rest.find("opts=\"").expect("an opts line") + 6;
        rest[opts..opts + rest[opts..].find('"').expect("closing quote")].to_string()
    };
    for local in ["svc__subcmd__serve", "svc__subcmd__restore"] {
        let opts = offered(local);
        assert!(opts.contains("--data-dir"), "{local}: {opts}");
        for option in CLIENT_ONLY {
            assert!(!opts.contains(option), "{local} offers {option}: {opts}");
        }
    }
    let opts = offered("svc__subcmd__backup");
    assert!(
        opts.contains("--url") && opts.contains("--api-key"),
        "{opts}"
    );
    for args in [
        &["serve", "--url", "http://127.0.0.1:1"][..],
        &["--output", "json", "serve"],
        &["restore", "snapshot.db", "--api-key", "svcx_x"],
        &["completions", "bash", "--domain", "domains:x"],
    ] {
        let run = cli.run(args).expect_code(2, &args.join(" "));
        assert!(
            run.stderr
                .contains("is an option of the client subcommands"),
            "{}",
            run.stderr
        );
    }
    // SVC_URL and friends in the environment (set for the client) are no reason to refuse:
    // this server gets as far as its data dir, which cannot be created.
    let mut plain = Cli::new(&server);
    plain.env.push(("SVC_OUTPUT".into(), "json".into()));
    let run = plain.run(&["serve", "--data-dir", "/proc/version/svc-data"]);
    assert!(
        run.code == 1 && run.stderr.contains("cannot create data dir"),
        "exit {}: {}",
        run.code,
        run.stderr
    );
}

#[test]
fn a_filter_value_starting_with_an_operator_must_be_quoted() {
    let (server, cli) = acme();
    for (name, price) in [
        ("cheap", json!(3)),
        ("dear", json!(9)),
        ("odd", json!("> 5")),
    ] {
        server.create_record(
            "domains:acme",
            "items",
            &json!({"name": name, "price": price}),
        );
    }
    for filter in ["price >> 5", "price => 5", "name = =x", "price <= <9"] {
        let args = ["records", "list", "items", "--filter", filter];
        let run = cli.run(&args).expect_code(2, filter);
        assert!(run.stdout.is_empty(), "{filter}: printed {}", run.stdout);
        assert!(
            run.stderr.contains("starts with an operator character")
                && run.stderr.contains("quote it"),
            "{filter}: {}",
            run.stderr
        );
    }
    // Count takes the same conditions.
    cli.run(&["records", "count", "items", "--filter", "price >> 5"])
        .expect_code(2, "count with price >> 5");
    // Quoted, the text is compared as it is.
    let list = cli.json(&["records", "list", "items", "--filter", r#"price = "> 5""#]);
    let names: Vec<&str> = list
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert_eq!(names, ["odd"]);
    // An ordinary comparison still works.
    let list = cli.json(&["records", "list", "items", "--filter", "price:number > 5"]);
    let names: Vec<&str> = list
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|r| r["name"].as_str())
        .collect();
    assert!(
        names.contains(&"dear") && !names.contains(&"cheap"),
        "{list}"
    );
}

#[test]
fn version_names_the_commit_and_the_build_date() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_svc"))
        .arg("--version")
        .output()
        .expect("svc --version could not be started");
    assert!(out.status.success(), "svc --version failed: {out:?}");
    let line = String::from_utf8(out.stdout).expect("svc --version printed UTF-8");
    let line = line.trim_end();
    // `svc 0.1.0 (commit 0707afa, built 2026-12-07)`
    let prefix = concat!("svc ", env!("CARGO_PKG_VERSION"), " (commit ");
    let rest = line
        .strip_prefix(prefix)
        .unwrap_or_else(|| panic!("`{line}` does not start with `{prefix}`"));
    let (commit, built) = rest
        .split_once(", built ")
        .unwrap_or_else(|| panic!("`{line}` has no `, built `"));
    assert!(
        commit == "unknown" || (commit.len() >= 7 && commit.chars().all(|c| c.is_ascii_hexdigit())),
        "`{commit}` is neither a short commit hash nor `unknown`: {line}"
    );
    // In a git checkout (this one), the commit the binary was built from is HEAD.
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output();
    if let Ok(head) = head
        .as_ref()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    {
        if !head.is_empty() {
            assert_eq!(commit, head, "the binary was not built from HEAD: {line}");
        }
    }
    let date = built
        .strip_suffix(')')
        .unwrap_or_else(|| panic!("`{line}` does not end with `)`"));
    let digits: Vec<&str> = date.split('-').collect();
    assert!(
        digits.len() == 3
            && [4, 2, 2] == [digits[0].len(), digits[1].len(), digits[2].len()]
            && digits.iter().all(|d| d.chars().all(|c| c.is_ascii_digit())),
        "`{date}` is not a YYYY-MM-DD date: {line}"
    );
}

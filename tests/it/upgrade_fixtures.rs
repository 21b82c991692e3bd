//! Upgrade fixtures (issue 39): each `fixtures/upgrade/<version>/` holds the data a release's
//! own binary wrote through its REST API and MQTT (`scripts/upgrade-fixture`), as a SQLite data
//! dir and as a PostgreSQL dump, with a manifest of what any later binary must answer. Today's
//! binary opens each one — on SQLite the data dir extracted into a temporary directory, on the
//! PostgreSQL engine (`SVC_TEST_ENGINE=postgres`) the dump restored into a fresh database of the
//! test cluster — brings its schema up to today's steps without losing a row, and answers every
//! check of the manifest: exact JSON bodies, a file's SHA-256, retained messages, and the QoS 1
//! messages queued for a persistent MQTT session while it was offline.

use crate::common::*;
use reqwest::{Method, StatusCode};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::Duration;

const RELEASE: &str = env!("CARGO_PKG_VERSION");

/// The fixture directories, oldest release first (by name, which is the version).
fn fixture_dirs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/upgrade");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("read fixtures/upgrade")
        .map(|entry| entry.expect("fixture entry").path())
        .filter(|path| path.is_dir())
        .collect();
    dirs.sort();
    dirs
}

fn read_manifest(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("manifest.json")).expect("read manifest.json");
    serde_json::from_str(&text).expect("manifest.json is JSON")
}

/// Extracts the `.tar.gz` at `archive` into a new directory under `into`.
fn extract(archive: &Path, into: &Path) -> PathBuf {
    let dir = into.join("data");
    std::fs::create_dir_all(&dir).expect("create the extraction dir");
    let status = std::process::Command::new("tar")
        .arg("-xzf")
        .arg(archive)
        .arg("-C")
        .arg(&dir)
        .status()
        .expect("run tar");
    assert!(status.success(), "tar -xzf {}: {status}", archive.display());
    dir
}

fn gunzip(path: &Path) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).expect("open the dump"))
        .read_to_end(&mut out)
        .expect("gunzip the dump");
    out
}

/// The schema steps of a store in order, as `1,2,…`: only the versions, which every release's
/// `svc_schema_migrations` has (an older store may lack the `release` column).
const VERSIONS_SQLITE: &str = "SELECT group_concat(version, ',') \
     FROM (SELECT version FROM svc_schema_migrations ORDER BY version)";
const VERSIONS_POSTGRES: &str =
    "SELECT string_agg(version::text, ',' ORDER BY version) FROM svc_schema_migrations";
/// The steps of a store today's binary has opened, `version:release` in order.
const STEPS_SQLITE: &str = "SELECT group_concat(version || ':' || coalesce(release, ''), ',') \
     FROM (SELECT version, release FROM svc_schema_migrations ORDER BY version)";
const STEPS_POSTGRES: &str = "SELECT string_agg(version || ':' || coalesce(release, ''), ',' \
     ORDER BY version) FROM svc_schema_migrations";

fn sqlite_versions(db: &Path) -> String {
    let db = rusqlite::Connection::open(db).expect("open svc.db");
    db.query_row(VERSIONS_SQLITE, [], |row| row.get(0))
        .expect("read svc_schema_migrations")
}

/// The step versions of a store made by today's binary, on the engine of this run.
fn todays_versions() -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    if on_postgres() {
        let url = shared_postgres().fresh_database();
        let (ready, stderr) = serve_on(dir.path(), &["--database", &url]);
        assert!(ready, "{stderr}");
        let versions = shared_postgres()
            .psql_at(&url, VERSIONS_POSTGRES)
            .expect("read the steps");
        shared_postgres().drop_database(&url);
        versions
    } else {
        let (ready, stderr) = serve_on(dir.path(), &[]);
        assert!(ready, "{stderr}");
        sqlite_versions(&dir.path().join("svc.db"))
    }
}

/// A fixture opened by today's binary: the server, and the step versions its store held before.
struct Opened {
    server: Server,
    versions_before: String,
    engine: &'static str,
    /// The database restored for it (PostgreSQL), dropped once the checks are done.
    database: Option<String>,
    _dir: tempfile::TempDir,
}

/// Starts today's svc on a copy of the fixture in `dir`, on the engine of this run.
fn open_fixture(dir: &Path, manifest: &Value) -> Opened {
    let work = tempfile::tempdir().expect("tempdir");
    let stores = &manifest["stores"];
    if on_postgres() {
        let files = stores["postgres"]["data_dir"]
            .as_str()
            .expect("postgres data_dir");
        let dump = stores["postgres"]["dump"].as_str().expect("postgres dump");
        let data = extract(&dir.join(files), work.path());
        let url = shared_postgres().fresh_database();
        shared_postgres()
            .restore_at(&url, &gunzip(&dir.join(dump)))
            .unwrap_or_else(|e| panic!("restore {}: {e}", dir.join(dump).display()));
        let versions_before = shared_postgres()
            .psql_at(&url, VERSIONS_POSTGRES)
            .expect("read the dump's steps");
        let server = Server::start_from(Some(&data), &["--database", &url]);
        Opened {
            server,
            versions_before,
            engine: "postgres",
            database: Some(url),
            _dir: work,
        }
    } else {
        let archive = stores["sqlite"]["data_dir"]
            .as_str()
            .expect("sqlite data_dir");
        let data = extract(&dir.join(archive), work.path());
        let versions_before = sqlite_versions(&data.join("svc.db"));
        let server = Server::start_from(Some(&data), &[]);
        Opened {
            server,
            versions_before,
            engine: "sqlite",
            database: None,
            _dir: work,
        }
    }
}

/// `None` when `got` holds `want` (objects: every key of `want`, recursively; arrays: the same
/// length, item by item; numbers equal as doubles; anything else equal), else where it differs.
fn holds(want: &Value, got: &Value, at: &str) -> Option<String> {
    match (want, got) {
        (Value::Object(want), Value::Object(got)) => want.iter().find_map(|(key, w)| {
            let at = format!("{at}.{key}");
            match got.get(key) {
                Some(g) => holds(w, g, &at),
                None => Some(format!("{at}: missing")),
            }
        }),
        (Value::Array(want), Value::Array(got)) if want.len() == got.len() => want
            .iter()
            .zip(got)
            .enumerate()
            .find_map(|(i, (w, g))| holds(w, g, &format!("{at}[{i}]"))),
        (Value::Number(w), Value::Number(g)) => {
            (w.as_f64() != g.as_f64()).then(|| format!("{at}: wanted {w}, got {g}"))
        }
        _ => (want != got).then(|| format!("{at}: wanted {want}, got {got}")),
    }
}

/// Runs one HTTP check of the manifest; what failed, if anything.
fn http_check(server: &Server, check: &Value, tokens: &Tokens) -> Option<String> {
    let method = Method::from_bytes(check["method"].as_str()?.as_bytes()).expect("a method");
    let path = check["path"].as_str().expect("a path");
    let mut req = server.req(method, path);
    req = match check["as"].as_str().expect("`as`") {
        "admin" => req.bearer_auth(&tokens.admin),
        "operator" => req.bearer_auth(&tokens.operator),
        "key" => req.header("X-Svc-Api-Key", &tokens.key),
        "none" => req,
        other => panic!("unknown credential `{other}` in the manifest"),
    };
    if let Some(domain) = check["domain"].as_str() {
        req = req.header("Domain", format!("domains:{domain}"));
    }
    if !check["body"].is_null() {
        req = req.json(&check["body"]);
    }
    let resp = req.send().expect("send the check's request");
    let status = resp.status();
    let bytes = resp.bytes().expect("the check's response");
    let want = check["status"].as_u64().expect("a status") as u16;
    if status != StatusCode::from_u16(want).expect("a status code") {
        return Some(format!(
            "status {status}, wanted {want}: {}",
            String::from_utf8_lossy(&bytes)
        ));
    }
    if let Some(sha) = check["sha256"].as_str() {
        let got = format!("{:x}", Sha256::digest(&bytes));
        let length = check["length"].as_u64().expect("a length") as usize;
        return (got != sha || bytes.len() != length)
            .then(|| format!("{} bytes with sha256 {got}", bytes.len()));
    }
    let body = || -> Value {
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|e| panic!("{path}: not JSON ({e}): {bytes:?}"))
    };
    if !check["json"].is_null() {
        return holds(&check["json"], &body(), "$");
    }
    if let Some(items) = check["json_has"].as_array() {
        let got = body();
        let list = got.as_array().cloned().unwrap_or_default();
        return items
            .iter()
            .find(|want| list.iter().all(|item| holds(want, item, "$").is_some()))
            .map(|want| format!("no item holding {want} in {got}"));
    }
    None
}

struct Tokens {
    admin: String,
    operator: String,
    key: String,
    operator_name: String,
    operator_password: String,
    key_user: String,
}

/// Runs one MQTT check: subscribes (or resumes the persistent session) and compares what
/// arrives with the manifest's messages, in any order, with nothing more.
fn mqtt_check(server: &Server, check: &Value, tokens: &Tokens) -> Option<String> {
    let client_id = check["client_id"].as_str().expect("a client id");
    let (username, password) = match check["as"].as_str().expect("`as`") {
        "operator" => (&tokens.operator_name, &tokens.operator_password),
        "key" => (&tokens.key_user, &tokens.key),
        other => panic!("unknown MQTT credential `{other}`"),
    };
    let mut opts = MqttOpts::new(Proto::V5, Via::Tcp, client_id).creds(username, password);
    let resume = check["resume_session"].as_bool().unwrap_or(false);
    if resume {
        opts = opts.persistent();
    }
    let mut client = match server.try_mqtt(opts) {
        Ok(client) => client,
        Err(e) => return Some(format!("connect as {username}: {e}")),
    };
    if resume && !client.session_present {
        return Some("CONNACK says no session is present".into());
    }
    if let Some(filter) = check["subscribe"].as_str() {
        let qos = check["qos"].as_u64().unwrap_or(1) as u8;
        if client.subscribe(filter, qos).is_none() {
            return Some(format!("subscription to {filter} refused"));
        }
    }
    let expected = check["messages"].as_array().expect("messages");
    let mut want: Vec<(String, String, bool)> = expected
        .iter()
        .map(|m| {
            (
                m["topic"].as_str().unwrap().to_string(),
                m["payload"].as_str().unwrap().to_string(),
                m["retain"].as_bool().unwrap(),
            )
        })
        .collect();
    let mut got = Vec::new();
    while got.len() < want.len() {
        match client.next_publish(MQTT_WAIT) {
            Some(m) => got.push((m.topic.clone(), m.text(), m.retain)),
            None => break,
        }
    }
    // Nothing more than the manifest's messages arrives.
    if let Some(m) = client.next_publish(Duration::from_millis(500)) {
        got.push((m.topic.clone(), m.text(), m.retain));
    }
    client.disconnect();
    want.sort();
    got.sort();
    (got != want).then(|| format!("received {got:?}, wanted {want:?}"))
}

/// Opens the fixture in `dir` with today's binary and runs every check of its manifest.
fn check_fixture(dir: &Path, todays: &str) {
    let manifest = read_manifest(dir);
    let version = manifest["written_by"]["version"].as_str().expect("version");
    assert_eq!(
        dir.file_name().and_then(|n| n.to_str()),
        Some(version),
        "a fixture lives under the version that wrote it"
    );
    let opened = open_fixture(dir, &manifest);
    let server = &opened.server;
    let what = format!("the {version} fixture on {}", opened.engine);

    // Migrated: today's steps are all there, the fixture's own steps first; those kept the
    // release that applied them (none when written before steps named one), and the steps
    // added at this start name today's release.
    let steps_after = server
        .store_sql(STEPS_SQLITE, STEPS_POSTGRES)
        .expect("steps after the start");
    let steps: Vec<(&str, &str)> = steps_after
        .split(',')
        .map(|step| step.split_once(':').expect("version:release"))
        .collect();
    let versions_after: Vec<&str> = steps.iter().map(|(v, _)| *v).collect();
    assert_eq!(versions_after.join(","), todays, "{what}: {steps_after}");
    let before: Vec<&str> = opened.versions_before.split(',').collect();
    assert_eq!(
        versions_after[..before.len()],
        before[..],
        "{what}: the fixture's steps {} are not where they were: {steps_after}",
        opened.versions_before
    );
    for (step, release) in &steps[..before.len()] {
        assert!(
            release.is_empty() || *release == version,
            "{what}: the fixture's step {step} names release `{release}`"
        );
    }
    for (step, release) in &steps[before.len()..] {
        assert_eq!(
            *release, RELEASE,
            "{what}: step {step} applied at this start"
        );
    }

    let creds = &manifest["credentials"];
    let admin = server.login(
        creds["admin"]["username"].as_str().unwrap(),
        creds["admin"]["password"].as_str().unwrap(),
    );
    let operator_name = creds["operator"]["username"].as_str().unwrap().to_string();
    let operator_password = creds["operator"]["password"].as_str().unwrap().to_string();
    let tokens = Tokens {
        operator: server.login(&operator_name, &operator_password),
        admin,
        key: creds["key"][opened.engine]
            .as_str()
            .expect("the engine's API key")
            .to_string(),
        key_user: creds["key"]["username"].as_str().unwrap().to_string(),
        operator_name,
        operator_password,
    };

    // Nothing lost: the row counts of every table the manifest names.
    let counts = manifest["counts"].as_object().expect("counts");
    let mut failures = Vec::new();
    for (domain, tables) in counts {
        for (table, count) in tables.as_object().expect("tables") {
            let got = server.count(&format!("domains:{domain}"), table);
            if Some(got) != count.as_u64() {
                failures.push(format!("{domain}.{table}: {got} rows, wanted {count}"));
            }
        }
    }
    for check in manifest["checks"].as_array().expect("checks") {
        if let Some(miss) = http_check(server, check, &tokens) {
            failures.push(format!(
                "{} ({} {}): {miss}",
                check["what"], check["method"], check["path"]
            ));
        }
    }
    for check in manifest["mqtt"].as_array().expect("mqtt checks") {
        if let Some(miss) = mqtt_check(server, check, &tokens) {
            failures.push(format!("{}: {miss}", check["what"]));
        }
    }
    assert!(
        failures.is_empty(),
        "{what} does not answer as its manifest says:\n  {}\nlogs:\n{}",
        failures.join("\n  "),
        server.logs()
    );
    let database = opened.database.clone();
    drop(opened);
    if let Some(url) = database {
        shared_postgres().drop_database(&url);
    }
}

#[test]
fn every_upgrade_fixture_opens_migrated_and_answers_as_its_manifest_says() {
    let dirs = fixture_dirs();
    assert!(!dirs.is_empty(), "no fixture under fixtures/upgrade");
    assert!(
        dirs.iter()
            .any(|d| d.file_name().and_then(|n| n.to_str()) == Some(RELEASE)),
        "fixtures/upgrade has no fixture of this release, {RELEASE} (scripts/upgrade-fixture)"
    );
    let todays = todays_versions();
    for dir in dirs {
        check_fixture(&dir, &todays);
    }
}

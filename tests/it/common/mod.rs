//! Shared harness of the end-to-end tests: starts the real `svc serve` binary on free ports over a
//! temporary data directory, waits for its `ready {json}` line, and offers small helpers for the
//! admin flows (login, domains, users, groups, fixtures) and for checking responses against the
//! error and correlation rules of the contract.

mod conformance;
mod connectors;
mod device_peer;
mod mosquitto;
mod mqtt;
mod peer_broker;
mod pipelined;
mod postgres;
mod raw_clients;
mod raw_mqtt;
mod slow_link;
mod sparkplug_peer;
pub use conformance::*;
pub use device_peer::*;
pub use mosquitto::*;
pub use mqtt::*;
pub use peer_broker::*;
pub use pipelined::*;
pub use postgres::*;
pub use raw_clients::*;
pub use raw_mqtt::*;
pub use slow_link::*;
pub use sparkplug_peer::*;

use reqwest::blocking::{Client, RequestBuilder, Response};
use reqwest::header::CONTENT_TYPE;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The same test once per MQTT version, so a behaviour is never checked in one version only:
/// `for_both_versions! { name => |proto| body(proto, …); }` defines the tests `name::v3` and
/// `name::v5`, each calling the closure with its [`Proto`].
macro_rules! for_both_versions {
    ($($name:ident => $test:expr;)+) => {$(
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[test]
            fn v3() {
                ($test)($crate::common::Proto::V3)
            }

            #[test]
            fn v5() {
                ($test)($crate::common::Proto::V5)
            }
        }
    )+};
}
pub(crate) use for_both_versions;

/// Password given to `--admin-password`; the user is `admin`.
pub const ADMIN_PASSWORD: &str = "Adm1n-test-pass!";
/// The content type every non-2xx response must carry.
pub const TEXT_PLAIN: &str = "text/plain; charset=utf-8";
/// The correlation header of every response.
pub const CORRELATION: &str = "App-CorrelationID";
/// The `Domain` header value of the fixture domain.
pub const DEMO: &str = "domains:demo";

const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// A running `svc serve` process, killed on drop.
pub struct Server {
    child: Child,
    dir: tempfile::TempDir,
    /// `--data-dir` of the process.
    pub data_dir: PathBuf,
    /// `http://host:port` of the REST listener.
    pub base: String,
    /// The JSON of the `ready` line.
    pub ready: Value,
    pub client: Client,
    admin_token: OnceLock<String>,
    stdout_lines: Arc<Mutex<Vec<String>>>,
    /// Arguments given after the default ones (kept for [`Server::restart`]).
    extra: Vec<String>,
}

impl Server {
    /// Starts a server with the default test arguments.
    pub fn start() -> Server {
        Server::start_with(&[])
    }

    /// Starts a server with the default test arguments plus `extra`.
    pub fn start_with(extra: &[&str]) -> Server {
        Server::start_from(None, extra)
    }

    /// Starts a server on a copy of the data dir `fixture` (its files and directories; on
    /// PostgreSQL, unless `extra` names a `--database`, the copy
    /// is first moved into the server's fresh database with `svc migrate`), or on an empty one.
    pub fn start_from(fixture: Option<&Path>, extra: &[&str]) -> Server {
        let dir = tempfile::tempdir().expect("tempdir");
        let data_dir = dir.path().join("data");
        std::fs::create_dir_all(&data_dir).expect("create data dir");
        if let Some(fixture) = fixture {
            copy_tree(fixture, &data_dir);
        }
        let mut extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        if on_postgres() && !extra.iter().any(|arg| arg == "--database") {
            let url = shared_postgres().fresh_database();
            DATABASE_USERS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(url.clone(), 0);
            if fixture.is_some() {
                let copied = Command::new(env!("CARGO_BIN_EXE_svc"))
                    .args(["migrate", "--from"])
                    .arg(format!("sqlite://{}", data_dir.display()))
                    .args(["--to", &url])
                    .env_remove("SVC_CONFIG")
                    .output()
                    .expect("run svc migrate");
                assert!(copied.status.success(), "svc migrate: {copied:?}");
            }
            extra.extend(["--database".into(), url]);
        }
        database_users(&extra, 1);
        let (child, ready, stdout_lines) = spawn_serve(dir.path(), &data_dir, &extra, false);
        let http = ready_http(&ready);
        let client = Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(30))
            .build()
            .expect("http client");
        Server {
            child,
            dir,
            data_dir,
            base: format!("http://{http}"),
            ready,
            client,
            admin_token: OnceLock::new(),
            stdout_lines,
            extra,
        }
    }

    /// The process id of the running `svc serve` (other tests' servers run beside it in this
    /// test process, so it is not "the svc child").
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM (`kill -TERM <pid>`) and waits up to 30 s for the process to exit.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        let status = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -TERM {pid} failed: {status}");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for svc") {
                return status;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                panic!(
                    "svc serve did not exit within 30 s of SIGTERM; logs:\n{}",
                    self.logs()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Kills the process with SIGKILL (no shutdown, no flush) and waits until it is gone.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts the server again on the same data directory with the same arguments (the
    /// previous process must have exited, e.g. through [`Server::terminate`]).
    pub fn restart(&mut self) {
        let (child, ready, stdout_lines) =
            spawn_serve(self.dir.path(), &self.data_dir, &self.extra, true);
        self.child = child;
        self.base = format!("http://{}", ready_http(&ready));
        self.ready = ready;
        self.stdout_lines = stdout_lines;
        self.admin_token = OnceLock::new();
    }

    /// Runs one statement straight on the server's store, bypassing svc (to plant what the API
    /// cannot write, or to read what it never shows): `sqlite` on the SQLite file, or
    /// `postgres` on its PostgreSQL database. The first column of the first row, as text.
    pub fn store_sql(&self, sqlite: &str, postgres: &str) -> Option<String> {
        let database = self
            .extra
            .iter()
            .position(|arg| arg == "--database")
            .and_then(|i| self.extra.get(i + 1))
            .filter(|url| url.starts_with("postgres"));
        match database {
            Some(url) => shared_postgres()
                .psql_at(url, postgres)
                .expect("psql on the server's database")
                .lines()
                .next()
                .map(str::to_string)
                .filter(|line| !line.is_empty()),
            None => {
                let db = rusqlite::Connection::open(self.data_dir.join("svc.db"))
                    .expect("open the SQLite store");
                let mut stmt = db.prepare(sqlite).expect("prepare");
                let mut rows = stmt.query([]).expect("run");
                rows.next()
                    .expect("a row")
                    .map(|row| match row.get_ref(0).expect("column 0") {
                        rusqlite::types::ValueRef::Null => String::new(),
                        rusqlite::types::ValueRef::Integer(n) => n.to_string(),
                        rusqlite::types::ValueRef::Real(x) => x.to_string(),
                        rusqlite::types::ValueRef::Text(t) | rusqlite::types::ValueRef::Blob(t) => {
                            String::from_utf8_lossy(t).into_owned()
                        }
                    })
                    .filter(|text| !text.is_empty())
            }
        }
    }

    /// The server's stderr so far (for diagnostics).
    pub fn stderr(&self) -> String {
        read_lossy(&self.dir.path().join("stderr.log"))
    }

    /// Everything the server has logged so far: stdout lines and stderr.
    pub fn logs(&self) -> String {
        let mut out = self.stdout_lines.lock().unwrap().join("\n");
        out.push('\n');
        out.push_str(&self.stderr());
        out
    }

    /// Waits up to 5 s for `needle` to appear in [`Server::logs`].
    pub fn wait_for_log(&self, needle: &str) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if self.logs().contains(needle) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// A request without any credential.
    pub fn req(&self, method: Method, path: &str) -> RequestBuilder {
        self.client.request(method, self.url(path))
    }

    /// A request carrying `Authorization: Bearer <token>`.
    pub fn with_token(&self, token: &str, method: Method, path: &str) -> RequestBuilder {
        self.req(method, path).bearer_auth(token)
    }

    /// A request carrying `Authorization: Bearer <token>` and `Domain: <domain>`.
    pub fn with_token_in(
        &self,
        token: &str,
        domain: &str,
        method: Method,
        path: &str,
    ) -> RequestBuilder {
        self.with_token(token, method, path)
            .header("Domain", domain)
    }

    /// A request as the admin user, without a `Domain` header.
    pub fn admin(&self, method: Method, path: &str) -> RequestBuilder {
        self.with_token(&self.admin_token(), method, path)
    }

    /// A request as the admin user in `domain` (a full `domains:<name>` value).
    pub fn admin_in(&self, domain: &str, method: Method, path: &str) -> RequestBuilder {
        self.admin(method, path).header("Domain", domain)
    }

    /// The admin's JWT (logged in once per server).
    pub fn admin_token(&self) -> String {
        self.admin_token
            .get_or_init(|| self.login("admin", ADMIN_PASSWORD))
            .clone()
    }

    /// Logs in and returns the JWT; panics unless the login succeeds.
    pub fn login(&self, username: &str, password: &str) -> String {
        let resp = self
            .req(Method::POST, "/auth/login")
            .json(&json!({"username": username, "password": password}))
            .send()
            .expect("login request");
        let body = json_ok(resp, StatusCode::OK);
        assert_eq!(body["success"], json!(true), "login body: {body}");
        body["tkn"]
            .as_str()
            .unwrap_or_else(|| panic!("login body without tkn: {body}"))
            .to_string()
    }

    /// Creates domain `name` (201) and returns its record.
    pub fn create_domain(&self, name: &str) -> Value {
        let resp = self
            .admin(Method::POST, "/auth/domains")
            .json(&json!({ "name": name }))
            .send()
            .expect("create domain");
        json_ok(resp, StatusCode::CREATED)
    }

    /// Creates a non-admin user and returns its id.
    pub fn create_user(&self, username: &str, password: &str) -> String {
        let resp = self
            .admin(Method::POST, "/auth/user")
            .json(&json!({"username": username, "password": password}))
            .send()
            .expect("create user");
        let body = json_ok(resp, StatusCode::CREATED);
        body["id"]
            .as_str()
            .unwrap_or_else(|| panic!("user without id: {body}"))
            .to_string()
    }

    /// Creates group `name` in `domain` with `(feature, action, scope)` grants; returns its id.
    pub fn create_group_with_grants(
        &self,
        domain: &str,
        name: &str,
        grants: &[(&str, &str, &str)],
    ) -> String {
        let grants: Vec<Value> = grants
            .iter()
            .map(|(f, a, s)| json!({"feature": f, "action": a, "scope": s}))
            .collect();
        let resp = self
            .admin_in(domain, Method::POST, "/auth/group")
            .json(&json!({"name": name, "grants": grants}))
            .send()
            .expect("create group");
        let body = json_ok(resp, StatusCode::CREATED);
        body["id"]
            .as_str()
            .unwrap_or_else(|| panic!("group without id: {body}"))
            .to_string()
    }

    pub fn add_user_to_group(&self, domain: &str, group_id: &str, user_id: &str) {
        let path = format!("/auth/group/{}/user/{}", enc(group_id), enc(user_id));
        let resp = self
            .admin_in(domain, Method::POST, &path)
            .send()
            .expect("add user to group");
        let body = json_ok(resp, StatusCode::OK);
        assert_eq!(body, json!({"success": true}));
    }

    /// Creates a user, a group in `domain` with `grants` holding it, and returns the user's JWT.
    pub fn user_with_grants(
        &self,
        domain: &str,
        username: &str,
        grants: &[(&str, &str, &str)],
    ) -> String {
        let password = format!("{username}-pw-123");
        let uid = self.create_user(username, &password);
        if !grants.is_empty() {
            let gid = self.create_group_with_grants(domain, &format!("{username}_group"), grants);
            self.add_user_to_group(domain, &gid, &uid);
        }
        self.login(username, &password)
    }

    /// Creates the `demo` domain, its collections and its records from `fixtures/demo.json`.
    pub fn load_fixtures(&self) -> Value {
        let fx = fixture();
        let domain = fx["domain"].as_str().expect("fixture domain");
        self.create_domain(domain);
        let header = format!("domains:{domain}");
        for coll in fx["collections"].as_array().expect("fixture collections") {
            let resp = self
                .admin_in(&header, Method::POST, "/svc/collections")
                .json(coll)
                .send()
                .expect("create collection");
            json_ok(resp, StatusCode::CREATED);
        }
        for table in FIXTURE_TABLES {
            for rec in fx["records"][table].as_array().expect("fixture table") {
                let resp = self
                    .admin_in(&header, Method::POST, &format!("/svc/{table}"))
                    .json(rec)
                    .send()
                    .expect("create record");
                let body = json_ok(resp, StatusCode::CREATED);
                let want = format!("{domain}.{table}:{}", rec["id"].as_str().unwrap());
                assert_eq!(body["id"], json!(want), "fixture record id");
            }
        }
        fx
    }

    /// `GET <path>` as admin in `domain`, expecting 200 JSON.
    pub fn get_json(&self, domain: &str, path: &str) -> Value {
        let resp = self
            .admin_in(domain, Method::GET, path)
            .send()
            .expect("GET");
        json_ok(resp, StatusCode::OK)
    }

    /// `POST /svc/<table>` as admin in `domain`, expecting 201; returns the record.
    pub fn create_record(&self, domain: &str, table: &str, body: &Value) -> Value {
        let resp = self
            .admin_in(domain, Method::POST, &format!("/svc/{table}"))
            .json(body)
            .send()
            .expect("POST record");
        json_ok(resp, StatusCode::CREATED)
    }

    /// `GET /svc/<table>/count` as admin in `domain`.
    pub fn count(&self, domain: &str, table: &str) -> u64 {
        let body = self.get_json(domain, &format!("/svc/{table}/count"));
        body["count"]
            .as_u64()
            .unwrap_or_else(|| panic!("count body: {body}"))
    }
}

/// Copies the files and directories under `from` into the existing directory `to`.
fn copy_tree(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).expect("read the fixture") {
        let path = entry.expect("fixture entry").path();
        let target = to.join(path.file_name().expect("a name"));
        if path.is_dir() {
            std::fs::create_dir_all(&target).expect("create a fixture directory");
            copy_tree(&path, &target);
        } else {
            std::fs::copy(&path, &target).expect("copy the fixture");
        }
    }
}

/// Spawns `svc serve` over `data_dir` (stderr to `<dir>/stderr.log`) and waits for `ready`.
fn spawn_serve(
    dir: &Path,
    data_dir: &Path,
    extra: &[String],
    append_stderr: bool,
) -> (Child, Value, Arc<Mutex<Vec<String>>>) {
    let stderr_path = dir.join("stderr.log");
    let stderr = std::fs::OpenOptions::new()
        .create(true)
        .write(true)
        .append(append_stderr)
        .truncate(!append_stderr)
        .open(&stderr_path)
        .expect("create stderr log");
    let mut args: Vec<String> = vec![
        "serve".into(),
        "--data-dir".into(),
        data_dir.display().to_string(),
        "--http-port".into(),
        "0".into(),
        "--mqtt-port".into(),
        "0".into(),
        "--ws-port".into(),
        "0".into(),
        "--admin-password".into(),
        ADMIN_PASSWORD.into(),
    ];
    args.extend(extra.iter().cloned());
    let mut child = Command::new(env!("CARGO_BIN_EXE_svc"))
        .args(&args)
        .env_remove("SVC_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        .spawn()
        .expect("spawn svc serve");
    let stdout = child.stdout.take().expect("child stdout");
    let (tx, rx) = mpsc::channel::<String>();
    let stdout_lines = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&stdout_lines);
    std::thread::spawn(move || {
        // Keeps draining stdout after `ready` so the child never blocks on a full pipe.
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            sink.lock().unwrap().push(line.clone());
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + READY_TIMEOUT;
    let ready = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                if let Some(json) = line.strip_prefix("ready ") {
                    let v: Value = serde_json::from_str(json).unwrap_or_else(|e| {
                        let _ = child.kill();
                        panic!("`ready` line is not JSON ({e}): {line}")
                    });
                    break v;
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "svc serve printed no `ready` line within {READY_TIMEOUT:?}; stderr:\n{}",
                    read_lossy(&stderr_path)
                );
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let status = child.wait();
                panic!(
                    "svc serve exited ({status:?}) before `ready`; stderr:\n{}",
                    read_lossy(&stderr_path)
                );
            }
        }
    };
    (child, ready, stdout_lines)
}

fn ready_http(ready: &Value) -> String {
    ready["http"]
        .as_str()
        .unwrap_or_else(|| panic!("`ready` JSON has no string `http`: {ready}"))
        .to_string()
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if database_users(&self.extra, -1) == Some(0) {
            let url = database_arg(&self.extra).unwrap_or_default();
            DATABASE_USERS
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(url);
            shared_postgres().drop_database(url);
        }
    }
}

/// The test servers running on each database [`Postgres::fresh_database`] made for one: the
/// last of them to stop drops it, so the one cluster the test process shares does not keep
/// every test's database until the end.
static DATABASE_USERS: Mutex<BTreeMap<String, i32>> = Mutex::new(BTreeMap::new());

/// Counts a server in (`change` 1) or out (-1) of the fresh database its arguments name;
/// how many are left, or None when they name none.
fn database_users(args: &[String], change: i32) -> Option<i32> {
    let url = database_arg(args)?;
    let mut users = DATABASE_USERS.lock().unwrap_or_else(|e| e.into_inner());
    let count = users.get_mut(url)?;
    *count += change;
    Some(*count)
}

/// The value of `--database` in a server's arguments.
fn database_arg(args: &[String]) -> Option<&str> {
    let at = args.iter().position(|arg| arg == "--database")?;
    args.get(at + 1).map(String::as_str)
}

/// Tables of the fixture, in load order (orders reference products).
pub const FIXTURE_TABLES: [&str; 3] = ["products", "sites", "orders"];

/// The parsed `fixtures/demo.json`.
pub fn fixture() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/demo.json");
    let text = std::fs::read_to_string(&path).expect("read fixtures/demo.json");
    serde_json::from_str(&text).expect("fixtures/demo.json is JSON")
}

/// Number of fixture records of `table`.
pub fn fixture_len(table: &str) -> u64 {
    fixture()["records"][table].as_array().unwrap().len() as u64
}

fn read_lossy(path: &Path) -> String {
    std::fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// Percent-encodes a whole string (path segment, query value).
pub fn enc(s: &str) -> String {
    urlencoding::encode(s).into_owned()
}

/// Percent-encodes a query key but keeps its `[` `]` literal.
pub fn enc_key(k: &str) -> String {
    k.split_inclusive(['[', ']'])
        .map(|part| {
            let (text, bracket) = match part.chars().last() {
                Some(c @ ('[' | ']')) => (&part[..part.len() - 1], Some(c)),
                _ => (part, None),
            };
            let mut s = enc(text);
            if let Some(c) = bracket {
                s.push(c);
            }
            s
        })
        .collect()
}

/// `?k=v&…` with keys encoded by [`enc_key`] and values fully encoded.
pub fn query(pairs: &[(&str, &str)]) -> String {
    let parts: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{}={}", enc_key(k), enc(v)))
        .collect();
    format!("?{}", parts.join("&"))
}

/// `/svc/<urlencoded RecordID>`.
pub fn rec_path(id: &str) -> String {
    format!("/svc/{}", enc(id))
}

/// The header value or "" when absent.
pub fn header(resp: &Response, name: &str) -> String {
    resp.headers()
        .get(name)
        .map(|v| v.to_str().unwrap_or("<non-ascii>").to_string())
        .unwrap_or_default()
}

/// Asserts `status`, a JSON content type and a correlation id; returns the parsed body.
pub fn json_ok(resp: Response, status: StatusCode) -> Value {
    let got = resp.status();
    let ctype = header(&resp, CONTENT_TYPE.as_str());
    let corr = header(&resp, CORRELATION);
    let text = resp.text().expect("response body");
    assert_eq!(got, status, "unexpected status; body: {text}");
    assert!(
        ctype.starts_with("application/json"),
        "content type `{ctype}` is not JSON; body: {text}"
    );
    assert!(!corr.is_empty(), "no {CORRELATION} on a {got} response");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("body is not JSON ({e}): {text}"))
}

/// Asserts an error response: `status`, `text/plain; charset=utf-8`, a correlation id, a short
/// one-line non-JSON body containing every needle (case-insensitive). Returns the body.
pub fn assert_error(resp: Response, status: StatusCode, needles: &[&str]) -> String {
    let got = resp.status();
    let ctype = header(&resp, CONTENT_TYPE.as_str());
    let corr = header(&resp, CORRELATION);
    let text = resp.text().expect("response body");
    assert_eq!(got, status, "unexpected status; body: {text}");
    assert_eq!(ctype, TEXT_PLAIN, "error content type; body: {text}");
    assert!(!corr.is_empty(), "no {CORRELATION} on a {got} response");
    let trimmed = text.trim();
    assert!(!trimmed.is_empty(), "empty error body");
    assert!(
        !trimmed.starts_with('{') && !trimmed.starts_with('['),
        "error body looks like JSON: {text}"
    );
    assert!(
        !trimmed.contains('\n'),
        "error body is not one line: {text}"
    );
    assert!(trimmed.len() <= 400, "error body is too long: {text}");
    let lower = trimmed.to_lowercase();
    for needle in needles {
        assert!(
            lower.contains(&needle.to_lowercase()),
            "error body `{text}` does not mention `{needle}`"
        );
    }
    text
}

/// The keys (part after `:`) of the records of a JSON array, in order.
pub fn keys(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap_or_else(|| panic!("not an array: {list}"))
        .iter()
        .map(|r| {
            let id = r["id"]
                .as_str()
                .unwrap_or_else(|| panic!("record without id: {r}"));
            id.rsplit_once(':')
                .map(|(_, k)| k.to_string())
                .unwrap_or_else(|| panic!("id `{id}` is not a RecordID"))
        })
        .collect()
}

/// Like [`keys`], sorted.
pub fn sorted_keys(list: &Value) -> Vec<String> {
    let mut k = keys(list);
    k.sort();
    k
}

/// True when `s` is RFC 3339 UTC with milliseconds, e.g. `2026-01-02T03:04:05.678Z`.
pub fn is_rfc3339_millis_utc(s: &str) -> bool {
    s.len() == 24
        && s.ends_with('Z')
        && s.as_bytes()[19] == b'.'
        && chrono::DateTime::parse_from_rfc3339(s).is_ok()
}

impl Server {
    /// Creates an API key for the holder of `token`; returns `(id, key)`.
    pub fn create_api_key(&self, token: &str, name: &str) -> (String, String) {
        let resp = self
            .with_token(token, Method::POST, "/auth/keys")
            .json(&json!({ "name": name }))
            .send()
            .expect("create api key");
        let body = json_ok(resp, StatusCode::CREATED);
        let id = body["id"].as_str().expect("key id").to_string();
        let key = body["key"].as_str().expect("key secret").to_string();
        (id, key)
    }

    /// Revokes an API key of the holder of `token` (200 `{"success":true}`).
    pub fn revoke_api_key(&self, token: &str, id: &str) {
        let resp = self
            .with_token(token, Method::DELETE, &format!("/auth/keys/{}", enc(id)))
            .send()
            .expect("revoke api key");
        assert_eq!(json_ok(resp, StatusCode::OK), json!({"success": true}));
    }

    /// Creates a tag as admin in `domain` (a `domains:<name>` value); returns the record.
    pub fn create_tag(&self, domain: &str, path: &str, historize: bool) -> Value {
        self.create_record(
            domain,
            "tags",
            &json!({"path": path, "historize": historize}),
        )
    }

    /// `GET <path>` as admin in `domain` (`None`: no Domain header), expecting a string array.
    pub fn string_list(&self, domain: Option<&str>, path: &str) -> Vec<String> {
        let req = match domain {
            Some(d) => self.admin_in(d, Method::GET, path),
            None => self.admin(Method::GET, path),
        };
        let body = json_ok(req.send().expect("GET list"), StatusCode::OK);
        body.as_array()
            .unwrap_or_else(|| panic!("`{path}` is not an array: {body}"))
            .iter()
            .map(|v| {
                v.as_str()
                    .unwrap_or_else(|| panic!("`{path}` holds a non-string: {body}"))
                    .to_string()
            })
            .collect()
    }

    /// The newest historian values of `topic` in `domain` (`PATCH /svc/historian/last`,
    /// newest first), polled for up to 10 s until there are `count` of them.
    pub fn history(&self, domain: &str, topic: &str, count: usize) -> Value {
        let what = format!("{count} historized values of {topic}");
        self.poll(Duration::from_secs(10), &what, || {
            let resp = self
                .admin_in(domain, Method::PATCH, "/svc/historian/last")
                .json(&json!({"topic": topic, "limit": 100}))
                .send()
                .ok()?;
            let points = resp.json::<Value>().ok()?;
            (points.as_array()?.len() == count).then_some(points)
        })
    }

    /// `GET /metrics` as administrator: the Prometheus text.
    pub fn scrape(&self) -> String {
        let resp = self
            .admin(Method::GET, "/metrics")
            .send()
            .expect("GET /metrics");
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(
            header(&resp, "content-type"),
            "text/plain; version=0.0.4; charset=utf-8"
        );
        resp.text().expect("the metrics text")
    }

    /// Polls `check` every 50 ms until it returns `Some`, failing with `what` and the tail of
    /// the server's log after `within` (what svc said is what tells a slow machine from a bug).
    pub fn poll<T>(&self, within: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
        poll_or_explain(within, what, &mut check, &|| {
            let logs = self.logs();
            let lines: Vec<&str> = logs.lines().collect();
            let tail = lines[lines.len().saturating_sub(60)..].join("\n");
            format!("the server's log ends:\n{tail}")
        })
    }
}

/// The value of the sample `series` (name with its labels, exactly as exposed) in a
/// Prometheus text; 0 when absent.
pub fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| {
            let (name, value) = line.rsplit_once(' ')?;
            (name == series).then(|| value.parse::<f64>().ok())?
        })
        .unwrap_or(0.0)
}

/// Polls `check` every 50 ms until it returns `Some`; panics naming `what` after `within`.
pub fn poll_until<T>(within: Duration, what: &str, check: &mut dyn FnMut() -> Option<T>) -> T {
    poll_or_explain(within, what, check, &String::new)
}

/// [`poll_until`], whose panic adds what `explain` says then.
fn poll_or_explain<T>(
    within: Duration,
    what: &str,
    check: &mut dyn FnMut() -> Option<T>,
    explain: &dyn Fn() -> String,
) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = check() {
            return v;
        }
        if Instant::now() >= deadline {
            panic!(
                "timed out after {within:?} waiting for {what}\n{}",
                explain()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

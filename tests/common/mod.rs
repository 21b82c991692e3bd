//! Shared harness of the end-to-end tests: starts the real `svc serve` binary on free ports over a
//! temporary data directory, waits for its `ready {json}` line, and offers small helpers for the
//! admin flows (login, domains, users, groups, fixtures) and for checking responses against the
//! error and correlation rules of the contract.
#![allow(dead_code)]

use reqwest::blocking::{Client, RequestBuilder, Response};
use reqwest::header::CONTENT_TYPE;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

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
        let dir = tempfile::tempdir().expect("tempdir");
        let data_dir = dir.path().join("data");
        std::fs::create_dir_all(&data_dir).expect("create data dir");
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
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
    }
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

// ---------------------------------------------------------------------------------------------
// MQTT, tags and API-key helpers (used by tests/mqtt_*.rs, tests/tags.rs, tests/historian.rs).
// ---------------------------------------------------------------------------------------------

/// How long any single MQTT wait may take before the test fails.
pub const MQTT_WAIT: Duration = Duration::from_secs(10);

/// MQTT protocol version of a test client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    V3,
    V5,
}

/// Which listener a test client uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// MQTT over TCP on the `mqtt` port.
    Tcp,
    /// MQTT over WebSocket on the `ws` port, at the given path (any path is accepted).
    Ws(&'static str),
    /// MQTT over WebSocket at `/mqtt` on the HTTP port.
    HttpMqtt,
}

/// Connection options of a test client.
#[derive(Clone, Debug)]
pub struct MqttOpts {
    pub proto: Proto,
    pub via: Via,
    pub client_id: String,
    /// `(username, password)`; `None` sends a CONNECT without credentials.
    pub credentials: Option<(String, String)>,
    /// v3: clean session; v5: clean start.
    pub clean: bool,
    /// v5 session expiry interval (seconds).
    pub session_expiry: Option<u32>,
    pub keep_alive_secs: u64,
}

impl MqttOpts {
    pub fn new(proto: Proto, via: Via, client_id: &str) -> MqttOpts {
        MqttOpts {
            proto,
            via,
            client_id: client_id.to_string(),
            credentials: None,
            clean: true,
            session_expiry: None,
            keep_alive_secs: 30,
        }
    }

    pub fn creds(mut self, username: &str, password: &str) -> MqttOpts {
        self.credentials = Some((username.to_string(), password.to_string()));
        self
    }

    /// A persistent session: v3 clean_session=false; v5 clean_start=false with expiry 1 h.
    pub fn persistent(mut self) -> MqttOpts {
        self.clean = false;
        if self.proto == Proto::V5 {
            self.session_expiry = Some(3600);
        }
        self
    }

    pub fn keep_alive(mut self, secs: u64) -> MqttOpts {
        self.keep_alive_secs = secs;
        self
    }
}

/// A received PUBLISH, the same for both protocol versions.
#[derive(Clone, Debug)]
pub struct Msg {
    pub topic: String,
    pub payload: Vec<u8>,
    pub qos: u8,
    pub retain: bool,
    /// MQTT 5 content-type property.
    pub content_type: Option<String>,
}

impl Msg {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.payload).into_owned()
    }
}

#[derive(Debug)]
enum MqttEv {
    ConnAck(Result<bool, String>),
    Publish(Msg),
    SubAck(Vec<Option<u8>>),
    PubAck(String),
    PubComp(String),
    OutDisconnect,
    ServerDisconnect(String),
    Closed(String),
}

enum MqttHandle {
    V3(rumqttc::AsyncClient),
    V5(rumqttc::v5::AsyncClient),
}

/// A real MQTT client (rumqttc) whose event loop runs in its own thread.
pub struct Mqtt {
    handle: MqttHandle,
    /// Dropping it stops the event loop and closes the connection.
    _stop: tokio::sync::oneshot::Sender<()>,
    rx: mpsc::Receiver<MqttEv>,
    /// Publishes received while waiting for something else.
    backlog: std::collections::VecDeque<Msg>,
    /// Why the connection ended, once it has.
    pub closed: Option<String>,
    pub session_present: bool,
    pub client_id: String,
}

/// Runs `$eventloop` on its own thread until the stop channel fires or its sender is dropped
/// (which closes the connection); `$step` maps poll results to reported events.
macro_rules! spawn_event_loop {
    ($eventloop:expr, $step:expr, $tx:expr, $stop:expr) => {{
        let mut eventloop = $eventloop;
        let tx: mpsc::Sender<MqttEv> = $tx;
        let mut stop: tokio::sync::oneshot::Receiver<()> = $stop;
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("tokio runtime for an MQTT client");
            rt.block_on(async move {
                loop {
                    let event = tokio::select! {
                        _ = &mut stop => break,
                        event = eventloop.poll() => event,
                    };
                    let (events, go_on) = $step(event);
                    for e in events {
                        if tx.send(e).is_err() {
                            return;
                        }
                    }
                    if !go_on {
                        break;
                    }
                }
            });
        });
    }};
}

fn qos3(q: u8) -> rumqttc::QoS {
    match q {
        0 => rumqttc::QoS::AtMostOnce,
        1 => rumqttc::QoS::AtLeastOnce,
        _ => rumqttc::QoS::ExactlyOnce,
    }
}

fn qos5(q: u8) -> rumqttc::v5::mqttbytes::QoS {
    use rumqttc::v5::mqttbytes::QoS;
    match q {
        0 => QoS::AtMostOnce,
        1 => QoS::AtLeastOnce,
        _ => QoS::ExactlyOnce,
    }
}

impl Server {
    /// `host:port` of a listener from the `ready` line.
    pub fn listener(&self, name: &str) -> String {
        self.ready[name]
            .as_str()
            .unwrap_or_else(|| panic!("ready line has no `{name}`: {}", self.ready))
            .to_string()
    }

    /// The port of a listener from the `ready` line.
    pub fn listener_port(&self, name: &str) -> u16 {
        let addr = self.listener(name);
        addr.rsplit_once(':')
            .and_then(|(_, p)| p.parse().ok())
            .unwrap_or_else(|| panic!("bad address `{addr}` for `{name}`"))
    }

    /// Connects a test client; panics with the reason if the broker refuses it.
    pub fn mqtt(&self, opts: MqttOpts) -> Mqtt {
        let what = format!(
            "{:?} {:?} client `{}`",
            opts.proto, opts.via, opts.client_id
        );
        self.try_mqtt(opts)
            .unwrap_or_else(|e| panic!("{what} could not connect: {e}"))
    }

    /// A connected admin client (username `admin` and its password).
    pub fn mqtt_admin(&self, proto: Proto, via: Via, client_id: &str) -> Mqtt {
        self.mqtt(MqttOpts::new(proto, via, client_id).creds("admin", ADMIN_PASSWORD))
    }

    /// Connects a test client; `Err` carries the refusal (CONNACK code or transport error).
    pub fn try_mqtt(&self, opts: MqttOpts) -> Result<Mqtt, String> {
        let (host, port) = match opts.via {
            Via::Tcp => ("127.0.0.1".to_string(), self.listener_port("mqtt")),
            Via::Ws(path) => (
                format!("ws://{}{path}", self.listener("ws")),
                self.listener_port("ws"),
            ),
            Via::HttpMqtt => (
                format!("ws://{}/mqtt", self.listener("http")),
                self.listener_port("http"),
            ),
        };
        let ws = !matches!(opts.via, Via::Tcp);
        let (tx, rx) = mpsc::channel();
        let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let handle = match opts.proto {
            Proto::V3 => {
                let mut o = rumqttc::MqttOptions::new(opts.client_id.clone(), host, port);
                o.set_keep_alive(Duration::from_secs(opts.keep_alive_secs));
                o.set_clean_session(opts.clean);
                o.set_max_packet_size(1024 * 1024, 1024 * 1024);
                if let Some((u, p)) = &opts.credentials {
                    o.set_credentials(u.clone(), p.clone());
                }
                if ws {
                    o.set_transport(rumqttc::Transport::Ws);
                }
                let (client, eventloop) = rumqttc::AsyncClient::new(o, 1000);
                spawn_event_loop!(eventloop, step_v3, tx, stop_rx);
                MqttHandle::V3(client)
            }
            Proto::V5 => {
                let mut o = rumqttc::v5::MqttOptions::new(opts.client_id.clone(), host, port);
                o.set_keep_alive(Duration::from_secs(opts.keep_alive_secs));
                o.set_clean_start(opts.clean);
                o.set_max_packet_size(Some(1024 * 1024));
                if let Some((u, p)) = &opts.credentials {
                    o.set_credentials(u.clone(), p.clone());
                }
                if let Some(expiry) = opts.session_expiry {
                    let mut props = rumqttc::v5::mqttbytes::v5::ConnectProperties::new();
                    props.session_expiry_interval = Some(expiry);
                    props.max_packet_size = Some(1024 * 1024);
                    o.set_connect_properties(props);
                }
                if ws {
                    o.set_transport(rumqttc::Transport::Ws);
                }
                let (client, eventloop) = rumqttc::v5::AsyncClient::new(o, 1000);
                spawn_event_loop!(eventloop, step_v5, tx, stop_rx);
                MqttHandle::V5(client)
            }
        };
        let mut mqtt = Mqtt {
            handle,
            _stop: stop,
            rx,
            backlog: Default::default(),
            closed: None,
            session_present: false,
            client_id: opts.client_id.clone(),
        };
        match mqtt.rx.recv_timeout(MQTT_WAIT) {
            Ok(MqttEv::ConnAck(Ok(session_present))) => {
                mqtt.session_present = session_present;
                Ok(mqtt)
            }
            Ok(MqttEv::ConnAck(Err(e))) | Ok(MqttEv::Closed(e)) => Err(e),
            Ok(other) => Err(format!("expected CONNACK, got {other:?}")),
            Err(_) => Err(format!("no CONNACK within {MQTT_WAIT:?}")),
        }
    }
}

/// The events one v3.1.1 poll result reports, and whether the loop goes on.
fn step_v3(event: Result<rumqttc::Event, rumqttc::ConnectionError>) -> (Vec<MqttEv>, bool) {
    use rumqttc::{Event, Outgoing, Packet};
    let ev = match event {
        Ok(Event::Incoming(Packet::ConnAck(ack))) => {
            if ack.code == rumqttc::ConnectReturnCode::Success {
                MqttEv::ConnAck(Ok(ack.session_present))
            } else {
                MqttEv::ConnAck(Err(format!("{:?}", ack.code)))
            }
        }
        Ok(Event::Incoming(Packet::Publish(p))) => MqttEv::Publish(Msg {
            topic: p.topic.clone(),
            payload: p.payload.to_vec(),
            qos: p.qos as u8,
            retain: p.retain,
            content_type: None,
        }),
        Ok(Event::Incoming(Packet::SubAck(ack))) => MqttEv::SubAck(
            ack.return_codes
                .iter()
                .map(|c| match c {
                    rumqttc::SubscribeReasonCode::Success(q) => Some(*q as u8),
                    rumqttc::SubscribeReasonCode::Failure => None,
                })
                .collect(),
        ),
        Ok(Event::Incoming(Packet::PubAck(_))) => MqttEv::PubAck("Success".into()),
        Ok(Event::Incoming(Packet::PubComp(_))) => MqttEv::PubComp("Success".into()),
        Ok(Event::Outgoing(Outgoing::Disconnect)) => MqttEv::OutDisconnect,
        Ok(_) => return (Vec::new(), true),
        Err(rumqttc::ConnectionError::ConnectionRefused(code)) => {
            return (vec![MqttEv::ConnAck(Err(format!("{code:?}")))], false)
        }
        Err(e) => return (vec![MqttEv::Closed(format!("{e:?}"))], false),
    };
    (vec![ev], true)
}

/// The events one MQTT 5 poll result reports, and whether the loop goes on.
fn step_v5(event: Result<rumqttc::v5::Event, rumqttc::v5::ConnectionError>) -> (Vec<MqttEv>, bool) {
    use rumqttc::v5::mqttbytes::v5::{ConnectReturnCode, Packet, SubscribeReasonCode};
    use rumqttc::v5::{ConnectionError, Event, StateError};
    use rumqttc::Outgoing;
    let ev = match event {
        Ok(Event::Incoming(Packet::ConnAck(ack))) => {
            if ack.code == ConnectReturnCode::Success {
                MqttEv::ConnAck(Ok(ack.session_present))
            } else {
                MqttEv::ConnAck(Err(format!("{:?}", ack.code)))
            }
        }
        Ok(Event::Incoming(Packet::Publish(p))) => MqttEv::Publish(Msg {
            topic: String::from_utf8_lossy(&p.topic).into_owned(),
            payload: p.payload.to_vec(),
            qos: p.qos as u8,
            retain: p.retain,
            content_type: p.properties.as_ref().and_then(|p| p.content_type.clone()),
        }),
        Ok(Event::Incoming(Packet::SubAck(ack))) => MqttEv::SubAck(
            ack.return_codes
                .iter()
                .map(|c| match c {
                    SubscribeReasonCode::Success(q) => Some(*q as u8),
                    _ => None,
                })
                .collect(),
        ),
        Ok(Event::Incoming(Packet::PubAck(ack))) => MqttEv::PubAck(format!("{:?}", ack.reason)),
        Ok(Event::Incoming(Packet::PubComp(comp))) => MqttEv::PubComp(format!("{:?}", comp.reason)),
        Ok(Event::Incoming(Packet::Disconnect(d))) => {
            MqttEv::ServerDisconnect(format!("{:?}", d.reason_code))
        }
        Ok(Event::Outgoing(Outgoing::Disconnect)) => MqttEv::OutDisconnect,
        Ok(_) => return (Vec::new(), true),
        Err(ConnectionError::ConnectionRefused(code)) => {
            return (vec![MqttEv::ConnAck(Err(format!("{code:?}")))], false)
        }
        // rumqttc ends the connection on a refused publish; report the reason first.
        Err(ConnectionError::MqttState(StateError::PubAckFail { reason })) => {
            return (
                vec![
                    MqttEv::PubAck(format!("{reason:?}")),
                    MqttEv::Closed(format!("PUBACK {reason:?}")),
                ],
                false,
            )
        }
        Err(ConnectionError::MqttState(StateError::PubRecFail { reason })) => {
            return (
                vec![
                    MqttEv::PubComp(format!("{reason:?}")),
                    MqttEv::Closed(format!("PUBREC {reason:?}")),
                ],
                false,
            )
        }
        Err(e) => return (vec![MqttEv::Closed(format!("{e:?}"))], false),
    };
    (vec![ev], true)
}

impl Mqtt {
    /// Receives the next non-publish event (publishes go to the backlog) within `within`.
    fn next_control(&mut self, within: Duration, what: &str) -> MqttEv {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(MqttEv::Publish(m)) => self.backlog.push_back(m),
                Ok(MqttEv::Closed(e)) => {
                    self.closed = Some(e.clone());
                    panic!(
                        "client `{}`: connection closed ({e}) while waiting for {what}",
                        self.client_id
                    );
                }
                Ok(ev) => return ev,
                Err(_) => panic!("client `{}`: no {what} within {within:?}", self.client_id),
            }
        }
    }

    /// Subscribes and returns the granted QoS (`None` when the broker refused the filter).
    pub fn subscribe(&mut self, filter: &str, qos: u8) -> Option<u8> {
        let sent = match &self.handle {
            MqttHandle::V3(c) => c
                .try_subscribe(filter, qos3(qos))
                .map_err(|e| e.to_string()),
            MqttHandle::V5(c) => c
                .try_subscribe(filter, qos5(qos))
                .map_err(|e| e.to_string()),
        };
        sent.unwrap_or_else(|e| panic!("client `{}`: subscribe failed: {e}", self.client_id));
        match self.next_control(MQTT_WAIT, &format!("SUBACK for `{filter}`")) {
            MqttEv::SubAck(codes) => codes.first().copied().flatten(),
            other => panic!(
                "client `{}`: expected SUBACK for `{filter}`, got {other:?}",
                self.client_id
            ),
        }
    }

    /// Publishes; for QoS 1/2 waits for PUBACK/PUBCOMP and returns its reason (v3: "Success").
    pub fn publish(
        &mut self,
        topic: &str,
        payload: impl Into<Vec<u8>>,
        qos: u8,
        retain: bool,
    ) -> String {
        self.publish_ct(topic, payload, qos, retain, None)
    }

    /// [`Mqtt::publish`] with an MQTT 5 content-type property (v5 clients only).
    pub fn publish_ct(
        &mut self,
        topic: &str,
        payload: impl Into<Vec<u8>>,
        qos: u8,
        retain: bool,
        content_type: Option<&str>,
    ) -> String {
        let payload: Vec<u8> = payload.into();
        let sent = match &self.handle {
            MqttHandle::V3(c) => {
                assert!(content_type.is_none(), "content type needs MQTT 5");
                c.try_publish(topic, qos3(qos), retain, payload)
                    .map_err(|e| e.to_string())
            }
            MqttHandle::V5(c) => {
                let props = rumqttc::v5::mqttbytes::v5::PublishProperties {
                    content_type: content_type.map(str::to_string),
                    ..Default::default()
                };
                c.try_publish_with_properties(topic, qos5(qos), retain, payload, props)
                    .map_err(|e| e.to_string())
            }
        };
        sent.unwrap_or_else(|e| panic!("client `{}`: publish failed: {e}", self.client_id));
        match qos {
            0 => "Success".into(),
            1 => match self.next_control(MQTT_WAIT, &format!("PUBACK for `{topic}`")) {
                MqttEv::PubAck(reason) => reason,
                other => panic!("expected PUBACK for `{topic}`, got {other:?}"),
            },
            _ => match self.next_control(MQTT_WAIT, &format!("PUBCOMP for `{topic}`")) {
                MqttEv::PubComp(reason) => reason,
                other => panic!("expected PUBCOMP for `{topic}`, got {other:?}"),
            },
        }
    }

    /// The next received publish within `within`, or `None`.
    pub fn next_publish(&mut self, within: Duration) -> Option<Msg> {
        if let Some(m) = self.backlog.pop_front() {
            return Some(m);
        }
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(MqttEv::Publish(m)) => return Some(m),
                Ok(MqttEv::Closed(e)) => {
                    self.closed = Some(e);
                    return None;
                }
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }

    /// Every publish received up to and including the first one on `topic`; panics (listing
    /// what did arrive) if none arrives within [`MQTT_WAIT`].
    pub fn collect_until(&mut self, topic: &str) -> Vec<Msg> {
        self.collect_until_match(topic, |m| m.topic == topic)
    }

    /// Every publish received up to and including the first one matching `done`; panics
    /// (naming `what` and listing what did arrive) if none arrives within [`MQTT_WAIT`].
    pub fn collect_until_match(&mut self, what: &str, done: impl Fn(&Msg) -> bool) -> Vec<Msg> {
        let topic = what;
        let deadline = Instant::now() + MQTT_WAIT;
        let mut got = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next_publish(left) {
                Some(m) => {
                    let matched = done(&m);
                    got.push(m);
                    if matched {
                        return got;
                    }
                }
                None => panic!(
                    "client `{}`: no publish on `{topic}` within {MQTT_WAIT:?} (closed: {:?}); \
                     received: {:?}",
                    self.client_id,
                    self.closed,
                    got.iter()
                        .map(|m| format!("{} {}", m.topic, m.text()))
                        .collect::<Vec<_>>()
                ),
            }
        }
    }

    /// The first publish on `topic` (others are skipped); panics if none within [`MQTT_WAIT`].
    pub fn expect_publish(&mut self, topic: &str) -> Msg {
        self.collect_until(topic)
            .pop()
            .expect("collect_until returns the match")
    }

    /// Waits until the server ends the connection; returns the reason seen by the client.
    pub fn wait_closed(&mut self, within: Duration) -> String {
        if let Some(e) = &self.closed {
            return e.clone();
        }
        let deadline = Instant::now() + within;
        let mut server_disconnect = None;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(MqttEv::Closed(e)) => {
                    let reason = match server_disconnect {
                        Some(d) => format!("DISCONNECT {d}, then {e}"),
                        None => e,
                    };
                    self.closed = Some(reason.clone());
                    return reason;
                }
                Ok(MqttEv::ServerDisconnect(d)) => server_disconnect = Some(d),
                Ok(MqttEv::Publish(m)) => self.backlog.push_back(m),
                Ok(_) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return "event loop ended".into();
                }
                Err(mpsc::RecvTimeoutError::Timeout) => panic!(
                    "client `{}`: the connection is still open after {within:?}",
                    self.client_id
                ),
            }
        }
    }

    /// Sends DISCONNECT, waits until it has been written, then closes the connection (as MQTT
    /// requires of the client) and waits for the event loop to end.
    pub fn disconnect(self) {
        let Mqtt {
            handle,
            _stop: stop,
            rx,
            client_id,
            ..
        } = self;
        let sent = match &handle {
            MqttHandle::V3(c) => c.try_disconnect().map_err(|e| e.to_string()),
            MqttHandle::V5(c) => c.try_disconnect().map_err(|e| e.to_string()),
        };
        if let Err(e) = sent {
            panic!("client `{client_id}`: disconnect failed: {e}");
        }
        wait_disconnect_written(&rx, &client_id);
        // Stopping the event loop drops the connection, which closes the socket.
        drop(stop);
        drop(handle);
        let deadline = Instant::now() + MQTT_WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(MqttEv::Closed(_)) | Err(mpsc::RecvTimeoutError::Disconnected) => return,
                Ok(_) => {}
                Err(mpsc::RecvTimeoutError::Timeout) => panic!(
                    "client `{client_id}`: event loop still running {MQTT_WAIT:?} after DISCONNECT"
                ),
            }
        }
    }

    /// Sends DISCONNECT and returns as soon as it has been written to the socket; the
    /// connection is closed when the returned value is dropped.
    pub fn disconnect_nowait(self) -> Mqtt {
        let sent = match &self.handle {
            MqttHandle::V3(c) => c.try_disconnect().map_err(|e| e.to_string()),
            MqttHandle::V5(c) => c.try_disconnect().map_err(|e| e.to_string()),
        };
        if let Err(e) = sent {
            panic!("client `{}`: disconnect failed: {e}", self.client_id);
        }
        wait_disconnect_written(&self.rx, &self.client_id);
        self
    }
}

fn wait_disconnect_written(rx: &mpsc::Receiver<MqttEv>, client_id: &str) {
    let deadline = Instant::now() + MQTT_WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(MqttEv::OutDisconnect) => return,
            Ok(MqttEv::Closed(e)) => {
                panic!("client `{client_id}`: connection closed ({e}) before DISCONNECT")
            }
            Ok(_) => {}
            Err(e) => {
                panic!("client `{client_id}`: DISCONNECT not written within {MQTT_WAIT:?} ({e:?})")
            }
        }
    }
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

    /// Polls `check` every 50 ms until it returns `Some`, failing with `what` after `within`.
    pub fn poll<T>(&self, within: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
        poll_until(within, what, &mut check)
    }
}

/// Polls `check` every 50 ms until it returns `Some`; panics naming `what` after `within`.
pub fn poll_until<T>(within: Duration, what: &str, check: &mut dyn FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = check() {
            return v;
        }
        if Instant::now() >= deadline {
            panic!("timed out after {within:?} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A `mosquitto_sub` process printing `topic qos retain payload` lines, ready once its SUBACK
/// arrived.
pub struct MosquittoSub {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Server {
    /// Starts `mosquitto_sub` on the TCP listener (`v5`: `-V mqttv5`, else `mqttv311`) and waits
    /// for its SUBACK.
    pub fn mosquitto_sub(
        &self,
        v5: bool,
        filter: &str,
        qos: u8,
        user: &str,
        password: &str,
    ) -> MosquittoSub {
        let port = self.listener_port("mqtt").to_string();
        // stdbuf: mosquitto_sub block-buffers its stdout when it is a pipe.
        let mut child = Command::new("stdbuf")
            .args(["-oL", "mosquitto_sub"])
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &port,
                "-t",
                filter,
                "-q",
                &qos.to_string(),
            ])
            .args(["-V", if v5 { "mqttv5" } else { "mqttv311" }])
            .args(["-u", user, "-P", password, "-d", "-F", "MSG %t %q %r %p"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn mosquitto_sub (apt-get install mosquitto-clients)");
        let stdout = child.stdout.take().expect("mosquitto_sub stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut sub = MosquittoSub {
            child,
            lines: rx,
            seen: Vec::new(),
        };
        sub.wait_line(|l| l.contains("SUBACK"), "its SUBACK");
        sub
    }

    /// Runs `mosquitto_pub` against the TCP listener; returns (exit success, stdout+stderr).
    pub fn mosquitto_pub(&self, v5: bool, args: &[&str]) -> (bool, String) {
        let port = self.listener_port("mqtt").to_string();
        let out = Command::new("mosquitto_pub")
            .args(["-h", "127.0.0.1", "-p", &port])
            .args(["-V", if v5 { "mqttv5" } else { "mqttv311" }])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run mosquitto_pub (apt-get install mosquitto-clients)");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    }
}

impl MosquittoSub {
    /// Waits for a stdout line matching `pred`; panics naming `what` (with the output so far).
    pub fn wait_line(&mut self, pred: impl Fn(&str) -> bool, what: &str) -> String {
        let deadline = Instant::now() + MQTT_WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if pred(&line) {
                        return line;
                    }
                }
                Err(e) => {
                    let _ = self.child.kill();
                    let mut err = String::new();
                    if let Some(mut s) = self.child.stderr.take() {
                        let _ = std::io::Read::read_to_string(&mut s, &mut err);
                    }
                    panic!(
                        "mosquitto_sub: no {what} ({e:?}); stdout: {:?}; stderr: {err}",
                        self.seen
                    );
                }
            }
        }
    }

    /// Waits for the message line `MSG <topic> <qos> <retain> <payload>`.
    pub fn expect_msg(&mut self, topic: &str, payload: &str) -> String {
        let prefix = format!("MSG {topic} ");
        let suffix = format!(" {payload}");
        self.wait_line(
            |l| l.starts_with(&prefix) && l.ends_with(&suffix),
            &format!("message `{payload}` on `{topic}`"),
        )
    }
}

impl Drop for MosquittoSub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

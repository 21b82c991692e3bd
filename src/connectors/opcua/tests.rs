//! Driver-level tests of the opcua kind against real servers: Python's asyncua
//! (tests/peers/opcua_server.py, in `$CARGO_TARGET_DIR/peers-venv`) and npm's
//! node-opcua-server (tests/peers/opcua_server.mjs, in `$CARGO_TARGET_DIR/peers-node`), both
//! installed by scripts/test.sh. A missing peer fails the test with how to install it.

use super::OpcUa;
use crate::connectors::kind::{
    BrowseEntry, FailureKind, Identity, Kind, PointAddress, Reading, Sink, Target, WriteError,
};
use serde_json::{json, Map, Value};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"))
}

/// A peer server process, killed on drop.
struct Peer {
    child: Child,
    port: u16,
    /// The server certificate it printed (secure peers).
    certificate: Option<Vec<u8>>,
}

impl Peer {
    fn python(args: &[&str]) -> Peer {
        let python = target_dir().join("peers-venv/bin/python");
        assert!(
            python.exists(),
            "{} is missing: run scripts/test.sh, or /usr/bin/python3 -m venv {0}/.. && pip install asyncua==2.1.0",
            python.display()
        );
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/opcua_server.py");
        let mut command = Command::new(python);
        command.arg(script).args(args);
        Peer::start(command)
    }

    fn node() -> Peer {
        let modules = target_dir().join("peers-node/node_modules");
        assert!(
            modules.join("node-opcua-server").exists(),
            "{} has no node-opcua-server: run scripts/test.sh (npm install node-opcua-server@2.186.4 there)",
            modules.display()
        );
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/peers/opcua_server.mjs");
        let mut command = Command::new("node");
        command.arg(script).env("NODE_PATH", &modules);
        Peer::start(command)
    }

    fn start(mut command: Command) -> Peer {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the peer starts");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let mut certificate = None;
        let deadline = Instant::now() + Duration::from_secs(60);
        let port = loop {
            assert!(
                Instant::now() < deadline,
                "the peer did not print `ready <port>`"
            );
            let Some(Ok(line)) = lines.next() else {
                let _ = child.kill();
                panic!("the peer exited before it was ready");
            };
            if let Some(hex) = line.strip_prefix("cert ") {
                certificate = Some(hex::decode(hex.trim()).expect("hex certificate"));
            }
            if let Some(port) = line.strip_prefix("ready ") {
                break port.trim().parse().expect("a port");
            }
        };
        // Keep draining stdout so the peer never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Peer {
            child,
            port,
            certificate,
        }
    }

    fn endpoint(&self) -> String {
        format!("opc.tcp://127.0.0.1:{}/svc", self.port)
    }

    fn signal(&self, signal: i32) {
        unsafe { libc::kill(self.child.id() as i32, signal) };
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.signal(libc::SIGCONT);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn identity() -> Identity {
    static IDENTITY: OnceLock<Identity> = OnceLock::new();
    IDENTITY
        .get_or_init(|| {
            OpcUa
                .new_identity("urn:svc:test:client")
                .expect("an identity")
        })
        .clone()
}

fn target(settings: Value, points: &[(Value, bool)], scratch: &tempfile::TempDir) -> Target {
    let mut settings: Map<String, Value> = settings.as_object().unwrap().clone();
    OpcUa.check_settings(&mut settings).expect("valid settings");
    let points = points
        .iter()
        .enumerate()
        .map(|(i, (address, writable))| {
            let mut address = address.as_object().unwrap().clone();
            OpcUa
                .check_address(i, &mut address, *writable)
                .expect("a valid address");
            PointAddress::new(format!("p{i}"), &address, *writable)
        })
        .collect();
    Target {
        domain: "test".into(),
        name: "plc".into(),
        settings,
        password: None,
        points,
        identity: Some(identity()),
        trusted: Vec::new(),
        scratch: scratch.path().to_path_buf(),
    }
}

#[derive(Default)]
struct Recorder {
    readings: Mutex<Vec<(usize, Reading)>>,
    failed: Mutex<Vec<(usize, String)>>,
}

impl Sink for Recorder {
    fn reading(&self, point: usize, reading: Reading) {
        self.readings.lock().unwrap().push((point, reading));
    }
    fn point_failed(&self, point: usize, error: String) {
        self.failed.lock().unwrap().push((point, error));
    }
}

impl Recorder {
    fn last(&self, point: usize) -> Option<Reading> {
        self.readings
            .lock()
            .unwrap()
            .iter()
            .rev()
            .find(|(p, _)| *p == point)
            .map(|(_, r)| r.clone())
    }

    async fn wait(&self, what: &str, mut done: impl FnMut(&Recorder) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !done(self) {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

type Running = crate::connectors::testing::Running<Recorder>;

const SOURCE_MS: i64 = 1704164645678; // 2024-01-02T03:04:05.678Z

fn expected_values() -> Vec<(&'static str, Value)> {
    vec![
        ("Boolean", json!(true)),
        ("SByte", json!(-8)),
        ("Byte", json!(200)),
        ("Int16", json!(-12)),
        ("UInt16", json!(65535)),
        ("Int32", json!(-12)),
        ("UInt32", json!(4294967295u32)),
        ("Int64", json!(-9007199254740993i64)),
        ("UInt64", json!(18446744073709551615u64)),
        ("Float", json!(1.5)),
        ("Double", json!(std::f64::consts::PI)),
        ("String", json!("héllo")),
        ("DateTime", json!("2024-01-02T03:04:05.678Z")),
        ("ByteString", json!("AAH+/w==")),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asyncua_reads_every_type_writes_and_browses() {
    let peer = Peer::python(&["--security", "none"]);
    let scratch = tempfile::tempdir().unwrap();
    let values = expected_values();
    let mut points: Vec<(Value, bool)> = values
        .iter()
        .map(|(name, _)| (json!({"node_id": format!("ns=2;s={name}")}), false))
        .collect();
    let extra = points.len();
    points.push((
        json!({"browse_path": "2:Plant/2:DoubleArray", "mode": "poll", "poll_interval": "200ms"}),
        false,
    ));
    points.push((json!({"node_id": "ns=2;s=Int32Matrix"}), false));
    points.push((json!({"node_id": "ns=2;s=Range"}), false));
    points.push((json!({"node_id": "ns=2;s=Point"}), false));
    points.push((json!({"node_id": "ns=2;s=NoSuchNode"}), false));
    points.push((
        json!({"node_id": "ns=2;s=Counter", "mode": "poll", "poll_interval": "100ms"}),
        false,
    ));
    let writable = points.len();
    for (name, _) in &values {
        points.push((json!({"node_id": format!("ns=2;s=W.{name}"), "mode": "poll", "poll_interval": "100ms"}), true));
    }
    points.push((json!({"node_id": "ns=2;s=Double"}), true)); // read-only on the server
    let settings = json!({"endpoint": peer.endpoint(), "publishing_interval": "100ms"});
    let target = target(settings, &points, &scratch);

    let running = Running::start(&OpcUa, &target).await;
    let sink = &running.sink;
    sink.wait("every point's first value", |s| {
        (0..extra + 4).all(|i| s.last(i).is_some())
    })
    .await;
    for (i, (name, value)) in values.iter().enumerate() {
        let reading = sink.last(i).unwrap();
        assert_eq!(&reading.value, value, "{name}");
        assert_eq!(reading.source_ms, Some(SOURCE_MS), "{name}");
        assert_eq!(reading.quality.0, 0, "{name}");
    }
    assert_eq!(sink.last(extra).unwrap().value, json!([1.5, 2.5, 3.5]));
    assert_eq!(
        sink.last(extra + 1).unwrap().value,
        json!([[1, 2, 3], [4, 5, 6]])
    );
    let range = sink.last(extra + 2).unwrap().value;
    assert_eq!(
        (range["Low"].clone(), range["High"].clone()),
        (json!(-1.5), json!(99.5)),
        "{range}"
    );
    let point = sink.last(extra + 3).unwrap().value;
    // A server-defined structure, decoded through its DataTypeDefinition.
    assert_eq!(point, json!({"X": 1.25, "Y": -2.5, "Label": "p"}));
    sink.wait("the unknown node's failure", |s| {
        !s.failed.lock().unwrap().is_empty()
    })
    .await;
    assert_eq!(
        sink.failed.lock().unwrap()[0],
        (extra + 4, "BadNodeIdUnknown".to_string())
    );
    sink.wait("the counter to change", |s| {
        s.readings
            .lock()
            .unwrap()
            .iter()
            .filter(|(p, _)| *p == extra + 5)
            .map(|(_, r)| r.value.clone())
            .collect::<std::collections::HashSet<_>>()
            .len()
            > 1
    })
    .await;

    let new_values = [
        json!(false),
        json!(-128),
        json!(255),
        json!(-32768),
        json!(1),
        json!(i32::MIN),
        json!(7),
        json!(i64::MIN),
        json!(u64::MAX - 1),
        json!(-0.25),
        json!(std::f64::consts::E),
        json!("written"),
        json!("2030-05-06T07:08:09.123Z"),
        json!("3q2+7w=="),
    ];
    for (k, value) in new_values.iter().enumerate() {
        let point = writable + k;
        running
            .write(point, value.clone())
            .await
            .unwrap_or_else(|e| panic!("write {value}: {e}"));
        sink.wait("the written value read back", |s| {
            s.last(point).is_some_and(|r| &r.value == value)
        })
        .await;
    }
    assert!(matches!(
        running.write(writable + 3, json!(40000)).await,
        Err(WriteError::Invalid(_))
    ));
    assert!(matches!(
        running.write(writable, json!("yes")).await,
        Err(WriteError::Invalid(_))
    ));
    let refused = running.write(writable + values.len(), json!(1.0)).await;
    assert!(
        matches!(&refused, Err(WriteError::Refused(s)) if s.starts_with("Bad")),
        "{refused:?}"
    );

    let entries: Vec<BrowseEntry> = OpcUa
        .browse(&target, Some("ns=2;s=Plant"))
        .await
        .expect("browses");
    let int16 = entries
        .iter()
        .find(|e| e.browse_name == "2:Int16")
        .expect("Int16 is listed");
    assert_eq!(int16.node_id, "ns=2;s=Int16");
    assert_eq!(int16.node_class, "Variable");
    assert_eq!(int16.data_type.as_deref(), Some("Int16"));
    assert_eq!(int16.access_level.as_deref(), Some("read"));
    let folder = entries
        .iter()
        .find(|e| e.browse_name == "2:Writable")
        .expect("the folder is listed");
    assert!(folder.has_children);
    let root = OpcUa
        .browse(&target, None)
        .await
        .expect("browses the Objects folder");
    assert!(
        root.iter()
            .any(|e| e.browse_name == "2:Plant" && e.has_children),
        "{root:?}"
    );
    assert!(!running.task.is_finished());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asyncua_secure_with_username_trust_and_auth() {
    let peer = Peer::python(&["--security", "basic256sha256", "--user", "operator:s3cret"]);
    let server_cert = peer
        .certificate
        .clone()
        .expect("the peer printed its certificate");
    let scratch = tempfile::tempdir().unwrap();
    let settings = json!({
        "endpoint": peer.endpoint(),
        "security_policy": "Basic256Sha256",
        "identity": {"type": "username", "username": "operator"},
    });
    let mut target = target(
        settings,
        &[(json!({"node_id": "ns=2;s=Int16"}), false)],
        &scratch,
    );
    target.password = Some("s3cret".into());

    let refused = OpcUa
        .connect(&target)
        .await
        .err()
        .expect("an untrusted server is refused");
    assert_eq!(refused.kind, FailureKind::Security, "{refused}");
    assert_eq!(
        refused.untrusted_certificate.as_deref(),
        Some(server_cert.as_slice())
    );

    target.trusted = vec![server_cert];
    let link = OpcUa
        .connect(&target)
        .await
        .expect("a trusted server is accepted");
    let description = link.description();
    assert_eq!(
        description["security_policy"], "Basic256Sha256",
        "{description}"
    );
    assert_eq!(
        description["application_uri"], "urn:svc:test:peer",
        "{description}"
    );
    drop(link);
    let running = Running::start(&OpcUa, &target).await;
    running
        .sink
        .wait("a value over SignAndEncrypt", |s| s.last(0).is_some())
        .await;
    assert_eq!(running.sink.last(0).unwrap().value, json!(-12));

    target.password = Some("wrong".into());
    let failure = OpcUa
        .connect(&target)
        .await
        .err()
        .expect("a wrong password is refused");
    assert_eq!(failure.kind, FailureKind::Auth, "{failure}");
    assert!(failure.status_code.is_some());
    // The scratch directory keeps nothing between connects.
    assert_eq!(std::fs::read_dir(scratch.path()).unwrap().count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchdog_ends_the_link_when_the_server_freezes() {
    let peer = Peer::python(&["--security", "none"]);
    let scratch = tempfile::tempdir().unwrap();
    let settings = json!({
        "endpoint": peer.endpoint(), "publishing_interval": "200ms", "keep_alive_count": 5,
        "lifetime_count": 15, "timeout": "30s",
    });
    let target = target(
        settings,
        &[(json!({"node_id": "ns=2;s=Counter"}), false)],
        &scratch,
    );
    let mut running = Running::start(&OpcUa, &target).await;
    running
        .sink
        .wait("a first value", |s| s.last(0).is_some())
        .await;
    peer.signal(libc::SIGSTOP);
    let stopped = Instant::now();
    let failure = tokio::time::timeout(Duration::from_secs(10), &mut running.task)
        .await
        .expect("the link ends within the watchdog's bound")
        .expect("the link's task");
    let took = stopped.elapsed();
    assert_eq!(failure.kind, FailureKind::Timeout, "{failure}");
    assert!(failure.text.contains("no publish response"), "{failure}");
    // The bound: 200 ms × 5 × 1.5, at least 3 s.
    assert!(
        took >= Duration::from_millis(2900) && took < Duration::from_secs(5),
        "{took:?}"
    );
    peer.signal(libc::SIGCONT);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreachable_endpoints_fail_by_cause() {
    let scratch = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let refused = target(
        json!({"endpoint": format!("opc.tcp://127.0.0.1:{port}")}),
        &[],
        &scratch,
    );
    assert_eq!(
        OpcUa.connect(&refused).await.err().unwrap().kind,
        FailureKind::Tcp
    );
    let dns = target(
        json!({"endpoint": "opc.tcp://no-such-host.invalid:4840"}),
        &[],
        &scratch,
    );
    assert_eq!(
        OpcUa.connect(&dns).await.err().unwrap().kind,
        FailureKind::Dns
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_opcua_reads_and_writes() {
    let peer = Peer::node();
    let scratch = tempfile::tempdir().unwrap();
    let settings = json!({"endpoint": peer.endpoint(), "publishing_interval": "100ms"});
    let points = [
        (json!({"node_id": "ns=1;s=Int16"}), false),
        (json!({"node_id": "ns=1;s=UInt64"}), false),
        (json!({"browse_path": "1:Plant/1:String"}), false),
        (
            json!({"node_id": "ns=1;s=W.Double", "mode": "poll", "poll_interval": "100ms"}),
            true,
        ),
    ];
    let target = target(settings, &points, &scratch);
    let running = Running::start(&OpcUa, &target).await;
    let sink = &running.sink;
    sink.wait("every value", |s| (0..4).all(|i| s.last(i).is_some()))
        .await;
    assert_eq!(sink.last(0).unwrap().value, json!(-12));
    assert_eq!(sink.last(1).unwrap().value, json!(18446744073709551615u64));
    assert_eq!(sink.last(2).unwrap().value, json!("node"));
    running.write(3, json!(42.5)).await.expect("writes");
    sink.wait("the written value", |s| {
        s.last(3).is_some_and(|r| r.value == json!(42.5))
    })
    .await;
}

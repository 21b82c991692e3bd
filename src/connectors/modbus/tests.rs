//! The modbus kind against a real device: the pymodbus peer of `tests/peers/modbus_server.py`,
//! run from the venv `scripts/test.sh` makes (`${CARGO_TARGET_DIR:-target}/peers-venv`).

use super::address::Address;
use super::plan;
use super::Modbus;
use crate::connectors::kind::{FailureKind, Kind, PointAddress, Reading, Sink, Target, WriteError};
use serde_json::{json, Map, Value};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio_modbus::client::{tcp, Reader};
use tokio_modbus::Slave;

/// A running peer, killed when dropped.
struct Peer {
    child: Child,
    port: u16,
}

impl Peer {
    async fn start(args: &[&str]) -> Peer {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let target_dir = std::env::var_os("CARGO_TARGET_DIR")
            .map_or_else(|| root.join("target"), |dir| root.join(dir));
        let python = target_dir.join("peers-venv/bin/python");
        assert!(
            python.exists(),
            "{} is missing: run scripts/test.sh once (it makes the venv with pymodbus==3.16.1), \
             or /usr/bin/python3 -m venv {0}/.. && pip install pymodbus==3.16.1",
            python.display()
        );
        let mut child = Command::new(&python)
            .arg(root.join("tests/peers/modbus_server.py"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("start the modbus peer");
        let stdout = child.stdout.take().unwrap();
        let mut line = String::new();
        tokio::time::timeout(
            Duration::from_secs(30),
            BufReader::new(stdout).read_line(&mut line),
        )
        .await
        .expect("the modbus peer did not say ready within 30s")
        .unwrap();
        let port = line
            .trim()
            .strip_prefix("ready ")
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("the modbus peer said {line:?}, not `ready <port>`"));
        Peer { child, port }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Event {
    Reading(usize, Value),
    Failed(usize, String),
}

/// A sink that records everything.
#[derive(Default)]
struct Recorder {
    events: Mutex<Vec<Event>>,
}

impl Sink for Recorder {
    fn reading(&self, point: usize, reading: Reading) {
        assert_eq!(reading.source_ms, None);
        self.events
            .lock()
            .unwrap()
            .push(Event::Reading(point, reading.value));
    }

    fn point_failed(&self, point: usize, error: String) {
        self.events
            .lock()
            .unwrap()
            .push(Event::Failed(point, error));
    }
}

impl Recorder {
    fn events(&self) -> Vec<Event> {
        self.events.lock().unwrap().clone()
    }

    /// The last event of `point`.
    fn last(&self, point: usize) -> Option<Event> {
        self.events().into_iter().rev().find(|event| match event {
            Event::Reading(p, _) | Event::Failed(p, _) => *p == point,
        })
    }

    /// Waits (10s at most) until `done` holds of the events.
    async fn wait(&self, what: &str, done: impl Fn(&[Event]) -> bool) {
        for _ in 0..500 {
            if done(&self.events()) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("waited 10s for {what}; events: {:?}", self.events());
    }

    /// Waits until point `point`'s last event is `expected`.
    async fn wait_last(&self, point: usize, expected: Event) {
        for _ in 0..500 {
            if self.last(point).as_ref() == Some(&expected) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!(
            "waited 10s for {expected:?}; last of point {point}: {:?}",
            self.last(point)
        );
    }
}

/// A target of `settings` (and the peer's port) and `points` (address, writable), checked as
/// the supervisor checks a record.
fn target(port: u16, settings: Value, points: &[(Value, bool)]) -> Target {
    let mut map: Map<String, Value> = json!({"host": "127.0.0.1", "port": port})
        .as_object()
        .unwrap()
        .clone();
    map.extend(settings.as_object().unwrap().clone());
    Modbus.check_settings(&mut map).unwrap();
    let points = points
        .iter()
        .enumerate()
        .map(|(index, (address, writable))| {
            let mut address = address.as_object().unwrap().clone();
            Modbus
                .check_address(index, &mut address, *writable)
                .unwrap();
            PointAddress::new(format!("p{index}"), &address, *writable)
        })
        .collect();
    Target {
        domain: "test".into(),
        name: "plc".into(),
        settings: map,
        password: None,
        points,
        identity: None,
        trusted: Vec::new(),
        scratch: std::env::temp_dir(),
    }
}

type Running = crate::connectors::testing::Running<Recorder>;

fn hr(address: u16, extra: Value) -> Value {
    let mut map = extra.as_object().unwrap().clone();
    map.insert("function".into(), json!("holding_register"));
    map.insert("address".into(), json!(address));
    map.entry("poll_interval").or_insert(json!("50ms"));
    Value::Object(map)
}

#[tokio::test]
async fn reads_every_type_in_every_order() {
    let peer = Peer::start(&[
        "--set=hr:0=0xFFF4,0x8001",
        "--set=hr:10=0xFFFF,0xFFF4,0xFFF4,0xFFFF,0xFFFF,0xF4FF,0xF4FF,0xFFFF",
        "--set=hr:20=0x0102,0x0304",
        "--set=hr:30=0xFFFF,0xFFFF,0xFFFF,0xFFF4",
        "--set=hr:40=0xFFFF,0xFFFF,0xFFFF,0xFFFF",
        "--set=hr:50=0x0708,0x0506,0x0304,0x0102",
        "--set=hr:60=0x3FC0,0x0000,0x0000,0xC03F",
        "--set=hr:70=0xC002,0,0,0",
        "--set=hr:80=0x4865,0x6C6C,0x6F00,0",
        "--set=ir:5=0xFFF4",
        "--set=co:3=1",
        "--set=di:7=1",
    ])
    .await;
    let order =
        |byte: &str, word: &str| json!({"type": "int32", "byte_order": byte, "word_order": word});
    let points = [
        (hr(0, json!({"type": "int16"})), json!(-12)),
        (hr(0, json!({})), json!(65524)),
        (hr(1, json!({"type": "bit", "bit": 15})), json!(true)),
        (hr(1, json!({"type": "bit", "bit": 1})), json!(false)),
        (hr(10, order("big", "big")), json!(-12)),
        (hr(12, order("big", "little")), json!(-12)),
        (hr(14, order("little", "big")), json!(-12)),
        (hr(16, order("little", "little")), json!(-12)),
        (hr(20, json!({"type": "uint32"})), json!(0x0102_0304)),
        (hr(30, json!({"type": "int64"})), json!(-12)),
        (hr(40, json!({"type": "uint64"})), json!(u64::MAX)),
        (
            hr(50, json!({"type": "uint64", "word_order": "little"})),
            json!(0x0102_0304_0506_0708_u64),
        ),
        (hr(60, json!({"type": "float32"})), json!(1.5)),
        (
            hr(
                62,
                json!({"type": "float32", "byte_order": "little", "word_order": "little"}),
            ),
            json!(1.5),
        ),
        (hr(70, json!({"type": "float64"})), json!(-2.25)),
        (
            hr(80, json!({"type": "string", "length": 4})),
            json!("Hello"),
        ),
        (
            json!({"function": "input_register", "address": 5, "type": "int16", "poll_interval": "50ms"}),
            json!(-12),
        ),
        (
            json!({"function": "coil", "address": 3, "poll_interval": "50ms"}),
            json!(true),
        ),
        (
            json!({"function": "coil", "address": 4, "poll_interval": "50ms"}),
            json!(false),
        ),
        (
            json!({"function": "discrete_input", "address": 7, "poll_interval": "50ms"}),
            json!(true),
        ),
    ];
    let addresses: Vec<(Value, bool)> = points
        .iter()
        .map(|(address, _)| (address.clone(), false))
        .collect();
    let running = Running::start(&Modbus, &target(peer.port, json!({}), &addresses)).await;
    for (index, (_, value)) in points.iter().enumerate() {
        running
            .sink
            .wait_last(index, Event::Reading(index, value.clone()))
            .await;
    }
    assert!(!running
        .sink
        .events()
        .iter()
        .any(|e| matches!(e, Event::Failed(..))));
}

#[tokio::test]
async fn rtu_framing_over_tcp() {
    let peer = Peer::start(&["--framing=rtu", "--unit=7", "--set=hr:3=0xFFF4"]).await;
    let points = [(hr(3, json!({"type": "int16"})), true)];
    let target = target(
        peer.port,
        json!({"framing": "rtu_over_tcp", "unit_id": 7}),
        &points,
    );
    let running = Running::start(&Modbus, &target).await;
    running
        .sink
        .wait_last(0, Event::Reading(0, json!(-12)))
        .await;
    running.write(0, json!(-300)).await.unwrap();
    running
        .sink
        .wait_last(0, Event::Reading(0, json!(-300)))
        .await;
}

#[tokio::test]
async fn a_hundred_consecutive_registers_take_one_request() {
    let values: Vec<String> = (0..100).map(|i| (i * 3).to_string()).collect();
    let set = format!("--set=hr:1000={}", values.join(","));
    let peer = Peer::start(&[&set]).await;
    let points: Vec<(Value, bool)> = (0..100).map(|i| (hr(1000 + i, json!({})), false)).collect();
    let target = target(peer.port, json!({}), &points);
    // The plan the link polls by, from the checked settings and addresses.
    let limits = plan::Limits {
        max_registers: 125,
        max_bits: 2000,
        max_gap: 8,
    };
    let addresses: Vec<Address> = target
        .points
        .iter()
        .map(|p| Address::parse("", &p.address()).unwrap())
        .collect();
    let groups = plan::plan(addresses.iter().enumerate(), limits);
    assert_eq!(groups.len(), 1);
    assert_eq!(groups[0].requests.len(), 1);
    assert_eq!(
        (groups[0].requests[0].start, groups[0].requests[0].count),
        (1000, 100)
    );
    let running = Running::start(&Modbus, &target).await;
    for i in 0..100 {
        running
            .sink
            .wait_last(i, Event::Reading(i, json!(i * 3)))
            .await;
    }
}

#[path = "tests_writes.rs"]
mod writes;

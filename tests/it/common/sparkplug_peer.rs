//! Sparkplug B peers for the Sparkplug tests: independent edge nodes that svc, as host
//! application, must understand (Eclipse Tahu's Node.js `sparkplug-client`, and PyPI's
//! `mqtt-spb-wrapper`), and a decoder that reads what svc, as edge node, publishes (npm's
//! `sparkplug-payload`), each a child process of `tests/peers/` installed by scripts/test.sh
//! under the target dir. A peer takes one JSON command a line on stdin and prints JSON lines:
//! the answer to each command (`{"ok":"<cmd>",..}` or `{"error":..}`) and the events it saw
//! (`{"event":"ncmd",..}`, the listener's decoded messages). The harness keeps every line, so an
//! event printed before a test waits for it still counts. The peers' headers document the
//! commands, the JSON shapes and what each library does by itself (bdSeq, seq, wills).

use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::device_peer::{script, target_dir};

/// How long a command may take to be answered: a publish is answered once written, so this is
/// only ever reached when the peer is stuck.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(20);
/// Node.js and Python start, load their libraries and connect within this.
const READY_TIMEOUT: Duration = Duration::from_secs(60);

/// What the peer printed so far, shared with the thread reading its stdout.
#[derive(Default)]
struct Printed {
    /// Every line but `ready`, for failure messages.
    lines: Vec<String>,
    /// The lines that are JSON objects: answers and events.
    values: Vec<Value>,
    ready: bool,
    /// The peer's stdout ended: it exited.
    closed: bool,
}

#[derive(Default)]
struct Shared {
    printed: Mutex<Printed>,
    changed: Condvar,
}

/// A running Sparkplug peer, killed on drop.
pub struct SparkplugPeer {
    child: Option<Child>,
    /// Held open: a peer exits when its standard input closes, so a test that dies leaves no
    /// peer behind. Behind a mutex so that `send` takes `&self` (a test may wait for events of
    /// one peer while it commands another).
    stdin: Mutex<Option<ChildStdin>>,
    shared: Arc<Shared>,
    /// The script and its arguments, for failure messages.
    what: String,
}

impl SparkplugPeer {
    /// A Tahu edge node (`tests/peers/sparkplug_edge.cjs`, npm's sparkplug-client) of group
    /// `group`, node `node`, connected to svc's MQTT listener on `port`.
    pub fn edge_node(
        port: u16,
        username: &str,
        password: &str,
        group: &str,
        node: &str,
    ) -> SparkplugPeer {
        SparkplugPeer::edge_node_with(port, username, password, group, node, &[])
    }

    /// [`SparkplugPeer::edge_node`] with more arguments: `--client-id ID`, `--bd-seq N` (the
    /// bdSeq its will and NBIRTH carry; sparkplug-client itself always uses 0).
    pub fn edge_node_with(
        port: u16,
        username: &str,
        password: &str,
        group: &str,
        node: &str,
        extra: &[&str],
    ) -> SparkplugPeer {
        let mut args = edge_args(port, username, password, group, node);
        args.extend(extra.iter().map(|a| a.to_string()));
        SparkplugPeer::node("sparkplug_edge.cjs", args)
    }

    /// A second, independent edge node (`tests/peers/sparkplug_edge.py`, PyPI's
    /// mqtt-spb-wrapper): same commands and events, for what the wrapper can send (its header
    /// says what it can't, and how it names birth metrics and numbers bdSeq). `extra`:
    /// `--client-id ID`, `--match-bdseq` (NBIRTH carries the bdSeq of the will, which the
    /// wrapper alone does not).
    pub fn python_edge_node_with(
        port: u16,
        username: &str,
        password: &str,
        group: &str,
        node: &str,
        extra: &[&str],
    ) -> SparkplugPeer {
        let venv = target_dir().join("peers-venv");
        let python = venv.join("bin/python");
        let pinned = std::fs::read_to_string(venv.join(".pinned")).unwrap_or_default();
        assert!(
            python.is_file() && pinned.contains("mqtt-spb-wrapper=="),
            "mqtt-spb-wrapper is not installed in the peers' venv at {}: run the README's test \
             command (scripts/test.sh), which installs it",
            venv.display()
        );
        let mut args = edge_args(port, username, password, group, node);
        args.extend(extra.iter().map(|a| a.to_string()));
        SparkplugPeer::start(python, "sparkplug_edge.py", args, Vec::new())
    }

    /// A decoder subscribed to `filter` (e.g. `spBv1.0/#`) on svc's MQTT listener on `port`
    /// (`tests/peers/sparkplug_listen.cjs`): every message becomes a line
    /// `{"topic","retain","qos","payload":{"timestamp","seq","metrics":[..]}}` (or `"text"` when
    /// it is not Sparkplug), and `send(json!({"cmd":"publish","topic":..,"payload_json":{..}}))`
    /// encodes and publishes one (an NCMD asking svc's edge node to rebirth).
    pub fn listener(port: u16, username: &str, password: &str, filter: &str) -> SparkplugPeer {
        let args = vec![
            "--url".to_string(),
            format!("mqtt://127.0.0.1:{port}"),
            "--username".to_string(),
            username.to_string(),
            "--password".to_string(),
            password.to_string(),
            "--topic".to_string(),
            filter.to_string(),
        ];
        SparkplugPeer::node("sparkplug_listen.cjs", args)
    }

    fn node(name: &str, args: Vec<String>) -> SparkplugPeer {
        let modules = target_dir().join("peers-node/node_modules");
        assert!(
            modules.join("sparkplug-client").is_dir() && modules.join("sparkplug-payload").is_dir(),
            "sparkplug-client and sparkplug-payload are not installed under {}: run the README's \
             test command (scripts/test.sh), which installs them",
            modules.display()
        );
        let env = vec![("NODE_PATH".to_string(), modules.display().to_string())];
        SparkplugPeer::start(PathBuf::from("node"), name, args, env)
    }

    fn start(
        program: PathBuf,
        name: &str,
        args: Vec<String>,
        env: Vec<(String, String)>,
    ) -> SparkplugPeer {
        let what = format!("{name} {}", args.join(" "));
        let mut command = Command::new(&program);
        command
            .arg(script(name))
            .args(&args)
            .envs(env)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = command.spawn().unwrap_or_else(|e| {
            panic!(
                "cannot start the Sparkplug peer {what} with {}: {e} (the README's test command, \
                 scripts/test.sh, installs what the peers need)",
                program.display()
            )
        });
        let stdout = child.stdout.take().expect("the peer's stdout");
        let stdin = child.stdin.take();
        let shared = Arc::new(Shared::default());
        let reader = shared.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let mut printed = reader.printed.lock().unwrap();
                if !printed.ready && line.starts_with("ready ") {
                    printed.ready = true;
                } else {
                    if let Ok(value @ Value::Object(_)) = serde_json::from_str::<Value>(&line) {
                        printed.values.push(value);
                    }
                    printed.lines.push(line);
                }
                reader.changed.notify_all();
            }
            reader.printed.lock().unwrap().closed = true;
            reader.changed.notify_all();
        });
        let mut peer = SparkplugPeer {
            child: Some(child),
            stdin: Mutex::new(stdin),
            shared,
            what,
        };
        let deadline = Instant::now() + READY_TIMEOUT;
        let ready = peer.wait_until(deadline, |p| p.ready || p.closed);
        if !ready.ready {
            let output = peer.output();
            peer.kill();
            let why = if ready.closed { "exited" } else { "timed out" };
            panic!(
                "the Sparkplug peer {} did not print `ready` (it {why}):\n{output}",
                peer.what
            );
        }
        peer
    }

    /// Waits until `done` holds of what was printed, or `deadline`; returns the last state seen.
    fn wait_until(&self, deadline: Instant, done: impl Fn(&Printed) -> bool) -> PrintedView {
        let mut printed = self.shared.printed.lock().unwrap();
        loop {
            if done(&printed) || printed.closed {
                break;
            }
            if Instant::now() >= deadline {
                break;
            }
            printed = self.wait_change(printed, deadline);
        }
        PrintedView {
            ready: printed.ready,
            closed: printed.closed,
        }
    }

    /// Waits for the reading thread to print more (or the peer to exit), at most until
    /// `deadline`.
    fn wait_change<'a>(
        &'a self,
        printed: MutexGuard<'a, Printed>,
        deadline: Instant,
    ) -> MutexGuard<'a, Printed> {
        let left = deadline.saturating_duration_since(Instant::now());
        self.shared.changed.wait_timeout(printed, left).unwrap().0
    }

    /// Sends the command `cmd` (`{"cmd":"nbirth","metrics":[..]}`, see the peer's header) and
    /// waits for its answer `{"ok":"<cmd>",..}`, which it returns (it may carry the message's
    /// "topic" and "seq"). Panics with the peer's output on `{"error":..}`, on exit, or when no
    /// answer came within 20 s.
    pub fn send(&self, cmd: Value) -> Value {
        let name = cmd
            .get("cmd")
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("a Sparkplug peer command has a \"cmd\": {cmd}"))
            .to_string();
        // The previous commands were answered before their `send` returned: the first answer
        // printed after this mark is this command's.
        let mark = self.shared.printed.lock().unwrap().values.len();
        {
            let mut stdin = self.stdin.lock().unwrap();
            let stdin = stdin
                .as_mut()
                .unwrap_or_else(|| panic!("the Sparkplug peer {} was killed", self.what));
            let written = writeln!(stdin, "{cmd}").and_then(|()| stdin.flush());
            if let Err(e) = written {
                panic!(
                    "cannot send {cmd} to the Sparkplug peer {}: {e}\n{}",
                    self.what,
                    self.output()
                );
            }
        }
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        let mut printed = self.shared.printed.lock().unwrap();
        loop {
            let answer = printed.values[mark..]
                .iter()
                .find(|v| v.get("ok").is_some() || v.get("error").is_some());
            if let Some(answer) = answer {
                if answer.get("ok").and_then(Value::as_str) == Some(name.as_str()) {
                    return answer.clone();
                }
                let answer = answer.clone();
                drop(printed);
                panic!(
                    "the Sparkplug peer {} answered {answer} to {cmd}:\n{}",
                    self.what,
                    self.output()
                );
            }
            if printed.closed || Instant::now() >= deadline {
                let why = ended(&printed);
                drop(printed);
                panic!(
                    "the Sparkplug peer {} {why} before answering {cmd}:\n{}",
                    self.what,
                    self.output()
                );
            }
            printed = self.wait_change(printed, deadline);
        }
    }

    /// The first JSON line the peer printed (since it started, so one printed before this call
    /// counts) for which `check` holds, waiting up to `within` for it. Panics with the peer's
    /// output when none came.
    pub fn wait_event(&self, check: impl Fn(&Value) -> bool, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        let mut seen = 0;
        let mut printed = self.shared.printed.lock().unwrap();
        loop {
            if let Some(found) = printed.values[seen..].iter().find(|&v| check(v)) {
                return found.clone();
            }
            seen = printed.values.len();
            if printed.closed || Instant::now() >= deadline {
                let why = ended(&printed);
                drop(printed);
                panic!(
                    "the Sparkplug peer {} {why} without printing the awaited line:\n{}",
                    self.what,
                    self.output()
                );
            }
            printed = self.wait_change(printed, deadline);
        }
    }

    /// Every JSON line the peer printed so far (answers, events, decoded messages), in order.
    pub fn events(&self) -> Vec<Value> {
        self.shared.printed.lock().unwrap().values.clone()
    }

    /// Everything the peer printed on stdout but `ready`, one line each, for failure messages.
    pub fn output(&self) -> String {
        self.shared.printed.lock().unwrap().lines.join("\n")
    }

    /// Kills the peer (SIGKILL): its connections drop without DISCONNECT, so the broker
    /// publishes its will (an edge node's NDEATH).
    pub fn kill(&mut self) {
        *self.stdin.lock().unwrap() = None;
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for SparkplugPeer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Why a wait on a peer ended without what it waited for.
fn ended(printed: &Printed) -> &'static str {
    if printed.closed {
        "exited"
    } else {
        "timed out"
    }
}

/// What [`SparkplugPeer::wait_until`] saw last.
struct PrintedView {
    ready: bool,
    closed: bool,
}

/// The arguments both edge nodes take.
fn edge_args(port: u16, username: &str, password: &str, group: &str, node: &str) -> Vec<String> {
    let url = format!("mqtt://127.0.0.1:{port}");
    [
        "--url",
        &url,
        "--username",
        username,
        "--password",
        password,
        "--group",
        group,
        "--node",
        node,
    ]
    .iter()
    .map(|a| a.to_string())
    .collect()
}

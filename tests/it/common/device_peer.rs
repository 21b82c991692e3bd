//! Device peers for the connector tests: an independent OPC UA or Modbus server (Python's
//! asyncua and pymodbus, npm's node-opcua-server, installed by scripts/test.sh under the
//! target dir) run as a child process from `tests/peers/`. A peer prints `ready <port>` once
//! it listens; the harness can kill it, start it again on the same port, or freeze it
//! (SIGSTOP: the TCP connection stays open and nothing arrives) and thaw it.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The target dir scripts/test.sh installs the peers into (the Sparkplug peers too).
pub(super) fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"))
}

/// The path of a peer script of `tests/peers/`.
pub(super) fn script(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/peers")
        .join(name)
        .display()
        .to_string()
}

pub struct DevicePeer {
    child: Option<Child>,
    /// Held open: a peer exits when its standard input closes, so a test that dies leaves no
    /// peer behind.
    stdin: Option<ChildStdin>,
    program: PathBuf,
    args: Vec<String>,
    env: Vec<(String, String)>,
    pub port: u16,
    /// Lines the peer printed after `ready` (its log), for failure messages.
    pub output: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl DevicePeer {
    /// A Python peer script of `tests/peers/` with `args` (`--port 0` is added).
    pub fn python(name: &str, args: &[&str]) -> DevicePeer {
        DevicePeer::python_at(0, name, args)
    }

    /// [`DevicePeer::python`] on port `port` (one `free_port` gave: a device that comes up
    /// after svc tried to reach it).
    pub fn python_at(port: u16, name: &str, args: &[&str]) -> DevicePeer {
        let python = target_dir().join("peers-venv/bin/python");
        assert!(
            python.is_file(),
            "the device peers' venv is not installed at {}: run the README's test command \
             (scripts/test.sh), which installs asyncua and pymodbus into it",
            python.display()
        );
        DevicePeer::start(python, script(name), args, Vec::new(), port)
    }

    /// A Node.js peer script of `tests/peers/` with `args` (`--port 0` is added).
    pub fn node(name: &str, args: &[&str]) -> DevicePeer {
        let modules = target_dir().join("peers-node/node_modules");
        assert!(
            modules.join("node-opcua-server").is_dir(),
            "node-opcua-server is not installed under {}: run the README's test command \
             (scripts/test.sh), which installs it",
            modules.display()
        );
        let env = vec![("NODE_PATH".to_string(), modules.display().to_string())];
        DevicePeer::start(PathBuf::from("node"), script(name), args, env, 0)
    }

    fn start(
        program: PathBuf,
        script: String,
        args: &[&str],
        env: Vec<(String, String)>,
        port: u16,
    ) -> DevicePeer {
        let mut all = vec![script];
        all.extend(args.iter().map(|a| a.to_string()));
        let mut peer = DevicePeer {
            child: None,
            stdin: None,
            program,
            args: all,
            env,
            port: 0,
            output: Default::default(),
        };
        peer.spawn(port);
        peer
    }

    fn spawn(&mut self, port: u16) {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .args(["--port", &port.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (k, v) in &self.env {
            command.env(k, v);
        }
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start the peer {:?}: {e}", self.args));
        let stdout = child.stdout.take().expect("the peer's stdout");
        self.stdin = child.stdin.take();
        let (tx, rx) = mpsc::channel();
        let output = self.output.clone();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(port) = line.strip_prefix("ready ") {
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(port.trim().parse::<u16>().unwrap_or(0));
                    }
                } else {
                    output.lock().unwrap().push(line);
                }
            }
        });
        let ready = rx.recv_timeout(Duration::from_secs(60));
        self.child = Some(child);
        match ready {
            Ok(port) if port > 0 => self.port = port,
            other => {
                self.kill();
                panic!(
                    "the peer {:?} did not print `ready <port>`: {other:?}",
                    self.args
                )
            }
        }
    }

    /// Kills the peer (SIGKILL): the device goes away at once.
    pub fn kill(&mut self) {
        self.stdin = None;
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill")
                .args(["-CONT", &child.id().to_string()])
                .status();
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the peer again on its port, with the values it starts with.
    pub fn restart(&mut self) {
        self.kill();
        let port = self.port;
        // The port may linger a moment after the kill.
        for _ in 0..50 {
            if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        self.spawn(port);
    }

    /// Stops the peer's process (SIGSTOP): its connections stay open and nothing arrives.
    pub fn freeze(&self) {
        self.signal("-STOP");
    }

    /// Lets a frozen peer go on (SIGCONT).
    pub fn thaw(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let child = self.child.as_ref().expect("the peer runs");
        let status = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill {signal} failed");
    }
}

impl Drop for DevicePeer {
    fn drop(&mut self) {
        self.kill();
    }
}

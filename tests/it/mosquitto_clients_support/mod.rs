//! `mosquitto_sub` / `mosquitto_pub` driven with arbitrary options (client ids, `-c`, `-x`,
//! wills, `-D` properties, `-F` formats) against the server's TCP listener, as authenticated
//! admin. The shared harness only offers a fixed-format subscriber; these tests need every
//! flag of the real clients.
//!
//! The installed clients are mosquitto 2.0.11 (Debian bookworm): they speak TCP only (no
//! `--ws`, `-L` accepts only `mqtt://`/`mqtts://`) and have no `--nl` (no local) option.

use crate::common::*;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Prefix of the `-F` output lines, so message lines are told apart from `-d` debug lines.
const MSG: &str = "MSG|";

/// MQTT version given to `-V`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ver {
    V311,
    V5,
}

impl Ver {
    pub const BOTH: [Ver; 2] = [Ver::V311, Ver::V5];

    fn arg(self) -> &'static str {
        match self {
            Ver::V311 => "mqttv311",
            Ver::V5 => "mqttv5",
        }
    }

    /// A short name usable in topics and client ids.
    pub fn tag(self) -> &'static str {
        match self {
            Ver::V311 => "v311",
            Ver::V5 => "v5",
        }
    }
}

/// Host, port, version and admin credentials: the arguments every client invocation starts with.
fn base_args(server: &Server, ver: Ver) -> Vec<String> {
    [
        "-h",
        "127.0.0.1",
        "-p",
        &server.listener_port("mqtt").to_string(),
        "-V",
        ver.arg(),
        "-u",
        "admin",
        "-P",
        ADMIN_PASSWORD,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// Splits a command line at whitespace (for arguments that contain none).
pub fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// Runs `mosquitto_pub` with `args` and asserts it exits successfully.
pub fn mosq_pub(server: &Server, ver: Ver, args: &[&str]) {
    let out = Command::new("mosquitto_pub")
        .args(base_args(server, ver))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run mosquitto_pub (apt-get install mosquitto-clients)");
    assert!(
        out.status.success(),
        "mosquitto_pub {ver:?} {args:?} failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A running `mosquitto_sub` (debug output on) whose message lines are `-F "MSG|<format>"`.
pub struct MosqSub {
    child: Child,
    lines: mpsc::Receiver<String>,
    /// Message lines (prefix stripped) that arrived while waiting for something else.
    backlog: std::collections::VecDeque<String>,
    /// Every stdout line so far, for failure messages.
    seen: Vec<String>,
    /// CONNECTs sent so far: mosquitto_sub silently reconnects when the server drops it.
    connects: usize,
    what: String,
}

impl MosqSub {
    /// Starts `mosquitto_sub -d -F "MSG|<format>" <args>` and waits for its SUBACK.
    pub fn start(server: &Server, ver: Ver, format: &str, args: &[&str]) -> MosqSub {
        let mut sub = MosqSub::spawn(server, ver, format, args);
        sub.wait_debug("received SUBACK");
        sub
    }

    /// Starts it without waiting for anything.
    pub fn spawn(server: &Server, ver: Ver, format: &str, args: &[&str]) -> MosqSub {
        let fmt = format!("{MSG}{format}");
        let mut all = base_args(server, ver);
        all.extend(["-d".to_string(), "-F".to_string(), fmt]);
        all.extend(args.iter().map(|a| a.to_string()));
        let (child, rx) = spawn_mosquitto_sub(all);
        MosqSub {
            child,
            lines: rx,
            backlog: Default::default(),
            seen: Vec::new(),
            connects: 0,
            what: format!("mosquitto_sub {ver:?} {args:?}"),
        }
    }

    /// The next stdout line within `within`; `None` on timeout or end of output. Fails the
    /// test when the client connects a second time (the server dropped the connection).
    fn next_line(&mut self, within: Duration) -> Option<String> {
        let line = self.lines.recv_timeout(within).ok()?;
        self.seen.push(line.clone());
        if line.ends_with(" sending CONNECT") {
            self.connects += 1;
            if self.connects > 1 {
                self.fail("the server dropped the connection (mosquitto_sub reconnected)");
            }
        }
        Some(line)
    }

    /// Waits for a debug line containing `needle` (message lines go to the backlog).
    pub fn wait_debug(&mut self, needle: &str) {
        let deadline = Instant::now() + MQTT_WAIT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next_line(left) {
                Some(line) => {
                    if let Some(msg) = line.strip_prefix(MSG) {
                        self.backlog.push_back(msg.to_string());
                    } else if line.contains(needle) {
                        return;
                    }
                }
                None => self.fail(&format!("no `{needle}` line")),
            }
        }
    }

    /// The next message line (without the `MSG|` prefix) within `within`, or `None`.
    pub fn next_msg(&mut self, within: Duration) -> Option<String> {
        if let Some(m) = self.backlog.pop_front() {
            return Some(m);
        }
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.next_line(left)?;
            if let Some(msg) = line.strip_prefix(MSG) {
                return Some(msg.to_string());
            }
        }
    }

    /// The next message line; fails the test (showing the output so far) if none arrives.
    pub fn expect_msg(&mut self, what: &str) -> String {
        match self.next_msg(MQTT_WAIT) {
            Some(m) => m,
            None => self.fail(&format!("no message ({what}) within {MQTT_WAIT:?}")),
        }
    }

    /// Asserts that no message arrives within `within`.
    pub fn expect_silence(&mut self, within: Duration, why: &str) {
        if let Some(m) = self.next_msg(within) {
            panic!("{}: unexpected message `{m}` ({why})", self.what);
        }
    }

    /// Kills the process with SIGKILL: no DISCONNECT reaches the server.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits for the process to exit by itself (e.g. `-E`, `-C`) and asserts success.
    pub fn wait_success(&mut self) {
        let status = self.wait_exit();
        if !status.success() {
            self.fail(&format!("exit status {status}"));
        }
    }

    fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + MQTT_WAIT;
        loop {
            if let Some(status) = self.child.try_wait().expect("wait for mosquitto_sub") {
                return status;
            }
            if Instant::now() >= deadline {
                self.fail("still running");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the process and panics with `why`, its stdout so far and its stderr.
    fn fail(&mut self, why: &str) -> ! {
        self.kill9();
        while let Ok(line) = self.lines.try_recv() {
            self.seen.push(line);
        }
        let mut err = String::new();
        if let Some(mut s) = self.child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut s, &mut err);
        }
        panic!(
            "{}: {why}; stdout: {:#?}; stderr: {err}",
            self.what, self.seen
        );
    }
}

impl Drop for MosqSub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

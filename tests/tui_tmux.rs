//! End-to-end test of `svc tui` (SPEC 11): starts `svc serve` on fixed free ports, runs the
//! monitor inside a detached `tmux` session (its own server socket), publishes tags over MQTT,
//! and reads the screen with `tmux capture-pane`: the tree and its values appear, the historian
//! trend of a historized tag shows, `/` filters and Enter collapses through `send-keys`, a
//! broker restart is survived, the status bar shows the domain's upstreams and their states,
//! and `q` exits with the terminal restored (alternate screen left, canonical mode and echo
//! back on). tmux is required: CI installs it (`.ci/run`).

use reqwest::blocking::Client;
use rumqttc::{Event, MqttOptions, Outgoing, Packet, QoS};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ADMIN_PASSWORD: &str = "Adm1n-tui-pass!";
const WAIT: Duration = Duration::from_secs(20);

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// `svc serve` on fixed ports, so a restart comes back where the monitor reconnects.
struct Serve {
    child: Option<Child>,
    data: PathBuf,
    http: u16,
    mqtt: u16,
    ws: u16,
}

impl Serve {
    fn start(dir: &Path) -> Serve {
        let mut serve = Serve {
            child: None,
            data: dir.join("data"),
            http: free_port(),
            mqtt: free_port(),
            ws: free_port(),
        };
        serve.spawn();
        serve
    }

    fn spawn(&mut self) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_svc"))
            .args(["serve", "--data-dir"])
            .arg(&self.data)
            .args(["--http-port", &self.http.to_string()])
            .args(["--mqtt-port", &self.mqtt.to_string()])
            .args(["--ws-port", &self.ws.to_string()])
            .args(["--admin-password", ADMIN_PASSWORD])
            .env_remove("SVC_CONFIG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn svc serve");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) if line.starts_with("ready ") => break,
                Ok(_) => {}
                Err(e) => {
                    let _ = child.kill();
                    panic!("svc serve did not print `ready`: {e}");
                }
            }
        }
        self.child = Some(child);
    }

    /// SIGTERM and wait for the exit.
    fn stop(&mut self) {
        let mut child = self.child.take().expect("running");
        let pid = child.id().to_string();
        assert!(Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success());
        let deadline = Instant::now() + Duration::from_secs(30);
        while child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "svc serve ignored SIGTERM");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.http)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Logs in as admin, declares `plant/line1/temp` historized and returns a new API key.
fn setup(serve: &Serve) -> String {
    let http = Client::builder().no_proxy().build().unwrap();
    let login: Value = http
        .post(format!("{}/auth/login", serve.url()))
        .json(&json!({"username": "admin", "password": ADMIN_PASSWORD}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    let token = login["tkn"].as_str().expect("token").to_string();
    let tag = http
        .post(format!("{}/svc/tags", serve.url()))
        .bearer_auth(&token)
        .json(&json!({"path": "plant/line1/temp", "historize": true}))
        .send()
        .unwrap();
    assert_eq!(tag.status(), 201, "create tag");
    let key: Value = http
        .post(format!("{}/auth/keys", serve.url()))
        .bearer_auth(&token)
        .json(&json!({"name": "tui"}))
        .send()
        .unwrap()
        .json()
        .unwrap();
    key["key"].as_str().expect("key").to_string()
}

/// Publishes each `(topic, payload, retain)` at QoS 1 and waits for every PUBACK.
fn publish(port: u16, key: &str, messages: &[(&str, &[u8], bool)]) {
    let id = format!("tui-test-pub-{}", rand_suffix());
    let mut options = MqttOptions::new(id, "127.0.0.1", port);
    options.set_credentials("tester", key);
    let (client, mut connection) = rumqttc::Client::new(options, 64);
    for (topic, payload, retain) in messages {
        client
            .publish(*topic, QoS::AtLeastOnce, *retain, payload.to_vec())
            .unwrap();
    }
    let mut acked = 0;
    let deadline = Instant::now() + WAIT;
    while acked < messages.len() {
        assert!(Instant::now() < deadline, "publish timed out");
        match connection.recv_timeout(Duration::from_secs(1)) {
            Ok(Ok(Event::Incoming(Packet::PubAck(_)))) => acked += 1,
            Ok(Err(e)) => panic!("publish: {e}"),
            _ => {}
        }
    }
    client.disconnect().unwrap();
    for event in connection.iter() {
        if matches!(event, Ok(Event::Outgoing(Outgoing::Disconnect)) | Err(_)) {
            break;
        }
    }
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// A detached tmux session on a private server socket, killed on drop.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(script: &Path) -> Tmux {
        let version = Command::new("tmux").arg("-V").output();
        assert!(
            version.as_ref().is_ok_and(|o| o.status.success()),
            "this test drives `svc tui` inside tmux, which is not installed: \
             install it (`apt-get install tmux`; .ci/run does)"
        );
        let tmux = Tmux {
            socket: format!("svc-tui-test-{}", rand_suffix()),
        };
        let status = tmux
            .cmd()
            .args(["new-session", "-d", "-s", "tui", "-x", "160", "-y", "48"])
            .arg(format!("sh {}", script.display()))
            .status()
            .expect("run tmux");
        assert!(status.success(), "tmux new-session failed");
        tmux
    }

    fn cmd(&self) -> Command {
        let mut cmd = Command::new("tmux");
        cmd.args(["-L", &self.socket]);
        cmd
    }

    fn capture(&self) -> String {
        let out = self
            .cmd()
            .args(["capture-pane", "-p", "-t", "tui"])
            .output()
            .expect("capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        for key in keys {
            let status = self
                .cmd()
                .args(["send-keys", "-t", "tui", key])
                .status()
                .unwrap();
            assert!(status.success(), "send-keys {key}");
        }
    }

    fn alternate_screen(&self) -> String {
        let out = self
            .cmd()
            .args(["display-message", "-p", "-t", "tui", "#{alternate_on}"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// The pid of `svc tui`: the child of the pane's shell.
    fn tui_pid(&self) -> u32 {
        let out = self
            .cmd()
            .args(["display-message", "-p", "-t", "tui", "#{pane_pid}"])
            .output()
            .unwrap();
        let shell = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let children = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children"))
            .unwrap_or_default();
        let mut pids = children.split_whitespace().map(|p| p.parse().unwrap());
        let pid = pids.next().expect("svc tui runs under the pane's shell");
        assert!(pids.next().is_none(), "one child expected: {children}");
        pid
    }

    /// Polls the screen until `pred` holds; panics with the last screen after [`WAIT`].
    fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            let screen = self.capture();
            if pred(&screen) {
                return screen;
            }
            if Instant::now() >= deadline {
                panic!("timed out waiting for {what}; screen:\n{screen}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").status();
    }
}

/// The tree pane: the left 92 columns of each line.
fn tree_pane(screen: &str) -> String {
    screen
        .lines()
        .map(|l| l.chars().take(92).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

fn write_script(dir: &Path, args: &str) -> PathBuf {
    let script = dir.join("tui.sh");
    let body = format!(
        "XDG_CONFIG_HOME='{config}' HOME='{config}' '{svc}' tui {args}\n\
         echo \"TUI-EXITED-$?\"\n\
         echo \"TTY $(stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e -icanon -e echo -e -echo | tr '\\n' ' ')\"\n\
         sleep 600\n",
        config = dir.display(),
        svc = env!("CARGO_BIN_EXE_svc"),
    );
    std::fs::write(&script, body).unwrap();
    script
}

#[test]
fn tui_shows_the_tree_filters_collapses_survives_restarts_and_quits_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let mut serve = Serve::start(dir.path());
    let key = setup(&serve);
    publish(
        serve.mqtt,
        &key,
        &[
            ("plant/line1/temp", b"21.5", false),
            ("plant/line1/state", br#"{"mode":"auto","speed":3}"#, true),
            ("plant/line2/raw", &[0xde, 0xad, 0xbe, 0xef], true),
            ("plant/line2/text", b"hello operator", true),
        ],
    );
    let script = write_script(
        dir.path(),
        &format!("--url {} --api-key {key}", serve.url()),
    );
    let tmux = Tmux::start(&script);

    // Retained values arrive on subscribe; the tree shows levels, values and the connection.
    let screen = tmux.wait_for("the retained tags", |s| {
        s.contains("hello operator") && s.contains("● connected")
    });
    assert!(screen.contains("▾ plant"), "{screen}");
    assert!(screen.contains(r#"{"mode":"auto","speed":3}"#), "{screen}");
    assert!(screen.contains("<binary 4 B> de ad be ef"), "{screen}");
    assert!(
        screen.contains(&format!("mqtt://127.0.0.1:{} sub #", serve.mqtt)),
        "{screen}"
    );

    // Live values: the last one shows, with a sparkline.
    for v in ["22.5", "23.5", "24.5"] {
        publish(
            serve.mqtt,
            &key,
            &[("plant/line1/temp", v.as_bytes(), false)],
        );
    }
    tmux.wait_for("the latest temperature", |s| {
        s.lines().any(|l| l.contains("temp") && l.contains("24.5"))
    });

    // Select temp (plant, line1, state, temp): the detail pane and the historian trend.
    tmux.keys(&["j", "j", "j"]);
    let screen = tmux.wait_for("the historian trend", |s| {
        s.contains("last hour · historian") && s.contains("historized yes")
    });
    assert!(screen.contains("plant/line1/temp"), "{screen}");

    // `/` filters by substring.
    tmux.keys(&["/", "line2", "Enter"]);
    let screen = tmux.wait_for("the filter", |s| s.contains("filter: line2"));
    let tree = tree_pane(&screen);
    assert!(tree.contains("raw") && tree.contains("text"), "{screen}");
    assert!(
        !tree.contains("temp") && !tree.contains("state"),
        "{screen}"
    );

    // Enter collapses the selected branch.
    tmux.keys(&["g", "j", "Enter"]);
    let screen = tmux.wait_for("line2 collapsed", |s| tree_pane(s).contains("▸ line2"));
    let tree = tree_pane(&screen);
    assert!(tree.contains("(2 topics)"), "{screen}");
    assert!(!tree.contains("raw"), "{screen}");
    tmux.keys(&["Escape", "Enter"]);
    tmux.wait_for("filter cleared, line2 expanded", |s| {
        let tree = tree_pane(s);
        tree.contains("temp") && tree.contains("raw") && !s.contains("filter:")
    });

    // The broker restarts: the monitor shows it and reconnects on its own.
    serve.stop();
    tmux.wait_for("the disconnected state", |s| s.contains("disconnected"));
    serve.spawn();
    tmux.wait_for("the reconnection", |s| s.contains("● connected"));
    publish(serve.mqtt, &key, &[("plant/line3/after", b"42", false)]);
    tmux.wait_for("a tag published after the restart", |s| {
        s.lines().any(|l| l.contains("after") && l.contains("42"))
    });

    // `q` quits and the terminal is restored.
    tmux.keys(&["q"]);
    let screen = tmux.wait_for("the exit", |s| s.contains("TTY "));
    assert!(screen.contains("TUI-EXITED-0"), "{screen}");
    assert!(!screen.contains("UNS ·"), "alternate screen left: {screen}");
    let tty = screen.lines().find(|l| l.starts_with("TTY ")).unwrap_or("");
    assert!(
        tty.contains(" icanon") && tty.contains(" echo"),
        "raw mode off: {screen}"
    );
    assert_eq!(tmux.alternate_screen(), "0");
}

#[test]
fn tui_over_websocket_with_a_topic_filter_and_a_bad_key() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path());
    let key = setup(&serve);
    // An upstream nobody answers: the status bar shows it waiting to try again.
    let http = Client::builder().no_proxy().build().unwrap();
    let upstream = http
        .post(format!("{}/svc/upstreams", serve.url()))
        .header("X-Svc-Api-Key", &key)
        .json(
            &json!({"name": "corp", "host": "127.0.0.1", "port": free_port(),
            "reconnect": {"initial": "5s", "max": "5s"}}),
        )
        .send()
        .unwrap();
    assert_eq!(upstream.status(), 201, "create upstream");
    publish(
        serve.mqtt,
        &key,
        &[
            ("site/a/flow", b"7", true),
            ("elsewhere/b", b"\"hidden\"", true),
        ],
    );
    let script = write_script(
        dir.path(),
        &format!(
            "--url {} --api-key {key} --ws --topic 'site/#'",
            serve.url()
        ),
    );
    let tmux = Tmux::start(&script);
    let screen = tmux.wait_for("the WebSocket subscription", |s| {
        s.contains("● connected") && s.lines().any(|l| l.contains("flow") && l.contains('7'))
    });
    assert!(
        screen.contains(&format!("ws://127.0.0.1:{}/mqtt sub site/#", serve.ws)),
        "{screen}"
    );
    assert!(!screen.contains("hidden"), "{screen}");
    tmux.wait_for("the upstream in the status bar", |s| {
        s.contains("⇅ corp backoff") || s.contains("⇅ corp connecting")
    });
    tmux.keys(&["C-c"]);
    tmux.wait_for("Ctrl-C to quit", |s| s.contains("TUI-EXITED-0"));
    drop(tmux);

    // A credential the server refuses: a plain error, exit 1, terminal untouched.
    let script = write_script(
        dir.path(),
        &format!(
            "--url {} --api-key svcx_not_a_valid_key_at_all_0000000000",
            serve.url()
        ),
    );
    let tmux = Tmux::start(&script);
    let screen = tmux.wait_for("the refusal", |s| s.contains("TTY "));
    assert!(screen.contains("TUI-EXITED-1"), "{screen}");
    assert!(
        screen.contains("svc: error:") && screen.contains("401"),
        "{screen}"
    );
}

#[test]
fn tui_restores_the_terminal_when_terminated_or_hung_up() {
    let dir = tempfile::tempdir().unwrap();
    let serve = Serve::start(dir.path());
    let key = setup(&serve);
    for (signal, code) in [("TERM", 143), ("HUP", 129)] {
        let script = write_script(
            dir.path(),
            &format!("--url {} --api-key {key}", serve.url()),
        );
        let tmux = Tmux::start(&script);
        tmux.wait_for("the monitor", |s| s.contains("● connected"));
        assert_eq!(tmux.alternate_screen(), "1");
        let tui = tmux.tui_pid();
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &tui.to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{signal} {tui}");
        let screen = tmux.wait_for("the exit", |s| s.contains("TTY "));
        assert!(screen.contains(&format!("TUI-EXITED-{code}")), "{screen}");
        assert!(!screen.contains("UNS ·"), "alternate screen left: {screen}");
        let tty = screen.lines().find(|l| l.starts_with("TTY ")).unwrap_or("");
        assert!(
            tty.contains(" icanon") && tty.contains(" echo"),
            "raw mode off after SIG{signal}: {screen}"
        );
        assert_eq!(tmux.alternate_screen(), "0");
    }
}

//! The harness of the `svc tui` tests: `svc serve` on fixed free ports (so a restart comes back
//! where the monitor reconnects), an admin setup with an API key, an MQTT publisher, and a
//! detached `tmux` session running `svc tui` whose screen is read with `capture-pane`. Each
//! session checks, when dropped, that its `svc tui` did not outlive it.

use reqwest::blocking::Client;
use rumqttc::{Event, MqttOptions, Outgoing, Packet, QoS};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const ADMIN_PASSWORD: &str = "Adm1n-tui-pass!";
pub const WAIT: Duration = Duration::from_secs(20);

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// `svc serve` on fixed ports, so a restart comes back where the monitor reconnects.
pub struct Serve {
    child: Option<Child>,
    data: PathBuf,
    http: u16,
    pub mqtt: u16,
    pub ws: u16,
}

impl Serve {
    pub fn start(dir: &Path) -> Serve {
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

    pub fn spawn(&mut self) {
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
    pub fn stop(&mut self) {
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

    pub fn url(&self) -> String {
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
pub fn setup(serve: &Serve) -> String {
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
pub fn publish(port: u16, key: &str, messages: &[(&str, &[u8], bool)]) {
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

pub fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// A detached tmux session on a private server socket running `svc tui` through a script,
/// killed on drop. The script records the monitor's pid; dropping the session checks that the
/// monitor did not outlive it (and kills it if it did, so no test leaks a spinning `svc tui`).
pub struct Tmux {
    socket: String,
    /// Where the script writes the pid of `svc tui`.
    pid_file: PathBuf,
}

impl Tmux {
    /// Runs `svc tui <args>` in a new session (see [`write_script`]).
    pub fn start(dir: &Path, args: &str) -> Tmux {
        Tmux::start_with(dir, args, "")
    }

    /// Like [`Tmux::start`], with `svc tui` started through `wrapper` (e.g. `setsid -w`).
    pub fn start_with(dir: &Path, args: &str, wrapper: &str) -> Tmux {
        let version = Command::new("tmux").arg("-V").output();
        assert!(
            version.as_ref().is_ok_and(|o| o.status.success()),
            "this test drives `svc tui` inside tmux, which is not installed: \
             install it (`apt-get install tmux`; .ci/run does)"
        );
        let id = rand_suffix();
        let tmux = Tmux {
            socket: format!("svc-tui-test-{id}"),
            pid_file: dir.join(format!("tui-{id}.pid")),
        };
        let script = write_script(dir, args, wrapper, &tmux.pid_file);
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

    pub fn capture(&self) -> String {
        let out = self
            .cmd()
            .args(["capture-pane", "-p", "-t", "tui"])
            .output()
            .expect("capture-pane");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn keys(&self, keys: &[&str]) {
        for key in keys {
            let status = self
                .cmd()
                .args(["send-keys", "-t", "tui", key])
                .status()
                .unwrap();
            assert!(status.success(), "send-keys {key}");
        }
    }

    pub fn alternate_screen(&self) -> String {
        let out = self
            .cmd()
            .args(["display-message", "-p", "-t", "tui", "#{alternate_on}"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// The pid of `svc tui`, as its script recorded it.
    pub fn tui_pid(&self) -> u32 {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(pid) = std::fs::read_to_string(&self.pid_file)
                .ok()
                .and_then(|text| text.trim().parse().ok())
            {
                return pid;
            }
            assert!(Instant::now() < deadline, "svc tui did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Ends the session as closing its window does: tmux hangs up the pane's terminal.
    pub fn kill_session(&self) {
        let status = self.cmd().args(["kill-session", "-t", "tui"]).status();
        assert!(status.is_ok_and(|s| s.success()), "tmux kill-session");
    }

    /// Polls the screen until `pred` holds; panics with the last screen after [`WAIT`].
    pub fn wait_for(&self, what: &str, pred: impl Fn(&str) -> bool) -> String {
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
    /// Closes every window, then checks that the monitor ended with its terminal.
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").stderr(Stdio::null()).status();
        let Some(pid) = std::fs::read_to_string(&self.pid_file)
            .ok()
            .and_then(|text| text.trim().parse::<u32>().ok())
        else {
            return;
        };
        if let Err(outlived) = wait_gone(pid, Duration::from_secs(2)) {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            if !std::thread::panicking() {
                panic!("svc tui outlived its test: {outlived}");
            }
        }
    }
}

/// Whether `pid` is a live `svc tui` (not gone, not a zombie waiting for a parent to reap it).
pub fn tui_alive(pid: u32) -> bool {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let is_tui = cmdline.split(|&b| b == 0).any(|arg| arg == b"tui");
    is_tui && proc_stat(pid).is_some_and(|(state, _)| state != 'Z')
}

/// The state letter and the CPU time used so far (clock ticks) of a process.
pub fn proc_stat(pid: u32) -> Option<(char, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command's `(name)`: state, ppid, …; utime and stime are 14 and 15.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let state = fields.first()?.chars().next()?;
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some((state, ticks))
}

/// Waits up to `within` for `svc tui` (pid) to end; if it does not, says how much of a core it
/// was burning meanwhile (the spin of a monitor whose terminal is gone).
pub fn wait_gone(pid: u32, within: Duration) -> Result<(), String> {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if !tui_alive(pid) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let before = proc_stat(pid).map_or(0, |(_, ticks)| ticks);
    std::thread::sleep(Duration::from_millis(500));
    let after = proc_stat(pid).map_or(before, |(_, ticks)| ticks);
    // Clock ticks are 1/100 s on Linux: ticks per 0.5 s × 2 = percent of one core.
    Err(format!(
        "svc tui (pid {pid}) still runs {within:?} later, using {} % of a core",
        (after - before) * 2
    ))
}

/// The tree pane: the left 92 columns of each line.
pub fn tree_pane(screen: &str) -> String {
    screen
        .lines()
        .map(|l| l.chars().take(92).collect::<String>())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The pane's script: `svc tui <args>` (through `wrapper`, recording its pid in `pid_file`),
/// then its exit status and the terminal's modes, then a long sleep so the screen stays.
pub fn write_script(dir: &Path, args: &str, wrapper: &str, pid_file: &Path) -> PathBuf {
    let script = pid_file.with_extension("sh");
    let body = format!(
        "{wrapper} sh -c 'echo $$ > \"$0\"; exec \"$@\"' '{pid_file}' \\\n\
         env XDG_CONFIG_HOME='{config}' HOME='{config}' '{svc}' tui {args}\n\
         echo \"TUI-EXITED-$?\"\n\
         echo \"TTY $(stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e -icanon -e echo -e -echo | tr '\\n' ' ')\"\n\
         sleep 600\n",
        pid_file = pid_file.display(),
        config = dir.display(),
        svc = env!("CARGO_BIN_EXE_svc"),
    );
    std::fs::write(&script, body).unwrap();
    script
}

//! The Debian `mosquitto_pub`/`mosquitto_sub` clients as independent MQTT peers of the broker.

use super::*;

/// Starts `mosquitto_sub` with `args` and a receiver of its stdout lines (stdout line-buffered
/// through `stdbuf`: mosquitto_sub block-buffers it when it is a pipe).
pub fn spawn_mosquitto_sub<S: AsRef<std::ffi::OsStr>>(
    args: impl IntoIterator<Item = S>,
) -> (Child, mpsc::Receiver<String>) {
    let mut child = Command::new("stdbuf")
        .args(["-oL", "mosquitto_sub"])
        .args(args)
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
    (child, rx)
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
        let port = self.listener_port("mqtt");
        MosquittoSub::on(port, v5, filter, qos, user, password)
    }

    /// Runs `mosquitto_pub` against the TCP listener; returns (exit success, stdout+stderr).
    pub fn mosquitto_pub(&self, v5: bool, args: &[&str]) -> (bool, String) {
        mosquitto_pub_on(self.listener_port("mqtt"), v5, args)
    }

    /// Publishes `payload` to `topic` at QoS 1 with `mosquitto_pub -V 5` as admin; panics
    /// unless it succeeds.
    pub fn publish_as_admin(&self, topic: &str, payload: &str) {
        let args = [
            "-u",
            "admin",
            "-P",
            ADMIN_PASSWORD,
            "-t",
            topic,
            "-m",
            payload,
            "-q",
            "1",
        ];
        let (ok, out) = self.mosquitto_pub(true, &args);
        assert!(ok, "mosquitto_pub to {topic}: {out}");
    }
}

fn version_flag(v5: bool) -> &'static str {
    if v5 {
        "mqttv5"
    } else {
        "mqttv311"
    }
}

/// Runs `mosquitto_pub` against a broker on loopback `port` with `args`; returns (exit
/// success, stdout+stderr).
pub fn mosquitto_pub_on(port: u16, v5: bool, args: &[&str]) -> (bool, String) {
    let out = Command::new("mosquitto_pub")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(["-V", version_flag(v5)])
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

impl MosquittoSub {
    /// `mosquitto_sub` of `filter` at `qos` on a broker on loopback `port`, logged in as
    /// `user`, and waits for its SUBACK.
    pub fn on(
        port: u16,
        v5: bool,
        filter: &str,
        qos: u8,
        user: &str,
        password: &str,
    ) -> MosquittoSub {
        let (port, qos) = (port.to_string(), qos.to_string());
        MosquittoSub::start(&[
            "-h",
            "127.0.0.1",
            "-p",
            &port,
            "-t",
            filter,
            "-q",
            &qos,
            "-V",
            version_flag(v5),
            "-u",
            user,
            "-P",
            password,
        ])
    }

    /// Starts `mosquitto_sub` with `args` (where to connect, what to subscribe to) printing
    /// `MSG <topic> <qos> <retain> <payload>` lines, and waits for its SUBACK.
    pub fn start(args: &[&str]) -> MosquittoSub {
        let mut all = args.to_vec();
        all.extend(["-d", "-F", "MSG %t %q %r %p"]);
        let (child, lines) = spawn_mosquitto_sub(all);
        let mut sub = MosquittoSub {
            child,
            lines,
            seen: Vec::new(),
        };
        sub.wait_line(|l| l.contains("SUBACK"), "its SUBACK");
        sub
    }

    /// Every `MSG` line printed so far, in order.
    pub fn messages(&mut self) -> Vec<String> {
        while let Ok(line) = self.lines.try_recv() {
            self.seen.push(line);
        }
        self.seen
            .iter()
            .filter(|l| l.starts_with("MSG "))
            .cloned()
            .collect()
    }

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

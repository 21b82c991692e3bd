//! Mosquitto (the Debian package) as a peer broker that svc connects to as a client: an
//! upstream for the bridge tests. Started on free loopback ports (MQTT, WebSocket, and MQTT
//! over TLS with a self-signed certificate for `localhost`) with one user in a password file;
//! stopped when dropped.

use super::*;
use std::net::TcpListener as StdListener;

pub struct PeerBroker {
    child: Child,
    config: PathBuf,
    _dir: tempfile::TempDir,
    user: String,
    password: String,
    pub port: u16,
    pub ws_port: u16,
    pub tls_port: u16,
    /// The TLS listener's certificate (its own CA), PEM.
    pub ca_pem: String,
}

/// A port free right now on the loopback interface.
pub fn free_port() -> u16 {
    StdListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn mosquitto_binary() -> PathBuf {
    [
        "/usr/sbin/mosquitto",
        "/usr/bin/mosquitto",
        "/usr/local/sbin/mosquitto",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
    .expect("the mosquitto broker is not installed (scripts/test.sh installs it)")
}

impl PeerBroker {
    /// Starts Mosquitto accepting `user` with `password` only.
    pub fn start(user: &str, password: &str) -> PeerBroker {
        PeerBroker::launch(user, password, None)
    }

    /// [`PeerBroker::start`] where `user` may publish and subscribe only under the branch
    /// `allowed`: other subscriptions are refused in the SUBACK (Mosquitto's dynamic security
    /// plugin; its `acl_file` grants every subscription and filters deliveries instead).
    pub fn with_acl(user: &str, password: &str, allowed: &str) -> PeerBroker {
        PeerBroker::launch(user, password, Some(allowed))
    }

    fn launch(user: &str, password: &str, allowed: Option<&str>) -> PeerBroker {
        let dir = tempfile::tempdir().expect("temp dir");
        let passwords = dir.path().join("passwords");
        let status = Command::new("mosquitto_passwd")
            .args(["-b", "-c"])
            .arg(&passwords)
            .args([user, password])
            .status()
            .expect("mosquitto_passwd (package mosquitto) runs");
        assert!(status.success(), "mosquitto_passwd failed");
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()])
            .expect("generate certificate");
        let ca_pem = cert.cert.pem();
        let (cert_path, key_path) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
        std::fs::write(&cert_path, &ca_pem).expect("write cert.pem");
        std::fs::write(&key_path, cert.key_pair.serialize_pem()).expect("write key.pem");
        let auth = match allowed {
            Some(branch) => dynamic_security(dir.path(), user, password, branch),
            None => format!("password_file {}\n", passwords.display()),
        };
        let config = dir.path().join("mosquitto.conf");
        // A port found free may be taken by a parallel test before Mosquitto binds it; then
        // Mosquitto exits, and it starts again on other ports.
        for _ in 0..5 {
            let (port, ws_port, tls_port) = (free_port(), free_port(), free_port());
            std::fs::write(
                &config,
                format!(
                    "per_listener_settings false\nallow_anonymous false\n{auth}\
                     listener {port} 127.0.0.1\nlistener {ws_port} 127.0.0.1\nprotocol websockets\n\
                     listener {tls_port} 127.0.0.1\ncertfile {}\nkeyfile {}\n\
                     persistence false\nlog_dest stderr\n",
                    cert_path.display(),
                    key_path.display()
                ),
            )
            .expect("write mosquitto.conf");
            let mut child = spawn(&config);
            if listening(
                &mut child,
                [port, ws_port, tls_port],
                Duration::from_secs(5),
            ) {
                return PeerBroker {
                    child,
                    config,
                    _dir: dir,
                    user: user.to_string(),
                    password: password.to_string(),
                    port,
                    ws_port,
                    tls_port,
                    ca_pem,
                };
            }
        }
        panic!("mosquitto did not start listening on free ports in 5 tries");
    }

    fn wait_listening(&mut self) {
        let ports = [self.port, self.ws_port, self.tls_port];
        assert!(
            listening(&mut self.child, ports, Duration::from_secs(10)),
            "mosquitto did not listen again on its ports"
        );
    }

    /// Kills the broker (an outage: its clients' connections drop).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// `mosquitto_sub` (MQTT 5, QoS 1) on the plain listener as the broker's user.
    pub fn mosquitto_sub(&self, filter: &str) -> MosquittoSub {
        MosquittoSub::on(self.port, true, filter, 1, &self.user, &self.password)
    }

    /// A rumqttc client (MQTT 5, clean) on the plain listener as the broker's user: binary
    /// payloads arrive as they were sent (`mosquitto_sub` prints text lines).
    pub fn client(&self, client_id: &str) -> Mqtt {
        let opts = MqttOpts::new(Proto::V5, Via::Tcp, client_id).creds(&self.user, &self.password);
        connect_client("127.0.0.1".into(), self.port, false, opts)
            .unwrap_or_else(|e| panic!("client `{client_id}` could not connect to mosquitto: {e}"))
    }

    /// `mosquitto_pub` (MQTT 5) on the plain listener as the broker's user, with `args`.
    pub fn mosquitto_pub(&self, args: &[&str]) {
        let mut all = vec!["-u", self.user.as_str(), "-P", self.password.as_str()];
        all.extend_from_slice(args);
        let (ok, out) = mosquitto_pub_on(self.port, true, &all);
        assert!(ok, "mosquitto_pub failed: {out}");
    }

    /// Starts the broker again on the same ports after [`PeerBroker::kill`].
    pub fn restart(&mut self) {
        self.child = spawn(&self.config);
        self.wait_listening();
    }
}

/// The configuration lines of Mosquitto's dynamic security plugin with `user` (whose
/// `password` `mosquitto_ctrl` hashes) allowed to publish and subscribe under `branch` only.
fn dynamic_security(dir: &Path, user: &str, password: &str, branch: &str) -> String {
    let plugin = [
        "/usr/lib/x86_64-linux-gnu/mosquitto_dynamic_security.so",
        "/usr/lib/aarch64-linux-gnu/mosquitto_dynamic_security.so",
        "/usr/lib/mosquitto_dynamic_security.so",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
    .expect("mosquitto's dynamic security plugin is not installed (package mosquitto)");
    let file = dir.join("dynsec.json");
    let status = Command::new("mosquitto_ctrl")
        .args(["dynsec", "init"])
        .arg(&file)
        .args([user, password])
        .stdout(Stdio::null())
        .status()
        .expect("mosquitto_ctrl (package mosquitto-clients) runs");
    assert!(status.success(), "mosquitto_ctrl dynsec init failed");
    let mut config: Value =
        serde_json::from_slice(&std::fs::read(&file).expect("read dynsec.json")).expect("json");
    // `init` makes the user an administrator of the plugin only; its role gets the branch.
    let filter = format!("{branch}/#");
    config["roles"][0]["acls"] = json!([
        {"acltype": "publishClientSend", "topic": filter, "allow": true},
        {"acltype": "subscribePattern", "topic": filter, "allow": true}
    ]);
    std::fs::write(&file, config.to_string()).expect("write dynsec.json");
    format!(
        "plugin {}\nplugin_opt_config_file {}\n",
        plugin.display(),
        file.display()
    )
}

/// Whether Mosquitto runs and accepts connections on `ports` within `within` (else it is
/// stopped).
fn listening(child: &mut Child, ports: [u16; 3], within: Duration) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if child.try_wait().ok().flatten().is_some() {
            return false;
        }
        let accepting = ports
            .iter()
            .all(|&port| std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
        if accepting {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    false
}

fn spawn(config: &Path) -> Child {
    Command::new(mosquitto_binary())
        .arg("-c")
        .arg(config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start mosquitto")
}

impl Drop for PeerBroker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

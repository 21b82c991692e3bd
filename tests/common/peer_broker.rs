//! Mosquitto (the Debian package) as a peer broker that svc connects to as a client: an
//! upstream for the bridge tests. Started on free loopback ports (MQTT and WebSocket) with one
//! user in a password file; stopped when dropped.

use super::*;
use std::net::TcpListener as StdListener;

pub struct PeerBroker {
    child: Child,
    _dir: tempfile::TempDir,
    pub port: u16,
    pub ws_port: u16,
}

/// A port free right now on the loopback interface.
fn free_port() -> u16 {
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
        let dir = tempfile::tempdir().expect("temp dir");
        let passwords = dir.path().join("passwords");
        let status = Command::new("mosquitto_passwd")
            .args(["-b", "-c"])
            .arg(&passwords)
            .args([user, password])
            .status()
            .expect("mosquitto_passwd (package mosquitto) runs");
        assert!(status.success(), "mosquitto_passwd failed");
        let (port, ws_port) = (free_port(), free_port());
        let config = dir.path().join("mosquitto.conf");
        std::fs::write(
            &config,
            format!(
                "per_listener_settings false\nallow_anonymous false\npassword_file {}\n\
                 listener {port} 127.0.0.1\nlistener {ws_port} 127.0.0.1\nprotocol websockets\n\
                 persistence false\nlog_dest stderr\n",
                passwords.display()
            ),
        )
        .expect("write mosquitto.conf");
        let child = Command::new(mosquitto_binary())
            .arg("-c")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start mosquitto");
        let broker = PeerBroker {
            child,
            _dir: dir,
            port,
            ws_port,
        };
        for port in [port, ws_port] {
            poll_until(Duration::from_secs(10), "mosquitto listening", &mut || {
                std::net::TcpStream::connect(("127.0.0.1", port))
                    .ok()
                    .map(drop)
            });
        }
        broker
    }
}

impl Drop for PeerBroker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

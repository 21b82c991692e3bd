//! systemd readiness (`Type=notify`): `READY=1` sent to `$NOTIFY_SOCKET` when svc prints its
//! `ready` line, so `systemctl start svc` returns once every listener is bound. Without
//! `NOTIFY_SOCKET` (not started by systemd) nothing is sent.
//!
//! The protocol is one datagram on a UNIX socket (sd_notify(3)); a dozen lines of std, so no
//! crate for it.

use std::io;
use std::os::unix::net::{SocketAddr, UnixDatagram};

/// Tells systemd svc is ready, if systemd asked. A failure is logged, not fatal: the service
/// serves either way, and systemd times the start out on its own.
pub fn ready() {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    if let Err(e) = send(&path, b"READY=1") {
        tracing::warn!("could not tell systemd that svc is ready ({path:?}): {e}");
    }
}

/// Sends `message` to the socket `path` names: a file path, or `@name` for a socket in the
/// abstract namespace.
fn send(path: &std::ffi::OsStr, message: &[u8]) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_bytes();
    let address = match bytes.strip_prefix(b"@") {
        Some(name) => {
            use std::os::linux::net::SocketAddrExt;
            SocketAddr::from_abstract_name(name)?
        }
        None => SocketAddr::from_pathname(path)?,
    };
    let socket = UnixDatagram::unbound()?;
    socket.send_to_addr(message, &address)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sends_ready_to_a_path_socket() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let listener = UnixDatagram::bind(&path).unwrap();
        send(path.as_os_str(), b"READY=1").unwrap();
        let mut buf = [0; 64];
        let n = listener.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1");
    }

    #[test]
    fn sends_ready_to_an_abstract_socket() {
        use std::os::linux::net::SocketAddrExt;
        let name = format!("svc-notify-test-{}", std::process::id());
        let listener =
            UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap())
                .unwrap();
        send(std::ffi::OsStr::new(&format!("@{name}")), b"READY=1").unwrap();
        let mut buf = [0; 64];
        let n = listener.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1");
    }
}

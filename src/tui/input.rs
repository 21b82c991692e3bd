//! The monitor's keyboard: waits on the terminal with poll(2), reads it, and decodes the keys
//! (see `keys.rs`). A terminal that went away (its window closed, its SSH session dropped) is
//! reported as [`Gone`] — a hang-up, end of input or a failed read — so the monitor ends.
//!
//! crossterm's event reader is not used for this: once its terminal is gone the descriptor
//! stays readable while read(2) returns 0 or fails with EIO, and its read loop retries at once,
//! forever, inside `event::poll` whatever the timeout (crossterm issue #793). The process then
//! burns a core and never returns to its loop to act on SIGTERM.

use super::keys;
use crossterm::event::KeyEvent;
use std::fs::File;
use std::io::{ErrorKind, IsTerminal, Read};
use std::os::fd::{AsFd, AsRawFd};
use std::time::Duration;

/// Why the terminal can no longer be used.
#[derive(Debug)]
pub struct Gone(pub String);

/// The terminal the keys come from.
pub struct Keyboard {
    tty: File,
}

impl Keyboard {
    /// Standard input when it is a terminal, else the process's controlling terminal: the one
    /// crossterm puts in raw mode.
    pub fn open() -> std::io::Result<Keyboard> {
        let stdin = std::io::stdin();
        let tty = if stdin.is_terminal() {
            // A descriptor of our own: reads bypass std's buffered stdin, which poll cannot see.
            File::from(stdin.as_fd().try_clone_to_owned()?)
        } else {
            File::options().read(true).write(true).open("/dev/tty")?
        };
        Ok(Keyboard { tty })
    }

    /// The keys pressed within `timeout`: none when it passes or a signal interrupts the wait
    /// (so the caller sees the signal at once).
    pub fn read(&mut self, timeout: Duration) -> Result<Vec<KeyEvent>, Gone> {
        let mut watch = libc::pollfd {
            fd: self.tty.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // Rounded up: a wait rounded down to 0 ms would return at once, again and again.
        let millis = timeout.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd, and its count is 1.
        let ready = unsafe { libc::poll(&mut watch, 1, millis) };
        if ready < 0 {
            let error = std::io::Error::last_os_error();
            return match error.kind() {
                ErrorKind::Interrupted => Ok(Vec::new()),
                _ => Err(Gone(format!("waiting for the terminal failed: {error}"))),
            };
        }
        if ready == 0 {
            return Ok(Vec::new());
        }
        if watch.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
            return Err(Gone("the terminal hung up".into()));
        }
        let mut bytes = [0u8; 1024];
        match self.tty.read(&mut bytes) {
            Ok(0) => Err(Gone("the terminal's input ended".into())),
            Ok(n) => Ok(keys::decode(&bytes[..n])),
            Err(e) if matches!(e.kind(), ErrorKind::Interrupted | ErrorKind::WouldBlock) => {
                Ok(Vec::new())
            }
            Err(e) => Err(Gone(format!("reading the terminal failed: {e}"))),
        }
    }
}

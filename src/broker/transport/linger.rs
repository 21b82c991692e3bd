//! The careful close of a connection the server ends on its own (a DISCONNECT with a reason
//! code, a refused CONNECT): the last bytes are written and the write side closed (TCP: FIN;
//! TLS: close_notify; WebSocket: a Close frame) while what the client still sends is read and
//! thrown away, and for a short while after. Closing a socket with unread bytes in it makes the
//! kernel answer with a reset instead of a FIN, and a client that was still writing (it had not
//! read the DISCONNECT yet) then sees its next write fail, possibly before it has read why the
//! server closed. Only the ending connection's task does this, after its session was detached:
//! nothing else waits on it, and the paths of a connection that goes on are untouched.

use super::Reader;
use bytes::BytesMut;
use std::future::Future;
use std::time::Duration;

/// How long the client's bytes are read and thrown away once the write side is closed.
const LINGER: Duration = Duration::from_secs(1);
/// Most bytes read and thrown away: a client that streams more is closed on without them.
const LINGER_BYTES: usize = 1024 * 1024;

/// Runs `closing` (the last writes, then the close of the write side, itself bounded in time)
/// while discarding what `reader` receives; then keeps discarding for [`LINGER`], until the
/// client closes its side, or until [`LINGER_BYTES`] were read, whichever comes first. The
/// connection closes when the caller drops the halves.
pub async fn linger(reader: Reader, closing: impl Future<Output = ()>) {
    let mut drain = Drain {
        reader,
        buf: BytesMut::new(),
        left: LINGER_BYTES,
    };
    let mut closing = std::pin::pin!(closing);
    let client_done = tokio::select! {
        () = &mut closing => false,
        () = drain.run() => true,
    };
    if client_done {
        closing.await;
    } else {
        let _ = tokio::time::timeout(LINGER, drain.run()).await;
    }
}

/// Reads and throws away, up to a number of bytes.
struct Drain {
    reader: Reader,
    buf: BytesMut,
    left: usize,
}

impl Drain {
    /// Until the client closes its side (or the connection fails) or the bytes allowed were
    /// read. Cancel-safe: every transport's read is.
    async fn run(&mut self) {
        while self.left > 0 {
            match self.reader.read(&mut self.buf).await {
                Ok(0) | Err(_) => self.left = 0,
                Ok(n) => {
                    self.left = self.left.saturating_sub(n);
                    self.buf.clear();
                }
            }
        }
    }
}

//! A response body fed from a blocking task: what the task writes goes out in chunks of
//! [`CHUNK`] bytes as it is written, so a long export starts at once and never sits whole in
//! memory. At most [`IN_FLIGHT`] chunks wait for a slow client before the writer waits too.

use axum::body::Body;
use bytes::Bytes;
use std::io;
use tokio::sync::mpsc;

const CHUNK: usize = 64 * 1024;
const IN_FLIGHT: usize = 8;

/// The writing end; flushes what it holds when dropped.
pub struct ChunkSink {
    buf: Vec<u8>,
    tx: mpsc::Sender<io::Result<Bytes>>,
}

/// A sink and the body it feeds.
pub fn channel() -> (ChunkSink, Body) {
    let (tx, rx) = mpsc::channel(IN_FLIGHT);
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|chunk| (chunk, rx))
    });
    (
        ChunkSink {
            buf: Vec::with_capacity(CHUNK),
            tx,
        },
        Body::from_stream(stream),
    )
}

impl ChunkSink {
    fn send(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK)));
        self.tx
            .blocking_send(Ok(chunk))
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the client went away"))
    }

    /// Ends the body with an error (the client sees it cut short).
    pub fn fail(mut self, reason: String) {
        self.buf.clear();
        let _ = self.tx.blocking_send(Err(io::Error::other(reason)));
    }
}

impl io::Write for ChunkSink {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(data);
        if self.buf.len() >= CHUNK {
            self.send()?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.send()
    }
}

impl Drop for ChunkSink {
    fn drop(&mut self) {
        let _ = self.send();
    }
}

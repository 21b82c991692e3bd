//! The HTTP listener: hyper's connection handling, configured so that svc and not the library
//! answers oversize request heads, with a slow-header timeout, and graceful shutdown.
//!
//! svc's own limits ([`MAX_URI_BYTES`], [`MAX_HEADERS`], [`MAX_HEADER_BYTES`]) are checked by
//! the request middleware, which answers like every other error (a sentence and a correlation
//! id). hyper's limits sit well above them so that such requests reach that check. What hyper
//! still refuses on its own (a request it cannot parse, a URI over its fixed 65,534 bytes, a
//! head over [`HYPER_MAX_BUF`]) it answers with an empty body; [`LibraryAnswers`] rewrites those
//! answers on their way out so that they carry a sentence and a correlation id too.

use crate::server::http::drain::DrainOnDrop;
use crate::server::http::errors::default_sentence;
use crate::server::http::middleware::CORRELATION_HEADER;
use axum::extract::ConnectInfo;
use axum::http::StatusCode;
use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tower::ServiceExt;

/// Longest request URI (path and query) svc accepts; longer → 414.
pub const MAX_URI_BYTES: usize = 32 * 1024;
/// Most request headers svc accepts; more → 431.
pub const MAX_HEADERS: usize = 100;
/// Most bytes of request headers (names and values) svc accepts; more → 431.
pub const MAX_HEADER_BYTES: usize = 64 * 1024;
/// hyper's read buffer for a request head: a head up to this size reaches svc's checks.
const HYPER_MAX_BUF: usize = 2 * 1024 * 1024 + 64 * 1024;
const HYPER_MAX_HEADERS: usize = 256;
/// A client that has not sent a whole request head by then is disconnected.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// How long shutdown waits for requests in progress.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Serves `router` on `listener` until `shutdown` resolves, then lets requests in progress end.
///
/// HTTP/1.1 only: browsers speak HTTP/2 over TLS alone, which this listener does not offer, and
/// cleartext HTTP/2 (prior knowledge) had no client of svc's; leaving it out takes hyper's
/// HTTP/2 stack out of the binary (issue 17, size).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .max_buf_size(HYPER_MAX_BUF)
        .max_headers(HYPER_MAX_HEADERS);
    // Each connection holds a receiver: shutdown sends `true` to all of them, and the last one
    // to end drops the last receiver, which ends `closed()` below.
    let (stopping, stop) = watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors and the like: wait instead of spinning.
                    tracing::warn!(error = %e, "cannot accept an HTTP connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = tcp.set_nodelay(true);
        let router = router.clone();
        let service = hyper::service::service_fn(
            move |mut request: hyper::Request<hyper::body::Incoming>| {
                request.extensions_mut().insert(ConnectInfo(peer));
                let request = request.map(|body| axum::body::Body::new(DrainOnDrop::new(body)));
                router.clone().oneshot(request)
            },
        );
        let io = TokioIo::new(LibraryAnswers::new(tcp));
        let connection = builder.serve_connection(io, service).with_upgrades();
        let mut stop = stop.clone();
        tokio::spawn(async move {
            tokio::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => return,
                _ = stop.wait_for(|stopping| *stopping) => {}
            }
            // Answers the request in progress, if any, then closes.
            connection.as_mut().graceful_shutdown();
            let _ = connection.await;
        });
    }
    drop(listener);
    drop(stop);
    let _ = stopping.send(true);
    if tokio::time::timeout(SHUTDOWN_GRACE, stopping.closed())
        .await
        .is_err()
    {
        tracing::warn!("HTTP requests still running at shutdown were cut off");
    }
    Ok(())
}

/// A connection whose outgoing bytes are watched for the responses hyper writes on its own.
pub struct LibraryAnswers<IO> {
    inner: IO,
    /// A rewritten answer not yet fully written.
    pending: Vec<u8>,
    written: usize,
}

impl<IO> LibraryAnswers<IO> {
    pub fn new(inner: IO) -> LibraryAnswers<IO> {
        LibraryAnswers {
            inner,
            pending: Vec::new(),
            written: 0,
        }
    }
}

impl<IO: AsyncWrite + Unpin> LibraryAnswers<IO> {
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.written < self.pending.len() {
            let n =
                ready!(Pin::new(&mut self.inner).poll_write(cx, &self.pending[self.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
        self.pending.clear();
        self.written = 0;
        Poll::Ready(Ok(()))
    }

    /// Queues the rewritten answer in place of `claimed` bytes of hyper's.
    fn replace(
        &mut self,
        cx: &mut Context<'_>,
        answer: Vec<u8>,
        claimed: usize,
    ) -> Poll<io::Result<usize>> {
        self.pending = answer;
        // Pending is fine: hyper flushes next, which finishes the write.
        if let Poll::Ready(Err(e)) = self.poll_pending(cx) {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(claimed))
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for LibraryAnswers<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for LibraryAnswers<IO> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_pending(cx))?;
        if let Some(answer) = rewrite_library_answer(buf) {
            return this.replace(cx, answer, buf.len());
        }
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_pending(cx))?;
        let mut filled = bufs.iter().filter(|b| !b.is_empty());
        if let (Some(only), None) = (filled.next(), filled.next()) {
            if let Some(answer) = rewrite_library_answer(only) {
                return this.replace(cx, answer, only.len());
            }
        }
        Pin::new(&mut this.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_pending(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_pending(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

/// The sentence for a request hyper refused before svc saw it.
fn library_sentence(status: StatusCode) -> String {
    match status {
        StatusCode::BAD_REQUEST => {
            "the request is not valid HTTP/1.1: check the request line, the header syntax and \
             Content-Length"
                .into()
        }
        StatusCode::URI_TOO_LONG => format!("the request URI is over {MAX_URI_BYTES} bytes"),
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => format!(
            "the request headers are too large: at most {MAX_HEADERS} headers and \
             {MAX_HEADER_BYTES} bytes"
        ),
        other => default_sentence(other).into(),
    }
}

/// hyper's own answer to an unparsable request is a whole head with `content-length: 0` and
/// no correlation id (every answer of svc's has one). Returns svc's version of it, or `None`
/// for anything else.
fn rewrite_library_answer(bytes: &[u8]) -> Option<Vec<u8>> {
    let head = bytes.strip_suffix(b"\r\n\r\n")?;
    let head = std::str::from_utf8(head).ok()?;
    let mut lines = head.split("\r\n");
    let code: u16 = lines
        .next()?
        .strip_prefix("HTTP/1.1 ")?
        .get(..3)?
        .parse()
        .ok()?;
    let status = StatusCode::from_u16(code).ok()?;
    if !status.is_client_error() {
        return None;
    }
    let mut kept = Vec::new();
    let mut empty_body = false;
    for line in lines {
        let (name, value) = line.split_once(':')?;
        if name.eq_ignore_ascii_case(CORRELATION_HEADER.as_str()) {
            return None;
        }
        if name.eq_ignore_ascii_case("content-length") {
            empty_body = value.trim() == "0";
        } else if !name.eq_ignore_ascii_case("connection") {
            kept.push(line);
        }
    }
    if !empty_body {
        return None;
    }
    let id = uuid::Uuid::new_v4();
    let sentence = library_sentence(status);
    tracing::warn!(correlation_id = %id, status = code, error = %sentence, "request refused unparsed");
    let mut answer = format!(
        "HTTP/1.1 {code} {}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\n\
         {}: {id}\r\nconnection: close\r\n",
        status.canonical_reason().unwrap_or(""),
        sentence.len(),
        CORRELATION_HEADER.as_str(),
    );
    for line in kept {
        answer.push_str(line);
        answer.push_str("\r\n");
    }
    answer.push_str("\r\n");
    answer.push_str(&sentence);
    Some(answer.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hypers_bare_answers_get_a_sentence_and_a_correlation_id() {
        let bare = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: Mon, 23 Nov 2026 10:00:00 GMT\r\n\r\n";
        let answer = String::from_utf8(rewrite_library_answer(bare).unwrap()).unwrap();
        let (head, body) = answer.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"));
        assert!(head.contains("content-type: text/plain; charset=utf-8"));
        assert!(head.contains("app-correlationid: "));
        assert!(head.contains("date: Mon, 23 Nov 2026"));
        assert!(head.contains(&format!("content-length: {}", body.len())));
        assert!(body.contains("headers are too large"));
    }

    #[test]
    fn svcs_own_answers_and_bodies_pass_untouched() {
        let own = b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\napp-correlationid: x\r\n\r\n";
        assert!(rewrite_library_answer(own).is_none());
        let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
        assert!(rewrite_library_answer(ok).is_none());
        let with_body = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 3\r\n\r\n";
        assert!(rewrite_library_answer(with_body).is_none());
        assert!(rewrite_library_answer(b"{\"HTTP/1.1 400\":1}").is_none());
        assert!(rewrite_library_answer(b"").is_none());
    }
}

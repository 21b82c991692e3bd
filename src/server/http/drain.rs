//! Reads what a handler left of a request body. A request refused before its body was read (a
//! 401 on an upload) would otherwise make the HTTP library close the connection while the
//! client is still sending, and the client then sees a broken connection instead of svc's
//! answer. Like a web server's "lingering close": the rest of the body is read and discarded in
//! the background, up to [`DRAIN_BYTES`] and [`DRAIN_FOR`], so the answer gets through.
//! The HTTP listener (`crate::server::http::listener`) puts every request body in a [`DrainOnDrop`].

use axum::body::{Body, Bytes};
use futures::StreamExt;
use http_body::{Body as _, Frame, SizeHint};
use hyper::body::Incoming;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

const DRAIN_BYTES: usize = 16 * 1024 * 1024;
const DRAIN_FOR: Duration = Duration::from_secs(10);

/// A request body that drains itself if dropped unread. The HTTP listener wraps every request's
/// body in it before routing (no middleware layer, no extra allocation per request).
pub struct DrainOnDrop {
    inner: Option<Incoming>,
}

impl DrainOnDrop {
    pub fn new(body: Incoming) -> DrainOnDrop {
        DrainOnDrop { inner: Some(body) }
    }
}

impl http_body::Body for DrainOnDrop {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        match self.inner.as_mut() {
            Some(body) => Pin::new(body).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(|b| b.is_end_stream())
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), |b| b.size_hint())
    }
}

impl Drop for DrainOnDrop {
    fn drop(&mut self) {
        let Some(body) = self.inner.take() else {
            return;
        };
        if body.is_end_stream() {
            return;
        }
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(drain(Body::new(body)));
        }
    }
}

async fn drain(body: Body) {
    let mut chunks = body.into_data_stream();
    let _ = tokio::time::timeout(DRAIN_FOR, async {
        let mut read = 0;
        while let Some(Ok(chunk)) = chunks.next().await {
            read += chunk.len();
            if read > DRAIN_BYTES {
                break;
            }
        }
    })
    .await;
}

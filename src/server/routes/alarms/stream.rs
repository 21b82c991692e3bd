//! `GET /svc/alarms/stream`: the domain's alarms live, as Server-Sent Events. The stream opens
//! with `event: snapshot` (the standing alarms, as `GET /svc/alarms/active` lists them), then
//! `event: change` for each state change or action (an alarm event, as on
//! `$SYS/svc/alarms/<domain>/<alarm>`). A client that falls behind gets a fresh snapshot in
//! place of what it missed. A comment line every 15 s keeps proxies from closing a quiet
//! stream; when grants or keys change, the credential is checked again and a revoked one ends
//! the stream with `event: error`.

use crate::alarms::{AlarmEvent, FEATURE};
use crate::server::error::ApiResult;
use crate::server::http::caller::{Access, Caller, Recheck};
use crate::server::AppState;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::broadcast::Receiver;

const HEARTBEAT: Duration = Duration::from_secs(15);

/// The domain's alarms: a snapshot, then every change.
#[utoipa::path(get, path = "/svc/alarms/stream", tag = "alarms",
    responses((status = 200, description = "Server-sent events: `snapshot`, then `change`", content_type = "text/event-stream", body = String)))]
pub(super) async fn stream(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
) -> ApiResult<Sse<impl Stream<Item = Result<Event, Infallible>>>> {
    caller.require(&state, FEATURE, "*", Access::Read).await?;
    // Watching starts before the snapshot, so no change falls between the two.
    let watch = state.alarms.watch();
    let feed = Feed {
        recheck: Recheck::new(&state, headers, FEATURE),
        state,
        caller,
        watch,
        snapshot_due: true,
        ended: false,
    };
    let events = futures::stream::unfold(feed, Feed::next);
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(HEARTBEAT)))
}

struct Feed {
    state: AppState,
    caller: Caller,
    recheck: Recheck,
    watch: Receiver<Arc<AlarmEvent>>,
    snapshot_due: bool,
    ended: bool,
}

impl Feed {
    async fn next(mut self) -> Option<(Result<Event, Infallible>, Feed)> {
        loop {
            if self.ended {
                return None;
            }
            if self.snapshot_due {
                self.snapshot_due = false;
                let standing = self.state.alarms.standing(&self.caller.domain);
                let data = serde_json::to_string(&standing).unwrap_or_else(|_| "[]".into());
                return Some((Ok(Event::default().event("snapshot").data(data)), self));
            }
            let update = tokio::time::timeout(HEARTBEAT, self.watch.recv()).await;
            if let Err(refused) = self
                .recheck
                .still_allowed(&self.state, &mut self.caller)
                .await
            {
                self.ended = true;
                return Some((Ok(Event::default().event("error").data(refused)), self));
            }
            match update {
                Err(_quiet) => {}
                Ok(Ok(event)) if event.domain == self.caller.domain => {
                    let data = serde_json::to_string(&*event).unwrap_or_default();
                    return Some((Ok(Event::default().event("change").data(data)), self));
                }
                Ok(Ok(_)) => {}
                Ok(Err(RecvError::Lagged(_))) => self.snapshot_due = true,
                Ok(Err(RecvError::Closed)) => return None,
            }
        }
    }
}

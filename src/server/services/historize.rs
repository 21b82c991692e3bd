//! What the historian stores of accepted MQTT messages: the point of each message on a
//! historized tag, through the tag's compression when it has one (one filter per series, kept
//! in memory by [`Series`]), journaled before a QoS 1/2 publish is acknowledged. Subscribers,
//! SSE streams and last values are fed apart from this and see every value.

use crate::broker::Message;
use crate::historian::compression::{Compressor, Reading, Sample};
use crate::historian::point_from_payload;
use crate::historian::writer::{HistorianWriter, NotRecorded};
use crate::server::services::tag_registry::TagOwner;
use crate::server::AppState;
use crate::store::HistoryWrite;

/// A point on its way to the historian; `durable` when its publisher waited for "stored".
pub struct Pending {
    write: HistoryWrite,
    durable: bool,
}

/// The compressed series of this server.
pub type Series = Compressor<Pending>;

/// The historian's points of one batch of messages, in the order to store them.
#[derive(Default)]
pub struct Batch {
    points: Vec<Pending>,
}

impl Batch {
    /// Adds the point of `message` when `owner` historizes its topic: every point, or what the
    /// tag's compression keeps now (possibly a point of an earlier message it held back).
    pub fn add(&mut self, series: &Series, owner: &TagOwner, message: &Message) {
        if !owner.historize {
            return;
        }
        let (ts_ms, value, quality) = point_from_payload(&message.payload, message.received_ms);
        let point = Pending {
            write: HistoryWrite {
                domain: owner.domain.to_string(),
                topic: message.topic.clone(),
                ts_ms,
                value,
                quality,
            },
            durable: message.qos > 0,
        };
        match &owner.compression {
            None => self.points.push(point),
            Some(settings) => {
                let sample = Sample {
                    ts_ms,
                    reading: Reading::of(&point.write.value),
                    quality: quality.0,
                };
                series.push(
                    &owner.domain,
                    &message.topic,
                    settings,
                    sample,
                    point,
                    &mut self.points,
                );
            }
        }
    }

    /// Stores the batch: points nobody waits for are queued, the others journaled with one
    /// write; resolves once those are stored. A held point keeps the durability of its own
    /// message, whichever message made the filter store it.
    pub async fn store(self, historian: &HistorianWriter) -> Result<(), NotRecorded> {
        let (durable, volatile): (Vec<_>, Vec<_>) =
            self.points.into_iter().partition(|point| point.durable);
        historian
            .record_many(volatile.into_iter().map(|point| point.write).collect())
            .await;
        historian
            .commit_many(durable.into_iter().map(|point| point.write).collect())
            .await
    }
}

/// Ends the series whose tag is gone, no longer this owner's, no longer historized, or
/// compressed otherwise, and stores what they held; run after the tags are reloaded.
pub async fn prune(state: &AppState) {
    let mut ended = Batch::default();
    state.uns.compressed.retain(
        |topic, domain, settings| {
            state.uns.tags.owner(topic).is_some_and(|owner| {
                owner.historize
                    && &*owner.domain == domain
                    && owner.compression.as_deref() == Some(settings)
            })
        },
        &mut ended.points,
    );
    if let Err(e) = ended.store(&state.uns.historian).await {
        tracing::warn!(error = %e, "cannot store the points a compressed series held");
    }
}

/// At shutdown, once no message comes in any more: stores every point a filter holds back.
pub async fn close(state: &AppState) {
    let mut held = Batch::default();
    state.uns.compressed.close(&mut held.points);
    let count = held.points.len();
    match held.store(&state.uns.historian).await {
        Ok(()) if count > 0 => tracing::info!(points = count, "stored the held compressed points"),
        Ok(()) => {}
        Err(e) => tracing::warn!(error = %e, "cannot store the held compressed points"),
    }
}

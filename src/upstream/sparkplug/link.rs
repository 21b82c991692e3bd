//! The edge node on one connection of its upstream: the will (NDEATH with this connection's
//! bdSeq, QoS 1, not retained) and a fresh session in the CONNECT, the NBIRTH once the NCMD
//! subscription is granted, NDATA of the tags' changes, rebirths, NCMD commands, and the
//! explicit NDEATH before a graceful disconnect. The relay's connection loop drives it: it
//! waits on [`EdgeLink::next`] beside its other work and hands what it reads on the NCMD
//! topic to [`EdgeLink::command`].
//!
//! Timing:
//! - NDATA: a change starts a window of [`DATA_WINDOW`]; everything that arrives within it goes
//!   out as one NDATA (sooner when [`MAX_DATA_METRICS`] wait).
//! - Rebirths the node decides itself (a new tag, a datatype change, tags declared or deleted,
//!   values missed) come at most once per [`REBIRTH_INTERVAL`], so a stream of new tags costs
//!   one NBIRTH a second, not one per tag; an NCMD rebirth is answered at once.
//! - Declared and deleted tags are noticed by the tag registry's generation, looked at every
//!   [`CHECK_EVERY`].

use super::node::{death, NodeState};
use super::Edge;
use crate::sparkplug::topic::Verb;
use crate::upstream::connect::Failure;
use crate::upstream::relay::{Local, TagChange};
use crate::upstream::session::{In, Open, Session, Will};
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// How long changes are gathered into one NDATA.
pub const DATA_WINDOW: Duration = Duration::from_millis(100);
/// An NDATA goes out at once when this many metrics wait.
pub const MAX_DATA_METRICS: usize = 1000;
/// The shortest time between two NBIRTHs the node decides itself.
pub const REBIRTH_INTERVAL: Duration = Duration::from_secs(1);
/// How often the tag registry is asked whether tags changed.
pub const CHECK_EVERY: Duration = Duration::from_secs(1);
/// How long a graceful stop waits for the upstream to acknowledge the NDEATH.
const DEATH_LIMIT: Duration = Duration::from_secs(2);

/// What the edge node wakes the connection for.
pub enum EdgeWake {
    Change(TagChange),
    /// The local broker stopped telling changes (it is shutting down).
    Ended,
    Flush,
    Rebirth,
    Check,
}

/// Writes asked by NCMDs: (tag, value).
type Writes = Vec<(String, Value)>;

/// The edge node on one connection.
pub struct EdgeLink {
    edge: Arc<Edge>,
    local: Arc<dyn Local>,
    bd_seq: u64,
    node: NodeState,
    ncmd: String,
    changes: Option<BoxStream<'static, TagChange>>,
    /// An NBIRTH of this connection went out.
    born: bool,
    last_birth: Option<Instant>,
    flush_at: Option<Instant>,
    rebirth_at: Option<Instant>,
    check_at: Instant,
    generation: u64,
    /// To the task that carries out NCMD writes in order.
    writes: mpsc::UnboundedSender<Writes>,
}

impl Drop for EdgeLink {
    fn drop(&mut self) {
        self.edge.update(|s| s.online = false);
    }
}

impl EdgeLink {
    /// The edge node for the next connection; `origin` marks its writes as the upstream's.
    pub fn new(edge: Arc<Edge>, local: Arc<dyn Local>, origin: Arc<str>) -> EdgeLink {
        let bd_seq = edge.bd_seq();
        let (writes, queue) = mpsc::unbounded_channel();
        tokio::spawn(write_commands(edge.clone(), local.clone(), origin, queue));
        EdgeLink {
            node: NodeState::new(&edge.config.branch, bd_seq),
            ncmd: edge.config.topic(Verb::NCmd),
            edge,
            local,
            bd_seq,
            changes: None,
            born: false,
            last_birth: None,
            flush_at: None,
            rebirth_at: None,
            check_at: Instant::now() + CHECK_EVERY,
            generation: 0,
            writes,
        }
    }

    /// `how` with the node's will and a fresh session: Sparkplug requires a clean session of
    /// an edge node (so the record's `clean_start` and `session_expiry` do not apply).
    pub fn open(&self, how: &Open) -> Open {
        Open {
            will: Some(Will {
                topic: self.edge.config.topic(Verb::NDeath),
                payload: Bytes::from(death(self.bd_seq, crate::time::now_ms())),
                qos: 1,
                retain: false,
            }),
            fresh: true,
            ..how.clone()
        }
    }

    /// The upstream accepted the connection.
    pub fn connected(&self) {
        self.edge.connected(self.bd_seq);
    }

    /// The subscription of the node's commands (Sparkplug sends NCMD at QoS 0).
    pub fn command_filter(&self) -> (String, u8) {
        (self.ncmd.clone(), 0)
    }

    pub fn is_command(&self, topic: &str) -> bool {
        topic == self.ncmd
    }

    /// What to do next (cancel safe: the connection waits on it in a `select!`).
    pub async fn next(&mut self) -> EdgeWake {
        let far = Instant::now() + Duration::from_secs(3600);
        let (flush_at, rebirth_at) = (self.flush_at, self.rebirth_at);
        tokio::select! {
            change = next_change(&mut self.changes) => match change {
                Some(change) => EdgeWake::Change(change),
                None => EdgeWake::Ended,
            },
            () = tokio::time::sleep_until(flush_at.unwrap_or(far)), if flush_at.is_some() => {
                EdgeWake::Flush
            }
            () = tokio::time::sleep_until(rebirth_at.unwrap_or(far)), if rebirth_at.is_some() => {
                EdgeWake::Rebirth
            }
            () = tokio::time::sleep_until(self.check_at) => EdgeWake::Check,
        }
    }

    /// Acts on what [`EdgeLink::next`] returned; packets go into the session's buffer.
    pub fn handle(&mut self, wake: EdgeWake, session: &mut Session) -> Result<(), Failure> {
        match wake {
            EdgeWake::Change(TagChange::Value {
                topic,
                received_ms,
                payload,
            }) => {
                if !self.born {
                    return Ok(());
                }
                match self.node.change(&topic, received_ms, &payload) {
                    Ok(()) if self.node.pending() >= MAX_DATA_METRICS => self.flush(session)?,
                    Ok(()) => {
                        self.flush_at
                            .get_or_insert_with(|| Instant::now() + DATA_WINDOW);
                    }
                    Err(why) => self.rebirth_soon(&why.to_string()),
                }
            }
            EdgeWake::Change(TagChange::Lagged) => {
                self.rebirth_soon("tag values were missed (the node fell behind)")
            }
            EdgeWake::Ended => self.changes = None,
            EdgeWake::Flush => self.flush(session)?,
            EdgeWake::Rebirth => self.birth(session)?,
            EdgeWake::Check => {
                self.check_at = Instant::now() + CHECK_EVERY;
                let generation = self.local.tags_generation();
                if self.born && generation != self.generation {
                    self.generation = generation;
                    let config = &self.edge.config;
                    if !self
                        .node
                        .matches(&self.local.tags(&config.domain, &config.branch))
                    {
                        self.rebirth_soon("tags were declared, changed or deleted");
                    }
                }
            }
        }
        Ok(())
    }

    /// Publishes an NBIRTH of the tags' latest values (after sending what waited for an
    /// NDATA of the previous birth).
    pub fn birth(&mut self, session: &mut Session) -> Result<(), Failure> {
        self.flush(session)?;
        let config = &self.edge.config;
        // Watching starts before the tags are read, so no value falls between (a value set
        // in between is in both, and its NDATA repeats what the NBIRTH says).
        self.generation = self.local.tags_generation();
        self.changes = Some(self.local.changes(&config.domain, &config.branch));
        let tags = self.local.tags(&config.domain, &config.branch);
        let (payload, problems) = self.node.birth(&tags, crate::time::now_ms());
        session.publish_own(&config.topic(Verb::NBirth), payload.into(), 0, None)?;
        self.born = true;
        self.last_birth = Some(Instant::now());
        self.rebirth_at = None;
        self.flush_at = None;
        let metrics = self.node.metric_count();
        self.edge.update(|s| {
            s.online = true;
            s.births += 1;
            s.metrics = metrics;
        });
        for problem in problems {
            self.edge.problem(problem);
        }
        Ok(())
    }

    /// An NBIRTH as soon as the rebirth interval allows.
    fn rebirth_soon(&mut self, why: &str) {
        if self.rebirth_at.is_none() {
            tracing::debug!(
                group = self.edge.config.group,
                node = self.edge.config.node,
                why,
                "Sparkplug rebirth"
            );
            let earliest = self
                .last_birth
                .map_or_else(Instant::now, |at| at + REBIRTH_INTERVAL);
            self.rebirth_at = Some(earliest.max(Instant::now()));
        }
    }

    /// Publishes what waits as one NDATA.
    fn flush(&mut self, session: &mut Session) -> Result<(), Failure> {
        self.flush_at = None;
        if let Some(payload) = self.node.data(crate::time::now_ms()) {
            let topic = self.edge.config.topic(Verb::NData);
            session.publish_own(&topic, payload.into(), 0, None)?;
            self.edge.update(|s| s.data_messages += 1);
        }
        Ok(())
    }

    /// An NCMD from the upstream: a rebirth is published at once, writes are carried out in
    /// the background, in order (a device may take a while to answer).
    pub fn command(&mut self, payload: &[u8], session: &mut Session) -> Result<(), Failure> {
        self.edge.update(|s| s.commands += 1);
        let command = match self.node.command(payload) {
            Ok(command) => command,
            Err(e) => {
                self.edge.problem(e);
                return Ok(());
            }
        };
        for problem in command.problems {
            self.edge.problem(problem);
        }
        if !command.writes.is_empty() && self.writes.send(command.writes).is_err() {
            self.edge
                .problem("an NCMD's writes were dropped: the writer stopped".into());
        }
        if command.rebirth && self.born {
            self.birth(session)?;
        }
        Ok(())
    }

    /// Before a graceful disconnect: the NDEATH (QoS 1) of a node that was born, and its
    /// acknowledgement awaited for a while (a DISCONNECT discards the will, so this is the
    /// only death the host sees).
    pub async fn goodbye(&mut self, session: &mut Session, packet_id: u16) {
        if !self.born {
            return;
        }
        let topic = self.edge.config.topic(Verb::NDeath);
        let payload = death(self.bd_seq, crate::time::now_ms());
        let sent = async {
            self.flush(session)?;
            session.publish_own(&topic, payload.into(), 1, Some(packet_id))?;
            session.flush().await?;
            loop {
                session.read().await?;
                for packet in session.packets()? {
                    if let In::Delivered { packet_id: id, .. } = packet {
                        if id == packet_id {
                            return Ok(());
                        }
                    }
                }
            }
        };
        let result: Result<Result<(), Failure>, _> = tokio::time::timeout(DEATH_LIMIT, sent).await;
        match result {
            Ok(Ok(())) => {}
            Ok(Err(e)) => self.edge.problem(format!("the NDEATH was not sent: {e}")),
            Err(_) => self.edge.problem(format!(
                "the upstream did not acknowledge the NDEATH within {} s",
                DEATH_LIMIT.as_secs()
            )),
        }
        self.born = false;
        self.edge.update(|s| s.online = false);
    }
}

async fn next_change(changes: &mut Option<BoxStream<'static, TagChange>>) -> Option<TagChange> {
    match changes {
        Some(changes) => changes.next().await,
        None => std::future::pending().await,
    }
}

/// Carries out NCMD writes one after the other, until the connection's link is gone.
async fn write_commands(
    edge: Arc<Edge>,
    local: Arc<dyn Local>,
    origin: Arc<str>,
    mut queue: mpsc::UnboundedReceiver<Writes>,
) {
    while let Some(writes) = queue.recv().await {
        for (tag, value) in writes {
            let domain = &edge.config.domain;
            match local.write_tag(origin.clone(), domain, &tag, value).await {
                Ok(()) => edge.update(|s| s.writes += 1),
                Err(e) => edge.problem(format!("an NCMD write to `{tag}` failed: {e}")),
            }
        }
    }
}

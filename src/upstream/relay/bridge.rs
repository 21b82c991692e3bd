//! One connected session of a relay: subscribe to the incoming bindings (the status says
//! `connected` only once their SUBACK granted every filter), send the out-queue in
//! order within the upstream's window (every write carrying all that is ready), delete each
//! message once acknowledged (PUBACK, or PUBREC/PUBREL/PUBCOMP for QoS 2), publish what comes
//! in locally and acknowledge it only once published, keep the connection alive with pings,
//! and give up on an upstream that stops answering or stops acknowledging. An upstream that is
//! a Sparkplug edge node also subscribes to its NCMD topic, publishes its NBIRTH once
//! subscribed, and its NDATA as its tags change ([`EdgeLink`]). Asked to stop, the connection
//! says goodbye: the edge node's NDEATH, then DISCONNECT.

use super::{lock, now_ms, Inbound, Local, Relay, MAX_HOPS};
use crate::upstream::connect::{Failure, Target};
use crate::upstream::session::{refusal_text, In, Incoming, Open, Session};
use crate::upstream::sparkplug::{EdgeLink, EdgeWake};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Messages encoded per pass before the buffer is written.
const SEND_BATCH: usize = 256;
/// The packet id of the bridge's SUBSCRIBE; messages use the others.
const SUBSCRIBE_ID: u16 = 1;

/// What woke the connection up.
enum Wake {
    Read(Result<(), Failure>),
    Ready,
    /// An incoming message is published locally: acknowledge it (packet id, QoS).
    Published(Option<(u16, u8)>),
    Ping,
    /// The SUBACK did not come in time.
    NotSubscribed,
    Edge(EdgeWake),
    Stop,
}

/// The connection ended because it was asked to (the upstream was disabled, changed or
/// deleted, or svc stops).
pub struct Stopped;

/// Packet ids for outgoing QoS 1/2 messages: the next free one after the last.
struct PacketIds {
    last: u16,
}

impl PacketIds {
    fn next(&mut self, in_use: &HashMap<u16, (i64, u8)>) -> u16 {
        loop {
            self.last = match self.last {
                u16::MAX => SUBSCRIBE_ID + 1,
                n => n + 1,
            };
            if !in_use.contains_key(&self.last) {
                return self.last;
            }
        }
    }
}

/// The receive task, stopped with the connection.
struct Receiver(JoinHandle<()>);

impl Drop for Receiver {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Relay {
    /// One connection: connect, subscribe, `connected` once the SUBACK granted every
    /// incoming binding's filter (at the CONNACK when nothing comes in), carry messages both
    /// ways until the connection fails or `stop` is cancelled; returns why it failed (a
    /// refused filter is a failure), `None` when it was stopped. What was sent and not
    /// acknowledged is sent again on the next connection.
    pub async fn serve(
        self: &Arc<Self>,
        target: &Target,
        how: &Open,
        local: Arc<dyn Local>,
        stop: &CancellationToken,
        connected: &mut (dyn FnMut(bool) + Send),
    ) -> Option<Failure> {
        let ended = self.bridge(target, how, local, stop, connected).await;
        lock(&self.outbox.queue).requeue();
        ended.err()
    }

    async fn bridge(
        self: &Arc<Self>,
        target: &Target,
        how: &Open,
        local: Arc<dyn Local>,
        stop: &CancellationToken,
        connected: &mut (dyn FnMut(bool) + Send),
    ) -> Result<Stopped, Failure> {
        let mut edge = self
            .edge
            .as_ref()
            .map(|edge| EdgeLink::new(edge.clone(), local.clone(), self.origin.clone()));
        let how = match &edge {
            Some(edge) => edge.open(how),
            None => how.clone(),
        };
        let mut session = tokio::select! {
            session = Session::connect(target, &how) => session?,
            () = stop.cancelled() => return Ok(Stopped),
        };
        if let Some(edge) = &edge {
            edge.connected();
        }
        let session_present = session.session_present;
        let mut filters: Vec<(String, u8)> = self
            .bindings
            .iter()
            .filter(|b| b.incoming)
            .map(|b| (b.remote_filter(), b.qos))
            .collect();
        // The edge node is born only once its commands can reach it (Sparkplug: NBIRTH after
        // the NCMD subscription).
        filters.extend(edge.as_ref().map(EdgeLink::command_filter));
        // `connected` promises that what the upstream publishes under an incoming binding
        // now reaches this side: until the SUBACK the upstream drops it (a first connection
        // has no session that would keep it), so the SUBACK is awaited, at most as long as the
        // CONNACK was.
        let mut subscribe_by = if filters.is_empty() {
            connected(session_present);
            None
        } else {
            session.subscribe(SUBSCRIBE_ID, &filters)?;
            Some(Instant::now() + how.limit)
        };
        let (inbound, inbound_rx) = mpsc::channel::<Incoming>(1024);
        let (published, mut published_rx) = mpsc::unbounded_channel::<(u16, u8)>();
        let _receiver = Receiver(tokio::spawn(receive(
            self.clone(),
            local,
            inbound_rx,
            published,
        )));
        // Packet id → (sequence number, QoS) of the messages on the wire.
        let mut in_flight: HashMap<u16, (i64, u8)> = HashMap::new();
        // Incoming QoS 2 messages published and PUBREC'd, waiting for their PUBREL.
        let mut unreleased: HashSet<u16> = HashSet::new();
        let mut ids = PacketIds { last: SUBSCRIBE_ID };
        let keep_alive = session.keep_alive;
        let silence_limit = keep_alive * 3 / 2;
        let stall_limit = (keep_alive * 2).max(Duration::from_secs(10));
        let (mut last_heard, mut last_sent) = (Instant::now(), Instant::now());
        let mut last_progress = Instant::now();
        loop {
            let room = session.window.saturating_sub(in_flight.len());
            let batch = lock(&self.outbox.queue).take(room.min(SEND_BATCH), now_ms());
            let full_batch = batch.len() == SEND_BATCH;
            for item in batch {
                if let Some(echoes) = &self.echoes {
                    lock(echoes).sent(&item.topic, &item.payload, Instant::now());
                }
                if item.qos == 0 {
                    session.publish(&item, None)?;
                    self.delivered(item.seq, false);
                } else {
                    let packet_id = ids.next(&in_flight);
                    session.publish(&item, Some(packet_id))?;
                    if in_flight.is_empty() {
                        last_progress = Instant::now();
                    }
                    in_flight.insert(packet_id, (item.seq, item.qos));
                }
            }
            if session.has_output() {
                session.flush().await?;
                last_sent = Instant::now();
            }
            if full_batch && session.window > in_flight.len() {
                continue;
            }
            let ping_at = last_sent.min(last_heard) + keep_alive;
            let has_room = session.window > in_flight.len();
            let wake = tokio::select! {
                read = session.read() => Wake::Read(read),
                () = self.outbox.ready.notified(), if has_room => Wake::Ready,
                ack = published_rx.recv() => Wake::Published(ack),
                () = tokio::time::sleep_until(ping_at.into()) => Wake::Ping,
                () = tokio::time::sleep_until(subscribe_by.unwrap_or(ping_at).into()),
                    if subscribe_by.is_some() => Wake::NotSubscribed,
                wake = edge_wake(&mut edge) => Wake::Edge(wake),
                () = stop.cancelled() => Wake::Stop,
            };
            match wake {
                Wake::Read(read) => {
                    read?;
                    last_heard = Instant::now();
                    for packet in session.packets()? {
                        match packet {
                            In::Publish(incoming)
                                if edge.as_ref().is_some_and(|e| e.is_command(&incoming.topic)) =>
                            {
                                if let Some(edge) = &mut edge {
                                    edge.command(&incoming.payload, &mut session)?;
                                }
                                // NCMDs come at QoS 0; acknowledged should one come at more.
                                if let Some(id) = incoming.packet_id {
                                    session.acknowledge(id, incoming.qos)?;
                                    if incoming.qos == 2 {
                                        unreleased.insert(id);
                                    }
                                }
                            }
                            In::Publish(incoming) => {
                                let repeat = incoming.qos == 2
                                    && incoming
                                        .packet_id
                                        .is_some_and(|id| unreleased.contains(&id));
                                match incoming.packet_id {
                                    // A QoS 2 message sent again before its PUBREL: published
                                    // already, so only acknowledged again.
                                    Some(id) if repeat => session.acknowledge(id, 2)?,
                                    _ => inbound.send(incoming).await.map_err(|_| {
                                        Failure::Protocol("the local broker stopped".into())
                                    })?,
                                }
                            }
                            In::Delivered { packet_id, refused } => {
                                if let Some((seq, _)) = in_flight.remove(&packet_id) {
                                    self.delivered(seq, refused);
                                    last_progress = Instant::now();
                                }
                            }
                            In::Received { packet_id, refused } => {
                                if refused {
                                    if let Some((seq, _)) = in_flight.remove(&packet_id) {
                                        self.delivered(seq, true);
                                    }
                                } else {
                                    session.release(packet_id, false)?;
                                }
                                last_progress = Instant::now();
                            }
                            In::Released { packet_id } => {
                                unreleased.remove(&packet_id);
                                session.release(packet_id, true)?;
                            }
                            In::Subscribed { refused } => {
                                if !refused.is_empty() {
                                    return Err(Failure::Subscribe(refusals(&filters, &refused)));
                                }
                                if subscribe_by.take().is_some() {
                                    connected(session_present);
                                    if let Some(edge) = &mut edge {
                                        edge.birth(&mut session)?;
                                    }
                                }
                            }
                            In::Disconnect(why) => return Err(Failure::Protocol(why)),
                            In::Other => {}
                        }
                    }
                }
                Wake::Ready => {}
                Wake::Published(None) => {
                    return Err(Failure::Protocol("the local broker stopped".into()));
                }
                Wake::Published(Some(first)) => {
                    let more: Vec<(u16, u8)> =
                        std::iter::from_fn(|| published_rx.try_recv().ok()).collect();
                    for (packet_id, qos) in std::iter::once(first).chain(more) {
                        session.acknowledge(packet_id, qos)?;
                        if qos == 2 {
                            unreleased.insert(packet_id);
                        }
                    }
                }
                Wake::Ping => session.ping()?,
                Wake::NotSubscribed => return Err(Failure::Timeout(how.limit)),
                Wake::Edge(wake) => {
                    if let Some(edge) = &mut edge {
                        edge.handle(wake, &mut session)?;
                    }
                }
                Wake::Stop => {
                    if let Some(edge) = &mut edge {
                        edge.goodbye(&mut session, ids.next(&in_flight)).await;
                    }
                    session.disconnect().await;
                    return Ok(Stopped);
                }
            }
            if last_heard.elapsed() > silence_limit {
                return Err(Failure::Timeout(silence_limit));
            }
            // Pings alone do not show that the upstream still takes messages.
            if !in_flight.is_empty() && last_progress.elapsed() > stall_limit {
                return Err(Failure::Timeout(stall_limit));
            }
        }
    }

    /// A sent message is acknowledged (or refused): it leaves the queue.
    fn delivered(&self, seq: i64, refused: bool) {
        let mut queue = lock(&self.outbox.queue);
        if let Some(item) = queue.acked(seq, refused) {
            if !refused {
                self.count_out(&item);
            }
        }
    }
}

/// What the edge node wakes the connection for; never, without one.
async fn edge_wake(edge: &mut Option<EdgeLink>) -> EdgeWake {
    match edge {
        Some(edge) => edge.next().await,
        None => std::future::pending().await,
    }
}

/// The refused filters with their reasons: "`a/#` (reason 0x87 not authorized), …".
fn refusals(filters: &[(String, u8)], refused: &[(usize, u8)]) -> String {
    refused
        .iter()
        .map(|&(i, code)| {
            let filter = filters.get(i).map_or("?", |f| f.0.as_str());
            format!("`{filter}` (reason 0x{code:02X} {})", refusal_text(code))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Publishes the upstream's messages locally, in order; each QoS 1/2 message is handed back
/// for its acknowledgement once published (or dropped as a loop or echo).
async fn receive(
    relay: Arc<Relay>,
    local: Arc<dyn Local>,
    mut incoming: mpsc::Receiver<Incoming>,
    published: mpsc::UnboundedSender<(u16, u8)>,
) {
    let c = &relay.counters;
    while let Some(message) = incoming.recv().await {
        let mapped = relay.local_of(&message.topic);
        let echo = relay.echoes.as_ref().is_some_and(|echoes| {
            lock(echoes).is_echo(&message.topic, &message.payload, Instant::now())
        });
        if message.hops >= MAX_HOPS || echo {
            c.loops.fetch_add(1, Ordering::Relaxed);
        } else if let Some((binding, topic)) = mapped {
            c.in_messages.fetch_add(1, Ordering::Relaxed);
            c.in_bytes
                .fetch_add(message.payload.len() as u64, Ordering::Relaxed);
            if let Some(b) = c.bindings.get(binding) {
                b.in_messages.fetch_add(1, Ordering::Relaxed);
            }
            let inbound = Inbound {
                topic,
                payload: message.payload.clone(),
                qos: message.qos,
                retain: relay.bindings[binding].keep_retain && message.retain,
                hops: message.hops,
            };
            if let Err(e) = local.publish(relay.origin.clone(), inbound).await {
                // Not acknowledged: the upstream sends it again on the next connection.
                tracing::warn!(error = %e, "cannot publish a message from an upstream");
                return;
            }
        }
        if let Some(packet_id) = message.packet_id {
            if published.send((packet_id, message.qos)).is_err() {
                return;
            }
        }
    }
}

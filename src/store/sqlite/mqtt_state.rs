//! The MQTT broker's durable state: retained messages and persistent sessions (subscriptions,
//! queued and in-flight messages, QoS 2 packet ids awaiting PUBREL), so both survive a restart
//! and a crash once the write that carried them has committed.
//!
//! The broker owns the MQTT meaning of these rows; the store keeps message properties and
//! subscription options as opaque bytes the broker encodes. Writes arrive as batches of
//! [`MqttWrite`] applied in one transaction; [`SqliteStore::mqtt_load`] hands everything back at start.
//!
//! Like the rest of the store, a session's rows are deleted explicitly with it (no foreign keys),
//! and the load also drops rows whose session is gone, so a write that raced a session's deletion
//! (an enqueue after `DeleteSession`) leaves nothing behind for long instead of failing its whole
//! batch. Durability: WAL with `synchronous=NORMAL` keeps every committed batch through a killed
//! process; a power loss may lose the last batches before a checkpoint.
//!
//! In PostgreSQL the same tables, with `bytea` for the blobs and `bigint` for the times.

use super::{SqliteStore, StoreError, StoreResult};
use crate::store::interface::BrokerState;
use crate::store::types::*;
use rusqlite::{params, CachedStatement, Connection, Transaction, TransactionBehavior};
use std::collections::HashMap;

/// The statements a batch may need, by index into [`WRITE_SQL`].
const PUT_RETAINED: usize = 0;
const DELETE_RETAINED: usize = 1;
const PUT_SESSION: usize = 2;
const DELETE_SESSION: usize = 3;
const DELETE_SESSION_SUBSCRIPTIONS: usize = 4;
const DELETE_SESSION_QUEUE: usize = 5;
const DELETE_SESSION_INBOUND: usize = 6;
const PUT_SUBSCRIPTION: usize = 7;
const DELETE_SUBSCRIPTION: usize = 8;
const ENQUEUE: usize = 9;
const SET_DELIVERY: usize = 10;
const DEQUEUE: usize = 11;
const PUT_INBOUND: usize = 12;
const DELETE_INBOUND: usize = 13;

const WRITE_SQL: [&str; 14] = [
    "INSERT INTO mqtt_retained \
     (topic, payload, qos, retain, properties, received_ms, expires_at_ms) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (topic) DO UPDATE SET \
     payload = excluded.payload, qos = excluded.qos, retain = excluded.retain, \
     properties = excluded.properties, received_ms = excluded.received_ms, \
     expires_at_ms = excluded.expires_at_ms",
    "DELETE FROM mqtt_retained WHERE topic = ?1",
    "INSERT INTO mqtt_sessions (client_id, owner, expiry_secs, disconnected_at_ms) \
     VALUES (?1, ?2, ?3, ?4) ON CONFLICT (client_id) DO UPDATE SET owner = excluded.owner, \
     expiry_secs = excluded.expiry_secs, disconnected_at_ms = excluded.disconnected_at_ms",
    "DELETE FROM mqtt_sessions WHERE client_id = ?1",
    "DELETE FROM mqtt_subscriptions WHERE client_id = ?1",
    "DELETE FROM mqtt_queue WHERE client_id = ?1",
    "DELETE FROM mqtt_inbound_qos2 WHERE client_id = ?1",
    "INSERT INTO mqtt_subscriptions (client_id, filter, options) VALUES (?1, ?2, ?3) \
     ON CONFLICT (client_id, filter) DO UPDATE SET options = excluded.options",
    "DELETE FROM mqtt_subscriptions WHERE client_id = ?1 AND filter = ?2",
    "INSERT INTO mqtt_queue (client_id, seq, packet_id, state, topic, payload, qos, retain, \
     properties, received_ms, expires_at_ms) VALUES (?1, ?2, NULL, 0, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    "UPDATE mqtt_queue SET packet_id = ?3, state = ?4 WHERE client_id = ?1 AND seq = ?2",
    "DELETE FROM mqtt_queue WHERE client_id = ?1 AND seq = ?2",
    "INSERT INTO mqtt_inbound_qos2 (client_id, packet_id) VALUES (?1, ?2) \
     ON CONFLICT (client_id, packet_id) DO NOTHING",
    "DELETE FROM mqtt_inbound_qos2 WHERE client_id = ?1 AND packet_id = ?2",
];

/// The statements of one batch, each prepared (from the connection's cache) the first time the
/// batch needs it, so a batch of thousands of writes looks each one up once.
struct Statements<'t> {
    conn: &'t Connection,
    prepared: [Option<CachedStatement<'t>>; WRITE_SQL.len()],
}

impl<'t> Statements<'t> {
    fn new(conn: &'t Connection) -> Statements<'t> {
        Statements {
            conn,
            prepared: Default::default(),
        }
    }

    fn run(&mut self, which: usize, params: impl rusqlite::Params) -> StoreResult<usize> {
        let stmt = match &mut self.prepared[which] {
            Some(stmt) => stmt,
            slot => slot.insert(self.conn.prepare_cached(WRITE_SQL[which])?),
        };
        Ok(stmt.execute(params)?)
    }
}

fn apply(s: &mut Statements<'_>, write: &MqttWrite) -> StoreResult<()> {
    match write {
        MqttWrite::PutRetained(m) => {
            check_qos(m.qos)?;
            s.run(
                PUT_RETAINED,
                params![
                    m.topic,
                    m.payload,
                    m.qos,
                    m.retain,
                    m.properties,
                    m.received_ms,
                    m.expires_at_ms
                ],
            )?;
        }
        MqttWrite::DeleteRetained { topic } => {
            s.run(DELETE_RETAINED, [topic])?;
        }
        MqttWrite::PutSession {
            client_id,
            owner,
            expiry_secs,
            disconnected_at_ms,
        } => {
            s.run(
                PUT_SESSION,
                params![client_id, owner, expiry_secs, disconnected_at_ms],
            )?;
        }
        MqttWrite::DeleteSession { client_id } => {
            for which in [
                DELETE_SESSION_SUBSCRIPTIONS,
                DELETE_SESSION_QUEUE,
                DELETE_SESSION_INBOUND,
                DELETE_SESSION,
            ] {
                s.run(which, [client_id])?;
            }
        }
        MqttWrite::PutSubscription {
            client_id,
            subscription,
        } => {
            s.run(
                PUT_SUBSCRIPTION,
                params![client_id, subscription.filter, subscription.options],
            )?;
        }
        MqttWrite::DeleteSubscription { client_id, filter } => {
            s.run(DELETE_SUBSCRIPTION, params![client_id, filter])?;
        }
        MqttWrite::Enqueue {
            client_id,
            seq,
            message: m,
        } => {
            check_qos(m.qos)?;
            s.run(
                ENQUEUE,
                params![
                    client_id,
                    seq,
                    m.topic,
                    m.payload,
                    m.qos,
                    m.retain,
                    m.properties,
                    m.received_ms,
                    m.expires_at_ms
                ],
            )?;
        }
        MqttWrite::SetDelivery {
            client_id,
            seq,
            packet_id,
            state,
        } => {
            if *state > 2 {
                return Err(StoreError::Invalid(format!(
                    "delivery state {state} is none of 0 (queued), 1 (sent), 2 (PUBREC received)"
                )));
            }
            s.run(SET_DELIVERY, params![client_id, seq, packet_id, state])?;
        }
        MqttWrite::Dequeue { client_id, seq } => {
            s.run(DEQUEUE, params![client_id, seq])?;
        }
        MqttWrite::PutInboundQos2 {
            client_id,
            packet_id,
        } => {
            s.run(PUT_INBOUND, params![client_id, packet_id])?;
        }
        MqttWrite::DeleteInboundQos2 {
            client_id,
            packet_id,
        } => {
            s.run(DELETE_INBOUND, params![client_id, packet_id])?;
        }
    }
    Ok(())
}

/// Deletes the disconnected sessions whose expiry has passed at `now_ms`, with their rows, by
/// key (no scan of the queue); returns how many. An expiry of `u32::MAX` seconds (MQTT's
/// "never") lands 136 years out, so plain arithmetic serves it.
fn delete_expired_sessions(tx: &Transaction<'_>, now_ms: i64) -> StoreResult<usize> {
    let expired: Vec<String> = tx
        .prepare_cached(
            "SELECT client_id FROM mqtt_sessions WHERE disconnected_at_ms IS NOT NULL \
             AND disconnected_at_ms + expiry_secs * 1000 <= ?1",
        )?
        .query_map([now_ms], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let mut statements = Statements::new(tx);
    for client_id in &expired {
        apply(
            &mut statements,
            &MqttWrite::DeleteSession {
                client_id: client_id.clone(),
            },
        )?;
    }
    Ok(expired.len())
}

fn load_retained(tx: &Transaction<'_>) -> StoreResult<Vec<StoredMessage>> {
    let mut stmt = tx.prepare(
        "SELECT topic, payload, qos, retain, properties, received_ms, expires_at_ms \
         FROM mqtt_retained ORDER BY topic",
    )?;
    let rows = stmt.query_map([], |r| {
        Ok(StoredMessage {
            topic: r.get(0)?,
            payload: r.get(1)?,
            qos: r.get(2)?,
            retain: r.get(3)?,
            properties: r.get(4)?,
            received_ms: r.get(5)?,
            expires_at_ms: r.get(6)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}

/// The sessions with their rows; every row has its session (orphans were deleted before).
fn load_sessions(tx: &Transaction<'_>) -> StoreResult<Vec<StoredSession>> {
    let mut sessions: Vec<StoredSession> = tx
        .prepare(
            "SELECT client_id, owner, expiry_secs, disconnected_at_ms FROM mqtt_sessions \
             ORDER BY client_id",
        )?
        .query_map([], |r| {
            Ok(StoredSession {
                client_id: r.get(0)?,
                owner: r.get(1)?,
                expiry_secs: r.get(2)?,
                disconnected_at_ms: r.get(3)?,
                subscriptions: Vec::new(),
                queue: Vec::new(),
                inbound_qos2: Vec::new(),
            })
        })?
        .collect::<Result<_, _>>()?;
    let index: HashMap<String, usize> = sessions
        .iter()
        .enumerate()
        .map(|(i, s)| (s.client_id.clone(), i))
        .collect();

    let mut stmt = tx.prepare(
        "SELECT client_id, filter, options FROM mqtt_subscriptions ORDER BY client_id, filter",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let client_id: String = r.get(0)?;
        session_of(&mut sessions, &index, &client_id)?
            .subscriptions
            .push(StoredSubscription {
                filter: r.get(1)?,
                options: r.get(2)?,
            });
    }

    let mut stmt = tx.prepare(
        "SELECT client_id, seq, packet_id, state, topic, payload, qos, retain, properties, \
         received_ms, expires_at_ms FROM mqtt_queue ORDER BY client_id, seq",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let client_id: String = r.get(0)?;
        session_of(&mut sessions, &index, &client_id)?
            .queue
            .push(QueuedMessage {
                seq: r.get(1)?,
                packet_id: r.get(2)?,
                state: r.get(3)?,
                message: StoredMessage {
                    topic: r.get(4)?,
                    payload: r.get(5)?,
                    qos: r.get(6)?,
                    retain: r.get(7)?,
                    properties: r.get(8)?,
                    received_ms: r.get(9)?,
                    expires_at_ms: r.get(10)?,
                },
            });
    }

    let mut stmt = tx.prepare(
        "SELECT client_id, packet_id FROM mqtt_inbound_qos2 ORDER BY client_id, packet_id",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        let client_id: String = r.get(0)?;
        session_of(&mut sessions, &index, &client_id)?
            .inbound_qos2
            .push(r.get(1)?);
    }
    Ok(sessions)
}

impl BrokerState for SqliteStore {
    /// Applies the writes in order in one transaction: all of them or, on the first failure,
    /// none (the error names the write that failed).
    fn mqtt_write(&self, writes: &[MqttWrite]) -> StoreResult<()> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        {
            let mut statements = Statements::new(&tx);
            for (index, write) in writes.iter().enumerate() {
                apply(&mut statements, write).map_err(|e| {
                    e.in_context(&format!("MQTT write #{index} ({})", write.label()))
                })?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Everything the broker needs at start: the retained messages that have not expired at
    /// `now_ms` (by topic) and the sessions that have not expired (by client id), each with its
    /// subscriptions, queue (by seq) and inbound ids. A session still marked connected was cut
    /// off by the stop: it counts as disconnected at `now_ms`, and that is stored, so further
    /// restarts do not keep it alive forever. Expired sessions with their rows, expired retained
    /// messages and expired queued messages are deleted in the same transaction; a message
    /// whose delivery has started (state 1 or 2) is kept to be finished, as MQTT 5 requires.
    fn mqtt_load(&self, now_ms: i64) -> StoreResult<(Vec<StoredMessage>, Vec<StoredSession>)> {
        let mut conn = self.conn()?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "UPDATE mqtt_sessions SET disconnected_at_ms = ?1 WHERE disconnected_at_ms IS NULL",
            [now_ms],
        )?;
        delete_expired_sessions(&tx, now_ms)?;
        tx.execute_batch(
            "DELETE FROM mqtt_subscriptions WHERE client_id NOT IN (SELECT client_id FROM mqtt_sessions); \
             DELETE FROM mqtt_queue WHERE client_id NOT IN (SELECT client_id FROM mqtt_sessions); \
             DELETE FROM mqtt_inbound_qos2 WHERE client_id NOT IN (SELECT client_id FROM mqtt_sessions);",
        )?;
        tx.execute(
            "DELETE FROM mqtt_retained WHERE expires_at_ms <= ?1",
            [now_ms],
        )?;
        tx.execute(
            "DELETE FROM mqtt_queue WHERE state = 0 AND expires_at_ms <= ?1",
            [now_ms],
        )?;
        let retained = load_retained(&tx)?;
        let sessions = load_sessions(&tx)?;
        tx.commit()?;
        Ok((retained, sessions))
    }
}

#[cfg(test)]
mod tests;

//! The broker's durable state on PostgreSQL: the same writes and start-up load as the SQLite
//! engine's (`sqlite/mqtt_state.rs`), every row keyed by the instance whose broker owns it.

use super::PgStore;
use crate::store::interface::BrokerState;
use crate::store::types::*;
use crate::store::{StoreError, StoreResult};
use deadpool_postgres::Transaction;
use std::collections::HashMap;

/// MQTT's u8/u16/u32 fields as PostgreSQL's signed integers.
fn small(n: u8) -> i16 {
    i16::from(n)
}

fn unsmall(n: i16) -> u8 {
    u8::try_from(n).unwrap_or(u8::MAX)
}

async fn apply(tx: &Transaction<'_>, me: &String, write: &MqttWrite) -> StoreResult<()> {
    match write {
        MqttWrite::PutRetained(m) => {
            check_qos(m.qos)?;
            tx.execute(
                "INSERT INTO mqtt_retained (instance, topic, payload, qos, retain, properties, \
                 received_ms, expires_at_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
                 ON CONFLICT (instance, topic) DO UPDATE SET payload = excluded.payload, \
                 qos = excluded.qos, retain = excluded.retain, properties = excluded.properties, \
                 received_ms = excluded.received_ms, expires_at_ms = excluded.expires_at_ms",
                &[
                    me,
                    &m.topic,
                    &m.payload,
                    &small(m.qos),
                    &m.retain,
                    &m.properties,
                    &m.received_ms,
                    &m.expires_at_ms,
                ],
            )
            .await?;
        }
        MqttWrite::DeleteRetained { topic } => {
            tx.execute(
                "DELETE FROM mqtt_retained WHERE instance = $1 AND topic = $2",
                &[me, topic],
            )
            .await?;
        }
        MqttWrite::PutSession {
            client_id,
            owner,
            expiry_secs,
            disconnected_at_ms,
        } => {
            tx.execute(
                "INSERT INTO mqtt_sessions (instance, client_id, owner, expiry_secs, \
                 disconnected_at_ms) VALUES ($1, $2, $3, $4, $5) \
                 ON CONFLICT (instance, client_id) DO UPDATE SET owner = excluded.owner, \
                 expiry_secs = excluded.expiry_secs, \
                 disconnected_at_ms = excluded.disconnected_at_ms",
                &[
                    me,
                    client_id,
                    owner,
                    &i64::from(*expiry_secs),
                    disconnected_at_ms,
                ],
            )
            .await?;
        }
        MqttWrite::DeleteSession { client_id } => {
            for table in [
                "mqtt_subscriptions",
                "mqtt_queue",
                "mqtt_inbound_qos2",
                "mqtt_sessions",
            ] {
                tx.execute(
                    &format!("DELETE FROM {table} WHERE instance = $1 AND client_id = $2"),
                    &[me, client_id],
                )
                .await?;
            }
        }
        MqttWrite::PutSubscription {
            client_id,
            subscription,
        } => {
            tx.execute(
                "INSERT INTO mqtt_subscriptions (instance, client_id, filter, options) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (instance, client_id, filter) \
                 DO UPDATE SET options = excluded.options",
                &[me, client_id, &subscription.filter, &subscription.options],
            )
            .await?;
        }
        MqttWrite::DeleteSubscription { client_id, filter } => {
            tx.execute(
                "DELETE FROM mqtt_subscriptions WHERE instance = $1 AND client_id = $2 \
                 AND filter = $3",
                &[me, client_id, filter],
            )
            .await?;
        }
        MqttWrite::Enqueue {
            client_id,
            seq,
            message: m,
        } => {
            check_qos(m.qos)?;
            tx.execute(
                "INSERT INTO mqtt_queue (instance, client_id, seq, packet_id, state, topic, \
                 payload, qos, retain, properties, received_ms, expires_at_ms) \
                 VALUES ($1, $2, $3, NULL, 0, $4, $5, $6, $7, $8, $9, $10)",
                &[
                    me,
                    client_id,
                    seq,
                    &m.topic,
                    &m.payload,
                    &small(m.qos),
                    &m.retain,
                    &m.properties,
                    &m.received_ms,
                    &m.expires_at_ms,
                ],
            )
            .await?;
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
            tx.execute(
                "UPDATE mqtt_queue SET packet_id = $4, state = $5 \
                 WHERE instance = $1 AND client_id = $2 AND seq = $3",
                &[
                    me,
                    client_id,
                    seq,
                    &packet_id.map(i32::from),
                    &small(*state),
                ],
            )
            .await?;
        }
        MqttWrite::Dequeue { client_id, seq } => {
            tx.execute(
                "DELETE FROM mqtt_queue WHERE instance = $1 AND client_id = $2 AND seq = $3",
                &[me, client_id, seq],
            )
            .await?;
        }
        MqttWrite::PutInboundQos2 {
            client_id,
            packet_id,
        } => {
            tx.execute(
                "INSERT INTO mqtt_inbound_qos2 (instance, client_id, packet_id) \
                 VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                &[me, client_id, &i32::from(*packet_id)],
            )
            .await?;
        }
        MqttWrite::DeleteInboundQos2 {
            client_id,
            packet_id,
        } => {
            tx.execute(
                "DELETE FROM mqtt_inbound_qos2 WHERE instance = $1 AND client_id = $2 \
                 AND packet_id = $3",
                &[me, client_id, &i32::from(*packet_id)],
            )
            .await?;
        }
    }
    Ok(())
}

/// This instance's sessions with their rows (orphans were deleted before).
async fn load_sessions(tx: &Transaction<'_>, me: &String) -> StoreResult<Vec<StoredSession>> {
    let mut sessions: Vec<StoredSession> = tx
        .query(
            "SELECT client_id, owner, expiry_secs, disconnected_at_ms FROM mqtt_sessions \
             WHERE instance = $1 ORDER BY client_id COLLATE \"C\"",
            &[me],
        )
        .await?
        .iter()
        .map(|r| StoredSession {
            client_id: r.get(0),
            owner: r.get(1),
            expiry_secs: u32::try_from(r.get::<_, i64>(2)).unwrap_or(u32::MAX),
            disconnected_at_ms: r.get(3),
            subscriptions: Vec::new(),
            queue: Vec::new(),
            inbound_qos2: Vec::new(),
        })
        .collect();
    let index: HashMap<String, usize> = sessions
        .iter()
        .enumerate()
        .map(|(i, s)| (s.client_id.clone(), i))
        .collect();
    for r in tx
        .query(
            "SELECT client_id, filter, options FROM mqtt_subscriptions WHERE instance = $1 \
             ORDER BY client_id COLLATE \"C\", filter COLLATE \"C\"",
            &[me],
        )
        .await?
    {
        session_of(&mut sessions, &index, r.get(0))?
            .subscriptions
            .push(StoredSubscription {
                filter: r.get(1),
                options: r.get(2),
            });
    }
    for r in tx
        .query(
            "SELECT client_id, seq, packet_id, state, topic, payload, qos, retain, properties, \
             received_ms, expires_at_ms FROM mqtt_queue WHERE instance = $1 \
             ORDER BY client_id COLLATE \"C\", seq",
            &[me],
        )
        .await?
    {
        session_of(&mut sessions, &index, r.get(0))?
            .queue
            .push(QueuedMessage {
                seq: r.get(1),
                packet_id: r
                    .get::<_, Option<i32>>(2)
                    .and_then(|id| u16::try_from(id).ok()),
                state: unsmall(r.get(3)),
                message: StoredMessage {
                    topic: r.get(4),
                    payload: r.get(5),
                    qos: unsmall(r.get(6)),
                    retain: r.get(7),
                    properties: r.get(8),
                    received_ms: r.get(9),
                    expires_at_ms: r.get(10),
                },
            });
    }
    for r in tx
        .query(
            "SELECT client_id, packet_id FROM mqtt_inbound_qos2 WHERE instance = $1 \
             ORDER BY client_id COLLATE \"C\", packet_id",
            &[me],
        )
        .await?
    {
        session_of(&mut sessions, &index, r.get(0))?
            .inbound_qos2
            .push(u16::try_from(r.get::<_, i32>(1)).unwrap_or(0));
    }
    Ok(sessions)
}

impl BrokerState for PgStore {
    /// Applies the writes in order in one transaction: all of them or, on the first failure,
    /// none (the error names the write that failed).
    fn mqtt_write(&self, writes: &[MqttWrite]) -> StoreResult<()> {
        self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            for (index, write) in writes.iter().enumerate() {
                apply(&tx, &self.instance, write).await.map_err(|e| {
                    e.in_context(&format!("MQTT write #{index} ({})", write.label()))
                })?;
            }
            tx.commit().await?;
            Ok(())
        })
    }

    /// Everything this instance's broker needs at start (see the SQLite engine's `mqtt_load`):
    /// sessions still marked connected count as disconnected now, and what has expired is
    /// deleted in the same transaction.
    fn mqtt_load(&self, now_ms: i64) -> StoreResult<(Vec<StoredMessage>, Vec<StoredSession>)> {
        let me = &self.instance;
        self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            tx.execute(
                "UPDATE mqtt_sessions SET disconnected_at_ms = $2 \
                 WHERE instance = $1 AND disconnected_at_ms IS NULL",
                &[me, &now_ms],
            )
            .await?;
            tx.execute(
                "DELETE FROM mqtt_sessions WHERE instance = $1 AND disconnected_at_ms IS NOT NULL \
                 AND disconnected_at_ms + expiry_secs * 1000 <= $2",
                &[me, &now_ms],
            )
            .await?;
            for table in ["mqtt_subscriptions", "mqtt_queue", "mqtt_inbound_qos2"] {
                tx.execute(
                    &format!(
                        "DELETE FROM {table} t WHERE instance = $1 AND NOT EXISTS \
                         (SELECT 1 FROM mqtt_sessions s WHERE s.instance = t.instance \
                          AND s.client_id = t.client_id)"
                    ),
                    &[me],
                )
                .await?;
            }
            tx.execute(
                "DELETE FROM mqtt_retained WHERE instance = $1 AND expires_at_ms <= $2",
                &[me, &now_ms],
            )
            .await?;
            tx.execute(
                "DELETE FROM mqtt_queue WHERE instance = $1 AND state = 0 AND expires_at_ms <= $2",
                &[me, &now_ms],
            )
            .await?;
            let retained = tx
                .query(
                    "SELECT topic, payload, qos, retain, properties, received_ms, expires_at_ms \
                     FROM mqtt_retained WHERE instance = $1 ORDER BY topic COLLATE \"C\"",
                    &[me],
                )
                .await?
                .iter()
                .map(|r| StoredMessage {
                    topic: r.get(0),
                    payload: r.get(1),
                    qos: unsmall(r.get(2)),
                    retain: r.get(3),
                    properties: r.get(4),
                    received_ms: r.get(5),
                    expires_at_ms: r.get(6),
                })
                .collect();
            let sessions = load_sessions(&tx, me).await?;
            tx.commit().await?;
            Ok((retained, sessions))
        })
    }
}

//! The outbox of the upstream bridges on PostgreSQL: each instance keeps the messages it
//! received for upstream brokers under its own id (sequence numbers are per instance).

use super::PgStore;
use crate::store::interface::UpstreamQueue;
use crate::store::types::seq_runs;
use crate::store::StoreResult;
use crate::store::UpstreamMessage;

impl UpstreamQueue for PgStore {
    /// Appends messages to upstream queues and deletes messages from them, in one transaction.
    fn upstream_queue_write(
        &self,
        appends: &[(&str, &UpstreamMessage)],
        deletes: &[(&str, &[i64])],
    ) -> StoreResult<()> {
        self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            let insert = tx
                .prepare_cached(
                    "INSERT INTO upstream_outbox (instance, upstream, seq, topic, payload, qos, \
                     retain, hops, enqueued_ms, binding) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) \
                     ON CONFLICT (instance, seq) DO UPDATE SET upstream = excluded.upstream, \
                     topic = excluded.topic, payload = excluded.payload, qos = excluded.qos, \
                     retain = excluded.retain, hops = excluded.hops, \
                     enqueued_ms = excluded.enqueued_ms, binding = excluded.binding",
                )
                .await?;
            for (upstream, item) in appends {
                tx.execute(
                    &insert,
                    &[
                        &self.instance,
                        upstream,
                        &item.seq,
                        &item.topic,
                        &item.payload.as_ref(),
                        &i16::from(item.qos),
                        &item.retain,
                        &i16::from(item.hops),
                        &item.enqueued_ms,
                        &i64::try_from(item.binding).unwrap_or(i64::MAX),
                    ],
                )
                .await?;
            }
            let delete = tx
                .prepare_cached(
                    "DELETE FROM upstream_outbox WHERE instance = $1 AND upstream = $2 \
                     AND seq BETWEEN $3 AND $4",
                )
                .await?;
            for (upstream, seqs) in deletes {
                for (first, last) in seq_runs(seqs) {
                    tx.execute(&delete, &[&self.instance, upstream, &first, &last])
                        .await?;
                }
            }
            tx.commit().await?;
            Ok(())
        })
    }

    /// An upstream's queue on this instance, oldest first.
    fn upstream_queue_load(&self, upstream: &str) -> StoreResult<Vec<UpstreamMessage>> {
        Ok(self
            .query(
                "SELECT seq, topic, payload, qos, retain, hops, enqueued_ms, binding \
                 FROM upstream_outbox WHERE instance = $1 AND upstream = $2 ORDER BY seq",
                &[&self.instance, &upstream],
            )?
            .iter()
            .map(|r| UpstreamMessage {
                seq: r.get(0),
                topic: r.get(1),
                payload: r.get::<_, Vec<u8>>(2).into(),
                qos: u8::try_from(r.get::<_, i16>(3)).unwrap_or(0),
                retain: r.get(4),
                hops: u8::try_from(r.get::<_, i16>(5)).unwrap_or(0),
                enqueued_ms: r.get(6),
                binding: usize::try_from(r.get::<_, i64>(7)).unwrap_or(0),
            })
            .collect())
    }

    /// The highest sequence number in any of this instance's queues (0 when all are empty).
    fn upstream_queue_last_seq(&self) -> StoreResult<i64> {
        Ok(self
            .query_one(
                "SELECT coalesce(max(seq), 0) FROM upstream_outbox WHERE instance = $1",
                &[&self.instance],
            )?
            .get(0))
    }

    /// Forgets an upstream's queue (the upstream was deleted) on every instance.
    fn upstream_queue_clear(&self, upstream: &str) -> StoreResult<()> {
        self.execute(
            "DELETE FROM upstream_outbox WHERE upstream = $1",
            &[&upstream],
        )?;
        Ok(())
    }
}

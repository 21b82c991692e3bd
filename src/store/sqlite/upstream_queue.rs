//! The durable copy of every upstream's out-queue: a message bound for an upstream is written
//! here before its publisher is acknowledged, and deleted once the upstream acknowledged it
//! (or it was dropped), so a restart or an outage sends what is left, in order.
//!
//! Durability as for the broker's own state: WAL with `synchronous=NORMAL` keeps every
//! committed write through a killed process.

use super::{SqliteStore, StoreResult};
use crate::store::interface::UpstreamQueue;
use crate::store::types::seq_runs;
use crate::store::UpstreamMessage;
use rusqlite::params;

impl UpstreamQueue for SqliteStore {
    /// Appends messages to upstream queues (queue id, message) and deletes messages from them
    /// (queue id, sequence numbers; runs of consecutive numbers as one range each), all in one
    /// transaction.
    fn upstream_queue_write(
        &self,
        appends: &[(&str, &UpstreamMessage)],
        deletes: &[(&str, &[i64])],
    ) -> StoreResult<()> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        {
            let mut insert = tx.prepare_cached(
                "INSERT OR REPLACE INTO upstream_outbox \
                 (upstream, seq, topic, payload, qos, retain, hops, enqueued_ms, binding) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            )?;
            for (upstream, item) in appends {
                insert.execute(params![
                    upstream,
                    item.seq,
                    item.topic,
                    item.payload.as_ref(),
                    item.qos,
                    item.retain,
                    item.hops,
                    item.enqueued_ms,
                    item.binding as i64,
                ])?;
            }
            let mut delete = tx.prepare_cached(
                "DELETE FROM upstream_outbox WHERE seq BETWEEN ?2 AND ?3 AND upstream = ?1",
            )?;
            for (upstream, seqs) in deletes {
                for (first, last) in seq_runs(seqs) {
                    delete.execute(params![upstream, first, last])?;
                }
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// An upstream's queue, oldest first.
    fn upstream_queue_load(&self, upstream: &str) -> StoreResult<Vec<UpstreamMessage>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare(
            "SELECT seq, topic, payload, qos, retain, hops, enqueued_ms, binding \
             FROM upstream_outbox WHERE upstream = ?1 ORDER BY seq",
        )?;
        let rows = stmt.query_map(params![upstream], |r| {
            Ok(UpstreamMessage {
                seq: r.get(0)?,
                topic: r.get(1)?,
                payload: r.get::<_, Vec<u8>>(2)?.into(),
                qos: r.get(3)?,
                retain: r.get(4)?,
                hops: r.get(5)?,
                enqueued_ms: r.get(6)?,
                binding: usize::try_from(r.get::<_, i64>(7)?).unwrap_or(0),
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// The highest sequence number in any queue (0 when all are empty).
    fn upstream_queue_last_seq(&self) -> StoreResult<i64> {
        Ok(self.conn()?.query_row(
            "SELECT coalesce(max(seq), 0) FROM upstream_outbox",
            [],
            |r| r.get(0),
        )?)
    }

    /// Forgets an upstream's queue (the upstream was deleted).
    fn upstream_queue_clear(&self, upstream: &str) -> StoreResult<()> {
        self.conn()?.execute(
            "DELETE FROM upstream_outbox WHERE upstream = ?1",
            params![upstream],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(seq: i64) -> UpstreamMessage {
        UpstreamMessage {
            seq,
            topic: format!("corp/t{seq}"),
            payload: bytes::Bytes::from(vec![0, 1, 2]),
            qos: 1,
            retain: seq % 2 == 0,
            hops: 1,
            enqueued_ms: 1_000 + seq,
            binding: 2,
        }
    }

    #[test]
    fn appended_messages_come_back_in_order_until_deleted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open(&dir.path().join("q.db")).expect("open");
        let items: Vec<UpstreamMessage> = (1..=6).map(item).collect();
        let rows: Vec<(&str, &UpstreamMessage)> =
            items.iter().map(|i| ("a.upstreams:x", i)).collect();
        store.upstream_queue_write(&rows, &[]).expect("append");
        store
            .upstream_queue_write(
                &[("b.upstreams:y", &item(9))],
                &[("a.upstreams:x", &[5, 1, 2, 4])],
            )
            .expect("append other, delete");
        let left = store.upstream_queue_load("a.upstreams:x").expect("load");
        assert_eq!(left, vec![item(3), item(6)]);
        assert_eq!(store.upstream_queue_last_seq().expect("last"), 9);
        store.upstream_queue_clear("a.upstreams:x").expect("clear");
        assert!(store
            .upstream_queue_load("a.upstreams:x")
            .expect("load")
            .is_empty());
        assert_eq!(
            store
                .upstream_queue_load("b.upstreams:y")
                .expect("load")
                .len(),
            1
        );
    }
}

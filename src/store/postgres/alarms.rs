//! Alarms on PostgreSQL, as on SQLite: the journal, the alarms' states and the notification
//! queue are shared by every instance on the database, since the leading instance evaluates
//! and notifies for all, and a new leader carries on from what the last one kept.

use super::PgStore;
use crate::store::interface::Alarms;
use crate::store::types::{AlarmJournalEntry, JournalQuery, QueuedNotification, StoredAlarmState};
use crate::store::StoreResult;
use tokio_postgres::Row;

const JOURNAL_COLUMNS: &str =
    "id, domain, alarm, state, previous, cause, priority, tag, value, message, at_ms, who, comment";

fn journal_entry(r: &Row) -> AlarmJournalEntry {
    AlarmJournalEntry {
        id: r.get(0),
        domain: r.get(1),
        alarm: r.get(2),
        state: r.get(3),
        previous: r.get(4),
        cause: r.get(5),
        priority: r.get(6),
        tag: r.get(7),
        value: r.get(8),
        message: r.get(9),
        at_ms: r.get(10),
        who: r.get(11),
        comment: r.get(12),
    }
}

impl Alarms for PgStore {
    fn alarms_commit(
        &self,
        entries: &[AlarmJournalEntry],
        states: &[StoredAlarmState],
    ) -> StoreResult<()> {
        self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            let insert = tx
                .prepare_cached(
                    "INSERT INTO alarm_journal (domain, alarm, state, previous, cause, priority, \
                     tag, value, message, at_ms, who, comment) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
                )
                .await?;
            for e in entries {
                tx.execute(
                    &insert,
                    &[
                        &e.domain,
                        &e.alarm,
                        &e.state,
                        &e.previous,
                        &e.cause,
                        &e.priority,
                        &e.tag,
                        &e.value,
                        &e.message,
                        &e.at_ms,
                        &e.who,
                        &e.comment,
                    ],
                )
                .await?;
            }
            let keep = tx
                .prepare_cached(
                    "INSERT INTO alarm_states (domain, alarm, state) VALUES ($1, $2, $3) \
                     ON CONFLICT (domain, alarm) DO UPDATE SET state = excluded.state",
                )
                .await?;
            let forget = tx
                .prepare_cached("DELETE FROM alarm_states WHERE domain = $1 AND alarm = $2")
                .await?;
            for s in states {
                match &s.state {
                    Some(state) => tx.execute(&keep, &[&s.domain, &s.alarm, state]).await?,
                    None => tx.execute(&forget, &[&s.domain, &s.alarm]).await?,
                };
            }
            tx.commit().await?;
            Ok(())
        })
    }

    fn alarm_states_load(&self) -> StoreResult<Vec<StoredAlarmState>> {
        self.block(async {
            let client = self.client().await?;
            let rows = client
                .query("SELECT domain, alarm, state FROM alarm_states", &[])
                .await?;
            Ok(rows
                .iter()
                .map(|r| StoredAlarmState {
                    domain: r.get(0),
                    alarm: r.get(1),
                    state: Some(r.get(2)),
                })
                .collect())
        })
    }

    fn alarm_journal_list(
        &self,
        domain: &str,
        query: &JournalQuery,
    ) -> StoreResult<Vec<AlarmJournalEntry>> {
        self.block(async {
            let client = self.client().await?;
            let sql = format!(
                "SELECT {JOURNAL_COLUMNS} FROM alarm_journal WHERE domain = $1 \
                 AND ($2::text IS NULL OR alarm = $2) AND ($3::text IS NULL OR state = $3) \
                 AND ($4::text IS NULL OR priority = $4) AND ($5::text IS NULL OR who = $5) \
                 AND ($6::bigint IS NULL OR at_ms >= $6) AND ($7::bigint IS NULL OR at_ms < $7) \
                 AND ($8::bigint IS NULL OR id < $8) ORDER BY id DESC LIMIT $9"
            );
            let limit = i64::try_from(query.limit).unwrap_or(i64::MAX);
            let rows = client
                .query(
                    &sql,
                    &[
                        &domain,
                        &query.alarm,
                        &query.state,
                        &query.priority,
                        &query.who,
                        &query.from_ms,
                        &query.to_ms,
                        &query.before_id,
                        &limit,
                    ],
                )
                .await?;
            Ok(rows.iter().map(journal_entry).collect())
        })
    }

    fn alarm_journal_prune(&self, before_ms: i64) -> StoreResult<u64> {
        self.block(async {
            let client = self.client().await?;
            Ok(client
                .execute("DELETE FROM alarm_journal WHERE at_ms < $1", &[&before_ms])
                .await?)
        })
    }

    fn notification_queue_write(
        &self,
        upserts: &[QueuedNotification],
        deletes: &[i64],
    ) -> StoreResult<()> {
        self.block(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            let upsert = tx
                .prepare_cached(
                    "INSERT INTO alarm_notification_queue \
                     (id, domain, pipeline, channel, body, attempts, due_ms) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO UPDATE SET \
                     domain = excluded.domain, pipeline = excluded.pipeline, \
                     channel = excluded.channel, body = excluded.body, \
                     attempts = excluded.attempts, due_ms = excluded.due_ms",
                )
                .await?;
            for n in upserts {
                tx.execute(
                    &upsert,
                    &[
                        &n.id,
                        &n.domain,
                        &n.pipeline,
                        &n.channel,
                        &n.body,
                        &n.attempts,
                        &n.due_ms,
                    ],
                )
                .await?;
            }
            if !deletes.is_empty() {
                tx.execute(
                    "DELETE FROM alarm_notification_queue WHERE id = ANY($1)",
                    &[&deletes],
                )
                .await?;
            }
            tx.commit().await?;
            Ok(())
        })
    }

    fn notification_queue_load(&self) -> StoreResult<Vec<QueuedNotification>> {
        self.block(async {
            let client = self.client().await?;
            let rows = client
                .query(
                    "SELECT id, domain, pipeline, channel, body, attempts, due_ms \
                     FROM alarm_notification_queue ORDER BY id",
                    &[],
                )
                .await?;
            Ok(rows
                .iter()
                .map(|r| QueuedNotification {
                    id: r.get(0),
                    domain: r.get(1),
                    pipeline: r.get(2),
                    channel: r.get(3),
                    body: r.get(4),
                    attempts: r.get(5),
                    due_ms: r.get(6),
                })
                .collect())
        })
    }

    fn notification_password_set(
        &self,
        domain: &str,
        pipeline: &str,
        password: &str,
    ) -> StoreResult<()> {
        self.set_secret(SECRETS, "pipeline", domain, pipeline, Some(password))
    }

    fn notification_password_clear(&self, domain: &str, pipeline: &str) -> StoreResult<()> {
        self.set_secret(SECRETS, "pipeline", domain, pipeline, None)
    }

    fn notification_password(&self, domain: &str, pipeline: &str) -> StoreResult<Option<String>> {
        Ok(self
            .query_opt(
                "SELECT password FROM alarm_notification_secrets \
                 WHERE domain = $1 AND pipeline = $2",
                &[&domain, &pipeline],
            )?
            .map(|r| r.get(0)))
    }
}

/// The table of the pipelines' write-only SMTP passwords.
const SECRETS: &str = "alarm_notification_secrets";

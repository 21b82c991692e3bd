//! Alarms on SQLite: the journal, the alarms' states and the notification queue, each write
//! one transaction (WAL with `synchronous=NORMAL`, as for the broker's own state).

use super::{SqliteStore, StoreResult};
use crate::store::interface::Alarms;
use crate::store::types::{AlarmJournalEntry, JournalQuery, QueuedNotification, StoredAlarmState};
use rusqlite::{params, OptionalExtension, Row};

const JOURNAL_COLUMNS: &str =
    "id, domain, alarm, state, previous, cause, priority, tag, value, message, at_ms, who, comment";

fn journal_entry(r: &Row<'_>) -> rusqlite::Result<AlarmJournalEntry> {
    Ok(AlarmJournalEntry {
        id: r.get(0)?,
        domain: r.get(1)?,
        alarm: r.get(2)?,
        state: r.get(3)?,
        previous: r.get(4)?,
        cause: r.get(5)?,
        priority: r.get(6)?,
        tag: r.get(7)?,
        value: r.get(8)?,
        message: r.get(9)?,
        at_ms: r.get(10)?,
        who: r.get(11)?,
        comment: r.get(12)?,
    })
}

impl Alarms for SqliteStore {
    fn alarms_commit(
        &self,
        entries: &[AlarmJournalEntry],
        states: &[StoredAlarmState],
    ) -> StoreResult<()> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO alarm_journal (domain, alarm, state, previous, cause, priority, tag, \
                 value, message, at_ms, who, comment) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
            )?;
            for e in entries {
                insert.execute(params![
                    e.domain, e.alarm, e.state, e.previous, e.cause, e.priority, e.tag, e.value,
                    e.message, e.at_ms, e.who, e.comment
                ])?;
            }
            let mut keep = tx.prepare_cached(
                "INSERT OR REPLACE INTO alarm_states (domain, alarm, state) VALUES (?1, ?2, ?3)",
            )?;
            let mut forget =
                tx.prepare_cached("DELETE FROM alarm_states WHERE domain = ?1 AND alarm = ?2")?;
            for s in states {
                match &s.state {
                    Some(state) => keep.execute(params![s.domain, s.alarm, state])?,
                    None => forget.execute(params![s.domain, s.alarm])?,
                };
            }
        }
        tx.commit()?;
        Ok(())
    }

    fn alarm_states_load(&self) -> StoreResult<Vec<StoredAlarmState>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare("SELECT domain, alarm, state FROM alarm_states")?;
        let rows = stmt.query_map([], |r| {
            Ok(StoredAlarmState {
                domain: r.get(0)?,
                alarm: r.get(1)?,
                state: Some(r.get(2)?),
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn alarm_journal_list(
        &self,
        domain: &str,
        query: &JournalQuery,
    ) -> StoreResult<Vec<AlarmJournalEntry>> {
        let conn = self.conn()?;
        let sql = format!(
            "SELECT {JOURNAL_COLUMNS} FROM alarm_journal WHERE domain = ?1 \
             AND (?2 IS NULL OR alarm = ?2) AND (?3 IS NULL OR state = ?3) \
             AND (?4 IS NULL OR priority = ?4) AND (?5 IS NULL OR who = ?5) \
             AND (?6 IS NULL OR at_ms >= ?6) AND (?7 IS NULL OR at_ms < ?7) \
             AND (?8 IS NULL OR id < ?8) ORDER BY id DESC LIMIT ?9"
        );
        let mut stmt = conn.prepare_cached(&sql)?;
        let rows = stmt.query_map(
            params![
                domain,
                query.alarm,
                query.state,
                query.priority,
                query.who,
                query.from_ms,
                query.to_ms,
                query.before_id,
                i64::try_from(query.limit).unwrap_or(i64::MAX)
            ],
            journal_entry,
        )?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn alarm_journal_prune(&self, before_ms: i64) -> StoreResult<u64> {
        let conn = self.conn()?;
        let deleted = conn.execute("DELETE FROM alarm_journal WHERE at_ms < ?1", [before_ms])?;
        Ok(deleted as u64)
    }

    fn notification_queue_write(
        &self,
        upserts: &[QueuedNotification],
        deletes: &[i64],
    ) -> StoreResult<()> {
        let mut conn = self.conn()?;
        let tx = conn.transaction()?;
        {
            let mut upsert = tx.prepare_cached(
                "INSERT OR REPLACE INTO alarm_notification_queue \
                 (id, domain, pipeline, channel, body, attempts, due_ms) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?;
            for n in upserts {
                upsert.execute(params![
                    n.id, n.domain, n.pipeline, n.channel, n.body, n.attempts, n.due_ms
                ])?;
            }
            let mut delete =
                tx.prepare_cached("DELETE FROM alarm_notification_queue WHERE id = ?1")?;
            for id in deletes {
                delete.execute([id])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    fn notification_queue_load(&self) -> StoreResult<Vec<QueuedNotification>> {
        let conn = self.conn()?;
        let mut stmt = conn.prepare(
            "SELECT id, domain, pipeline, channel, body, attempts, due_ms \
             FROM alarm_notification_queue ORDER BY id",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(QueuedNotification {
                id: r.get(0)?,
                domain: r.get(1)?,
                pipeline: r.get(2)?,
                channel: r.get(3)?,
                body: r.get(4)?,
                attempts: r.get(5)?,
                due_ms: r.get(6)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
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
            .conn()?
            .query_row(
                "SELECT password FROM alarm_notification_secrets \
                 WHERE domain = ?1 AND pipeline = ?2",
                params![domain, pipeline],
                |r| r.get(0),
            )
            .optional()?)
    }
}

/// The table of the pipelines' write-only SMTP passwords.
const SECRETS: &str = "alarm_notification_secrets";

#[cfg(test)]
mod notification_tests {
    use super::*;

    #[test]
    fn a_pipeline_password_is_set_replaced_read_and_cleared_per_domain() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("svc.db")).unwrap();
        store
            .notification_password_set("acme", "p1", "one")
            .unwrap();
        store
            .notification_password_set("beta", "p1", "other")
            .unwrap();
        store
            .notification_password_set("acme", "p1", "two")
            .unwrap();
        let read = |d: &str| store.notification_password(d, "p1").unwrap();
        assert_eq!(read("acme").as_deref(), Some("two"));
        assert_eq!(read("beta").as_deref(), Some("other"));
        store.notification_password_clear("acme", "p1").unwrap();
        assert_eq!(read("acme"), None);
        assert_eq!(read("beta").as_deref(), Some("other"));
    }

    #[test]
    fn the_queue_keeps_upserts_and_forgets_deletes_in_one_write() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("svc.db")).unwrap();
        let item = |id: i64, attempts: i64| QueuedNotification {
            id,
            domain: "acme".into(),
            pipeline: "p1".into(),
            channel: "email".into(),
            body: "{}".into(),
            attempts,
            due_ms: 10,
        };
        store
            .notification_queue_write(&[item(1, 0), item(2, 0)], &[])
            .unwrap();
        store.notification_queue_write(&[item(2, 3)], &[1]).unwrap();
        assert_eq!(store.notification_queue_load().unwrap(), vec![item(2, 3)]);
    }
}

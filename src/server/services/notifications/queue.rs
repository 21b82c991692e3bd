//! The durable queue of notifications, as the delivering task holds it: every job (a webhook
//! call or a mail to deliver, an event held for a digest or by a rate limit, an escalation
//! waiting for its time) is an item with an id, a due time and its attempts. Each change is
//! marked and written to the store (`alarm_notification_queue`) in one transaction before
//! anything acts on it, so a job survives a restart and a change of leading instance.

use crate::alarms::notify::config::Webhook;
use crate::alarms::notify::render::Mail;
use crate::alarms::AlarmEvent;
use crate::store::QueuedNotification;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// What an item is for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "job", rename_all = "snake_case")]
pub enum Job {
    /// An HTTP POST of `body` (JSON) to `url`.
    Webhook {
        url: String,
        headers: Vec<(String, String)>,
        body: Value,
    },
    /// A mail to one address, through the pipeline's SMTP server.
    Email { to: String, mail: Mail },
    /// An event waiting for its pipeline's digest window to end (`recipient` none), or for a
    /// recipient's rate limit to allow another message.
    Held {
        stage: Stage,
        recipient: Option<Recipient>,
        event: Held,
    },
    /// A raised alarm to check once the escalation's delay is over.
    Escalation { event: Held },
}

/// Why an event is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Digest,
    Rate,
}

/// Who one message goes to: a webhook, or one mail address.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Recipient {
    Webhook(Webhook),
    Email(String),
}

/// An event as the queue keeps it, with the time the API's event leaves out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Held {
    pub event: AlarmEvent,
    pub at_ms: i64,
}

impl Held {
    pub fn of(event: &AlarmEvent) -> Held {
        Held {
            event: event.clone(),
            at_ms: event.at_ms,
        }
    }

    pub fn into_event(self) -> AlarmEvent {
        AlarmEvent {
            at_ms: self.at_ms,
            ..self.event
        }
    }
}

impl Job {
    /// The queue's `channel` column: what the item is, readable in the store.
    fn channel(&self) -> &'static str {
        match self {
            Job::Webhook { .. } => "webhook",
            Job::Email { .. } => "email",
            Job::Held { .. } => "held",
            Job::Escalation { .. } => "escalation",
        }
    }

    /// Whether the item is a message to deliver (rather than one waiting inside the notifier).
    pub fn is_delivery(&self) -> bool {
        matches!(self, Job::Webhook { .. } | Job::Email { .. })
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    pub id: i64,
    pub domain: String,
    /// The pipeline record's key.
    pub pipeline: String,
    pub job: Job,
    pub attempts: i64,
    pub due_ms: i64,
}

/// The items, and the changes not yet written to the store.
#[derive(Default)]
pub struct Queue {
    items: BTreeMap<i64, Item>,
    next_id: i64,
    upserts: BTreeSet<i64>,
    deletes: BTreeSet<i64>,
}

impl Queue {
    /// The queue as the store kept it. A row that is not a job svc wrote is dropped (and its
    /// deletion written with the next change), with a warning: it can never be delivered.
    pub fn load(rows: Vec<QueuedNotification>, now_ms: i64) -> Queue {
        let mut queue = Queue {
            // Ids increase across instances too: a new leader never reuses one the last wrote.
            next_id: now_ms.saturating_mul(1000),
            ..Queue::default()
        };
        for row in rows {
            queue.next_id = queue.next_id.max(row.id + 1);
            match serde_json::from_str::<Job>(&row.body) {
                Ok(job) => {
                    queue.items.insert(
                        row.id,
                        Item {
                            id: row.id,
                            domain: row.domain,
                            pipeline: row.pipeline,
                            job,
                            attempts: row.attempts,
                            due_ms: row.due_ms,
                        },
                    );
                }
                Err(e) => {
                    tracing::warn!(id = row.id, error = %e, "dropping a queued notification svc cannot read");
                    queue.deletes.insert(row.id);
                }
            }
        }
        queue
    }

    /// Adds a job due at `due_ms`; returns its id.
    pub fn add(&mut self, domain: &str, pipeline: &str, job: Job, due_ms: i64) -> i64 {
        let id = self.next_id;
        self.next_id += 1;
        self.items.insert(
            id,
            Item {
                id,
                domain: domain.to_string(),
                pipeline: pipeline.to_string(),
                job,
                attempts: 0,
                due_ms,
            },
        );
        self.upserts.insert(id);
        id
    }

    /// Changes item `id` (a failed attempt, a new due time).
    pub fn update(&mut self, id: i64, change: impl FnOnce(&mut Item)) {
        if let Some(item) = self.items.get_mut(&id) {
            change(item);
            self.upserts.insert(id);
        }
    }

    pub fn remove(&mut self, id: i64) -> Option<Item> {
        let item = self.items.remove(&id)?;
        self.upserts.remove(&id);
        self.deletes.insert(id);
        Some(item)
    }

    pub fn get(&self, id: i64) -> Option<&Item> {
        self.items.get(&id)
    }

    pub fn items(&self) -> impl Iterator<Item = &Item> {
        self.items.values()
    }

    /// Whether item `id` is in the store as it is here (so it may be attempted).
    pub fn is_written(&self, id: i64) -> bool {
        !self.upserts.contains(&id)
    }

    /// The changes to write, as the store takes them; hand them back with
    /// [`Queue::unwritten`] when the write fails.
    pub fn writes(&mut self) -> (Vec<QueuedNotification>, Vec<i64>) {
        let upserts = std::mem::take(&mut self.upserts);
        let deletes = std::mem::take(&mut self.deletes);
        let rows = upserts
            .iter()
            .filter_map(|id| self.items.get(id))
            .map(|item| QueuedNotification {
                id: item.id,
                domain: item.domain.clone(),
                pipeline: item.pipeline.clone(),
                channel: item.job.channel().to_string(),
                body: serde_json::to_string(&item.job).unwrap_or_default(),
                attempts: item.attempts,
                due_ms: item.due_ms,
            })
            .collect();
        (rows, deletes.into_iter().collect())
    }

    /// Marks changes [`Queue::writes`] gave out as not written after all.
    pub fn unwritten(&mut self, upserts: &[QueuedNotification], deletes: &[i64]) {
        for row in upserts {
            if self.items.contains_key(&row.id) {
                self.upserts.insert(row.id);
            }
        }
        self.deletes.extend(deletes.iter().copied());
    }

    pub fn has_writes(&self) -> bool {
        !self.upserts.is_empty() || !self.deletes.is_empty()
    }

    /// How many messages wait to be delivered, and how many events are held.
    pub fn counts(&self) -> (u64, u64) {
        let deliveries = self.items.values().filter(|i| i.job.is_delivery()).count();
        let held = self
            .items
            .values()
            .filter(|i| matches!(i.job, Job::Held { .. }))
            .count();
        (deliveries as u64, held as u64)
    }

    /// The earliest due time among items not in `skip` (those being attempted).
    pub fn next_due(&self, skip: &std::collections::HashSet<i64>) -> Option<i64> {
        self.items
            .values()
            .filter(|i| !skip.contains(&i.id))
            .map(|i| i.due_ms)
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alarms::notify::render::tests::event;
    use crate::alarms::StateName;

    #[test]
    fn writes_carry_every_change_once_and_a_reload_reads_them_back() {
        let mut queue = Queue::load(Vec::new(), 5);
        let job = Job::Email {
            to: "ops@example.com".into(),
            mail: Mail {
                subject: "s".into(),
                text: "t".into(),
            },
        };
        let a = queue.add("acme", "p1", job.clone(), 10);
        let held = Job::Held {
            stage: Stage::Digest,
            recipient: None,
            event: Held::of(&event("x", StateName::ActiveUnacknowledged, 77)),
        };
        let b = queue.add("acme", "p1", held, 20);
        assert!(!queue.is_written(a));
        let (rows, deletes) = queue.writes();
        assert_eq!((rows.len(), deletes.len()), (2, 0));
        assert!(queue.is_written(a) && !queue.has_writes());
        queue.update(a, |i| i.attempts = 1);
        queue.remove(b);
        let (again, deletes) = queue.writes();
        assert_eq!((again.len(), again[0].attempts, deletes), (1, 1, vec![b]));
        let reloaded = Queue::load(vec![again[0].clone()], 0);
        let item = reloaded.get(a).unwrap();
        assert_eq!((&item.job, item.attempts), (&job, 1));
        // The kept event keeps its time, which the API's JSON leaves out.
        let Job::Held { event, .. } = serde_json::from_str(&rows[1].body).unwrap() else {
            panic!("{}", rows[1].body)
        };
        assert_eq!(event.into_event().at_ms, 77);
    }

    #[test]
    fn a_failed_write_is_written_again_and_ids_never_repeat() {
        let mut queue = Queue::load(Vec::new(), 1);
        let id = queue.add(
            "acme",
            "p",
            Job::Escalation {
                event: Held::of(&event("x", StateName::Normal, 1)),
            },
            0,
        );
        let (rows, deletes) = queue.writes();
        queue.unwritten(&rows, &deletes);
        assert!(!queue.is_written(id));
        let stored = queue.writes().0;
        let next = Queue::load(stored, 0).add(
            "acme",
            "p",
            Job::Escalation {
                event: Held::of(&event("y", StateName::Normal, 1)),
            },
            0,
        );
        assert!(next > id);
    }

    #[test]
    fn an_unreadable_row_is_dropped_with_its_deletion_written() {
        let mut queue = Queue::load(
            vec![QueuedNotification {
                id: 3,
                domain: "acme".into(),
                pipeline: "p".into(),
                channel: "email".into(),
                body: "not json".into(),
                attempts: 0,
                due_ms: 0,
            }],
            0,
        );
        assert_eq!(queue.items().count(), 0);
        assert_eq!(queue.writes().1, vec![3]);
    }
}

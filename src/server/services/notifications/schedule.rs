//! When each notification goes, and in what form: an event a pipeline takes becomes a message
//! per recipient at once, or is held for the pipeline's digest window (then goes as one digest
//! when at least `min` events gathered, else one by one); a recipient over its rate limit has
//! its messages held until the limit allows one more, which then carries all of them as a
//! digest; a raised alarm arms its pipeline's escalation, which an event leaving the states
//! that need acknowledgement disarms. Everything it holds is an item of the durable [`Queue`];
//! only the rate limits' recent sends live in memory (a restart forgets them).

use super::matching::{delivery, escalation_recipients, recipients};
use super::queue::{Held, Item, Job, Queue, Recipient, Stage};
use crate::alarms::notify::render::Kind;
use crate::alarms::notify::Pipeline;
use crate::alarms::{AlarmEvent, StateName};
use std::collections::{BTreeMap, HashMap, VecDeque};

/// A recipient of one pipeline of one domain.
type RecipientKey = (String, String, Recipient);

#[derive(Default)]
pub struct Scheduler {
    /// When each recipient was last sent to, within its rate limit's period.
    sent: HashMap<RecipientKey, VecDeque<i64>>,
}

impl Scheduler {
    /// Takes one event of `domain`, whose pipelines are `pipelines`.
    pub fn on_event(
        &mut self,
        queue: &mut Queue,
        pipelines: &[Pipeline],
        event: &AlarmEvent,
        now: i64,
    ) {
        for pipeline in pipelines.iter().filter(|p| p.enabled) {
            escalation(queue, pipeline, event);
            if !pipeline.takes(event.priority, event.state) {
                continue;
            }
            match pipeline.digest {
                Some(digest) => {
                    let due = held(queue, &event.domain, &pipeline.key, Stage::Digest, None)
                        .first()
                        .map_or(now + digest.window_ms, |item| item.due_ms);
                    let job = Job::Held {
                        stage: Stage::Digest,
                        recipient: None,
                        event: Held::of(event),
                    };
                    queue.add(&event.domain, &pipeline.key, job, due);
                }
                None => {
                    self.deliver_or_hold(queue, pipeline, &event.domain, vec![event.clone()], now)
                }
            }
        }
    }

    /// Acts on what is due at `now`: digests whose window ended, recipients whose rate limit
    /// allows another message, escalations whose delay is over (`unacknowledged` says whether
    /// an alarm still waits for an operator). `pipeline` finds a pipeline by domain and key;
    /// what a deleted pipeline held is dropped. Returns the deliveries due, oldest first.
    pub fn on_due(
        &mut self,
        queue: &mut Queue,
        pipeline: &dyn Fn(&str, &str) -> Option<Pipeline>,
        unacknowledged: &dyn Fn(&AlarmEvent) -> bool,
        now: i64,
    ) -> Vec<i64> {
        let mut groups: BTreeMap<(String, String, Stage, Option<String>), Vec<i64>> =
            BTreeMap::new();
        let mut escalations = Vec::new();
        for item in queue.items().filter(|i| i.due_ms <= now) {
            match &item.job {
                Job::Held {
                    stage, recipient, ..
                } => {
                    let who = recipient.as_ref().map(|r| format!("{r:?}"));
                    let key = (item.domain.clone(), item.pipeline.clone(), *stage, who);
                    groups.entry(key).or_default().push(item.id);
                }
                Job::Escalation { .. } => escalations.push(item.id),
                Job::Webhook { .. } | Job::Email { .. } => {}
            }
        }
        for ((domain, key, stage, _), ids) in groups {
            let Some(pipeline) = pipeline(&domain, &key) else {
                drop_gone(queue, &domain, &key, &ids);
                continue;
            };
            match stage {
                Stage::Digest => self.end_digest(queue, &pipeline, &domain, &ids, now),
                Stage::Rate => self.release(queue, &pipeline, &domain, &ids, now),
            }
        }
        for id in escalations {
            let Some(Item {
                domain,
                pipeline: key,
                job: Job::Escalation { event },
                ..
            }) = queue.remove(id)
            else {
                continue;
            };
            let event = event.into_event();
            let Some(pipeline) = pipeline(&domain, &key) else {
                continue;
            };
            if !pipeline.enabled || !unacknowledged(&event) {
                continue;
            }
            // Escalations skip the rate limit and the digest: they are rare and must not wait.
            for recipient in escalation_recipients(&pipeline) {
                let job = delivery(
                    &domain,
                    &pipeline,
                    &recipient,
                    std::slice::from_ref(&event),
                    Kind::Escalation,
                );
                queue.add(&domain, &key, job, now);
            }
        }
        // Last, so that what the steps above made due now is among them.
        let mut deliveries: Vec<i64> = queue
            .items()
            .filter(|i| i.job.is_delivery() && i.due_ms <= now)
            .map(|i| i.id)
            .collect();
        deliveries.retain(|id| {
            let Some(item) = queue.get(*id) else {
                return false;
            };
            if pipeline(&item.domain, &item.pipeline).is_some() {
                return true;
            }
            let (domain, key) = (item.domain.clone(), item.pipeline.clone());
            drop_gone(queue, &domain, &key, &[*id]);
            false
        });
        deliveries
    }

    /// A digest window ended: its events go as one digest when there are enough, else one by
    /// one, each through the recipients' rate limits.
    fn end_digest(
        &mut self,
        queue: &mut Queue,
        pipeline: &Pipeline,
        domain: &str,
        ids: &[i64],
        now: i64,
    ) {
        let events = take_events(queue, ids);
        let min = pipeline.digest.map_or(usize::MAX, |d| d.min);
        if events.len() >= min {
            self.deliver_or_hold(queue, pipeline, domain, events, now);
        } else {
            for event in events {
                self.deliver_or_hold(queue, pipeline, domain, vec![event], now);
            }
        }
    }

    /// A recipient's held events go when its rate limit allows, as one message.
    fn release(
        &mut self,
        queue: &mut Queue,
        pipeline: &Pipeline,
        domain: &str,
        ids: &[i64],
        now: i64,
    ) {
        let Some(Job::Held {
            recipient: Some(recipient),
            ..
        }) = queue.get(ids[0]).map(|i| i.job.clone())
        else {
            return;
        };
        match self.slot(pipeline, domain, &recipient, now) {
            Ok(()) => {
                let events = take_events(queue, ids);
                let job = delivery(domain, pipeline, &recipient, &events, Kind::Alarm);
                queue.add(domain, &pipeline.key, job, now);
            }
            Err(next) => {
                for id in ids {
                    queue.update(*id, |item| item.due_ms = next);
                }
            }
        }
    }

    /// Sends `events` (one, or a digest) to each of the pipeline's recipients, or holds them
    /// for the recipients over their rate limit.
    fn deliver_or_hold(
        &mut self,
        queue: &mut Queue,
        pipeline: &Pipeline,
        domain: &str,
        events: Vec<AlarmEvent>,
        now: i64,
    ) {
        for recipient in recipients(pipeline) {
            // Events already held for the recipient go first: a new one waits behind them.
            let waiting = held(queue, domain, &pipeline.key, Stage::Rate, Some(&recipient))
                .first()
                .map(|item| item.due_ms);
            let allowed = match waiting {
                Some(due) => Err(due),
                None => self.slot(pipeline, domain, &recipient, now),
            };
            match allowed {
                Ok(()) => {
                    let job = delivery(domain, pipeline, &recipient, &events, Kind::Alarm);
                    queue.add(domain, &pipeline.key, job, now);
                }
                Err(due) => {
                    for event in &events {
                        let job = Job::Held {
                            stage: Stage::Rate,
                            recipient: Some(recipient.clone()),
                            event: Held::of(event),
                        };
                        queue.add(domain, &pipeline.key, job, due);
                    }
                }
            }
        }
    }

    /// Takes one message of the recipient's rate limit at `now`, or says when one frees.
    fn slot(
        &mut self,
        pipeline: &Pipeline,
        domain: &str,
        recipient: &Recipient,
        now: i64,
    ) -> Result<(), i64> {
        let Some(limit) = pipeline.rate_limit else {
            return Ok(());
        };
        let key = (domain.to_string(), pipeline.key.clone(), recipient.clone());
        let sent = self.sent.entry(key).or_default();
        while sent.front().is_some_and(|t| *t <= now - limit.per_ms) {
            sent.pop_front();
        }
        if sent.len() < limit.count {
            sent.push_back(now);
            Ok(())
        } else {
            Err(sent.front().map_or(now, |t| t + limit.per_ms))
        }
    }
}

/// Arms the pipeline's escalation when `event` raised its alarm, or disarms it when the alarm
/// no longer needs acknowledgement (acknowledged, shelved, out of service, removed…).
fn escalation(queue: &mut Queue, pipeline: &Pipeline, event: &AlarmEvent) {
    let Some(escalation) = &pipeline.escalation else {
        return;
    };
    let armed: Vec<i64> = queue
        .items()
        .filter(|i| i.domain == event.domain && i.pipeline == pipeline.key)
        .filter(|i| matches!(&i.job, Job::Escalation { event: e } if e.event.alarm == event.alarm))
        .map(|i| i.id)
        .collect();
    if !event.state.needs_acknowledgement() {
        for id in armed {
            queue.remove(id);
        }
    } else if event.state == StateName::ActiveUnacknowledged
        && armed.is_empty()
        && pipeline.priorities.contains(&event.priority)
    {
        let job = Job::Escalation {
            event: Held::of(event),
        };
        queue.add(
            &event.domain,
            &pipeline.key,
            job,
            event.at_ms + escalation.after_ms,
        );
    }
}

/// The items held at `stage` for `recipient` of a pipeline, oldest first.
fn held<'a>(
    queue: &'a Queue,
    domain: &str,
    key: &str,
    stage: Stage,
    recipient: Option<&Recipient>,
) -> Vec<&'a Item> {
    queue
        .items()
        .filter(|i| i.domain == domain && i.pipeline == key)
        .filter(|i| matches!(&i.job, Job::Held { stage: s, recipient: r, .. } if *s == stage && r.as_ref() == recipient))
        .collect()
}

/// Removes held items, returning their events in order.
fn take_events(queue: &mut Queue, ids: &[i64]) -> Vec<AlarmEvent> {
    ids.iter()
        .filter_map(|id| match queue.remove(*id)?.job {
            Job::Held { event, .. } => Some(event.into_event()),
            _ => None,
        })
        .collect()
}

fn drop_gone(queue: &mut Queue, domain: &str, key: &str, ids: &[i64]) {
    for id in ids {
        queue.remove(*id);
    }
    tracing::warn!(
        domain,
        pipeline = key,
        count = ids.len(),
        "dropping notifications of a pipeline that was deleted"
    );
}

#[cfg(test)]
#[path = "schedule_tests.rs"]
mod tests;

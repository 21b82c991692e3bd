//! Which pipelines an event concerns: each domain's pipelines as their records say (reloaded
//! when a record changes), the recipients a pipeline sends to, and the messages one delivery to
//! a recipient is made of.

use super::queue::{Job, Recipient};
use crate::alarms::notify::render::{self, Kind};
use crate::alarms::notify::Pipeline;
use crate::alarms::AlarmEvent;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

/// Every domain's pipelines, read by `offer` (is there any?) and by the delivering task.
#[derive(Default)]
pub struct Pipelines {
    by_domain: RwLock<HashMap<String, Arc<Vec<Pipeline>>>>,
}

impl Pipelines {
    /// Replaces `domain`'s pipelines (none: forgets the domain).
    pub fn set(&self, domain: &str, pipelines: Vec<Pipeline>) {
        let mut by_domain = self.by_domain.write().unwrap_or_else(|e| e.into_inner());
        if pipelines.is_empty() {
            by_domain.remove(domain);
        } else {
            by_domain.insert(domain.to_string(), Arc::new(pipelines));
        }
    }

    /// Whether `domain` has a pipeline (the cheap check `offer` makes for every event).
    pub fn has(&self, domain: &str) -> bool {
        self.by_domain
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(domain)
    }

    pub fn of(&self, domain: &str) -> Arc<Vec<Pipeline>> {
        self.by_domain
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(domain)
            .cloned()
            .unwrap_or_default()
    }

    /// Pipeline record `key` of `domain`.
    pub fn find(&self, domain: &str, key: &str) -> Option<Pipeline> {
        self.of(domain).iter().find(|p| p.key == key).cloned()
    }
}

/// The recipients of a pipeline's own messages: its webhook, then each mail address.
pub fn recipients(pipeline: &Pipeline) -> Vec<Recipient> {
    let webhook = pipeline.webhook.iter().cloned().map(Recipient::Webhook);
    let mails = pipeline
        .email
        .iter()
        .flat_map(|e| e.to.iter().cloned().map(Recipient::Email));
    webhook.chain(mails).collect()
}

/// The recipients an escalation goes to: its webhook and its own addresses (mailed through the
/// pipeline's server).
pub fn escalation_recipients(pipeline: &Pipeline) -> Vec<Recipient> {
    let Some(escalation) = &pipeline.escalation else {
        return Vec::new();
    };
    let webhook = escalation.webhook.iter().cloned().map(Recipient::Webhook);
    let mails = escalation.to.iter().cloned().map(Recipient::Email);
    webhook.chain(mails).collect()
}

/// The job delivering `events` (one, or a digest of several) to `recipient`.
pub fn delivery(
    domain: &str,
    pipeline: &Pipeline,
    recipient: &Recipient,
    events: &[AlarmEvent],
    kind: Kind,
) -> Job {
    let after = pipeline
        .escalation
        .as_ref()
        .map(|e| e.after.clone())
        .unwrap_or_default();
    match recipient {
        Recipient::Webhook(hook) => Job::Webhook {
            url: hook.url.clone(),
            headers: hook.headers.clone(),
            body: render::webhook_body(domain, &pipeline.name, events, kind, &after),
        },
        Recipient::Email(to) => Job::Email {
            to: to.clone(),
            mail: render::mail(domain, &pipeline.name, events, kind, &after),
        },
    }
}

//! Auto-registration of published topics no domain declared: each becomes a tag (not
//! historized) of the domain whose namespace covers it, else of `svc_admin`. One background
//! task registers whatever has arrived meanwhile as one batch (one store call, one reload of
//! each domain's tags), so a plant that starts publishing 10,000 new topics at once registers
//! them in seconds rather than reloading its tags 10,000 times.

use super::system_tables::SystemTable;
use super::AppState;
use crate::ids::{TableRef, ADMIN_DOMAIN};
use crate::store::{StoreError, TAGS};
use serde_json::{json, Map};
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// Most topics registered in one batch.
const BATCH: usize = 4096;

pub struct Registrar {
    queue: mpsc::UnboundedSender<String>,
    /// Topics queued or being registered, so a burst queues each once.
    waiting: Arc<Mutex<HashSet<String>>>,
}

impl Registrar {
    /// Starts the registering task (on the current tokio runtime).
    pub fn start(state: AppState) -> Registrar {
        let (queue, topics) = mpsc::unbounded_channel();
        let waiting: Arc<Mutex<HashSet<String>>> = Arc::default();
        tokio::spawn(run(state, topics, waiting.clone()));
        Registrar { queue, waiting }
    }

    /// Queues `topic` for registration unless it is queued already.
    pub fn register(&self, topic: &str) {
        let fresh = self
            .waiting
            .lock()
            .is_ok_and(|mut set| set.insert(topic.to_string()));
        if fresh {
            let _ = self.queue.send(topic.to_string());
        }
    }
}

async fn run(
    state: AppState,
    mut topics: mpsc::UnboundedReceiver<String>,
    waiting: Arc<Mutex<HashSet<String>>>,
) {
    let mut batch = Vec::with_capacity(BATCH);
    while topics.recv_many(&mut batch, BATCH).await > 0 {
        register(&state, &batch).await;
        if let Ok(mut set) = waiting.lock() {
            for topic in &batch {
                set.remove(topic);
            }
        }
        batch.clear();
    }
}

/// Declares each of `topics` in the domain whose namespace covers it, unless a domain has
/// declared it since it was published.
async fn register(state: &AppState, topics: &[String]) {
    let _declaring = state.tags.declaring().await;
    let mut by_domain: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for topic in topics {
        if state.tags.owner(topic).is_some() {
            continue;
        }
        let domain = state
            .tags
            .namespace_owner(topic)
            .map_or_else(|| ADMIN_DOMAIN.to_string(), |d| d.to_string());
        by_domain.entry(domain).or_default().push(topic.clone());
    }
    if by_domain.is_empty() {
        return;
    }
    let domains: Vec<String> = by_domain.keys().cloned().collect();
    let result = state
        .store
        .run(move |s| {
            for (domain, paths) in &by_domain {
                SystemTable::Tags.ensure_collection(s, domain)?;
                let table = TableRef::new(domain, TAGS).map_err(StoreError::Invalid)?;
                for path in paths {
                    let mut fields = Map::new();
                    fields.insert("path".into(), json!(path));
                    fields.insert("historize".into(), json!(false));
                    match s.insert_record(&table, &crate::ids::new_key(), &fields) {
                        Ok(_) | Err(StoreError::Conflict(_)) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            Ok(())
        })
        .await;
    if let Err(e) = result {
        tracing::warn!(error = %e, topics = topics.len(), "cannot register published topics");
    }
    // Reloaded even after an error: whatever was stored is now the domain's.
    for domain in domains {
        if let Err(e) = state.tags.reload(&state.store, &domain).await {
            tracing::warn!(error = %e, domain, "cannot reload a domain's tags");
        }
        state.peers.changed(&domain, SystemTable::Tags).await;
    }
}

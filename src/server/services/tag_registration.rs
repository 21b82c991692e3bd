//! Auto-registration of published topics no domain declared: each becomes a tag (not
//! historized) of the domain whose namespace covers it, else of the domain the publisher's API
//! key was made in (its home), else of `svc_admin`. One background task registers whatever has
//! arrived meanwhile as one batch (one store call, one reload of each domain's tags), so a plant
//! that starts publishing 10,000 new topics at once registers them in seconds rather than
//! reloading its tags 10,000 times.

use crate::ids::{TableRef, ADMIN_DOMAIN};
use crate::server::services::system_tables::TAGS_TABLE;
use crate::server::services::tag_registry::{TagOwner, TagRegistry};
use crate::server::AppState;
use crate::store::{StoreError, TAGS};
use serde_json::{json, Map};
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// Most topics registered in one batch.
const BATCH: usize = 4096;

/// A topic to register, and the home domain of its first publisher (if any).
type Request = (String, Option<String>);

pub struct Registrar {
    queue: mpsc::UnboundedSender<Request>,
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

    /// Queues `topic` for registration unless it is queued already (the first publisher's
    /// `home` then counts).
    pub fn register(&self, topic: &str, home: Option<&str>) {
        let fresh = self
            .waiting
            .lock()
            .is_ok_and(|mut set| set.insert(topic.to_string()));
        if fresh {
            let _ = self
                .queue
                .send((topic.to_string(), home.map(str::to_string)));
        }
    }
}

async fn run(
    state: AppState,
    mut topics: mpsc::UnboundedReceiver<Request>,
    waiting: Arc<Mutex<HashSet<String>>>,
) {
    let mut batch = Vec::with_capacity(BATCH);
    while topics.recv_many(&mut batch, BATCH).await > 0 {
        register(&state, &batch).await;
        if let Ok(mut set) = waiting.lock() {
            for (topic, _) in &batch {
                set.remove(topic);
            }
        }
        batch.clear();
    }
}

/// The tag `topic` is registered as ([`domain_for`]), as far as the tags in memory tell: the
/// topic's values that arrive before its registration is stored are handed to that domain's
/// processes and flows with it, so they see a new topic's first value. A home domain deleted
/// meanwhile is the one case where the two differ (the tag then goes to `svc_admin`), and that
/// domain has no processes left to run.
pub fn expected_owner(tags: &TagRegistry, topic: &str, home: Option<&str>) -> TagOwner {
    TagOwner {
        domain: tags
            .namespace_owner(topic)
            .unwrap_or_else(|| Arc::from(home.unwrap_or(ADMIN_DOMAIN))),
        historize: false,
        compression: None,
    }
}

/// Where `topic` is registered: the domain whose namespace covers it, else the publisher's
/// `home` while it exists (the publish was authorized there: the home's `tags` read-write, or an
/// administrator), else `svc_admin`.
/// [`expected_owner`] walks the same order without the store, for automation meanwhile.
async fn domain_for(state: &AppState, topic: &str, home: Option<&str>) -> String {
    if let Some(domain) = state.uns.tags.namespace_owner(topic) {
        return domain.to_string();
    }
    match home {
        Some(home) if state.identities.domain_exists(home).await.unwrap_or(false) => {
            home.to_string()
        }
        _ => ADMIN_DOMAIN.to_string(),
    }
}

/// Declares each of `topics` in its domain ([`domain_for`]), unless a domain has declared it
/// since it was published.
async fn register(state: &AppState, topics: &[Request]) {
    let _declaring = state.uns.tags.declaring().await;
    let mut by_domain: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (topic, home) in topics {
        if state.uns.tags.owner(topic).is_some() {
            continue;
        }
        let domain = domain_for(state, topic, home.as_deref()).await;
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
                TAGS_TABLE.ensure_collection(s, domain)?;
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
        if let Err(e) = state.uns.tags.reload(&state.store, &domain).await {
            tracing::warn!(error = %e, domain, "cannot reload a domain's tags");
        }
        state.peers.changed(&domain, TAGS_TABLE).await;
    }
}

//! The evaluating task: it carries out the changes the publishers' evaluations queued, runs
//! the timers, the operators' actions and the reloads, each step's changes carried out before
//! the next. Only the leading instance evaluates; a follower's task answers reloads and drains,
//! and its engine mirrors the leader's changes.

use super::journal::{Answer, Journal};
use super::{definition, definitions, lock, publish, stored_states, Input};
use crate::alarms::engine::{Change, Engine};
use crate::server::error::{ApiError, ApiResult};
use crate::server::AppState;
use std::collections::HashMap;
use std::time::Duration;
use tokio::sync::mpsc;

/// The most inputs taken in one step.
const STEP: usize = 256;

/// Rebuilds the engine from every domain's definitions and the states the store keeps (at
/// start, and when this instance becomes the leader); returns the changes that brings (an
/// enable condition that no longer holds).
pub(super) async fn load_all(state: &AppState) -> ApiResult<Vec<Change>> {
    let mut stored = stored_states(state).await?;
    let mut loaded = Vec::new();
    for domain in state.domain_names().await? {
        let alarms = definitions(state, &domain).await?;
        if !alarms.is_empty() {
            let kept = stored.remove(&domain).unwrap_or_default();
            loaded.push((domain, alarms, kept));
        }
    }
    let now = crate::time::now_ms();
    let mut engine = Engine::new(lock(&state.alarms.core).engine.rules().clone());
    let mut changes = Vec::new();
    for (domain, alarms, kept) in loaded {
        changes.extend(engine.set_domain(&domain, alarms, kept, &enable_value(state), now));
    }
    state.alarms.engine_changed(&engine);
    lock(&state.alarms.core).engine = engine;
    Ok(changes)
}

/// The last value of an alarm's enable tag.
fn enable_value(state: &AppState) -> impl Fn(&str) -> Option<serde_json::Value> + '_ {
    |tag| state.uns.last_values.get(tag).map(|(_, value)| value)
}

pub(super) async fn run(
    state: AppState,
    mut inbox: mpsc::Receiver<Input>,
    journal: mpsc::Sender<Journal>,
) {
    let leadership = state.peers.leadership();
    let mut leading = leadership.is_leader();
    let mut batch = Vec::with_capacity(STEP);
    loop {
        let due = leading
            .then(|| lock(&state.alarms.core).engine.next_due())
            .flatten();
        let wait = due
            .map(|d| Duration::from_millis(u64::try_from(d - crate::time::now_ms()).unwrap_or(0)));
        tokio::select! {
            taken = inbox.recv_many(&mut batch, STEP) => {
                if taken == 0 {
                    return;
                }
            }
            () = sleep(wait) => {}
            () = state.alarms.wake.notified() => {}
            () = leadership.until(!leading) => {}
        }
        let now_leading = leadership.is_leader();
        let mut changes = Vec::new();
        if now_leading && !leading {
            match load_all(&state).await {
                Ok(loaded) => changes.extend(loaded),
                Err(e) => {
                    tracing::warn!(error = %e.message, "cannot load the alarms on becoming the leader")
                }
            }
        }
        leading = now_leading;
        let step = step(&state, std::mem::take(&mut batch), leading, changes).await;
        if journal.send(step).await.is_err() {
            return;
        }
    }
}

async fn sleep(wait: Option<Duration>) {
    match wait {
        Some(wait) => tokio::time::sleep(wait).await,
        None => std::future::pending().await,
    }
}

/// Applies one batch of inputs and the timers due, announces what changed, and returns what
/// is left for the journal writer.
async fn step(
    state: &AppState,
    inputs: Vec<Input>,
    leading: bool,
    mut changes: Vec<Change>,
) -> Journal {
    let mut answers: Vec<Answer> = Vec::new();
    let mut drains = Vec::new();
    let mut reloads = Vec::new();
    let mut refreshes = Vec::new();
    let now = crate::time::now_ms();
    {
        let mut core = lock(&state.alarms.core);
        let core = &mut *core;
        let engine = &mut core.engine;
        // What the publishers' evaluations queued comes first: it happened before this step.
        changes.append(&mut core.pending);
        for input in inputs {
            match input {
                Input::Act(request, answer) => {
                    let result = engine
                        .act(
                            &request.domain,
                            &request.alarm,
                            &request.action.action(),
                            &request.who,
                            request.comment.clone(),
                            now,
                        )
                        .map(|change| {
                            changes.push(change);
                            engine
                                .status(&request.domain, &request.alarm)
                                .expect("the alarm just acted on")
                        });
                    answers.push((answer, result));
                }
                Input::Drain(done) => drains.push(done),
                Input::Reload(domain, done) => reloads.push((domain, done)),
                Input::Refresh(domain, record, done) => refreshes.push((domain, record, done)),
            }
        }
        if leading {
            changes.extend(engine.on_time(now));
        }
    }
    // Several writes to one domain's alarms in one step need one reading of its records, which
    // also takes in every record refreshed meanwhile.
    let mut domains: Vec<&String> = reloads.iter().map(|(d, _)| d).collect();
    domains.sort();
    domains.dedup();
    let mut results = HashMap::new();
    for domain in domains {
        results.insert(domain.clone(), reload(state, domain, &mut changes).await);
    }
    for (domain, record, done) in refreshes {
        let result = match results.get(&domain) {
            Some(reloaded) => copy(reloaded),
            None => refresh(state, &domain, &record, &mut changes).await,
        };
        let _ = done.send(result);
    }
    for (domain, done) in reloads {
        let _ = done.send(copy(&results[&domain]));
    }
    let mut journal = if leading {
        publish::carry_out(state, changes).await
    } else {
        Journal::default()
    };
    journal.answers = answers;
    journal.drains = drains;
    journal
}

fn copy(result: &ApiResult<()>) -> ApiResult<()> {
    match result {
        Ok(()) => Ok(()),
        Err(e) => Err(ApiError::new(e.status, e.message.clone())),
    }
}

/// Applies one record of a domain's definitions, written or deleted.
async fn refresh(
    state: &AppState,
    domain: &str,
    record: &str,
    changes: &mut Vec<Change>,
) -> ApiResult<()> {
    let stored = definition(state, domain, record).await?;
    let now = crate::time::now_ms();
    let mut core = lock(&state.alarms.core);
    let engine = &mut core.engine;
    let made = match stored {
        Some((alarm, unit)) => engine.put(domain, alarm, unit, &enable_value(state), now),
        None => engine.forget(domain, record, now),
    };
    state.alarms.engine_changed(engine);
    changes.extend(made);
    Ok(())
}

/// Re-reads one domain's definitions.
async fn reload(state: &AppState, domain: &str, changes: &mut Vec<Change>) -> ApiResult<()> {
    let alarms = definitions(state, domain).await?;
    let now = crate::time::now_ms();
    let mut core = lock(&state.alarms.core);
    let engine = &mut core.engine;
    changes.extend(engine.set_domain(
        domain,
        alarms,
        Default::default(),
        &enable_value(state),
        now,
    ));
    state.alarms.engine_changed(engine);
    Ok(())
}

//! The evaluating task: values, operators' actions, reloads and timers, taken in order, each
//! step's changes carried out before the next. Only the leading instance evaluates; a
//! follower's task answers reloads and drains, and its engine mirrors the leader's changes.

use super::{definitions, lock, publish, stored_states, Input, Value};
use crate::alarms::condition::Sample;
use crate::alarms::engine::{Change, Engine};
use crate::historian::payload::point_from_payload;
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
    let mut engine = Engine::new(lock(&state.alarms.engine).rules().clone());
    let mut changes = Vec::new();
    for (domain, alarms, kept) in loaded {
        changes.extend(engine.set_domain(&domain, alarms, kept, &enable_value(state), now));
    }
    state.alarms.refresh_watched(&engine);
    *lock(&state.alarms.engine) = engine;
    Ok(changes)
}

/// The last value of an alarm's enable tag.
fn enable_value(state: &AppState) -> impl Fn(&str) -> Option<serde_json::Value> + '_ {
    |tag| state.uns.last_values.get(tag).map(|(_, value)| value)
}

pub(super) async fn run(state: AppState, mut inbox: mpsc::Receiver<Input>) {
    let leadership = state.peers.leadership();
    let mut leading = leadership.is_leader();
    let mut batch = Vec::with_capacity(STEP);
    loop {
        let due = leading
            .then(|| lock(&state.alarms.engine).next_due())
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
        step(&state, std::mem::take(&mut batch), leading, changes).await;
    }
}

async fn sleep(wait: Option<Duration>) {
    match wait {
        Some(wait) => tokio::time::sleep(wait).await,
        None => std::future::pending().await,
    }
}

/// Applies one batch of inputs and the timers due, and carries out what changed.
async fn step(state: &AppState, inputs: Vec<Input>, leading: bool, mut changes: Vec<Change>) {
    let mut answers = Vec::new();
    let mut drains = Vec::new();
    let mut reloads = Vec::new();
    let now = crate::time::now_ms();
    {
        let mut engine = lock(&state.alarms.engine);
        for input in inputs {
            match input {
                Input::Values(values) if leading => {
                    for value in values {
                        changes.extend(evaluate(state, &mut engine, &value, now));
                    }
                }
                Input::Values(_) => {}
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
            }
        }
        if leading {
            changes.extend(engine.on_time(now));
        }
    }
    // Several writes to one domain's alarms in one step need one reading of its records.
    let mut domains: Vec<&String> = reloads.iter().map(|(d, _)| d).collect();
    domains.sort();
    domains.dedup();
    let mut results = HashMap::new();
    for domain in domains {
        results.insert(domain.clone(), reload(state, domain, &mut changes).await);
    }
    for (domain, done) in reloads {
        let result = match &results[&domain] {
            Ok(()) => Ok(()),
            Err(e) => Err(ApiError::new(e.status, e.message.clone())),
        };
        let _ = done.send(result);
    }
    if leading {
        publish::carry_out(state, changes).await;
    }
    for (answer, result) in answers {
        let _ = answer.send(result);
    }
    for done in drains {
        let _ = done.send(());
    }
}

fn evaluate(state: &AppState, engine: &mut Engine, value: &Value, now: i64) -> Vec<Change> {
    let Some(domain) = state.uns.tags.domain_of(&value.topic) else {
        return Vec::new();
    };
    let (ts_ms, value_json, quality) = point_from_payload(&value.payload, value.received_ms);
    let sample = Sample {
        ts_ms,
        value: value_json,
        quality,
    };
    engine.on_value(&domain, &value.topic, &sample, now)
}

/// Re-reads one domain's definitions.
async fn reload(state: &AppState, domain: &str, changes: &mut Vec<Change>) -> ApiResult<()> {
    let alarms = definitions(state, domain).await?;
    let now = crate::time::now_ms();
    let mut engine = lock(&state.alarms.engine);
    changes.extend(engine.set_domain(
        domain,
        alarms,
        Default::default(),
        &enable_value(state),
        now,
    ));
    state.alarms.refresh_watched(&engine);
    Ok(())
}

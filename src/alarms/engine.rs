//! Every domain's alarms, indexed by the tag they watch and the tag that enables them, with
//! their timers (delays, stale tags, shelve expiries) in one ordered set, so a value costs one
//! hash lookup when no alarm watches its tag and a timer tick touches only what is due. The
//! engine is driven by values, time and operators, and answers with the changes to journal,
//! publish and notify; it does no I/O.

use super::condition::{equal, Sample};
use super::definition::Definition;
use super::event::{AlarmEvent, AlarmStatus};
use super::health::{Activity, Health, HealthRules};
use super::state::{Action, AlarmState, StateName};
use crate::historian::format_ms;
use serde_json::Value;
use smallvec::SmallVec;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

/// A state change to journal and announce, with the state to keep (`None`: the alarm is gone,
/// forget its state).
#[derive(Debug, Clone)]
pub struct Change {
    pub event: AlarmEvent,
    pub state: Option<AlarmState>,
}

/// Why an operator's action was refused.
#[derive(Debug, Clone, PartialEq)]
pub enum ActError {
    /// No enabled alarm of that name in the domain.
    NotFound,
    /// The action does not apply to the alarm's state (the sentence says why).
    Conflict(String),
}

struct Slot {
    domain: Arc<str>,
    alarm: Definition,
    unit: Option<String>,
    state: AlarmState,
    /// The time this slot's entry in the timer set is keyed by.
    due: Option<i64>,
}

/// The alarms on one tag: most tags have one or two, kept inline in the map's entry so a
/// watched value reads no other allocation to find them.
type Ids = SmallVec<[usize; 2]>;

/// The alarms one topic's values drive: those watching it, and those it enables.
#[derive(Debug, Clone, Default)]
pub struct Watchers {
    watching: Ids,
    enabled: Ids,
}

#[derive(Default)]
pub struct Engine {
    slots: Vec<Option<Slot>>,
    free: Vec<usize>,
    by_name: HashMap<(Arc<str>, String), usize>,
    /// By the id of the record an alarm was made from (a rename keeps it).
    by_record: HashMap<(Arc<str>, String), usize>,
    /// foldhash: looked up for every watched value.
    by_tag: foldhash::HashMap<String, Ids>,
    by_enable_tag: foldhash::HashMap<String, Ids>,
    timers: BTreeSet<(i64, usize)>,
    activity: HashMap<Arc<str>, Activity>,
    rules: HealthRules,
    /// Counts the alarms added and taken away ([`Engine::watchers`] stay valid meanwhile).
    generation: u64,
}

impl Engine {
    pub fn new(rules: HealthRules) -> Engine {
        Engine {
            rules,
            ..Engine::default()
        }
    }

    pub fn rules(&self) -> &HealthRules {
        &self.rules
    }

    /// Takes a change the leading instance made (this instance follows): the alarm's state as
    /// the leader keeps it, and a raise counted for health.
    pub fn mirror(&mut self, event: &AlarmEvent, state: Option<AlarmState>, at_ms: i64) {
        let key = (Arc::from(event.domain.as_str()), event.alarm.clone());
        let Some(&id) = self.by_name.get(&key) else {
            return;
        };
        let Some(slot) = self.slots[id].as_mut() else {
            return;
        };
        slot.state = state.unwrap_or_else(|| AlarmState::new(at_ms));
        if event.state == StateName::ActiveUnacknowledged {
            let activity = self.activity.entry(slot.domain.clone()).or_default();
            activity.raised(&slot.alarm.name, at_ms, &self.rules);
        }
    }

    /// Replaces `domain`'s alarms with `alarms` (each with its tag's unit; disabled ones are
    /// left out). An alarm that stays keeps its state unless its tag or kind changed;
    /// `stored` gives the state of an alarm new to the engine (read from the store at start);
    /// `enable_value` is an enable tag's last value. Alarms that go away while not normal
    /// come back as changes to normal.
    pub fn set_domain(
        &mut self,
        domain: &str,
        alarms: Vec<(Definition, Option<String>)>,
        mut stored: HashMap<String, AlarmState>,
        enable_value: &dyn Fn(&str) -> Option<Value>,
        now: i64,
    ) -> Vec<Change> {
        let domain: Arc<str> = Arc::from(domain);
        let mut changes = Vec::new();
        let wanted: HashMap<&str, &Definition> = alarms
            .iter()
            .filter(|(a, _)| a.enabled)
            .map(|(a, _)| (a.name.as_str(), a))
            .collect();
        let ours: Vec<usize> = self
            .by_name
            .iter()
            .filter(|((d, _), _)| *d == domain)
            .map(|(_, id)| *id)
            .collect();
        let mut kept: HashMap<String, AlarmState> = HashMap::new();
        for id in ours {
            let slot = self.remove(id);
            let successor = wanted.get(slot.alarm.name.as_str()).copied();
            if let Some(state) = self.retire(slot, successor, &mut changes, now) {
                kept.insert(state.0, state.1);
            }
        }
        for (alarm, unit) in alarms.into_iter().filter(|(a, _)| a.enabled) {
            let state = kept
                .remove(&alarm.name)
                .or_else(|| stored.remove(&alarm.name));
            changes.extend(self.place(&domain, alarm, unit, state, enable_value, now));
        }
        changes
    }

    /// Puts one alarm of `domain` in place: a new one, or a changed or renamed one (the same
    /// record), which keeps its state unless its tag or kind changed. A disabled one goes
    /// away; one that goes away while not normal comes back as a change to normal.
    pub fn put(
        &mut self,
        domain: &str,
        alarm: Definition,
        unit: Option<String>,
        enable_value: &dyn Fn(&str) -> Option<Value>,
        now: i64,
    ) -> Vec<Change> {
        let domain: Arc<str> = Arc::from(domain);
        let mut changes = Vec::new();
        let mut state = None;
        for id in self.ids_of(&domain, &alarm.name, &alarm.record) {
            let slot = self.remove(id);
            let successor = alarm.enabled.then_some(&alarm);
            if let Some((_, kept)) = self.retire(slot, successor, &mut changes, now) {
                state = Some(kept);
            }
        }
        if alarm.enabled {
            changes.extend(self.place(&domain, alarm, unit, state, enable_value, now));
        }
        changes
    }

    /// Takes away the alarm of `domain` whose record is `record` (deleted); one not normal
    /// comes back as a change to normal.
    pub fn forget(&mut self, domain: &str, record: &str, now: i64) -> Vec<Change> {
        let domain: Arc<str> = Arc::from(domain);
        let mut changes = Vec::new();
        for id in self.ids_of(&domain, "", record) {
            let slot = self.remove(id);
            self.retire(slot, None, &mut changes, now);
        }
        changes
    }

    /// The slots of `domain` named `name` or made from `record`.
    fn ids_of(&self, domain: &Arc<str>, name: &str, record: &str) -> Vec<usize> {
        let mut ids: Vec<usize> = self
            .by_name
            .get(&(domain.clone(), name.to_string()))
            .copied()
            .into_iter()
            .collect();
        if !record.is_empty() {
            if let Some(&id) = self.by_record.get(&(domain.clone(), record.to_string())) {
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
        }
        ids
    }

    /// What becomes of a slot taken out because `successor` (if any) replaces it: its name
    /// and state when the successor keeps them (same name, tag and kind), else, when it was
    /// not normal, a change to normal ("removed").
    fn retire(
        &mut self,
        slot: Slot,
        successor: Option<&Definition>,
        changes: &mut Vec<Change>,
        now: i64,
    ) -> Option<(String, AlarmState)> {
        let same = successor.is_some_and(|a| {
            a.name == slot.alarm.name && a.tag == slot.alarm.tag && a.kind == slot.alarm.kind
        });
        if same {
            return Some((slot.alarm.name.clone(), slot.state));
        }
        if slot.state.name() != StateName::Normal {
            let mut state = AlarmState::new(now);
            state.value = slot.state.value.clone();
            let event = event_of(&slot, &state, slot.state.name(), "removed", None, None, now);
            changes.push(Change { event, state: None });
        }
        None
    }

    /// Inserts an enabled alarm with `state` (a new one's when `None`), brought in step with
    /// its enable tag; the change that makes, if any.
    fn place(
        &mut self,
        domain: &Arc<str>,
        alarm: Definition,
        unit: Option<String>,
        state: Option<AlarmState>,
        enable_value: &dyn Fn(&str) -> Option<Value>,
        now: i64,
    ) -> Option<Change> {
        let mut state = state.unwrap_or_else(|| AlarmState::new(now));
        let before = state.name();
        if let Some((tag, value)) = &alarm.enable {
            let enabled = enable_value(tag).is_some_and(|v| equal(&v, value));
            state.set_enabled(&alarm, enabled, now);
        }
        let slot = Slot {
            domain: domain.clone(),
            alarm,
            unit,
            state,
            due: None,
        };
        let id = self.insert(slot);
        self.changed(id, before, "redefined", None, None, now)
    }

    /// Takes a value of `topic`, published in `domain`.
    pub fn on_value(
        &mut self,
        domain: &str,
        topic: &str,
        sample: &Sample,
        now: i64,
    ) -> Vec<Change> {
        match self.watchers(topic) {
            Some(watchers) => self.on_watched(domain, &watchers, sample, now),
            None => Vec::new(),
        }
    }

    /// The alarms a value of `topic` drives, if any: valid while [`Engine::generation`] stays
    /// the same, so a caller can look them up, let the engine go while it reads the value,
    /// and come back with them.
    pub fn watchers(&self, topic: &str) -> Option<Watchers> {
        let watching = self.by_tag.get(topic);
        let enabled = match self.by_enable_tag.is_empty() {
            true => None,
            false => self.by_enable_tag.get(topic),
        };
        if watching.is_none() && enabled.is_none() {
            return None;
        }
        Some(Watchers {
            watching: watching.cloned().unwrap_or_default(),
            enabled: enabled.cloned().unwrap_or_default(),
        })
    }

    /// Changes whenever an alarm is added or taken away.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether no alarm is defined.
    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// [`Engine::on_value`] with the alarms [`Engine::watchers`] found for the value's topic.
    pub fn on_watched(
        &mut self,
        domain: &str,
        watchers: &Watchers,
        sample: &Sample,
        now: i64,
    ) -> Vec<Change> {
        let mut changes = Vec::new();
        for &id in &watchers.watching {
            let Some(slot) = self.slot_in(id, domain) else {
                continue;
            };
            let before = slot.state.name();
            slot.state.on_sample(&slot.alarm, sample, now);
            changes.extend(self.changed(id, before, "", None, None, now));
        }
        for &id in &watchers.enabled {
            let Some(slot) = self.slot_in(id, domain) else {
                continue;
            };
            let before = slot.state.name();
            let enabled = slot
                .alarm
                .enable
                .as_ref()
                .is_some_and(|(_, wanted)| equal(&sample.value, wanted));
            slot.state.set_enabled(&slot.alarm, enabled, now);
            changes.extend(self.changed(id, before, "", None, None, now));
        }
        changes
    }

    /// Runs every timer due by `now`.
    pub fn on_time(&mut self, now: i64) -> Vec<Change> {
        let mut changes = Vec::new();
        while let Some(&(due, id)) = self.timers.first() {
            if due > now {
                break;
            }
            self.timers.pop_first();
            if let Some(slot) = self.slots[id].as_mut() {
                slot.due = None;
                let before = slot.state.name();
                slot.state.on_time(&slot.alarm, now);
                changes.extend(self.changed(id, before, "", None, None, now));
            }
        }
        changes
    }

    /// When the next timer is due.
    pub fn next_due(&self) -> Option<i64> {
        self.timers.first().map(|(due, _)| *due)
    }

    /// An operator's action on alarm `name` of `domain`.
    pub fn act(
        &mut self,
        domain: &str,
        name: &str,
        action: &Action,
        who: &str,
        comment: Option<String>,
        now: i64,
    ) -> Result<Change, ActError> {
        let id = *self
            .by_name
            .get(&(Arc::from(domain), name.to_string()))
            .ok_or(ActError::NotFound)?;
        let slot = self.slots[id].as_mut().ok_or(ActError::NotFound)?;
        let before = slot.state.name();
        slot.state
            .act(&slot.alarm, action, who, now)
            .map_err(ActError::Conflict)?;
        if let (Action::OutOfService, Some(oos)) = (action, slot.state.out_of_service.as_mut()) {
            oos.comment = comment.clone();
        }
        let change = self.changed(id, before, action.name(), Some(who), comment, now);
        Ok(change.unwrap_or_else(|| {
            let slot = self.slots[id].as_ref().expect("the slot just acted on");
            let event = event_of(
                slot,
                &slot.state,
                before,
                action.name(),
                Some(who),
                None,
                now,
            );
            Change {
                event,
                state: Some(slot.state.clone()),
            }
        }))
    }

    /// The alarms of `domain` that are not normal, most urgent first, then newest first.
    pub fn standing(&self, domain: &str) -> Vec<AlarmStatus> {
        let mut list: Vec<(&Slot, AlarmStatus)> = self
            .slots_of(domain)
            .filter(|s| s.state.name() != StateName::Normal)
            .map(|s| (s, AlarmStatus::of(&s.alarm, &s.state, s.unit.as_deref())))
            .collect();
        list.sort_by(|(a, _), (b, _)| {
            b.alarm
                .priority
                .cmp(&a.alarm.priority)
                .then(b.state.since_ms.cmp(&a.state.since_ms))
                .then(a.alarm.name.cmp(&b.alarm.name))
        });
        list.into_iter().map(|(_, status)| status).collect()
    }

    /// Alarm `name` of `domain` as it stands.
    pub fn status(&self, domain: &str, name: &str) -> Option<AlarmStatus> {
        let id = self.by_name.get(&(Arc::from(domain), name.to_string()))?;
        let slot = self.slots[*id].as_ref()?;
        Some(AlarmStatus::of(
            &slot.alarm,
            &slot.state,
            slot.unit.as_deref(),
        ))
    }

    /// How many of `domain`'s alarms wait for acknowledgement.
    #[cfg(test)]
    pub fn unacknowledged(&self, domain: &str) -> usize {
        self.slots_of(domain)
            .filter(|s| s.state.name().needs_acknowledgement())
            .count()
    }

    /// The names of the domains that have alarms.
    pub fn domains(&self) -> Vec<String> {
        let mut domains: Vec<String> = self.by_name.keys().map(|(d, _)| d.to_string()).collect();
        domains.sort();
        domains.dedup();
        domains
    }

    /// `domain`'s alarm system performance at `now`.
    pub fn health(&self, domain: &str, now: i64) -> Health {
        let states: Vec<(&str, StateName, Option<i64>)> = self
            .slots_of(domain)
            .map(|s| (s.alarm.name.as_str(), s.state.name(), s.state.raised_ms))
            .collect();
        let empty = Activity::default();
        let activity = self.activity.get(domain).unwrap_or(&empty);
        Health::measure(&self.rules, activity, &states, now)
    }

    fn slots_of<'a>(&'a self, domain: &'a str) -> impl Iterator<Item = &'a Slot> + 'a {
        self.slots
            .iter()
            .flatten()
            .filter(move |s| &*s.domain == domain)
    }

    fn slot_in(&mut self, id: usize, domain: &str) -> Option<&mut Slot> {
        self.slots[id].as_mut().filter(|s| &*s.domain == domain)
    }

    /// After `slot` was driven: reschedules its timer, and when its state's name changed,
    /// counts a raise and makes the change.
    fn changed(
        &mut self,
        id: usize,
        before: StateName,
        cause: &str,
        who: Option<&str>,
        comment: Option<String>,
        now: i64,
    ) -> Option<Change> {
        self.reschedule(id);
        let slot = self.slots[id].as_mut()?;
        let after = slot.state.name();
        if after == before {
            return None;
        }
        slot.state.since_ms = now;
        if after == StateName::ActiveUnacknowledged {
            let activity = self.activity.entry(slot.domain.clone()).or_default();
            activity.raised(&slot.alarm.name, now, &self.rules);
        }
        let cause = if cause.is_empty() {
            natural_cause(before, after)
        } else {
            cause
        };
        let slot = self.slots[id].as_ref()?;
        let event = event_of(slot, &slot.state, before, cause, who, comment, now);
        Some(Change {
            event,
            state: Some(slot.state.clone()),
        })
    }

    fn reschedule(&mut self, id: usize) {
        let Some(slot) = self.slots[id].as_mut() else {
            return;
        };
        let due = slot.state.due(&slot.alarm);
        if due == slot.due {
            return;
        }
        if let Some(old) = slot.due.take() {
            self.timers.remove(&(old, id));
        }
        if let Some(due) = due {
            self.timers.insert((due, id));
        }
        slot.due = due;
    }

    fn insert(&mut self, slot: Slot) -> usize {
        self.generation += 1;
        let id = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.slots.len() - 1
        });
        self.by_name
            .insert((slot.domain.clone(), slot.alarm.name.clone()), id);
        if !slot.alarm.record.is_empty() {
            self.by_record
                .insert((slot.domain.clone(), slot.alarm.record.clone()), id);
        }
        self.by_tag
            .entry(slot.alarm.tag.clone())
            .or_default()
            .push(id);
        if let Some((tag, _)) = &slot.alarm.enable {
            self.by_enable_tag.entry(tag.clone()).or_default().push(id);
        }
        self.slots[id] = Some(slot);
        self.reschedule(id);
        id
    }

    fn remove(&mut self, id: usize) -> Slot {
        self.generation += 1;
        let slot = self.slots[id].take().expect("a slot listed by name");
        self.by_name
            .remove(&(slot.domain.clone(), slot.alarm.name.clone()));
        self.by_record
            .remove(&(slot.domain.clone(), slot.alarm.record.clone()));
        unlist(&mut self.by_tag, &slot.alarm.tag, id);
        if let Some((tag, _)) = &slot.alarm.enable {
            unlist(&mut self.by_enable_tag, tag, id);
        }
        if let Some(due) = slot.due {
            self.timers.remove(&(due, id));
        }
        self.free.push(id);
        slot
    }
}

fn unlist(index: &mut foldhash::HashMap<String, Ids>, key: &str, id: usize) {
    if let Some(ids) = index.get_mut(key) {
        ids.retain(|i| *i != id);
        if ids.is_empty() {
            index.remove(key);
        }
    }
}

/// What a change the process made is called.
fn natural_cause(before: StateName, after: StateName) -> &'static str {
    match (before, after) {
        (StateName::Shelved, _) => "shelve-expired",
        (StateName::Suppressed, _) => "enabled",
        (_, StateName::Suppressed) => "suppressed",
        (_, StateName::ActiveUnacknowledged) => "raised",
        (_, StateName::Latched) => "latched",
        _ => "cleared",
    }
}

fn event_of(
    slot: &Slot,
    state: &AlarmState,
    previous: StateName,
    cause: &str,
    who: Option<&str>,
    comment: Option<String>,
    now: i64,
) -> AlarmEvent {
    AlarmEvent {
        domain: slot.domain.to_string(),
        alarm: slot.alarm.name.clone(),
        tag: slot.alarm.tag.clone(),
        kind: slot.alarm.kind,
        priority: slot.alarm.priority,
        state: state.name(),
        previous,
        value: state.value.clone(),
        quality: state.quality.clone(),
        unit: slot.unit.clone(),
        message: slot.alarm.render(&state.value, slot.unit.as_deref()),
        at: format_ms(now),
        at_ms: now,
        who: who.map(str::to_string),
        comment,
        cause: cause.to_string(),
    }
}

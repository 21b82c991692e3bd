//! The broker's subscription index: a trie of topic-filter levels that answers "who receives a
//! publish to this topic" without scanning every subscription, and takes a subscribe or an
//! unsubscribe in time proportional to the filter's length (not to the number of subscribers).
//!
//! Each node stands for a filter prefix. An exact level is a child in a map, `+` has its own child
//! slot, and a trailing `#` is not a node at all: its subscribers sit in the `multi` slot of the
//! node of the filter's parent, which is what makes `a/#` also match `a`. Shared subscriptions
//! (`$share/<group>/<filter>`) live at the node of their real filter, one round-robin group per
//! group name.
//!
//! Nothing here recurses over levels: a filter may have tens of thousands of levels (`/` repeated)
//! and the index runs on tokio threads with small stacks, so matching uses a small explicit stack
//! (inline, so it does not allocate for ordinary topics), unsubscribe prunes in two flat passes,
//! and dropping a node drains its subtree iteratively.

use crate::topic::validate_topic_filter;
use indexmap::IndexMap;
use smallvec::SmallVec;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicUsize, Ordering};

#[cfg(test)]
mod tests;

const SHARE_PREFIX: &str = "$share/";

/// Splits `$share/<group>/<filter>` into `(group, filter)`; `Ok(None)` for a filter that is not
/// shared. The group name must be non-empty without `+` or `#` (it cannot hold `/`: the first `/`
/// after it starts the filter), and the filter must be a valid topic filter.
pub fn parse_shared(filter: &str) -> Result<Option<(&str, &str)>, String> {
    let Some(rest) = filter.strip_prefix(SHARE_PREFIX) else {
        return Ok(None);
    };
    let Some((group, inner)) = rest.split_once('/') else {
        return Err(format!(
            "shared subscription `{filter}` needs a topic filter after the group name"
        ));
    };
    if group.is_empty() {
        return Err(format!(
            "shared subscription `{filter}` must name a group after $share/"
        ));
    }
    if group.contains(['+', '#']) {
        return Err(format!(
            "shared subscription `{filter}`: the group name must not contain + or #"
        ));
    }
    validate_topic_filter(inner).map_err(|e| format!("shared subscription `{filter}`: {e}"))?;
    Ok(Some((group, inner)))
}

/// Every subscription of the broker, keyed by filter and then by subscriber `K` (the core's
/// session handle), each carrying a `V` (its options).
pub struct SubscriptionIndex<K, V> {
    root: Node<K, V>,
    len: usize,
}

impl<K: Clone + Eq + Hash, V: Clone> Default for SubscriptionIndex<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Clone + Eq + Hash, V: Clone> SubscriptionIndex<K, V> {
    pub fn new() -> Self {
        SubscriptionIndex {
            root: Node::default(),
            len: 0,
        }
    }

    /// Adds or replaces `key`'s subscription to `filter`, which the caller has validated with
    /// [`validate_topic_filter`] or [`parse_shared`]; returns the previous value if it replaced
    /// one. A `$share/` filter that [`parse_shared`] rejects is taken literally as a plain filter.
    pub fn subscribe(&mut self, filter: &str, key: K, value: V) -> Option<V> {
        let (group, filter) = shared_or_plain(filter);
        let (path, multi) = split_multi(filter);
        let mut node = &mut self.root;
        for level in levels(path) {
            node = node.child_or_insert(level);
        }
        let subscribers = if multi {
            &mut node.multi
        } else {
            &mut node.here
        };
        let old = subscribers.insert(group, key, value);
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    /// Removes `key`'s subscription to `filter` (spelled as it was subscribed) and returns its
    /// value; nodes left without subscribers or children are pruned.
    pub fn unsubscribe(&mut self, filter: &str, key: &K) -> Option<V> {
        let (group, filter) = shared_or_plain(filter);
        let (path, multi) = split_multi(filter);
        let mut node = &mut self.root;
        for level in levels(path) {
            node = node.child_mut(level)?;
        }
        let subscribers = if multi {
            &mut node.multi
        } else {
            &mut node.here
        };
        let old = subscribers.remove(group, key)?;
        self.len -= 1;
        self.prune(path);
        Some(old)
    }

    /// Calls `visit` for every subscription matching the topic name `topic`: every plain one, and
    /// for every shared group whose filter matches, exactly one member, chosen round robin among
    /// the members for which `online` is true, or among all members when none is (so the message
    /// queues for one of them). A subscriber whose several filters match is visited once per
    /// filter; the caller decides how to merge those.
    pub fn matches(&self, topic: &str, online: impl Fn(&K) -> bool, mut visit: impl FnMut(&K, &V)) {
        // Wildcards in the first level of a filter do not match topics starting with `$`.
        let dollar = topic.starts_with('$');
        // (node, the topic after the node's level; None when the topic ends at the node). Each
        // popped frame pushes at most two, so the stack holds at most depth + 1 frames.
        let mut stack: SmallVec<[Frame<'_, '_, K, V>; 16]> = SmallVec::new();
        let root = &self.root;
        let (first, rest) = split_level(topic);
        if !dollar {
            root.multi.visit(&online, &mut visit);
            if let Some(plus) = &root.plus {
                stack.push((plus, rest));
            }
        }
        if let Some(child) = root.children.get(first) {
            stack.push((child, rest));
        }
        while let Some((node, rest)) = stack.pop() {
            // `multi` holds `<node>/#`, which matches the node's own level and everything below.
            node.multi.visit(&online, &mut visit);
            let Some(rest) = rest else {
                node.here.visit(&online, &mut visit);
                continue;
            };
            let (level, rest) = split_level(rest);
            if let Some(plus) = &node.plus {
                stack.push((plus, rest));
            }
            if let Some(child) = node.children.get(level) {
                stack.push((child, rest));
            }
        }
    }

    /// The number of (filter, key) subscriptions.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// After a removal at the end of `path`, cuts off the longest chain of nodes on that path
    /// that now serve nothing. First pass: find the deepest node that is still needed for
    /// something besides the path below it; second pass: remove its path child.
    fn prune(&mut self, path: Option<&str>) {
        let mut keep_depth = 0;
        let mut depth = 0;
        let mut node = &self.root;
        let mut path_levels = levels(path).peekable();
        while let Some(level) = path_levels.next() {
            let Some(child) = node.child(level) else {
                return;
            };
            depth += 1;
            if child.needed_besides(path_levels.peek().copied()) {
                keep_depth = depth;
            }
            node = child;
        }
        if keep_depth == depth {
            return;
        }
        let mut node = &mut self.root;
        for level in levels(path).take(keep_depth) {
            match node.child_mut(level) {
                Some(child) => node = child,
                None => return,
            }
        }
        if let Some(level) = levels(path).nth(keep_depth) {
            node.remove_child(level);
        }
    }

    /// How many trie nodes exist, root included: lets tests see that pruning happened.
    #[cfg(test)]
    fn node_count(&self) -> usize {
        let mut count = 0;
        let mut pending = vec![&self.root];
        while let Some(node) = pending.pop() {
            count += 1;
            pending.extend(node.children.values());
            pending.extend(node.plus.as_deref());
        }
        count
    }
}

type Frame<'n, 't, K, V> = (&'n Node<K, V>, Option<&'t str>);

/// The group and the real filter of a shared filter, or no group and the filter itself.
fn shared_or_plain(filter: &str) -> (Option<&str>, &str) {
    match parse_shared(filter) {
        Ok(Some((group, inner))) => (Some(group), inner),
        Ok(None) | Err(_) => (None, filter),
    }
}

/// Splits off a trailing `#`: `("a/b", true)` for `a/b/#`, `(None, true)` for `#` alone (whose
/// subscribers sit at the root), `(Some("a/b"), false)` for `a/b`. `Some("")` is one empty level.
fn split_multi(filter: &str) -> (Option<&str>, bool) {
    if filter == "#" {
        (None, true)
    } else if let Some(parent) = filter.strip_suffix("/#") {
        (Some(parent), true)
    } else {
        (Some(filter), false)
    }
}

fn levels(path: Option<&str>) -> impl Iterator<Item = &str> {
    path.into_iter().flat_map(|p| p.split('/'))
}

/// The first level of a topic and the rest after its `/`, if there is one.
fn split_level(topic: &str) -> (&str, Option<&str>) {
    match topic.split_once('/') {
        Some((level, rest)) => (level, Some(rest)),
        None => (topic, None),
    }
}

struct Node<K, V> {
    children: HashMap<Box<str>, Node<K, V>>,
    plus: Option<Box<Node<K, V>>>,
    /// Subscribers of this node's filter.
    here: Subscribers<K, V>,
    /// Subscribers of this node's filter followed by `/#` (or of `#` alone at the root).
    multi: Subscribers<K, V>,
}

impl<K, V> Default for Node<K, V> {
    fn default() -> Self {
        Node {
            children: HashMap::new(),
            plus: None,
            here: Subscribers::default(),
            multi: Subscribers::default(),
        }
    }
}

impl<K: Eq + Hash, V> Node<K, V> {
    fn child(&self, level: &str) -> Option<&Node<K, V>> {
        if level == "+" {
            self.plus.as_deref()
        } else {
            self.children.get(level)
        }
    }

    fn child_mut(&mut self, level: &str) -> Option<&mut Node<K, V>> {
        if level == "+" {
            self.plus.as_deref_mut()
        } else {
            self.children.get_mut(level)
        }
    }

    fn child_or_insert(&mut self, level: &str) -> &mut Node<K, V> {
        if level == "+" {
            self.plus.get_or_insert_with(Box::default)
        } else {
            self.children.entry(level.into()).or_default()
        }
    }

    fn remove_child(&mut self, level: &str) {
        if level == "+" {
            self.plus = None;
        } else {
            self.children.remove(level);
        }
    }

    /// Whether the node must stay for a reason other than its child at `next` (the next level of
    /// the path being pruned, None when the node ends the path).
    fn needed_besides(&self, next: Option<&str>) -> bool {
        if !self.here.is_empty() || !self.multi.is_empty() {
            return true;
        }
        match next {
            None => !self.children.is_empty() || self.plus.is_some(),
            Some("+") => !self.children.is_empty(),
            Some(level) => {
                self.plus.is_some()
                    || self.children.len() > usize::from(self.children.contains_key(level))
            }
        }
    }
}

impl<K, V> Drop for Node<K, V> {
    /// Drains the subtree into a flat list instead of letting each level drop the next, which
    /// would recurse once per level.
    fn drop(&mut self) {
        let mut pending: Vec<Node<K, V>> = Vec::new();
        take_children(self, &mut pending);
        while let Some(mut node) = pending.pop() {
            take_children(&mut node, &mut pending);
        }
    }
}

fn take_children<K, V>(node: &mut Node<K, V>, into: &mut Vec<Node<K, V>>) {
    if !node.children.is_empty() {
        into.extend(node.children.drain().map(|(_, child)| child));
    }
    if let Some(plus) = node.plus.take() {
        into.push(*plus);
    }
}

/// The subscribers of one filter: plain ones, and shared groups by group name.
struct Subscribers<K, V> {
    plain: HashMap<K, V>,
    groups: HashMap<Box<str>, Group<K, V>>,
}

impl<K, V> Default for Subscribers<K, V> {
    fn default() -> Self {
        Subscribers {
            plain: HashMap::new(),
            groups: HashMap::new(),
        }
    }
}

impl<K: Eq + Hash, V> Subscribers<K, V> {
    fn is_empty(&self) -> bool {
        self.plain.is_empty() && self.groups.is_empty()
    }

    fn insert(&mut self, group: Option<&str>, key: K, value: V) -> Option<V> {
        match group {
            None => self.plain.insert(key, value),
            Some(group) => self
                .groups
                .entry(group.into())
                .or_default()
                .members
                .insert(key, value),
        }
    }

    /// Removes the subscription, dropping its group when it was the last member.
    fn remove(&mut self, group: Option<&str>, key: &K) -> Option<V> {
        let Some(group) = group else {
            return self.plain.remove(key);
        };
        let members = &mut self.groups.get_mut(group)?.members;
        // swap_remove keeps removal O(1); the order only decides whose turn comes next.
        let old = members.swap_remove(key)?;
        if members.is_empty() {
            self.groups.remove(group);
        }
        Some(old)
    }

    fn visit(&self, online: &impl Fn(&K) -> bool, visit: &mut impl FnMut(&K, &V)) {
        for (key, value) in &self.plain {
            visit(key, value);
        }
        for group in self.groups.values() {
            if let Some((key, value)) = group.choose(online) {
                visit(key, value);
            }
        }
    }
}

/// One shared group at one filter. Members are in an `IndexMap` so that both keyed removal and
/// "the i-th member" for round robin are O(1).
struct Group<K, V> {
    members: IndexMap<K, V>,
    /// Where the next round starts looking; atomic so that matching needs only `&self`.
    next: AtomicUsize,
}

impl<K, V> Default for Group<K, V> {
    fn default() -> Self {
        Group {
            members: IndexMap::new(),
            next: AtomicUsize::new(0),
        }
    }
}

impl<K, V> Group<K, V> {
    /// The first online member from the counter on, or the member at the counter when none is
    /// online. The counter then points past the chosen member, so online members take turns in
    /// order even when offline ones sit between them.
    fn choose(&self, online: &impl Fn(&K) -> bool) -> Option<(&K, &V)> {
        let n = self.members.len();
        if n == 0 {
            return None;
        }
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        for step in 0..n {
            let Some((key, value)) = self.members.get_index(start.wrapping_add(step) % n) else {
                continue;
            };
            if online(key) {
                if step > 0 {
                    self.next.fetch_add(step, Ordering::Relaxed);
                }
                return Some((key, value));
            }
        }
        self.members.get_index(start % n)
    }
}

//! The tag-tree model: one node per topic level (an arena indexed by [`NodeId`]), each topic's
//! last value with its bookkeeping (update count, rate over a sliding window, a ring of recent
//! numeric values for the sparkline, when it last changed, where it came from), expand/collapse
//! state and a substring filter.
//!
//! Values come from MQTT (live or retained) and from the server's last values (a snapshot read
//! after each subscription is acknowledged). An older value never replaces a newer one: after a
//! [`Tree::resync`] the snapshot fills every tag except those a live message reached first, and
//! a retained replay (stored no later than the snapshot was read) does not replace the snapshot.
//!
//! Cost model: a message costs one hash lookup of its topic (plus O(levels) the first time a
//! topic is seen). The list of visible rows is rebuilt only when the structure, an expansion or
//! the filter changes, and then lazily, once, by the next caller of [`Tree::rows`]; so a frame
//! never does work proportional to the number of messages received.

use super::payload::Payload;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::{Duration, Instant};

/// How many recent numeric values a tag keeps for its sparkline.
pub const SPARK_LEN: usize = 60;
/// Width of the sliding window the update rate is measured over, in seconds.
pub const RATE_WINDOW_SECS: u64 = 10;
/// How long a tag stays highlighted after its value changed.
pub const HIGHLIGHT: Duration = Duration::from_millis(1500);

/// Index of a node in the tree's arena; stable until [`Tree::clear`].
pub type NodeId = usize;

const ROOT: NodeId = 0;
const HIDDEN: usize = usize::MAX;

/// Per-second update counts over the last [`RATE_WINDOW_SECS`] seconds.
#[derive(Debug, Clone, Default)]
struct Rate {
    secs: [u64; RATE_WINDOW_SECS as usize],
    counts: [u32; RATE_WINDOW_SECS as usize],
}

impl Rate {
    fn record(&mut self, sec: u64) {
        let i = (sec % RATE_WINDOW_SECS) as usize;
        if self.secs[i] != sec {
            self.secs[i] = sec;
            self.counts[i] = 0;
        }
        self.counts[i] = self.counts[i].saturating_add(1);
    }

    /// Updates per second over the window ending at `sec`, counting only the seconds since
    /// `first_sec` while the tag is younger than the window.
    fn per_sec(&self, sec: u64, first_sec: u64) -> f64 {
        let total: u64 = self
            .secs
            .iter()
            .zip(self.counts)
            .filter(|(&s, _)| s <= sec && s + RATE_WINDOW_SECS > sec)
            .map(|(_, c)| u64::from(c))
            .sum();
        let span = (sec.saturating_sub(first_sec) + 1).min(RATE_WINDOW_SECS);
        total as f64 / span as f64
    }
}

/// Where a tag's value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A message published while subscribed.
    Live,
    /// A retained message replayed on subscribe.
    Retained,
    /// The server's last values.
    Snapshot,
}

/// The last value of one topic and its bookkeeping (retained deliveries and the server's last
/// values count as updates but not towards the rate).
#[derive(Debug, Clone)]
pub struct Tag {
    pub payload: Payload,
    /// Payload size in bytes.
    pub size: usize,
    pub origin: Origin,
    /// Whether the value arrived since the last [`Tree::resync`].
    synced: bool,
    /// The message's QoS (0 for the server's last values).
    pub qos: u8,
    pub updated: Instant,
    /// When the payload last differed from the previous one (or first arrived).
    pub changed: Instant,
    pub count: u64,
    first_sec: u64,
    rate: Rate,
    spark: VecDeque<f64>,
}

impl Tag {
    pub fn retained(&self) -> bool {
        self.origin == Origin::Retained
    }

    /// Whether the value changed recently enough to be highlighted.
    pub fn is_fresh(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.changed) < HIGHLIGHT
    }

    /// The recent numeric values, oldest first.
    pub fn spark(&self) -> &VecDeque<f64> {
        &self.spark
    }
}

/// One topic level.
#[derive(Debug, Clone)]
pub struct Node {
    /// This level's name (may be empty: `a//b` has an empty middle level).
    pub name: String,
    /// The topic up to and including this level.
    pub path: String,
    pub parent: Option<NodeId>,
    /// 0 for top-level nodes.
    pub depth: usize,
    pub expanded: bool,
    /// Present once a message arrived on exactly this topic.
    pub tag: Option<Tag>,
    /// Topics with a value in this subtree, this node included.
    pub topics: usize,
    children: BTreeMap<String, NodeId>,
}

impl Node {
    fn new(name: &str, path: String, parent: Option<NodeId>, depth: usize) -> Node {
        Node {
            name: name.to_string(),
            path,
            parent,
            depth,
            expanded: true,
            tag: None,
            topics: 0,
            children: BTreeMap::new(),
        }
    }

    pub fn has_children(&self) -> bool {
        !self.children.is_empty()
    }
}

/// The whole tree, its filter and its cached visible rows.
#[derive(Debug)]
pub struct Tree {
    nodes: Vec<Node>,
    by_topic: HashMap<String, NodeId>,
    epoch: Instant,
    filter: String,
    rows: Vec<NodeId>,
    /// Row index of every node, [`HIDDEN`] when not visible.
    row_of: Vec<usize>,
    dirty: bool,
    messages: u64,
}

impl Tree {
    /// An empty tree; `epoch` anchors the per-second rate buckets.
    pub fn new(epoch: Instant) -> Tree {
        Tree {
            nodes: vec![Node::new("", String::new(), None, 0)],
            by_topic: HashMap::new(),
            epoch,
            filter: String::new(),
            rows: Vec::new(),
            row_of: vec![HIDDEN],
            dirty: true,
            messages: 0,
        }
    }

    /// Records a message on `topic`; returns the topic's node.
    pub fn update(
        &mut self,
        topic: &str,
        bytes: &[u8],
        retained: bool,
        qos: u8,
        now: Instant,
    ) -> NodeId {
        self.messages += 1;
        let origin = if retained {
            Origin::Retained
        } else {
            Origin::Live
        };
        let id = self.node_of(topic);
        let newer_known = self.nodes[id]
            .tag
            .as_ref()
            .is_some_and(|t| retained && t.synced && t.origin == Origin::Snapshot);
        if !newer_known {
            self.set(id, bytes, origin, qos, now, now);
        }
        id
    }

    /// Takes a value of the server's last values, `age` old, unless a live message reached
    /// the tag since the last [`Tree::resync`] (it is as new or newer); true when taken.
    pub fn seed(&mut self, topic: &str, bytes: &[u8], age: Duration, now: Instant) -> bool {
        let id = self.node_of(topic);
        let newer_known = self.nodes[id]
            .tag
            .as_ref()
            .is_some_and(|t| t.synced && t.origin == Origin::Live);
        if newer_known {
            return false;
        }
        let at = now.checked_sub(age).unwrap_or(now);
        self.set(id, bytes, Origin::Snapshot, 0, at, now);
        true
    }

    /// Marks every value as older than whatever arrives from now on: called when a
    /// subscription is acknowledged, before the server's last values are read again.
    pub fn resync(&mut self) {
        for tag in self.nodes.iter_mut().filter_map(|n| n.tag.as_mut()) {
            tag.synced = false;
        }
    }

    fn node_of(&mut self, topic: &str) -> NodeId {
        match self.by_topic.get(topic) {
            Some(&id) => id,
            None => self.insert_path(topic),
        }
    }

    /// Sets a node's value, received `at` (as seen at `now`).
    fn set(
        &mut self,
        id: NodeId,
        bytes: &[u8],
        origin: Origin,
        qos: u8,
        at: Instant,
        now: Instant,
    ) {
        let sec = now.saturating_duration_since(self.epoch).as_secs();
        let payload = Payload::parse(bytes);
        let number = payload.number();
        let fresh_tag = self.nodes[id].tag.is_none();
        let tag = self.nodes[id].tag.get_or_insert_with(|| Tag {
            payload: Payload::Binary(Vec::new()),
            size: 0,
            origin,
            synced: true,
            qos,
            updated: at,
            changed: at,
            count: 0,
            first_sec: sec,
            rate: Rate::default(),
            spark: VecDeque::with_capacity(SPARK_LEN),
        });
        if fresh_tag || tag.payload != payload {
            tag.changed = at;
        }
        tag.payload = payload;
        tag.size = bytes.len();
        tag.origin = origin;
        tag.synced = true;
        tag.qos = qos;
        tag.updated = at;
        tag.count += 1;
        // Only live messages say how often a tag is updated: the others replay older values.
        if origin == Origin::Live {
            tag.rate.record(sec);
        }
        if let Some(n) = number {
            if tag.spark.len() == SPARK_LEN {
                tag.spark.pop_front();
            }
            tag.spark.push_back(n);
        }
        if fresh_tag {
            let mut cursor = Some(id);
            while let Some(n) = cursor {
                self.nodes[n].topics += 1;
                cursor = self.nodes[n].parent;
            }
        }
    }

    /// Creates the nodes of `topic` that do not exist yet: O(levels).
    fn insert_path(&mut self, topic: &str) -> NodeId {
        let mut id = ROOT;
        for (depth, level) in topic.split('/').enumerate() {
            id = match self.nodes[id].children.get(level) {
                Some(&child) => child,
                None => {
                    let path = if depth == 0 {
                        level.to_string()
                    } else {
                        format!("{}/{level}", self.nodes[id].path)
                    };
                    let child = self.nodes.len();
                    self.nodes.push(Node::new(level, path, Some(id), depth));
                    self.row_of.push(HIDDEN);
                    self.nodes[id].children.insert(level.to_string(), child);
                    self.dirty = true;
                    child
                }
            };
        }
        self.by_topic.insert(topic.to_string(), id);
        id
    }

    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id]
    }

    /// The node of a topic that has received a message.
    #[cfg(test)]
    pub fn find(&self, topic: &str) -> Option<NodeId> {
        self.by_topic.get(topic).copied()
    }

    /// Topics that have a value.
    pub fn topic_count(&self) -> usize {
        self.by_topic.len()
    }

    /// Messages recorded since the start or the last [`Tree::clear`].
    pub fn message_count(&self) -> u64 {
        self.messages
    }

    /// Updates per second of a node's tag over the sliding window ending at `now`.
    pub fn rate(&self, id: NodeId, now: Instant) -> f64 {
        let sec = now.saturating_duration_since(self.epoch).as_secs();
        self.nodes[id]
            .tag
            .as_ref()
            .map_or(0.0, |t| t.rate.per_sec(sec, t.first_sec))
    }

    pub fn set_expanded(&mut self, id: NodeId, expanded: bool) {
        if id != ROOT && self.nodes[id].expanded != expanded {
            self.nodes[id].expanded = expanded;
            self.dirty = true;
        }
    }

    pub fn toggle(&mut self, id: NodeId) {
        let expanded = self.nodes[id].expanded;
        self.set_expanded(id, !expanded);
    }

    /// The first child in display order.
    pub fn first_child(&self, id: NodeId) -> Option<NodeId> {
        self.nodes[id].children.values().next().copied()
    }

    /// The parent, unless it is the invisible root.
    pub fn parent(&self, id: NodeId) -> Option<NodeId> {
        self.nodes[id].parent.filter(|&p| p != ROOT)
    }

    /// The case-insensitive substring the rows are filtered by ("" = no filter).
    pub fn filter(&self) -> &str {
        &self.filter
    }

    /// Shows only the nodes whose topic contains `filter` (case-insensitive), with their
    /// ancestors.
    pub fn set_filter(&mut self, filter: &str) {
        let filter = filter.to_lowercase();
        if filter != self.filter {
            self.filter = filter;
            self.dirty = true;
        }
    }

    /// Forgets every topic (the filter stays).
    pub fn clear(&mut self) {
        let filter = std::mem::take(&mut self.filter);
        *self = Tree::new(self.epoch);
        self.filter = filter;
    }

    /// The visible rows in display order, rebuilt here if anything structural changed.
    pub fn rows(&mut self) -> &[NodeId] {
        if self.dirty {
            self.rebuild();
        }
        &self.rows
    }

    /// The row a node is shown on, if visible.
    pub fn row_of(&mut self, id: NodeId) -> Option<usize> {
        if self.dirty {
            self.rebuild();
        }
        self.row_of.get(id).copied().filter(|&r| r != HIDDEN)
    }

    fn rebuild(&mut self) {
        let keep: Option<Vec<bool>> = (!self.filter.is_empty()).then(|| {
            let mut keep = vec![false; self.nodes.len()];
            for (id, node) in self.nodes.iter().enumerate().skip(1) {
                if keep[id] || !node.path.to_lowercase().contains(&self.filter) {
                    continue;
                }
                let mut cursor = Some(id);
                while let Some(n) = cursor {
                    if keep[n] {
                        break;
                    }
                    keep[n] = true;
                    cursor = self.nodes[n].parent;
                }
            }
            keep
        });
        self.rows.clear();
        self.row_of.iter_mut().for_each(|r| *r = HIDDEN);
        let mut stack: Vec<NodeId> = self.nodes[ROOT].children.values().rev().copied().collect();
        while let Some(id) = stack.pop() {
            if keep.as_ref().is_some_and(|k| !k[id]) {
                continue;
            }
            self.row_of[id] = self.rows.len();
            self.rows.push(id);
            if self.nodes[id].expanded {
                stack.extend(self.nodes[id].children.values().rev().copied());
            }
        }
        self.dirty = false;
    }
}

#[cfg(test)]
#[path = "tree_tests.rs"]
mod tests;

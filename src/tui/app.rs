//! The monitor's state apart from the terminal: the tree, the selection and scroll position,
//! the modes (filter input, pause, help), the connection state, and what the history thread
//! should fetch next (the server's last values after each acknowledged subscription). Key
//! handling lives here so it can be tested without a terminal.

use super::history::{AlarmCount, HistoryEvent, HistoryRequest, Trend};
use super::mqtt::{ConnState, MqttEvent};
use super::snapshot::LastValue;
use super::tree::{NodeId, Tree};
use crate::model::LinkBrief;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use std::collections::{HashSet, VecDeque};
use std::time::{Duration, Instant};

/// Messages kept while paused; older ones are dropped past this.
pub const PAUSE_QUEUE: usize = 100_000;
/// How often the selected tag's historian trend is fetched again.
const TREND_REFRESH: Duration = Duration::from_secs(15);
/// How often the list of historized tags is fetched again.
const HISTORIZED_REFRESH: Duration = Duration::from_secs(30);
/// How often the upstreams' states are read.
const UPSTREAMS_REFRESH: Duration = Duration::from_secs(2);
/// How often the alarms waiting for acknowledgement are counted: an operator glancing at the
/// bar should not see a raised alarm late, and the server answers from memory.
const ALARMS_REFRESH: Duration = Duration::from_secs(1);

/// What the pause holds back, in the order it arrived (so an older value never lands last).
#[derive(Debug, Clone)]
enum Held {
    Mqtt(MqttEvent),
    LastValues(Vec<LastValue>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Normal,
    /// Typing a filter after `/`.
    Filter,
}

/// The historian trend of one topic, as far as it has been fetched.
#[derive(Debug, Clone)]
pub enum TrendState {
    Loading,
    Ready(Trend),
    Failed(String),
}

#[derive(Debug, Clone)]
pub struct TrendView {
    pub topic: String,
    pub state: TrendState,
    /// When it was requested (or last answered).
    pub at: Instant,
    pending: bool,
}

pub struct App {
    pub tree: Tree,
    pub selected: Option<NodeId>,
    /// Row of the selection (kept when the selected node disappears).
    pub row: usize,
    /// First row shown.
    pub offset: usize,
    /// Rows the tree pane showed in the last frame.
    pub viewport: usize,
    pub mode: Mode,
    pub filter_input: String,
    pub paused: bool,
    queued: VecDeque<Held>,
    pub dropped: u64,
    pub help: bool,
    pub conn: ConnState,
    /// Where the broker is (`mqtt://…` or `ws://…`) and the subscription filter.
    pub endpoint: String,
    pub subscription: String,
    pub historized: HashSet<String>,
    pub historized_error: Option<String>,
    historized_at: Option<Instant>,
    /// The domain's upstreams, for the status bar (empty when there are none or no rights).
    pub upstreams: Vec<LinkBrief>,
    /// The domain's connectors, for the status bar (empty when there are none or no rights).
    pub connectors: Vec<LinkBrief>,
    upstreams_at: Option<Instant>,
    /// The domain's alarms waiting for acknowledgement (`None`: not readable, no rights).
    pub alarms: Option<AlarmCount>,
    alarms_at: Option<Instant>,
    /// The server's last values are to be read (the subscription was just acknowledged).
    last_values_due: bool,
    /// Why they could not be read, if they could not.
    pub last_values_error: Option<String>,
    pub trend: Option<TrendView>,
    pub quit: bool,
}

impl App {
    pub fn new(endpoint: String, subscription: String, now: Instant) -> App {
        App {
            tree: Tree::new(now),
            selected: None,
            row: 0,
            offset: 0,
            viewport: 20,
            mode: Mode::Normal,
            filter_input: String::new(),
            paused: false,
            queued: VecDeque::new(),
            dropped: 0,
            help: false,
            conn: ConnState::Connecting,
            endpoint,
            subscription,
            historized: HashSet::new(),
            historized_error: None,
            historized_at: None,
            upstreams: Vec::new(),
            connectors: Vec::new(),
            upstreams_at: None,
            alarms: None,
            alarms_at: None,
            last_values_due: false,
            last_values_error: None,
            trend: None,
            quit: false,
        }
    }

    /// Applies one event of the MQTT thread (queued instead while paused).
    pub fn on_mqtt(&mut self, event: MqttEvent, now: Instant) {
        match event {
            MqttEvent::State(state) => self.conn = state,
            MqttEvent::Subscribed => {
                // Asked for at once, paused or not: the answer queues behind the resync.
                self.last_values_due = true;
                self.apply(Held::Mqtt(MqttEvent::Subscribed), now);
            }
            message => self.apply(Held::Mqtt(message), now),
        }
    }

    /// Applies a change to the tree, or queues it while paused.
    fn apply(&mut self, held: Held, now: Instant) {
        if self.paused {
            if self.queued.len() == PAUSE_QUEUE {
                self.queued.pop_front();
                self.dropped += 1;
            }
            self.queued.push_back(held);
            return;
        }
        match held {
            Held::Mqtt(MqttEvent::Subscribed) => self.tree.resync(),
            Held::Mqtt(MqttEvent::Message {
                topic,
                payload,
                retain,
                qos,
            }) => {
                self.tree.update(&topic, &payload, retain, qos, now);
            }
            Held::Mqtt(MqttEvent::State(_)) => {}
            Held::LastValues(values) => {
                for value in values {
                    self.tree.seed(&value.topic, &value.payload, value.age, now);
                }
            }
        }
    }

    /// Messages waiting for the pause to end.
    pub fn queued(&self) -> usize {
        self.queued.len()
    }

    pub fn on_history(&mut self, event: HistoryEvent, now: Instant) {
        match event {
            HistoryEvent::LastValues(Ok(values)) => {
                self.last_values_error = None;
                self.apply(Held::LastValues(values), now);
            }
            // The tree still follows MQTT; the status bar says what is missing.
            HistoryEvent::LastValues(Err(error)) => self.last_values_error = Some(error),
            HistoryEvent::Historized(Ok(list)) => {
                self.historized = list.into_iter().collect();
                self.historized_error = None;
            }
            HistoryEvent::Historized(Err(error)) => self.historized_error = Some(error),
            HistoryEvent::Upstreams(list) => self.upstreams = list.unwrap_or_default(),
            HistoryEvent::Connectors(list) => self.connectors = list.unwrap_or_default(),
            HistoryEvent::Alarms(count) => self.alarms = count,
            HistoryEvent::Trend { topic, result, at } => {
                if let Some(view) = self.trend.as_mut().filter(|v| v.topic == topic) {
                    view.state = match result {
                        Ok(trend) => TrendState::Ready(trend),
                        Err(error) => TrendState::Failed(error),
                    };
                    view.at = at;
                    view.pending = false;
                }
            }
        }
    }

    /// The topic of the selected node, if it has a value.
    pub fn selected_topic(&self) -> Option<&str> {
        let id = self.selected?;
        let node = self.tree.node(id);
        node.tag.as_ref().map(|_| node.path.as_str())
    }

    /// What the history thread should fetch now: the server's last values when a subscription
    /// was acknowledged, the historized list, links' states and alarm count periodically, and the selected tag's trend when it
    /// is historized and not fresh.
    pub fn history_due(&mut self, now: Instant) -> Vec<HistoryRequest> {
        let mut due = Vec::new();
        if std::mem::take(&mut self.last_values_due) {
            due.push(HistoryRequest::LastValues(self.subscription.clone()));
        }
        if self
            .historized_at
            .is_none_or(|at| now.duration_since(at) >= HISTORIZED_REFRESH)
        {
            self.historized_at = Some(now);
            due.push(HistoryRequest::Historized);
        }
        if self
            .upstreams_at
            .is_none_or(|at| now.duration_since(at) >= UPSTREAMS_REFRESH)
        {
            self.upstreams_at = Some(now);
            due.push(HistoryRequest::Upstreams);
        }
        if self
            .alarms_at
            .is_none_or(|at| now.duration_since(at) >= ALARMS_REFRESH)
        {
            self.alarms_at = Some(now);
            due.push(HistoryRequest::Alarms);
        }
        let topic = self
            .selected_topic()
            .filter(|t| self.historized.contains(*t))
            .map(str::to_string);
        let Some(topic) = topic else {
            self.trend = None;
            return due;
        };
        let stale = match &self.trend {
            Some(view) if view.topic == topic => {
                !view.pending && now.duration_since(view.at) >= TREND_REFRESH
            }
            _ => {
                self.trend = Some(TrendView {
                    topic: topic.clone(),
                    state: TrendState::Loading,
                    at: now,
                    pending: false,
                });
                true
            }
        };
        if stale {
            if let Some(view) = self.trend.as_mut() {
                view.pending = true;
                view.at = now;
            }
            due.push(HistoryRequest::Trend(topic));
        }
        due
    }

    /// Re-anchors the selection on the current rows: keeps the selected node if visible, else
    /// selects whatever is now on its row.
    pub fn sync_selection(&mut self) {
        let len = self.tree.rows().len();
        if len == 0 {
            self.selected = None;
            self.row = 0;
            return;
        }
        match self.selected.and_then(|id| self.tree.row_of(id)) {
            Some(row) => self.row = row,
            None => {
                self.row = self.row.min(len - 1);
                self.selected = Some(self.tree.rows()[self.row]);
            }
        }
    }

    fn select_row(&mut self, row: usize) {
        let rows = self.tree.rows();
        if rows.is_empty() {
            return;
        }
        let row = row.min(rows.len() - 1);
        self.selected = Some(rows[row]);
        self.row = row;
    }

    fn select_node(&mut self, id: NodeId) {
        self.selected = Some(id);
        self.sync_selection();
    }

    /// Handles one key press.
    pub fn on_key(&mut self, key: KeyEvent) {
        if key.kind == KeyEventKind::Release {
            return;
        }
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            self.quit = true;
            return;
        }
        self.sync_selection();
        if self.mode == Mode::Filter {
            self.filter_key(key.code);
            return;
        }
        if self.help {
            self.help = false;
            if key.code != KeyCode::Char('q') {
                return;
            }
        }
        let page = self.viewport.max(1);
        match key.code {
            KeyCode::Char('q') => self.quit = true,
            KeyCode::Up | KeyCode::Char('k') => self.select_row(self.row.saturating_sub(1)),
            KeyCode::Down | KeyCode::Char('j') => self.select_row(self.row + 1),
            KeyCode::PageUp => self.select_row(self.row.saturating_sub(page)),
            KeyCode::PageDown => self.select_row(self.row + page),
            KeyCode::Home | KeyCode::Char('g') => self.select_row(0),
            KeyCode::End | KeyCode::Char('G') => self.select_row(usize::MAX),
            KeyCode::Left | KeyCode::Char('h') => self.left(),
            KeyCode::Right | KeyCode::Char('l') => self.right(),
            KeyCode::Enter | KeyCode::Char(' ') => {
                if let Some(id) = self.selected {
                    self.tree.toggle(id);
                }
            }
            KeyCode::Char('/') => {
                self.mode = Mode::Filter;
                self.filter_input = self.tree.filter().to_string();
            }
            KeyCode::Esc => {
                self.filter_input.clear();
                self.tree.set_filter("");
            }
            KeyCode::Char('p') => self.toggle_pause(),
            KeyCode::Char('c') => {
                self.tree.clear();
                self.queued.clear();
                self.selected = None;
                self.row = 0;
                self.offset = 0;
                self.trend = None;
            }
            KeyCode::Char('?') => self.help = true,
            _ => {}
        }
        self.sync_selection();
    }

    fn filter_key(&mut self, code: KeyCode) {
        match code {
            KeyCode::Enter => self.mode = Mode::Normal,
            KeyCode::Esc => {
                self.mode = Mode::Normal;
                self.filter_input.clear();
            }
            KeyCode::Backspace => {
                self.filter_input.pop();
            }
            KeyCode::Char(c) => self.filter_input.push(c),
            _ => return,
        }
        self.tree.set_filter(&self.filter_input);
        self.sync_selection();
    }

    /// Collapses the selected node, or moves to its parent when there is nothing to collapse.
    fn left(&mut self) {
        let Some(id) = self.selected else { return };
        let node = self.tree.node(id);
        if node.expanded && node.has_children() {
            self.tree.set_expanded(id, false);
        } else if let Some(parent) = self.tree.parent(id) {
            self.select_node(parent);
        }
    }

    /// Expands the selected node, or moves to its first child when already expanded.
    fn right(&mut self) {
        let Some(id) = self.selected else { return };
        let node = self.tree.node(id);
        if !node.has_children() {
            return;
        }
        if !node.expanded {
            self.tree.set_expanded(id, true);
        } else if let Some(child) = self.tree.first_child(id) {
            if self.tree.row_of(child).is_some() {
                self.select_node(child);
            }
        }
    }

    fn toggle_pause(&mut self) {
        self.paused = !self.paused;
        if !self.paused {
            let now = Instant::now();
            for held in std::mem::take(&mut self.queued) {
                self.apply(held, now);
            }
        }
    }

    /// Moves the scroll offset so the selected row is inside a viewport of `height` rows.
    pub fn scroll_to_selection(&mut self, height: usize) {
        self.viewport = height;
        let len = self.tree.rows().len();
        if height == 0 {
            return;
        }
        if self.row < self.offset {
            self.offset = self.row;
        } else if self.row >= self.offset + height {
            self.offset = self.row + 1 - height;
        }
        self.offset = self.offset.min(len.saturating_sub(height));
    }
}

#[cfg(test)]
#[path = "app_tests.rs"]
mod tests;

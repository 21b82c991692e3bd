//! Historian ingest. A value whose publisher waits for "stored" ([`HistorianWriter::commit`])
//! is appended to the journal by the publisher's own task, one `write` under a lock, and is
//! stored when that returns: nothing crosses a thread, nothing waits for a batch. Values then
//! wait in memory, and one writer thread folds them into their series (and raises the
//! journal's mark) in one transaction at most [`FOLD_DURABLE_EVERY`] after the first of them
//! arrived, or sooner when [`FOLD_DURABLE_AT`] are waiting, a reader asks, or the server
//! stops. Values nobody waits for ([`HistorianWriter::record`], QoS 0) skip the journal and are
//! folded at most [`FOLD_EVERY`] after the first of them arrived (or at [`FOLD_AT`]), as they
//! are safe nowhere else.
//!
//! Why journaled values wait longer: a fold writes every page it touches, and a series' newest
//! rows share a page. A gateway's 12,000 tags changing once a second (bench/connectors.sh)
//! touched one page per value when folded every 50 ms, and the fold took half of svc's CPU;
//! folded every 4 s, each page takes about four values, sorted by series. On a store other
//! instances read (PostgreSQL), journaled values keep the 50 ms: those readers cannot make
//! this writer fold. Within a series, the values of one fold keep their arrival order per
//! durability; two values of one series with the same timestamp, one journaled and one not,
//! may be stored in either order.
//!
//! Readers call [`HistorianWriter::settle`] first, so every acknowledged value is readable.
//! Memory stays bounded: once [`MAX_PENDING`] values nobody waits for, or
//! [`MAX_PENDING_DURABLE`] journaled ones, wait, their publishers wait for the next fold.

use super::journal::{Journal, NextFile, Retired};
use super::sealer::Sealer;
use crate::store::{HistoryWrite, Store};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::{oneshot, Notify};

/// How long values nobody waits for (not journaled) may wait in memory before they are folded.
pub const FOLD_EVERY: Duration = Duration::from_millis(50);
/// How long journaled values may wait in memory before they are folded into their series.
pub const FOLD_DURABLE_EVERY: Duration = Duration::from_secs(4);
/// Waiting values nobody waits for that make the writer fold at once.
pub const FOLD_AT: usize = 10_000;
/// Waiting values nobody waits for beyond which their publishers wait for a fold (and, while
/// folding fails, for the store to come back). It also keeps a QoS 0 burst from running far
/// ahead of its subscribers: at 150,000, bench/broker.sh's fan-in dropped deliveries to its
/// slow subscriber that it never dropped at 50,000.
pub const MAX_PENDING: usize = 50_000;
/// Waiting journaled values that make the writer fold at once (4 s of 12,000 values/s fit).
pub const FOLD_DURABLE_AT: usize = 60_000;
/// Waiting journaled values beyond which their publishers wait for a fold.
pub const MAX_PENDING_DURABLE: usize = 150_000;
const RETRY_AFTER: Duration = Duration::from_millis(500);
/// Blocks closed per round of the writer thread, between folds.
const SEAL_BUDGET: usize = 8;
/// While values arrive faster than folds take them, blocks close at most this often: a
/// burst (a gateway's store-and-forward, a bench) is folded at full speed and its rows close
/// into blocks once it has passed.
const SEAL_IN_A_BURST_EVERY: Duration = Duration::from_secs(1);

/// A value could not be stored (the writer stopped, or the journal could not be written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotRecorded(pub &'static str);

impl std::fmt::Display for NotRecorded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

#[derive(Clone)]
pub struct HistorianWriter {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    /// How long journaled values may wait: [`FOLD_DURABLE_EVERY`], or [`FOLD_EVERY`] on a
    /// store other instances read (they cannot make this writer fold).
    durable_every: Duration,
    /// Wakes the writer thread.
    wake: Condvar,
    /// Wakes publishers waiting for room.
    room: Notify,
}

/// Values of one durability waiting to be folded, in arrival order.
struct Waiting {
    values: Vec<HistoryWrite>,
    /// When the oldest of them arrived.
    since: Option<Instant>,
    /// How many make the writer fold at once.
    fold_at: usize,
    /// How many make publishers wait.
    max: usize,
}

impl Waiting {
    fn new(fold_at: usize, max: usize) -> Waiting {
        Waiting {
            values: Vec::new(),
            since: None,
            fold_at,
            max,
        }
    }

    /// Whether `more` values fit (a batch larger than the limit goes in when none wait, so it
    /// cannot wait forever).
    fn has_room(&self, more: usize) -> bool {
        self.values.is_empty() || self.values.len() + more <= self.max
    }

    fn full(&self) -> bool {
        self.values.len() >= self.fold_at
    }

    fn due_at(&self, every: Duration) -> Option<Instant> {
        self.since.map(|since| since + every)
    }

    fn due(&self, every: Duration, now: Instant) -> bool {
        self.due_at(every).is_some_and(|at| at <= now)
    }

    /// Moves the values to the end of `into`.
    fn take_into(&mut self, into: &mut Vec<HistoryWrite>) {
        if into.is_empty() {
            std::mem::swap(into, &mut self.values);
        } else {
            into.append(&mut self.values);
        }
        self.since = None;
    }
}

struct State {
    journal: Journal,
    /// Values nobody waits for.
    volatile: Waiting,
    /// Journaled values.
    durable: Waiting,
    /// The last journal entry among `durable`.
    durable_upto: Option<u64>,
    settling: Vec<oneshot::Sender<bool>>,
    stop: Option<oneshot::Sender<()>>,
    stopped: bool,
}

/// What one fold takes from the shared state.
struct Fold {
    values: Vec<HistoryWrite>,
    upto: Option<u64>,
    retired: Option<Retired>,
}

impl HistorianWriter {
    /// Replays what a crash left in the journal and starts the writer thread.
    /// Hot rows close into a block once full, or once their tag has had no new value for
    /// `seal_idle`.
    pub fn start(store: Store, seal_idle: Duration) -> std::io::Result<HistorianWriter> {
        let folded = store.journal_folded().map_err(std::io::Error::other)?;
        let (journal, replay) = Journal::open(&journal_base(&store), folded)?;
        if !replay.values.is_empty() {
            tracing::info!(
                values = replay.values.len(),
                "replaying the historian journal"
            );
        }
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                journal,
                volatile: Waiting::new(FOLD_AT, MAX_PENDING),
                durable: Waiting::new(FOLD_DURABLE_AT, MAX_PENDING_DURABLE),
                durable_upto: None,
                settling: Vec::new(),
                stop: None,
                stopped: false,
            }),
            wake: Condvar::new(),
            room: Notify::new(),
            durable_every: if store.read_by_other_instances() {
                FOLD_EVERY
            } else {
                FOLD_DURABLE_EVERY
            },
        });
        let first = Fold {
            upto: replay.last_seq,
            values: replay.values,
            retired: replay.retired,
        };
        let thread_shared = shared.clone();
        std::thread::Builder::new()
            .name("svc-historian".into())
            .spawn(move || {
                lower_priority();
                run(&store, &thread_shared, first, Sealer::new(seal_idle))
            })?;
        Ok(HistorianWriter { shared })
    }

    /// Queues a value without journaling it (QoS 0); waits while too many values wait.
    #[cfg(test)]
    pub async fn record(&self, write: HistoryWrite) {
        self.record_many(vec![write]).await;
    }

    /// Queues values without journaling them (QoS 0), with one hand-over to the writer;
    /// waits while too many values wait.
    pub async fn record_many(&self, writes: Vec<HistoryWrite>) {
        if self.queue_all(writes, false).await.is_err() {
            tracing::warn!("historian is shut down; values were not recorded");
        }
    }

    /// Journals a value and resolves once it is stored (it survives a killed process).
    #[cfg(test)]
    pub async fn commit(&self, write: HistoryWrite) -> Result<(), NotRecorded> {
        self.commit_many(vec![write]).await
    }

    /// Journals values with one write and resolves once they are all stored.
    pub async fn commit_many(&self, writes: Vec<HistoryWrite>) -> Result<(), NotRecorded> {
        self.queue_all(writes, true).await
    }

    /// Values waiting for the writer thread to take them (for GET /metrics).
    pub fn queue_depth(&self) -> usize {
        self.shared.lock().waiting()
    }

    async fn queue_all(
        &self,
        writes: Vec<HistoryWrite>,
        journaled: bool,
    ) -> Result<(), NotRecorded> {
        if writes.is_empty() {
            return Ok(());
        }
        loop {
            let room = self.shared.room.notified();
            {
                let mut state = self.shared.lock();
                if state.stopped {
                    return Err(NotRecorded("the historian is shut down"));
                }
                let room = if journaled {
                    state.durable.has_room(writes.len())
                } else {
                    state.volatile.has_room(writes.len())
                };
                if room {
                    let queue = if journaled {
                        let seq = state.journal.append(&writes).map_err(|e| {
                            tracing::error!(error = %e, "historian journal write failed");
                            NotRecorded("the historian could not write the value")
                        })?;
                        state.durable_upto = Some(seq);
                        &mut state.durable
                    } else {
                        &mut state.volatile
                    };
                    let was_full = queue.full();
                    queue.values.extend(writes);
                    // The writer's deadline changes with a first value, and it folds at once
                    // once the queue is full.
                    let first = queue.since.is_none();
                    if first {
                        queue.since = Some(Instant::now());
                    }
                    if first || (!was_full && queue.full()) {
                        self.shared.wake.notify_one();
                    }
                    return Ok(());
                }
            }
            room.await;
        }
    }

    /// Resolves once every value stored so far is readable from its series.
    pub async fn settle(&self) -> Result<(), NotRecorded> {
        let (done, settled) = oneshot::channel();
        {
            let mut state = self.shared.lock();
            if state.stopped {
                return Ok(()); // the last thing the writer did was fold everything it could
            }
            state.settling.push(done);
            self.shared.wake.notify_one();
        }
        match settled.await {
            Ok(true) | Err(_) => Ok(()),
            Ok(false) => Err(NotRecorded(
                "the historian could not move stored values into their series",
            )),
        }
    }

    /// Folds everything stored so far and stops the writer.
    pub async fn shutdown(&self) {
        let (done, stopped) = oneshot::channel();
        {
            let mut state = self.shared.lock();
            if state.stopped {
                return;
            }
            state.stopped = true;
            state.stop = Some(done);
            self.shared.wake.notify_one();
        }
        let _ = stopped.await;
    }
}

impl State {
    fn waiting(&self) -> usize {
        self.volatile.values.len() + self.durable.values.len()
    }

    /// Whether everything waiting is to be folded now, whatever its age.
    fn urgent(&self) -> bool {
        self.stop.is_some()
            || !self.settling.is_empty()
            || self.volatile.full()
            || self.durable.full()
    }
}

impl Shared {
    /// The state; a panic elsewhere while holding it leaves nothing half-done worth refusing.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The journal's files are named after the database file.
fn journal_base(store: &Store) -> PathBuf {
    journal_base_of(store.path())
}

fn journal_base_of(db_file: &std::path::Path) -> PathBuf {
    format!("{}-historian.journal", db_file.display()).into()
}

/// Values the journal next to the database file `db_file` holds above the mark `folded`,
/// read without touching the files.
pub fn unfolded_entries(db_file: &std::path::Path, folded: u64) -> std::io::Result<usize> {
    super::journal::unfolded(&journal_base_of(db_file), folded)
}

/// The writer thread: wait until a fold is due, take what waits, fold it, answer readers.
/// Folding is background work: on a small edge box it must not take a core from the broker's
/// deliveries, so the writer thread runs in the idle scheduling class (it gets the CPU when
/// nothing else wants it; `nice 10` measured 2.0 ms p99 publish → deliver at QoS 1 and
/// 20,000 msgs/s, SCHED_IDLE 1.0–1.4 ms, unhistorized 0.45 ms). Values are safe in the journal
/// meanwhile, and publishers wait if folding falls far behind, which gives it the CPU back.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        let idle = libc::sched_param { sched_priority: 0 };
        // SAFETY: sched_setscheduler reads the parameter struct it is given; pid 0 is the
        // calling thread on Linux.
        let result = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &idle) };
        if result != 0 {
            tracing::debug!(
                error = %std::io::Error::last_os_error(),
                "cannot move the historian writer to the idle scheduling class"
            );
        }
    }
}

fn run(store: &Store, shared: &Shared, first: Fold, mut sealer: Sealer) {
    let mut held = first;
    let mut next_file = None;
    let mut last_seal = Instant::now();
    loop {
        if next_file.is_none() {
            // Created here, not under the lock in `take`: a publisher appending to the journal
            // would wait for the file creation, and for this low-priority thread to be
            // scheduled again if it is preempted meanwhile.
            let next = shared.lock().journal.next_generation();
            next_file = next
                .create()
                .map_err(|e| tracing::debug!(error = %e, "could not create the next historian journal file"))
                .ok();
        }
        // Once, before the first wait: a tail left by an earlier run (or by a version before
        // blocks) must close even if no value ever arrives again.
        sealer.load(store);
        let (settling, stop) = {
            let mut state = shared.lock();
            if held.values.is_empty() {
                let seal_at = if sealer.has_due() {
                    Some(Instant::now())
                } else {
                    sealer.next_idle()
                };
                state = wait_until_due(shared, state, seal_at);
            }
            take(&mut state, &mut held, &mut next_file, shared.durable_every);
            (std::mem::take(&mut state.settling), state.stop.take())
        };
        shared.room.notify_waiters();
        let folded = fold(store, &mut held, &mut sealer);
        for done in settling {
            let _ = done.send(folded);
        }
        if let Some(done) = stop {
            let _ = done.send(());
            return;
        }
        if !folded {
            std::thread::sleep(RETRY_AFTER);
            continue;
        }
        // Closing blocks waits behind folding: a few per round, so acknowledged values are
        // never held up by a backlog of old rows being converted, and none while half a fold
        // has piled up during this one (for at most SEAL_IN_A_BURST_EVERY).
        let in_a_burst = {
            let state = shared.lock();
            state.volatile.values.len() >= FOLD_AT / 2
                || state.durable.values.len() >= FOLD_DURABLE_AT / 2
        };
        if in_a_burst && last_seal.elapsed() < SEAL_IN_A_BURST_EVERY {
            continue;
        }
        last_seal = Instant::now();
        if let Err(e) = sealer.seal_some(store, SEAL_BUDGET) {
            tracing::error!(error = %e, "historian could not close a block; will retry");
            std::thread::sleep(RETRY_AFTER);
        }
    }
}

/// Sleeps until the oldest waiting value reaches its deadline, enough values wait, a reader
/// asks, the server stops, or `seal_at` (blocks are due to close) comes.
fn wait_until_due<'s>(
    shared: &'s Shared,
    mut state: MutexGuard<'s, State>,
    seal_at: Option<Instant>,
) -> MutexGuard<'s, State> {
    loop {
        if state.urgent() {
            return state;
        }
        let now = Instant::now();
        if seal_at.is_some_and(|at| at <= now) {
            return state;
        }
        let wake_at = [
            state.volatile.due_at(FOLD_EVERY),
            state.durable.due_at(shared.durable_every),
            seal_at,
        ]
        .into_iter()
        .flatten()
        .min();
        state = match wake_at {
            None => shared.wake.wait(state).unwrap_or_else(|e| e.into_inner()),
            Some(at) => match at.checked_duration_since(now) {
                Some(left) if !left.is_zero() => {
                    shared
                        .wake
                        .wait_timeout(state, left)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
                _ => return state,
            },
        };
    }
}

/// Moves what is due into `held` (behind anything a failed fold left there): everything when
/// a reader asks, the server stops or a durability's queue is full, else each once its oldest
/// value reached its deadline. Taking journaled values starts a new journal file (`next_file`
/// when it was created ahead), so the one holding them can go once they are folded. Runs under
/// the writers' lock: nothing here copies the values or makes a system call when `next_file`
/// is there.
fn take(
    state: &mut State,
    held: &mut Fold,
    next_file: &mut Option<NextFile>,
    durable_every: Duration,
) {
    let now = Instant::now();
    let everything = state.urgent();
    if everything || state.volatile.due(FOLD_EVERY, now) {
        state.volatile.take_into(&mut held.values);
    }
    if !(everything || state.durable.due(durable_every, now)) {
        return;
    }
    state.durable.take_into(&mut held.values);
    if let Some(upto) = state.durable_upto.take() {
        held.upto = Some(upto);
        let rotated = match next_file.take() {
            Some(next) => Ok(state.journal.rotate_to(next)),
            None => state.journal.rotate(),
        };
        match rotated {
            Ok(retired) => held.retired = Retired::merge(held.retired.take(), retired),
            // Harmless: the mark says these entries are folded, so replay skips them.
            Err(e) => tracing::warn!(error = %e, "could not start a new historian journal file"),
        }
    }
}

/// Folds `held` into the series in one transaction; on success the sealer counts it, and it is
/// emptied and its journal files removed; on failure it stays for the next attempt.
fn fold(store: &Store, held: &mut Fold, sealer: &mut Sealer) -> bool {
    if held.values.is_empty() {
        if let Some(retired) = held.retired.take() {
            retired.remove(); // files that held only folded entries
        }
        return true;
    }
    let started = Instant::now();
    match store.fold_history(&held.values, held.upto) {
        Ok(straight) => {
            crate::telemetry::get().historian_fold(held.values.len(), started.elapsed());
            sealer.note(&held.values, &straight);
            if let Some(retired) = held.retired.take() {
                retired.remove();
            }
            *held = Fold {
                values: Vec::new(),
                upto: None,
                retired: None,
            };
            true
        }
        Err(e) => {
            tracing::error!(error = %e, values = held.values.len(), "historian could not write stored values into their series; will retry");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn value(i: i64) -> HistoryWrite {
        HistoryWrite {
            domain: "d".into(),
            topic: "t".into(),
            ts_ms: i,
            value: json!(i),
            quality: crate::store::Quality::GOOD,
        }
    }

    #[tokio::test]
    async fn everything_queued_is_written_by_shutdown() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db")).unwrap();
        let writer = HistorianWriter::start(store.clone(), Duration::from_secs(3600)).unwrap();
        for i in 0..12_000 {
            writer.record(value(i)).await;
        }
        writer.shutdown().await;
        let points = store.history_range("d", "t", 0, 20_000, None).unwrap();
        assert_eq!(points.len(), 12_000);
        assert_eq!(points[11_999].value, json!(11_999));
        assert!(writer.commit(value(1)).await.is_err());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_commit_resolves_only_once_the_value_is_stored() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db")).unwrap();
        let writer = HistorianWriter::start(store.clone(), Duration::from_secs(3600)).unwrap();
        let publishers: Vec<_> = (0..20)
            .map(|p| {
                let (writer, store) = (writer.clone(), store.clone());
                tokio::spawn(async move {
                    for i in 0..200 {
                        let ts = p * 1_000 + i;
                        writer.commit(value(ts)).await.unwrap();
                        // Acknowledged means stored, and readable once the reader settles.
                        writer.settle().await.unwrap();
                        let stored = store.history_range("d", "t", ts, ts + 1, None).unwrap();
                        assert_eq!(stored.len(), 1, "value {ts} acknowledged but not stored");
                    }
                })
            })
            .collect();
        for publisher in publishers {
            publisher.await.unwrap();
        }
        writer.shutdown().await;
        assert_eq!(
            store
                .history_range("d", "t", 0, 100_000, None)
                .unwrap()
                .len(),
            4_000
        );
    }

    #[tokio::test]
    async fn values_a_crash_left_in_the_journal_reach_their_series_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db")).unwrap();
        let (mut journal, _) = Journal::open(&journal_base(&store), 0).unwrap();
        journal.append(&[value(1), value(2)]).unwrap();
        drop(journal);
        let writer = HistorianWriter::start(store.clone(), Duration::from_secs(3600)).unwrap();
        writer.settle().await.unwrap();
        assert_eq!(store.history_range("d", "t", 0, 10, None).unwrap().len(), 2);
        writer.shutdown().await;
        // Folded once: a second start replays nothing.
        let writer = HistorianWriter::start(store.clone(), Duration::from_secs(3600)).unwrap();
        writer.settle().await.unwrap();
        assert_eq!(store.history_range("d", "t", 0, 10, None).unwrap().len(), 2);
        writer.shutdown().await;
    }

    #[tokio::test]
    async fn acknowledged_values_are_folded_without_a_reader_asking() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("t.db")).unwrap();
        let writer = HistorianWriter::start(store.clone(), Duration::from_secs(3600)).unwrap();
        writer.commit(value(7)).await.unwrap();
        tokio::time::sleep(FOLD_DURABLE_EVERY * 2).await;
        assert_eq!(store.history_range("d", "t", 0, 10, None).unwrap().len(), 1);
        writer.shutdown().await;
    }
}

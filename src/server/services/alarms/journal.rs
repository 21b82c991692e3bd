//! The alarm journal's writer. The evaluating task hands over each step once it has announced
//! the step's changes, and goes on: it never waits for the disk, so a write that stalls (a WAL
//! checkpoint, a slow PostgreSQL) delays no later event. Here each step's retained events are
//! awaited until the broker has stored them, then the journal entries and the alarm states of
//! every step waiting are written in one transaction, in the order the steps came (a state
//! kept is never older than its retained event), and only then are the operators whose
//! actions a step carried out answered, and the drains.

use crate::alarms::engine::ActError;
use crate::alarms::AlarmStatus;
use crate::broker::Stored;
use crate::server::AppState;
use crate::store::{AlarmJournalEntry, StoredAlarmState};
use tokio::sync::{mpsc, oneshot};

/// Steps waiting to be written at most; the evaluating task waits when the writer is this far
/// behind.
const BACKLOG: usize = 64;

/// What one evaluation step leaves to the writer.
#[derive(Default)]
pub(super) struct Journal {
    /// Resolve once the broker stored the step's announcements.
    pub announced: Vec<Stored>,
    pub entries: Vec<AlarmJournalEntry>,
    pub states: Vec<StoredAlarmState>,
    /// Operators' actions the step carried out, answered once written.
    pub answers: Vec<Answer>,
    /// Answered once everything before them is written.
    pub drains: Vec<oneshot::Sender<()>>,
}

pub(super) type Answer = (
    oneshot::Sender<Result<AlarmStatus, ActError>>,
    Result<AlarmStatus, ActError>,
);

/// Starts the writer; steps go to the sender it returns.
pub(super) fn start(state: AppState) -> mpsc::Sender<Journal> {
    let (steps, waiting) = mpsc::channel(BACKLOG);
    tokio::spawn(run(state, waiting));
    steps
}

async fn run(state: AppState, mut steps: mpsc::Receiver<Journal>) {
    let mut batch: Vec<Journal> = Vec::with_capacity(BACKLOG);
    while steps.recv_many(&mut batch, BACKLOG).await > 0 {
        let mut entries = Vec::new();
        let mut states = Vec::new();
        for step in &mut batch {
            for stored in step.announced.drain(..) {
                if let Err(e) = stored.await {
                    tracing::warn!(error = %e, "cannot store an alarm's retained event");
                }
            }
            entries.append(&mut step.entries);
            states.append(&mut step.states);
        }
        if !entries.is_empty() || !states.is_empty() {
            let written = state
                .store
                .run(move |s| s.alarms_commit(&entries, &states))
                .await;
            if let Err(e) = written {
                tracing::warn!(error = %e, "cannot write the alarm journal; the changes were announced");
            }
        }
        for step in batch.drain(..) {
            for (answer, result) in step.answers {
                let _ = answer.send(result);
            }
            for done in step.drains {
                let _ = done.send(());
            }
        }
    }
}

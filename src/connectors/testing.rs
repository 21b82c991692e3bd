//! For the kinds' own tests: a link connected and running against a real peer, with the sink
//! it reads into and a way to hand it writes.

use super::kind::{Failure, Kind, Sink, Target, Write, WriteError};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

/// A running link: its sink, its writes, and the task that returns its failure (aborted when
/// dropped).
pub struct Running<S> {
    pub sink: Arc<S>,
    writes: mpsc::Sender<Write>,
    pub task: JoinHandle<Failure>,
}

impl<S: Sink + Default + 'static> Running<S> {
    /// Connects `target` with `kind` (panics if it cannot) and runs the link.
    pub async fn start(kind: &dyn Kind, target: &Target) -> Running<S> {
        let link = kind.connect(target).await.expect("the link connects");
        let sink = Arc::new(S::default());
        let (writes, mut queue) = mpsc::channel(8);
        let for_link: Arc<dyn Sink> = sink.clone();
        let task = tokio::spawn(async move { link.run(for_link, &mut queue).await });
        Running { sink, writes, task }
    }

    /// Writes `value` to point `point` and waits (10 s at most) for the link's answer.
    pub async fn write(&self, point: usize, value: Value) -> Result<(), WriteError> {
        let (reply, answer) = oneshot::channel();
        self.writes
            .send(Write {
                point,
                value,
                reply,
            })
            .await
            .expect("the link runs");
        tokio::time::timeout(Duration::from_secs(10), answer)
            .await
            .expect("the write is answered")
            .expect("the link answers")
    }
}

impl<S> Drop for Running<S> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

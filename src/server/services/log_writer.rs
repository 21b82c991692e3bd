//! Log output for a busy server: lines gather in memory and one background thread writes them to
//! stderr [`FLUSH_EVERY`] after the first of them (at once when [`FLUSH_AT`] bytes wait), so
//! logging a request costs a memory copy instead of a write or a thread wake-up per line. With
//! nothing to write the thread sleeps until a line comes: a quiet edge box has no timer waking
//! it 20 times a second.

use std::io::{self, Write};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use tracing_subscriber::fmt::MakeWriter;

const FLUSH_EVERY: Duration = Duration::from_millis(50);
const FLUSH_AT: usize = 64 * 1024;

#[derive(Default)]
struct Batch {
    lines: Mutex<(Vec<u8>, bool)>,
    ready: Condvar,
}

/// Hands out writers into the shared batch.
#[derive(Clone)]
pub struct BatchedStderr(Arc<Batch>);

/// Writes what is left and stops the thread when dropped.
pub struct FlushGuard {
    batch: Arc<Batch>,
    thread: Option<JoinHandle<()>>,
}

pub fn batched_stderr() -> (BatchedStderr, FlushGuard) {
    let batch = Arc::new(Batch::default());
    let worker = batch.clone();
    let thread = std::thread::Builder::new()
        .name("svc-log".into())
        .spawn(move || drain(&worker))
        .ok();
    (BatchedStderr(batch.clone()), FlushGuard { batch, thread })
}

fn drain(batch: &Batch) {
    let mut pending = Vec::with_capacity(FLUSH_AT);
    loop {
        let stopping = {
            let Ok(mut guard) = batch.lines.lock() else {
                return;
            };
            // The writer of a batch's first line wakes this.
            while guard.0.is_empty() && !guard.1 {
                guard = match batch.ready.wait(guard) {
                    Ok(guard) => guard,
                    Err(_) => return,
                };
            }
            if guard.0.len() < FLUSH_AT && !guard.1 {
                guard = match batch.ready.wait_timeout(guard, FLUSH_EVERY) {
                    Ok((guard, _)) => guard,
                    Err(_) => return,
                };
            }
            std::mem::swap(&mut guard.0, &mut pending);
            guard.1
        };
        if !pending.is_empty() {
            let mut stderr = io::stderr().lock();
            let _ = stderr.write_all(&pending);
            let _ = stderr.flush();
            pending.clear();
        }
        if stopping {
            return;
        }
    }
}

impl Drop for FlushGuard {
    fn drop(&mut self) {
        if let Ok(mut guard) = self.batch.lines.lock() {
            guard.1 = true;
        }
        self.batch.ready.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

pub struct BatchWriter<'a>(&'a Batch);

impl Write for BatchWriter<'_> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let wake = match self.0.lines.lock() {
            Ok(mut guard) => {
                let first = guard.0.is_empty();
                guard.0.extend_from_slice(bytes);
                first || guard.0.len() >= FLUSH_AT
            }
            // A poisoned batch means the log thread died: fall back to writing directly.
            Err(_) => return io::stderr().write(bytes),
        };
        if wake {
            self.0.ready.notify_one();
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for BatchedStderr {
    type Writer = BatchWriter<'a>;

    fn make_writer(&'a self) -> Self::Writer {
        BatchWriter(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting(writer: &BatchedStderr) -> usize {
        writer.0.lines.lock().unwrap().0.len()
    }

    #[test]
    fn a_full_batch_is_written_at_once_and_the_guard_writes_the_rest() {
        let (writer, guard) = batched_stderr();
        let mut w = writer.make_writer();
        w.write_all(&vec![b'.'; FLUSH_AT]).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while waiting(&writer) > 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "a full batch was not written"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        w.write_all(b"last line\n").unwrap();
        drop(guard);
        assert_eq!(waiting(&writer), 0);
    }

    #[test]
    fn a_line_after_a_quiet_spell_is_written_without_a_full_batch() {
        let (writer, _guard) = batched_stderr();
        let mut w = writer.make_writer();
        // Long enough for the thread to be asleep waiting for a line, not for a timer.
        std::thread::sleep(FLUSH_EVERY * 3);
        w.write_all(b"one line\n").unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while waiting(&writer) > 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "a lone line was never written"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

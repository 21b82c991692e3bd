//! The run a context is serving, as its host functions reach it: the [`Host`] the caller lent
//! for the run, the run's log and its deadline. A context's host functions are made once and
//! kept with it; between runs the slot is empty, so a function kept from an earlier run can
//! only ever reach the run in progress.

use super::runtime::Cells;
use super::*;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::Mutex;

/// A host call from the JS code.
pub(crate) enum HostCall {
    TagRead { topic: String },
    TagWrite { topic: String, value: Json },
    RecordCreate { table: String, record: Json },
    RecordGet { id: String },
    RecordList { table: String, query: Json },
}

/// `None`: JS `null` (or `undefined` for a write).
pub(crate) type HostReply = Result<Option<Json>, String>;

pub(crate) fn serve(host: &dyn Host, call: HostCall) -> HostReply {
    match call {
        HostCall::TagRead { topic } => host.tag_read(&topic),
        HostCall::TagWrite { topic, value } => host.tag_write(&topic, &value).map(|()| None),
        HostCall::RecordCreate { table, record } => host.record_create(&table, &record).map(Some),
        HostCall::RecordGet { id } => host.record_get(&id),
        HostCall::RecordList { table, query } => host.record_list(&table, &query).map(Some),
    }
}

/// The host of the run in progress, as a pointer without its lifetime (see [`RunSlot::lend`]).
struct HostPtr(NonNull<dyn Host + 'static>);

// SAFETY: the pointer is only dereferenced by a host function while the run that lent it is in
// progress, and a run's JS executes on the thread that called the run with the borrowed host
// (the runtime's lock admits one thread at a time, and only `run*` enters the context), so the
// host is used on its own thread, within its borrow. The slot moves between threads only empty.
unsafe impl Send for HostPtr {}

struct Current {
    host: HostPtr,
    logs: LogBuf,
}

/// Why a host call did not reach the host.
pub(super) enum Unserved {
    /// No run is in progress (a function kept past its run, called from a leftover job).
    NoRun,
    /// The run is past its deadline.
    Late,
}

#[derive(Default)]
pub(super) struct RunSlot(Mutex<Option<Current>>);

/// A run's hold on its slot; the slot is emptied when it ends, whatever happens.
pub(super) struct Lend<'a> {
    slot: &'a RunSlot,
    _host: PhantomData<&'a dyn Host>,
}

impl RunSlot {
    /// Fills the slot with `host` for as long as the returned [`Lend`] lives.
    pub(super) fn lend<'a>(&'a self, host: &'a dyn Host) -> Lend<'a> {
        // SAFETY: only the lifetime is erased. The pointer leaves the slot when the `Lend`
        // (which borrows `host` for 'a) is dropped, and it is only read in between (see
        // `HostPtr`).
        let host: &'static dyn Host = unsafe { std::mem::transmute::<&'a dyn Host, _>(host) };
        *lock(&self.0) = Some(Current {
            host: HostPtr(NonNull::from(host)),
            logs: LogBuf::default(),
        });
        Lend {
            slot: self,
            _host: PhantomData,
        }
    }

    /// Serves `call` with the run's host, unless no run is in progress or it is past `cells`'s
    /// deadline.
    pub(super) fn call(&self, cells: &Cells, call: HostCall) -> Result<HostReply, Unserved> {
        let host = match lock(&self.0).as_ref() {
            Some(current) => current.host.0,
            None => return Err(Unserved::NoRun),
        };
        if cells.deadline_passed() {
            return Err(Unserved::Late);
        }
        // SAFETY: a run is in progress on this thread (see `HostPtr`), so the host it lent is
        // alive and borrowed for the run.
        let host = unsafe { host.as_ref() };
        Ok(serve(host, call))
    }

    /// Whether the run's log takes no more lines (or no run is in progress).
    pub(super) fn log_full(&self) -> bool {
        lock(&self.0).as_ref().is_none_or(|c| c.logs.truncated)
    }

    pub(super) fn log(&self, line: String) {
        if let Some(current) = lock(&self.0).as_mut() {
            current.logs.push(line);
        }
    }
}

impl Lend<'_> {
    /// Ends the run's hold and hands back its log lines.
    pub(super) fn finish(self) -> Vec<String> {
        lock(&self.slot.0)
            .take()
            .map(|c| c.logs.lines)
            .unwrap_or_default()
    }
}

impl Drop for Lend<'_> {
    fn drop(&mut self) {
        lock(&self.slot.0).take();
    }
}

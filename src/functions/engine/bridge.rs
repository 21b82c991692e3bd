//! The channel between the engine thread that runs the JS and the thread that called
//! [`super::run`], which serves the host calls (its [`Host`] may be borrowed and `!Send`).

use super::*;

/// What the engine thread tells the calling thread: a host call, or the run's end.
pub(super) enum ToHost {
    Call(HostCall),
    Done(Result<Json, Failure>, Vec<String>),
}

pub(super) fn stopped() -> Failure {
    Failure::Script("the engine stopped unexpectedly".into())
}

/// A host call from the JS thread.
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

/// The JS thread's end of the host channel.
pub(super) struct Bridge {
    pub(super) calls: mpsc::Sender<ToHost>,
    pub(super) replies: mpsc::Receiver<HostReply>,
}

impl Bridge {
    pub(super) fn call(&self, call: HostCall) -> HostReply {
        let gone = || "the host is no longer available".to_string();
        self.calls.send(ToHost::Call(call)).map_err(|_| gone())?;
        self.replies.recv().map_err(|_| gone())?
    }
}

//! What instances sharing one store tell each other, and which of them leads: the values of
//! the interface's "instances sharing the store" calls. On an engine only one instance can
//! open (SQLite) there are no peers and the one instance always leads.

use tokio::sync::watch;

/// What the store heard from the other instances on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerNotice {
    /// A notice another instance sent with [`crate::store::Store::tell_peers`]: its kind and
    /// body, as sent.
    Heard { kind: String, body: Vec<u8> },
    /// Notices may have been sent while this instance could not hear them (its listening
    /// connection was lost and is back): whatever they would have brought in step must be
    /// brought in step from the store itself.
    MayHaveMissed,
}

/// Whether this instance is the one that runs what must happen once for all instances (the
/// timers of functions and flows, the connectors to devices). Cheap to clone and to ask.
#[derive(Debug, Clone)]
pub struct Leadership(watch::Receiver<bool>);

impl Leadership {
    /// An instance alone on its store: it always leads.
    pub fn alone() -> Leadership {
        Leadership(watch::channel(true).1)
    }

    /// Leadership as `receiver` reports it, as it changes.
    pub fn following(receiver: watch::Receiver<bool>) -> Leadership {
        Leadership(receiver)
    }

    pub fn is_leader(&self) -> bool {
        *self.0.borrow()
    }

    /// Waits until this instance leads (`true`) or follows (`false`); forever when the sender
    /// is gone without it happening.
    pub async fn until(&self, leading: bool) {
        let mut receiver = self.0.clone();
        if receiver.wait_for(|now| *now == leading).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instance_alone_leads() {
        assert!(Leadership::alone().is_leader());
    }

    #[test]
    fn leadership_follows_its_sender() {
        let (tx, rx) = watch::channel(false);
        let leadership = Leadership::following(rx);
        assert!(!leadership.is_leader());
        tx.send_replace(true);
        assert!(leadership.is_leader());
    }
}

//! Echo suppression for MQTT 3.1.1 upstreams. MQTT 3.1.1 has no No Local: a bridge that
//! carries a branch both ways gets every message it sends back through its own subscription.
//! The guard remembers what was sent for a short while; a message that comes back with the
//! same topic and payload within that time is the echo and is dropped (counted as a loop).
//! An upstream's genuine update equal to what was just sent changes nothing locally either.

use std::collections::hash_map::DefaultHasher;
use std::collections::VecDeque;
use std::hash::{Hash, Hasher};
use std::time::{Duration, Instant};

/// How long a sent message may come back as an echo.
const ECHO_WINDOW: Duration = Duration::from_secs(10);
/// Sent messages remembered at most (the oldest are forgotten first).
const MAX_REMEMBERED: usize = 10_000;

#[derive(Debug, Default)]
pub struct EchoGuard {
    sent: VecDeque<(u64, Instant)>,
}

fn fingerprint(topic: &str, payload: &[u8]) -> u64 {
    let mut hasher = DefaultHasher::new();
    topic.hash(&mut hasher);
    payload.hash(&mut hasher);
    hasher.finish()
}

impl EchoGuard {
    /// Remembers a message sent to the upstream (its remote topic).
    pub fn sent(&mut self, topic: &str, payload: &[u8], now: Instant) {
        self.forget_old(now);
        if self.sent.len() == MAX_REMEMBERED {
            self.sent.pop_front();
        }
        self.sent.push_back((fingerprint(topic, payload), now));
    }

    /// Whether a message from the upstream is the echo of one sent (each sent message
    /// excuses one echo).
    pub fn is_echo(&mut self, topic: &str, payload: &[u8], now: Instant) -> bool {
        self.forget_old(now);
        let print = fingerprint(topic, payload);
        match self.sent.iter().position(|(p, _)| *p == print) {
            Some(at) => {
                self.sent.remove(at);
                true
            }
            None => false,
        }
    }

    fn forget_old(&mut self, now: Instant) {
        while self
            .sent
            .front()
            .is_some_and(|(_, at)| now.duration_since(*at) > ECHO_WINDOW)
        {
            self.sent.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_sent_message_excuses_one_echo_for_a_while() {
        let mut guard = EchoGuard::default();
        let t0 = Instant::now();
        guard.sent("corp/a", b"1", t0);
        guard.sent("corp/a", b"1", t0);
        assert!(!guard.is_echo("corp/a", b"2", t0));
        assert!(!guard.is_echo("corp/b", b"1", t0));
        assert!(guard.is_echo("corp/a", b"1", t0));
        assert!(guard.is_echo("corp/a", b"1", t0));
        assert!(!guard.is_echo("corp/a", b"1", t0), "two sent, two echoes");
        guard.sent("corp/a", b"1", t0);
        assert!(!guard.is_echo("corp/a", b"1", t0 + ECHO_WINDOW * 2));
    }
}

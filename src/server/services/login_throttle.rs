//! Login protection: failed password checks are counted per user name and per client address,
//! over HTTP (`POST /auth/login`) and MQTT (CONNECT with a user name and password) alike, since
//! a guess is a guess whichever door it comes through. Past a limit the name or address is
//! locked for one window: its attempts are refused without checking the password (HTTP 429 with
//! `Retry-After`, MQTT a delayed refusal), so a locked account's right password fails too. A
//! success clears the name's count. API keys and tokens are not counted: they are too long to
//! guess, and counting them would only let a broken device lock out its neighbours.
//!
//! Memory is bounded: each table holds at most [`MAX_ENTRIES`] names or addresses; a full table
//! first forgets entries whose window has passed, and when none has, stops tracking new keys
//! (the other table still applies) rather than forgetting a lock.

use std::collections::HashMap;
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Names or addresses tracked at most, per table.
const MAX_ENTRIES: usize = 10_000;
/// Longest user name kept as a key; longer names share the entry of their prefix.
const MAX_NAME_BYTES: usize = 128;

/// The thresholds (settings `login_max_failures`, `login_max_address_failures`,
/// `login_window`); a limit of 0 turns that count off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub per_user: u32,
    pub per_address: u32,
    pub window: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            per_user: 5,
            per_address: 20,
            window: Duration::from_secs(300),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    failures: u32,
    /// When the first failure of the current window happened.
    since: Instant,
    locked_until: Option<Instant>,
}

impl Entry {
    fn locked(&self, now: Instant) -> Option<Duration> {
        self.locked_until
            .and_then(|until| until.checked_duration_since(now))
            .filter(|left| !left.is_zero())
    }

    /// Neither counting nor locked any more.
    fn expired(&self, now: Instant, window: Duration) -> bool {
        match self.locked_until {
            Some(until) => now >= until,
            None => now.duration_since(self.since) >= window,
        }
    }
}

struct Table<K> {
    entries: HashMap<K, Entry>,
}

impl<K: Hash + Eq + Clone> Table<K> {
    fn new() -> Table<K> {
        Table {
            entries: HashMap::new(),
        }
    }

    fn locked(&mut self, key: &K, now: Instant, window: Duration) -> Option<Duration> {
        let entry = self.entries.get(key)?;
        if entry.expired(now, window) {
            self.entries.remove(key);
            return None;
        }
        entry.locked(now)
    }

    fn fail(&mut self, key: &K, limit: u32, now: Instant, window: Duration) {
        if limit == 0 {
            return;
        }
        if !self.entries.contains_key(key) && self.entries.len() >= MAX_ENTRIES {
            self.entries.retain(|_, e| !e.expired(now, window));
            if self.entries.len() >= MAX_ENTRIES {
                return;
            }
        }
        let entry = self.entries.entry(key.clone()).or_insert(Entry {
            failures: 0,
            since: now,
            locked_until: None,
        });
        if entry.expired(now, window) {
            *entry = Entry {
                failures: 0,
                since: now,
                locked_until: None,
            };
        }
        entry.failures = entry.failures.saturating_add(1);
        if entry.failures >= limit && entry.locked_until.is_none() {
            entry.locked_until = Some(now + window);
        }
    }
}

struct Tables {
    users: Table<String>,
    addresses: Table<IpAddr>,
}

pub struct LoginThrottle {
    limits: Limits,
    tables: Mutex<Tables>,
}

/// The attempt is refused unchecked; try again after this long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Throttled {
    pub retry_after: Duration,
}

impl Throttled {
    /// Whole seconds to wait, rounded up (at least 1).
    pub fn retry_after_secs(&self) -> u64 {
        let secs = self.retry_after.as_secs() + u64::from(self.retry_after.subsec_nanos() > 0);
        secs.max(1)
    }

    pub fn sentence(&self) -> String {
        format!(
            "too many failed logins for this user or from this address; try again in {} seconds",
            self.retry_after_secs()
        )
    }
}

/// The address as counted: IPv4 (also when mapped into IPv6) as is, IPv6 by its /64, the
/// block one host usually holds whole.
fn address_key(address: IpAddr) -> IpAddr {
    match address.to_canonical() {
        IpAddr::V6(v6) => {
            let prefix = u128::from(v6) & !u128::from(u64::MAX);
            IpAddr::V6(std::net::Ipv6Addr::from(prefix))
        }
        v4 => v4,
    }
}

fn name_key(username: &str) -> String {
    let mut end = username.len().min(MAX_NAME_BYTES);
    while !username.is_char_boundary(end) {
        end -= 1;
    }
    username[..end].to_string()
}

impl LoginThrottle {
    pub fn new(limits: Limits) -> LoginThrottle {
        LoginThrottle {
            limits,
            tables: Mutex::new(Tables {
                users: Table::new(),
                addresses: Table::new(),
            }),
        }
    }

    fn tables(&self) -> MutexGuard<'_, Tables> {
        // Counts only: a panic elsewhere cannot leave them in a state worth refusing over.
        self.tables.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a password check for `username` from `address` may go ahead.
    pub fn check(&self, username: &str, address: IpAddr) -> Result<(), Throttled> {
        let now = Instant::now();
        let window = self.limits.window;
        let mut tables = self.tables();
        let user = tables.users.locked(&name_key(username), now, window);
        let addr = tables.addresses.locked(&address_key(address), now, window);
        match user.max(addr) {
            Some(retry_after) => Err(Throttled { retry_after }),
            None => Ok(()),
        }
    }

    /// Counts a wrong password for `username` from `address`.
    pub fn failed(&self, username: &str, address: IpAddr) {
        let now = Instant::now();
        let Limits {
            per_user,
            per_address,
            window,
        } = self.limits;
        let mut tables = self.tables();
        tables
            .users
            .fail(&name_key(username), per_user, now, window);
        tables
            .addresses
            .fail(&address_key(address), per_address, now, window);
    }

    /// A right password: the name starts over (the address keeps its count, so one good
    /// account does not reset guessing at others from the same place).
    pub fn succeeded(&self, username: &str) {
        self.tables().users.entries.remove(&name_key(username));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(per_user: u32, per_address: u32) -> Limits {
        Limits {
            per_user,
            per_address,
            window: Duration::from_millis(200),
        }
    }

    const HOME: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
    const AWAY: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));

    #[test]
    fn the_limit_locks_the_name_for_a_window() {
        let throttle = LoginThrottle::new(limits(3, 100));
        for _ in 0..2 {
            throttle.failed("ann", HOME);
        }
        assert!(throttle.check("ann", HOME).is_ok());
        throttle.failed("ann", HOME);
        let locked = throttle.check("ann", AWAY).unwrap_err();
        assert!(locked.retry_after <= Duration::from_millis(200));
        assert_eq!(locked.retry_after_secs(), 1);
        assert!(throttle.check("bob", HOME).is_ok());
        std::thread::sleep(Duration::from_millis(250));
        assert!(throttle.check("ann", HOME).is_ok());
    }

    #[test]
    fn the_address_limit_covers_every_name() {
        let throttle = LoginThrottle::new(limits(100, 3));
        for name in ["a", "b", "c"] {
            throttle.failed(name, AWAY);
        }
        assert!(throttle.check("d", AWAY).is_err());
        assert!(throttle.check("d", HOME).is_ok());
    }

    #[test]
    fn success_clears_the_name_only() {
        let throttle = LoginThrottle::new(limits(2, 3));
        throttle.failed("ann", HOME);
        throttle.failed("bob", HOME);
        throttle.succeeded("ann");
        throttle.failed("ann", HOME);
        assert!(throttle.check("ann", AWAY).is_ok());
        assert!(throttle.check("x", HOME).is_err(), "the address counted 3");
    }

    #[test]
    fn addresses_are_counted_by_host() {
        let mapped: IpAddr = "::ffff:192.0.2.1".parse().unwrap();
        assert_eq!(address_key(mapped), AWAY);
        let a: IpAddr = "2001:db8:1:2::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(address_key(a), address_key(b));
        assert_ne!(address_key(a), address_key(c));
    }

    #[test]
    fn zero_turns_a_count_off() {
        let throttle = LoginThrottle::new(limits(0, 0));
        for _ in 0..50 {
            throttle.failed("ann", HOME);
        }
        assert!(throttle.check("ann", HOME).is_ok());
    }

    #[test]
    fn the_tables_stay_bounded() {
        let throttle = LoginThrottle::new(Limits {
            per_user: 2,
            per_address: 0,
            window: Duration::from_secs(60),
        });
        for i in 0..MAX_ENTRIES + 500 {
            throttle.failed(&format!("user{i}"), HOME);
        }
        assert_eq!(throttle.tables().users.entries.len(), MAX_ENTRIES);
        let long = "é".repeat(200);
        assert!(name_key(&long).len() <= MAX_NAME_BYTES);
    }
}

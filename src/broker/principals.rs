//! One shared copy of each principal. A plant's devices often share a credential (one API key
//! per line or gateway), and every connected client keeps its principal for as long as it is
//! connected: without sharing, each of 10,000 quiet clients would hold its own copy of the
//! same user key and key id (128 bytes of three allocations).

use super::Principal;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

/// Below this many entries the map is not pruned.
const PRUNE_FLOOR: usize = 64;

#[derive(Default)]
pub struct Principals {
    shared: Mutex<Shared>,
}

#[derive(Default)]
struct Shared {
    by_value: HashMap<Principal, Weak<Principal>>,
    /// The map drops its dead entries when it grows to this many.
    prune_at: usize,
}

impl Principals {
    /// The copy of `principal` every client with the same principal shares.
    pub fn share(&self, principal: Principal) -> Arc<Principal> {
        // Every change is one insert or one prune: a panic cannot leave it half-made.
        let mut shared = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(existing) = shared.by_value.get(&principal).and_then(Weak::upgrade) {
            return existing;
        }
        if shared.by_value.len() >= shared.prune_at.max(PRUNE_FLOOR) {
            shared.by_value.retain(|_, copy| copy.strong_count() > 0);
            shared.prune_at = shared.by_value.len() * 2;
        }
        let copy = Arc::new(principal.clone());
        shared.by_value.insert(principal, Arc::downgrade(&copy));
        copy
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.shared.lock().map(|s| s.by_value.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(key: &str, api_key: Option<&str>) -> Principal {
        Principal {
            user_key: key.into(),
            admin: false,
            api_key_id: api_key.map(str::to_string),
            domain: None,
        }
    }

    #[test]
    fn equal_principals_share_one_copy_and_different_ones_do_not() {
        let principals = Principals::default();
        let a = principals.share(user("u1", Some("k1")));
        let b = principals.share(user("u1", Some("k1")));
        assert!(Arc::ptr_eq(&a, &b));
        let other_key = principals.share(user("u1", Some("k2")));
        assert!(!Arc::ptr_eq(&a, &other_key));
        let admin = principals.share(Principal {
            admin: true,
            ..user("u1", Some("k1"))
        });
        assert!(!Arc::ptr_eq(&a, &admin));
        assert_eq!(
            *admin,
            Principal {
                admin: true,
                ..user("u1", Some("k1"))
            }
        );
    }

    #[test]
    fn a_principal_no_client_holds_is_forgotten() {
        let principals = Principals::default();
        for i in 0..10 * PRUNE_FLOOR {
            drop(principals.share(user(&format!("u{i}"), None)));
        }
        assert!(
            principals.len() <= 2 * PRUNE_FLOOR,
            "{} entries",
            principals.len()
        );
        let kept = principals.share(user("kept", None));
        let again = principals.share(user("kept", None));
        assert!(Arc::ptr_eq(&kept, &again));
    }
}
